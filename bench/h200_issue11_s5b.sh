#!/usr/bin/env bash
# Issue 11, session 5, second GPU call: the GPU tests again (after the mends), then
# examples/pointwise_fused.py's kernel: Inductor's own times (default, max-autotune +
# coordinate descent) and the tuner's run in the same call (bench/h200_triton.sh), TOP=1.
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
source bench/h200_site.sh
echo "== $(date -u +%T) GPU tests"
python3 -m pytest -q -p no:cacheprovider plugins/kernelopt_triton/tests/test_compile_ahead.py \
  plugins/kernelopt_triton/tests/test_worker.py > "$OUT/gpu-tests.txt" 2>&1
echo "exit $?"; tail -3 "$OUT/gpu-tests.txt" | sed 's/^/  /'
echo "== $(date -u +%T) pointwise_fused"
OUT=$OUT TOP=1 PRODUCT=0 bash bench/h200_triton.sh examples/pointwise_fused.py
