#!/usr/bin/env bash
# Issue 3 on a GPU: the CUDA example end to end, the CUDA reward-hack corpus, and the gate
# self-test (A/A and planted ~3 %), with the naive decision beside it.
#
# Run from the repository root on the GPU machine, with wheels of this repo's packages in
# .whl/ (../shared/tools/h200-wheels builds them):
#   bash bench/h200_gate.sh PART [ARGS]     results go to $OUT (default bench/results/out)
# PART: env | run | hacks | mkfast | selftest KIND TRIALS TAG   (KIND: aa | planted | planted-only)
#       | selftest-chunks KIND TRIALS_PER_CHUNK SECONDS
# Set CUDA_VISIBLE_DEVICES to pick the GPU; each GPU gets its own state root. EXAMPLE picks the
# target (default examples/cmake-cuda; `mkfast` makes /tmp/fast, the example with fast knobs,
# whose time scales with its rows, for the planted self-test).
set -euo pipefail
OUT=${OUT:-bench/results/out}
mkdir -p "$OUT"
source bench/h200_site.sh
gpu=${CUDA_VISIBLE_DEVICES:-0}
export KERNELOPT_HOME=/tmp/kstate-gpu$gpu
EXAMPLE=${EXAMPLE:-examples/cmake-cuda}
HACKS=tests/reward_hacks/cuda

case "${1:-}" in
  env)
    { date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=index,name,driver_version,memory.total \
        --format=csv,noheader; nvcc --version | tail -2; cmake --version | head -1;
      python3 --version; kernelopt --version; } > "$OUT/env.txt" 2>&1
    kernelopt setup > "$OUT/setup.txt" 2>&1 || true
    cat "$OUT/env.txt" ;;
  run)
    set +e
    kernelopt run "$EXAMPLE" --iterations "${2:-12}" --patience "${3:-6}" 2> "$OUT/run.stderr"
    echo "exit $?" >> "$OUT/run.stderr"
    set -e
    save_run run ;;
  hacks)
    set +e
    args=()
    for h in "$HACKS"/*.cu; do
      grep -q '^// expect: shape' "$h" && continue
      args+=(--candidate "kernel.cu=$h")
    done
    kernelopt run "$EXAMPLE" --final-rounds 3 "${args[@]}" 2> "$OUT/hacks-search.stderr"
    echo "exit $?" >> "$OUT/hacks-search.stderr"
    save_run hacks-search
    for h in $(grep -l '^// expect: shape' "$HACKS"/*.cu); do
      name=$(basename "$h" .cu)
      kernelopt run "$EXAMPLE" --final-rounds 3 --candidate "kernel.cu=$h" 2> "$OUT/hack-$name.stderr"
      echo "exit $?" >> "$OUT/hack-$name.stderr"
      save_run "hack-$name"
    done
    set -e ;;
  mkfast)  # the example with the fast knobs found by the tuner (BLOCK_SIZE 512, ROWS 2, VEC 4)
    rm -rf /tmp/fast; cp -r examples/cmake-cuda /tmp/fast
    sed -i -e 's/^#define BLOCK_SIZE 32$/#define BLOCK_SIZE 512/' \
      -e 's/^#define ROWS_PER_BLOCK 1$/#define ROWS_PER_BLOCK 2/' \
      -e 's/^#define VEC 1$/#define VEC 4/' /tmp/fast/kernel.cu
    grep -n '^#define' /tmp/fast/kernel.cu ;;
  selftest-chunks)  # selftest-chunks KIND TRIALS_PER_CHUNK SECONDS: chunks until time is up
    # (a decision takes ~12 s on the H200; a chunk's calibration and start ~30 s)
    kind=$2 per=$3 end=$(( $(date +%s) + $4 )) i=0
    while [ $(( $(date +%s) + per * 12 + 30 )) -lt "$end" ]; do
      i=$((i + 1)); bash "$0" selftest "$kind" "$per" "c$i" || break
    done ;;
  selftest)
    kind=$2 trials=$3 tag=$4
    extra=()
    [ "$kind" = planted ] && extra=(--planted-speedup 1.03)
    [ "$kind" = planted-only ] && extra=(--planted-speedup 1.03 --no-aa)
    kernelopt gate-selftest "$EXAMPLE" --trials "$trials" --gamma "${GAMMA:-1.01}" \
      "${extra[@]}" --json > "$OUT/selftest-$kind-$tag.json" 2> "$OUT/selftest-$kind-$tag.stderr" ;;
  *) echo "usage: $0 env|run|hacks|selftest KIND TRIALS TAG" >&2; exit 2 ;;
esac
