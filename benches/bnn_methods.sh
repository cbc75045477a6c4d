#!/usr/bin/env bash
# The BNN method table of docs/bnn_methods.md: every variational --method of this build (and
# NUTS where it finishes within its time limit) on the Boston-housing BNN (examples/bnn_regression,
# one 90/10 split: split 1 of run.sh) and the 8x8 digits BNN (examples/digits, its train/test
# files), each by `bayesc fit … --save-fit` then `bayesc predict` on the test rows. Prints one
# markdown table per example: test RMSE or accuracy, lppd per test row, ECE, wall time of the fit
# (as `bayesc fit` reports it) and iterations.
#
# Budgets (to keep the whole run modest): minibatch methods M = 32 (Boston) / 64 (digits) with
# their default exit rule; full-batch methods --max-iter $FULL_ITER (default 1000 on Boston, 300 on
# digits; a tenth of it for bbvi); NUTS 200 warmup + 200 draws, 2 chains, killed after $NUTS_LIMIT s (default 600);
# full-covariance methods (mgvb, emgvb) are skipped (O(d³) per step at d = 752 and 3760).
# MC dropout fits a copy of the model with `@dropout(0.1)` on the input-layer weights W1.
#
# Usage (from the repository root, after cargo build --release):
#   benches/bnn_methods.sh [boston|digits|all]      # default all
# Methods that are not in the build (`bayesc fit --help` does not list them) are skipped, so the
# table picks up vadam, vogn, von and ngbbvi when they land.
set -uo pipefail
WHICH=${1:-all}
B=${BAYESC:-./target/release/bayesc}
NUTS_LIMIT=${NUTS_LIMIT:-600}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
HELP=$($B fit --help)

# name | flags (minibatch flag added per example where the method takes it)
METHODS=${METHODS:-"qnvb qbvi ivon bbb bbvi ngvi vlaplace mcdropout vadam vogn von ngbbvi nuts"}
# methods run on minibatches (bbb also takes --batch-size, but its rows of docs/bnn_methods.md
# were measured full batch; ngbbvi, bbvi, ngvi and full von do not take it)
MINIBATCH=${MINIBATCH:-"qnvb qbvi ivon vadam vogn von vlaplace mcdropout"}

run_example() {
  local label=$1 model=$2 train=$3 test=$4 m=$5 full_iter=$6 w1=$7
  sed "s/^  matrix\[$w1\] W1;/  @dropout(0.1) matrix[$w1] W1;/" "$model" > "$T/dropout.bayes"
  cp "$model" "$T/model.bayes"
  echo
  echo "### $label"
  echo
  echo "| method | flags | test $( [ "$label" = digits ] && echo accuracy || echo RMSE ) | lppd per row | ECE | fit wall time (s) | iterations | how it stopped |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
  for meth in $METHODS; do
    if ! grep -qw "$meth" <<<"$HELP"; then
      echo "| $meth | not in this build | | | | | | |"; continue
    fi
    local mdl="$T/model.bayes" flags=""
    case $meth in
      nuts) flags="--chains 2 --warmup 200 --samples 200" ;;
      qbvi|ngvi|von) flags="--diagonal" ;;
    esac
    [ "$meth" = mcdropout ] && mdl="$T/dropout.bayes"
    if [ "$meth" != nuts ]; then
      if grep -qw "$meth" <<<"$MINIBATCH"; then
        flags="$flags --batch-size $m"
      else
        # BBVI evaluates S = 100 full-data log densities per iteration: a tenth of the budget
        if [ "$meth" = bbvi ]; then flags="$flags --max-iter $(( full_iter / 10 ))"
        else flags="$flags --max-iter $full_iter"; fi
      fi
      flags="$flags --random-init --draws 200"
    fi
    local limit=1800
    [ "$meth" = nuts ] && limit=$NUTS_LIMIT
    if ! timeout "$limit" $B fit "$mdl" --data "$train" --method "$meth" $flags --seed 1 \
         --save-fit "$T/fit.json" > "$T/fit.txt" 2>&1; then
      local why; why=$(grep -m1 -E "error|failed" "$T/fit.txt" | cut -c1-120)
      [ -z "$why" ] && why="did not finish within ${limit} s"
      echo "| $meth | $flags | — | — | — | — | — | ${why//|//} |"; continue
    fi
    $B predict "$mdl" --fit "$T/fit.json" --data "$test" -o "$T/pred.csv" > "$T/score.txt" 2>&1
    local score lppd ece secs iters stop
    if [ "$label" = digits ]; then
      score=$(awk '$1 == "accuracy" {print $NF; exit}' "$T/score.txt")
    else
      score=$(awk '$1 == "RMSE" {print $2; exit}' "$T/score.txt")
    fi
    lppd=$(awk '$1 == "lppd" && $2 == "per" {print $4; exit}' "$T/score.txt")
    ece=$(awk '$1 == "ECE" || ($1 == "expected" && $2 == "calibration") {print $NF; exit}' "$T/score.txt")
    secs=$(grep -oE '\(([0-9.]+) s\)' "$T/fit.txt" | head -1 | grep -oE '[0-9.]+')
    [ -z "$secs" ] && secs=$(grep -oE 'in ([0-9.]+) s' "$T/fit.txt" | head -1 | grep -oE '[0-9.]+')
    iters=$(grep -oE '([0-9]+) iterations' "$T/fit.txt" | head -1 | grep -oE '[0-9]+')
    [ "$meth" = nuts ] && iters="2 × (200 + 200)"
    stop=$(grep -m1 -E "^(converged|WARNING|interrupted|4 chains|2 chains)" "$T/fit.txt" | cut -c1-60)
    echo "| $meth | $flags | ${score:-?} | ${lppd:-?} | ${ece:-?} | ${secs:-?} | ${iters:-?} | ${stop//|//} |"
  done
}

if [ "$WHICH" = boston ] || [ "$WHICH" = all ]; then
  python3 - examples/bnn_regression/boston.csv "$T" 1 <<'PY'
import random, sys
rows = open(sys.argv[1]).read().splitlines()
head, body = rows[0], rows[1:]
random.Random(int(sys.argv[3])).shuffle(body)
n_test = round(0.1 * len(body))
open(sys.argv[2] + "/boston_test.csv", "w").write("\n".join([head] + body[:n_test]) + "\n")
open(sys.argv[2] + "/boston_train.csv", "w").write("\n".join([head] + body[n_test:]) + "\n")
PY
  run_example boston examples/bnn_regression/model.bayes "$T/boston_train.csv" "$T/boston_test.csv" \
    32 "${FULL_ITER:-1000}" "13, H"
fi
if [ "$WHICH" = digits ] || [ "$WHICH" = all ]; then
  run_example digits examples/digits/model.bayes examples/digits/digits_train.csv \
    examples/digits/digits_test.csv 64 "${FULL_ITER:-300}" "64, H"
fi
