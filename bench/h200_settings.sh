#!/usr/bin/env bash
# Issue 53, the compile's own alternatives: a model in its user's compile MODE, and the same
# compile with each Inductor setting on top, in one process (model_compare --setting): outputs
# against eager, each compile's median and spread, and its paired ratio to the mode, round by
# round.
#   OUT=DIR [LIMIT=290] [ROUNDS=10] bash bench/h200_settings.sh MODE MODEL[,MODEL...] [SETTING ...]
# SETTING: KEY=VALUE[,KEY=VALUE] (Inductor's config names); none given: the list below.
# From the repository root on the GPU machine, wheels in .whl/ (../shared/tools/h200-wheels).
set -uo pipefail
OUT=${OUT:-bench/results/settings}; mkdir -p "$OUT"
source bench/h200_site.sh
t0=$(date +%s)
say() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
model_device_txt "$OUT/device.txt"
mode=$1; models=$2; shift 2
settings=("$@")
[ ${#settings[@]} -gt 0 ] || settings=(
  "coordinate_descent_search_radius=2,coordinate_descent_check_all_directions=True"
  "triton.persistent_reductions=False" "triton.multi_kernel=1" "triton.use_block_ptr=True"
  "triton.prefer_nd_tiling=True" "benchmark_fusion=True"
  "triton.enable_persistent_tma_matmul=True" "combo_kernels=True" "freezing=True")
args=(); for s in "${settings[@]}"; do args+=(--setting "$s"); done
for model in ${models//,/ }; do
  m=$(basename "$model" .py)
  timeout "${LIMIT:-290}" python3 -m kernelopt_triton.model_compare "$model" --modes eager \
    --compile-mode "$mode" "${args[@]}" --rounds "${ROUNDS:-10}" --windows 3 \
    --cache-dir "/tmp/settings-cache-$m" --out "$OUT/$m-$mode-settings.json" > "$OUT/$m-$mode.log" 2>&1
  say "$m: exit $?"; grep "^model_compare:" "$OUT/$m-$mode.log"
  show_modes "$OUT/$m-$mode-settings.json" || tail -5 "$OUT/$m-$mode.log"
done
