#!/usr/bin/env bash
# kernelopt-triton on a GPU: standalone example kernels through the whole loop with the tuner,
# one kernel per GPU, each GPU its own state root. From the repository root on the GPU machine,
# with wheels of this repo's packages in .whl/ (../shared/tools/h200-wheels attrs):
#   bash bench/h200_triton_standalone.sh SECONDS KERNEL [KERNEL...]   (KERNEL: examples/triton/NAME.py)
# Results go to $OUT (default bench/results/out): NAME.{out,err}, NAME-{summary.json,report.md,journal.jsonl}.
set -uo pipefail
OUT=${OUT:-bench/results/out}
mkdir -p "$OUT"
source bench/h200_site.sh
seconds=$1; shift
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
} > "$OUT/env.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "$#" -gt "${gpus:-0}" ]; then  # an absent CUDA_VISIBLE_DEVICES index would mean the interpreter
  echo "$# kernels but ${gpus:-0} GPUs: one kernel per GPU" >&2; exit 2
fi
gpu=0
for kernel in "$@"; do
  name=$(basename "$kernel" .py)
  (
    export CUDA_VISIBLE_DEVICES=$gpu KERNELOPT_HOME=/tmp/ktriton-$gpu
    timeout "$seconds" kernelopt run "$kernel" --iterations "${ITERATIONS:-4}" \
      --patience "${ITERATIONS:-4}" > "$OUT/$name.out" 2> "$OUT/$name.err"
    echo "exit $?" >> "$OUT/$name.err"
    run=$(ls -d "$KERNELOPT_HOME"/runs/* 2>/dev/null | tail -1)
    [ -n "$run" ] && for f in summary.json report.md journal.jsonl; do cp "$run/$f" "$OUT/$name-$f"; done
  ) &
  gpu=$((gpu + 1))
done
wait
