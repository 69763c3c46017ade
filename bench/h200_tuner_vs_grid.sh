#!/usr/bin/env bash
# Issue 11 on the H200: the tuner's joint search against the exhaustive grid on the standalone
# Triton examples (bench/tuner_vs_grid.py), one kernel after another; the `search` suite's
# `standalone` part. (Until issue 56 this was `bench/h200_inductor.sh standalone`.)
# From the repository root on the GPU machine, wheels in .whl/ (../shared/tools/h200-wheels):
#   bash bench/h200_tuner_vs_grid.sh [KERNEL ...]   (default: softmax, layernorm, vecadd)
# Results go to $OUT (default bench/results/out); the GPU is CUDA_VISIBLE_DEVICES's.
set -uo pipefail
OUT=${OUT:-bench/results/out}
mkdir -p "$OUT"
source bench/h200_site.sh
kernels=("$@"); [ ${#kernels[@]} -eq 0 ] && kernels=(examples/triton/softmax.py \
  examples/triton/layernorm.py examples/triton/vecadd.py)
for k in "${kernels[@]}"; do
  n=$(basename "$k" .py)
  echo "== $(date -u +%H:%M:%S) $n: tuner run, then the whole grid"
  python3 bench/tuner_vs_grid.py "$k" --keep "$OUT/runs" > "$OUT/grid-$n.json" 2> "$OUT/grid-$n.err"
  echo "exit $?"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["tuner"]
print(t["report_line"]); print("grid", d["grid"]["configs"], "best", d["grid"]["best"], "sweep s", d["grid"]["sweep_gpu_seconds"])
print("tuner screening", t["screening"], "run gpu s", t["gpu_seconds"], "winner", t["winner_knobs"])
print("winner in grid", d.get("winner_in_grid"), "within 5%", d["within_5pct"], "screen/grid gpu", d["screen_vs_grid_gpu"])' "$OUT/grid-$n.json" \
    || tail -20 "$OUT/grid-$n.err"
done
