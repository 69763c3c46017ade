#!/usr/bin/env bash
# Session 6, one GPU call: the compile-ahead and worker GPU tests (the review's mends, never
# run on a GPU yet), the after-idle warm-up (ramp; settle vs the fixed 200 ms, A-B-B-A), then
# the standalone tuner against the exhaustive grid (bench/tuner_vs_grid.py). Results in $OUT.
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
source bench/h200_site.sh
echo "== $(date -u +%T) GPU tests"
python3 -m pytest -q -p no:cacheprovider plugins/kernelopt_triton/tests/test_compile_ahead.py \
  plugins/kernelopt_triton/tests/test_worker.py > "$OUT/gpu-tests.txt" 2>&1
echo "exit $?"; tail -5 "$OUT/gpu-tests.txt" | sed 's/^/  /'
echo "== $(date -u +%T) warm-up after idle"
timeout 150 python3 bench/warmup_settle.py examples/triton/softmax.py examples/triton/layernorm.py \
  examples/triton/vecadd.py > "$OUT/warmup.jsonl" 2> "$OUT/warmup.err"
echo "exit $?"; python3 - "$OUT/warmup.jsonl" <<'PY' || tail -20 "$OUT/warmup.err"
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    r = d["ramp"]
    print(f"  {d['kernel']}: ramp first {[round(t, 4) for t in r['first_ms'][:6]]} steady {r['steady_ms']:.4f} "
          f"within 1 % after {r['within_1pct_after_s']} s; settle {d['settle']['median_ms']:.4f} ms "
          f"(warm-up {d['settle']['median_warm_up_s']:.3f} s) fixed {d['fixed']['median_ms']:.4f} ms "
          f"(warm-up {d['fixed']['median_warm_up_s']:.3f} s) ratio {d['settle_vs_fixed']:.4f}")
PY
echo "== $(date -u +%T) standalone"
OUT=$OUT bash bench/h200_inductor.sh standalone "$@"
echo "== $(date -u +%T) done"
