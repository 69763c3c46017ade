#!/usr/bin/env bash
# Session 6, second GPU call: the compile-ahead GPU test again (its expectation mended), the
# standalone tuner against the exhaustive grid with the sample's thread rule, then issue 15's
# engine ranking (bench/h200_issue15_engine.sh). Results in $OUT.
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
source bench/h200_site.sh
echo "== $(date -u +%T) GPU test"
python3 -m pytest -q -p no:cacheprovider plugins/kernelopt_triton/tests/test_compile_ahead.py \
  > "$OUT/gpu-tests.txt" 2>&1
echo "exit $?"; tail -2 "$OUT/gpu-tests.txt" | sed 's/^/  /'
OUT=$OUT bash bench/h200_inductor.sh standalone
OUT=$OUT bash bench/h200_issue15_engine.sh
echo "== $(date -u +%T) graphsignal"
OUT=$OUT/graphsignal bash bench/graphsignal_record.sh
echo "== $(date -u +%T) done"
