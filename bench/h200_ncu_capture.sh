#!/usr/bin/env bash
# Issue 15: raw Nsight Compute output recorded on the H200, for the ncu parser and its CI
# fixtures. Every ncu run uses --clock-control none (never change the GPU's clocks).
#   1. examples/cmake-cuda's bench, baseline and a tuned configuration (per launch, CSV)
#   2. examples/triton/softmax.py through the harness's bench (per launch, CSV)
#   3. bench/ncu_multikernel/multikernel.cu: per-launch CSV and ncu's per-kernel summary
#   4. what else is on the machine (nsys, rocprof) and ncu's version
# From the repository root on the GPU machine; results under $OUT.
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
source bench/h200_site.sh
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum"
M="$M,gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread"
M="$M,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,launch__block_size,launch__grid_size"
M="$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
NCU=(ncu --clock-control none --csv --print-units base --metrics "$M")
{ ncu --version; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "nsys: $(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-compute/*/host/*/nsys 2>/dev/null | head -1 || echo none)"
  echo "rocprofv3: $(command -v rocprofv3 || echo none)"; } > "$OUT/tools.txt" 2>&1
cat "$OUT/tools.txt"
echo "== $(date -u +%T) cmake-cuda"
for variant in baseline tuned; do
  src=/tmp/cc-$variant; rm -rf "$src"; cp -r examples/cmake-cuda "$src"
  if [ $variant = tuned ]; then
    sed -i 's/^#define BLOCK_SIZE 32/#define BLOCK_SIZE 256/; s/^#define VEC 1/#define VEC 4/' "$src/kernel.cu"
  fi
  cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release > "$OUT/cmake-$variant.log" 2>&1 \
    && cmake --build "$src/build" -j 16 >> "$OUT/cmake-$variant.log" 2>&1 || { echo "build failed"; tail -5 "$OUT/cmake-$variant.log"; }
  "$src/build/rowsum_bench" --work 1.0 > "$OUT/cmake-cuda-$variant-bench.txt" 2>&1
  "${NCU[@]}" --launch-count 12 --log-file "$OUT/ncu-cmake-cuda-$variant.csv" \
    "$src/build/rowsum_bench" --work 1.0 --iters 5 --warmup 2 > "$OUT/ncu-cmake-cuda-$variant.stdout" 2>&1
  echo "$variant exit $? $(wc -l < "$OUT/ncu-cmake-cuda-$variant.csv") lines; bench: $(tail -1 "$OUT/cmake-cuda-$variant-bench.txt")"
done
echo "== $(date -u +%T) triton softmax"
KERNELOPT_SMALL=0 "${NCU[@]}" --launch-count 60 --log-file "$OUT/ncu-triton-softmax.csv" \
  python3 -m kernelopt_triton.harness bench examples/triton/softmax.py --iters 5 --warmup 2 \
  > "$OUT/ncu-triton-softmax.stdout" 2>&1
echo "exit $? $(wc -l < "$OUT/ncu-triton-softmax.csv") lines"
echo "== $(date -u +%T) multi-kernel program"
nvcc -O3 -o /tmp/ncu_multikernel bench/ncu_multikernel/multikernel.cu && /tmp/ncu_multikernel
"${NCU[@]}" --log-file "$OUT/ncu-multikernel.csv" /tmp/ncu_multikernel > /dev/null 2>&1; echo "per-launch exit $?"
ncu --clock-control none --csv --print-units base --print-summary per-kernel \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  --log-file "$OUT/ncu-multikernel-summary.csv" /tmp/ncu_multikernel > /dev/null 2>&1; echo "summary exit $?"
head -c 1500 "$OUT/ncu-multikernel-summary.csv"; echo
echo "== $(date -u +%T) done"
