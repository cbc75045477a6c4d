#!/usr/bin/env bash
# The UCI protocol of Hernández-Lobato & Adams (2015): random 90/10 splits of the 506 rows
# (split k = random.Random(k) permutation, k = 1..K), a fit on the 455 training rows by minibatch
# QNVB (M = 32), and the posterior-predictive test RMSE and test log-likelihood per test row
# (medv units) of each split; prints the mean ± standard error over the splits.
# Usage: examples/bnn_regression/run.sh [K=20]   (from the repository root, after cargo build --release)
set -euo pipefail
K=${1:-20}
B=${BAYESC:-./target/release/bayesc}
D=examples/bnn_regression
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
printf "%5s %8s %10s %8s\n" split RMSE "test LL" "fit s"
for k in $(seq 1 "$K"); do
  python3 - "$D/boston.csv" "$T" "$k" <<'PY'
import random, sys
rows = open(sys.argv[1]).read().splitlines()
head, body = rows[0], rows[1:]
random.Random(int(sys.argv[3])).shuffle(body)
n_test = round(0.1 * len(body))
open(sys.argv[2] + "/test.csv", "w").write("\n".join([head] + body[:n_test]) + "\n")
open(sys.argv[2] + "/train.csv", "w").write("\n".join([head] + body[n_test:]) + "\n")
PY
  $B fit $D/model.bayes --data "$T/train.csv" --method qnvb --batch-size 32 --random-init \
     --seed "$k" --draws 500 -q --save-fit "$T/fit.json" > "$T/fit.txt" 2>&1
  secs=$(grep -o 'iterations ([0-9.]* s)' "$T/fit.txt" | grep -o '[0-9.]* s' | tr -d ' s')
  $B predict $D/model.bayes --fit "$T/fit.json" --data "$T/test.csv" -o "$T/pred.csv" > "$T/score.txt" 2>&1
  rmse=$(awk '$1 == "RMSE" {print $2}' "$T/score.txt")
  ll=$(awk '$1 == "lppd" && $2 == "per" {print $4}' "$T/score.txt")
  printf "%5d %8s %10s %8s\n" "$k" "$rmse" "$ll" "$secs" | tee -a "$T/table.txt"
done
awk '{r[NR]=$2; l[NR]=$3} END {
  n=NR; for(i=1;i<=n;i++){sr+=r[i]; sl+=l[i]}; mr=sr/n; ml=sl/n;
  for(i=1;i<=n;i++){vr+=(r[i]-mr)^2; vl+=(l[i]-ml)^2};
  se_r = n > 1 ? sqrt(vr/(n-1)/n) : 0; se_l = n > 1 ? sqrt(vl/(n-1)/n) : 0;
  printf "mean ± se over %d splits: RMSE %.3f ± %.3f, test LL %.3f ± %.3f\n", n, mr, se_r, ml, se_l }' "$T/table.txt"
