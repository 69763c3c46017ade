#!/usr/bin/env bash
# Run one bench command under a time limit on the GPU machine and always bring back what it
# wrote, the kernelopt run directories included, as one tarball under $OUT (the device tool
# returns few files).   usage: OUT=... bash bench/h200_collect.sh SECONDS NAME CMD [ARG ...]
set -uo pipefail
limit=$1 name=$2; shift 2
work=/tmp/collect-$name; rm -rf "$work"; mkdir -p "$work"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
OUT=$work timeout --signal=INT --kill-after=20 "$limit" "$@" 2>&1 | tee "$work/console.txt" | grep -E '^(==|  |exit|[a-z_]+ )' | tail -60
echo "exit ${PIPESTATUS[0]}" | tee -a "$work/console.txt"
for home in /tmp/kstate-triton "${KERNELOPT_HOME:-}"; do
  [ -d "$home/runs" ] && cp -r "$home/runs" "$work/kernelopt-runs-$(basename "$home")"
done
# its own name: a bench script may write gpu.txt itself (h200_llamacpp.sh adds nvcc --version)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$work/device.txt" 2>&1
tar -czf "${OUT:-bench/results/out}/$name.tar.gz" -C "$work" .
