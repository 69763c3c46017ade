#!/usr/bin/env bash
# Issue 11, session 5, one GPU call: the compile-ahead and worker tests on the GPU (what CI's
# interpreter cannot compile), then the standalone tuner against the exhaustive grid
# (bench/tuner_vs_grid.py). Results under $OUT.
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
source bench/h200_site.sh
echo "== $(date -u +%T) GPU tests"
python3 -m pytest -q -p no:cacheprovider plugins/kernelopt_triton/tests/test_compile_ahead.py \
  plugins/kernelopt_triton/tests/test_worker.py \
  > "$OUT/gpu-tests.txt" 2>&1
echo "exit $?"; tail -5 "$OUT/gpu-tests.txt" | sed 's/^/  /'
echo "== $(date -u +%T) standalone"
OUT=$OUT bash bench/h200_inductor.sh standalone "$@"
