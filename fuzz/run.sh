#!/bin/sh
# Fuzz the parser+checker, the CSV loader and the JSON loader with N generated inputs each
# (default 10^6), outside CI: no panic, no hang (see src/bin/fuzz.rs).
# Usage: fuzz/run.sh [N] [seed]   (from the repository root)
set -e
N=${1:-1000000}
SEED=${2:-1}
cargo build --release --features fuzz --bin fuzz
for t in parser csv json; do
    ./target/release/fuzz "$t" "$N" "$SEED"
done
