#!/usr/bin/env bash
# The search on the H200 (the `search` suite: `python -m bench run search PART...`; results
# under $OUT). From the repository root on the GPU machine, wheels in .whl/
# (../shared/tools/h200-wheels).
#   gpu-tests   the compile-ahead and worker tests on the GPU (what CI's interpreter cannot
#               compile)
#   warmup      the after-idle warm-up of softmax, layernorm and vecadd: the ramp, settle vs
#               the fixed 200 ms, A-B-B-A (bench/warmup_settle.py)
#   standalone  the tuner's joint search against the exhaustive grid on the standalone Triton
#               examples (bench/h200_tuner_vs_grid.sh -> bench/tuner_vs_grid.py)
# (The rounds of work that produced bench/results/2026-12-01-h200-inductor ran these parts as
# bench/h200_issue11_s5.sh, h200_issue11_s6.sh and h200_s6b.sh, retired.)
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
source bench/h200_site.sh
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(gpu-tests standalone)
for part in "${parts[@]}"; do
case "$part" in
gpu-tests)
  echo "== $(date -u +%T) GPU tests"
  python3 -m pytest -q -p no:cacheprovider -n 0 plugins/kernelopt_triton/tests/test_compile_ahead.py \
    plugins/kernelopt_triton/tests/test_worker.py > "$OUT/gpu-tests.txt" 2>&1
  echo "exit $?"; tail -5 "$OUT/gpu-tests.txt" | sed 's/^/  /' ;;
warmup)
  echo "== $(date -u +%T) warm-up after idle"
  timeout 150 python3 bench/warmup_settle.py examples/triton/softmax.py examples/triton/layernorm.py \
    examples/triton/vecadd.py > "$OUT/warmup.jsonl" 2> "$OUT/warmup.err"
  echo "exit $?"
  python3 - "$OUT/warmup.jsonl" <<'PY' || tail -20 "$OUT/warmup.err"
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    r = d["ramp"]
    print(f"  {d['kernel']}: ramp first {[round(t, 4) for t in r['first_ms'][:6]]} steady {r['steady_ms']:.4f} "
          f"within 1 % after {r['within_1pct_after_s']} s; settle {d['settle']['median_ms']:.4f} ms "
          f"(warm-up {d['settle']['median_warm_up_s']:.3f} s) fixed {d['fixed']['median_ms']:.4f} ms "
          f"(warm-up {d['fixed']['median_warm_up_s']:.3f} s) ratio {d['settle_vs_fixed']:.4f}")
PY
  ;;
standalone)
  echo "== $(date -u +%T) standalone"
  OUT=$OUT bash bench/h200_tuner_vs_grid.sh ;;
*) echo "unknown part $part (gpu-tests | warmup | standalone)" >&2; exit 2 ;;
esac
done
echo "== $(date -u +%T) done"
