#!/usr/bin/env bash
# Peak memory and load time of bayesc on a large logistic regression (docs/memory.md).
#
# Generates N = 10^6 rows × 8 columns (y, X.1 … X.7; 61 MiB as f64) into /tmp with awk, then
# runs `bayesc fit` with optimize, QBVI and NUTS under GNU time and prints, per method, the peak
# resident set size ("Maximum resident set size") and the run's wall and CPU time; the load time
# (read + parse + bind + compile) is that of `bayesc check --data`, which loads and stops. Runs are kept short (QBVI and NUTS on few iterations)
# so that the script takes about a minute; the peak is reached while loading and in the first
# gradient evaluations, so longer runs do not raise it.
#
#   benches/data_memory.sh [N] [BIN]     (defaults: 1000000, target/release/bayesc)
set -euo pipefail
N=${1:-1000000}
BIN=${2:-target/release/bayesc}
DIR=${TMPDIR:-/tmp}/bayesc_data_memory
mkdir -p "$DIR"
CSV="$DIR/logistic_$N.csv"
MODEL="$DIR/logistic.bayes"
if [ ! -s "$CSV" ]; then
  awk -v n="$N" 'BEGIN {
    srand(20261201);
    printf "y";
    for (j = 1; j <= 7; j++) printf ",X.%d", j;
    printf "\n";
    for (i = 1; i <= n; i++) {
      eta = 0.3;
      line = "";
      for (j = 1; j <= 7; j++) {
        # standard normal by Box-Muller
        x = sqrt(-2 * log(1 - rand())) * cos(6.283185307179586 * rand());
        eta += (j - 4) * 0.25 * x;
        line = line sprintf(",%.6f", x);
      }
      y = (rand() < 1 / (1 + exp(-eta))) ? 1 : 0;
      printf "%d%s\n", y, line;
    }
  }' > "$CSV"
fi
cat > "$MODEL" <<'M'
data {
  int<lower=0> N;
  matrix[N, 7] X;
  array[N] int<lower=0, upper=1> y;
}
parameters {
  real alpha;
  vector[7] beta;
}
model {
  alpha ~ normal(0, 5);
  beta ~ normal(0, 2);
  y ~ bernoulli_logit(alpha + X * beta);
}
M
data_mib=$(awk -v n="$N" 'BEGIN { printf "%.1f", n * 8 * 8 / 1048576 }')
echo "data: $CSV ($(du -m "$CSV" | cut -f1) MiB of text; $N rows × 8 columns = $data_mib MiB as f64; 2× = $(awk -v d="$data_mib" 'BEGIN { printf "%.1f", 2 * d }') MiB)"
printf "%-10s %14s %10s %10s %10s\n" run "peak RSS MiB" "× data" "wall s" "CPU s"
run() {
  local label=$1; shift
  local out="$DIR/$label.out" err="$DIR/$label.time"
  /usr/bin/time -v "$BIN" "$@" > "$out" 2> "$err" || {
    echo "$label failed:"; tail -5 "$err"; return; }
  local kb cpu wall
  kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$err")
  cpu=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf "%.2f", u + s }' "$err")
  wall=$(awk '/Elapsed \(wall clock\)/ { n = split($NF, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; printf "%.2f", s }' "$err")
  printf "%-10s %14.1f %10.2f %10s %10s\n" "$label" "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')" \
    "$(awk -v k="$kb" -v d="$data_mib" 'BEGIN { printf "%.2f", k / 1024 / d }')" "$wall" "$cpu"
}
run load check "$MODEL" --data "$CSV"
run optimize fit "$MODEL" --data "$CSV" --seed 1 --quiet --method optimize
run qbvi fit "$MODEL" --data "$CSV" --seed 1 --quiet --method qbvi --max-iter 3 --mc-samples 10 --draws 100
run nuts fit "$MODEL" --data "$CSV" --seed 1 --quiet --method nuts --warmup 10 --samples 10
