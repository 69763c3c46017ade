#!/usr/bin/env bash
# Issue 15 on the H200: Nsight Compute through the product.
#   1. `kernelopt profile bench/ncu_multikernel` (a three-kernel CUDA program): the ranking
#   2. `kernelopt run examples/triton/softmax.py --profiler ncu`: report.md's profile table
#   3. `kernelopt run examples/cmake-cuda --profiler ncu`: the same for a CMake CUDA target
# From the repository root on the GPU machine; results (run directories, consoles) in $OUT.
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
source bench/h200_site.sh
export KERNELOPT_HOME=/tmp/kstate-i15
keep() {  # keep NAME: the newest run's report, summary and journal
  local run; run=$(ls -d "$KERNELOPT_HOME"/runs/* 2>/dev/null | tail -1)
  [ -n "$run" ] && mkdir -p "$OUT/$1" && cp "$run"/{report.md,summary.json,journal.jsonl} "$OUT/$1/"
}
echo "== $(date -u +%T) kernelopt profile bench/ncu_multikernel"
kernelopt profile bench/ncu_multikernel --profiler ncu > "$OUT/profile-multikernel.txt" 2>&1
echo "exit $?"; cat "$OUT/profile-multikernel.txt" | head -30
cp -r "$KERNELOPT_HOME/profiles" "$OUT/profiles" 2>/dev/null
echo "== $(date -u +%T) kernelopt run examples/triton/softmax.py --profiler ncu"
work=/tmp/i15-triton; rm -rf $work; mkdir -p $work; cp examples/triton/softmax.py $work/
(cd $work && kernelopt run softmax.py --profiler ncu) > "$OUT/run-softmax.txt" 2>&1
echo "exit $?"; tail -4 "$OUT/run-softmax.txt"; keep run-softmax
sed -n '/## Profile/,/## Candidates/p' "$OUT/run-softmax/report.md"
echo "== $(date -u +%T) kernelopt run examples/cmake-cuda --profiler ncu"
work=/tmp/i15-cuda; rm -rf $work; cp -r examples/cmake-cuda $work
(cd $work && kernelopt run . --profiler ncu --iterations 6 --budget-minutes 4) > "$OUT/run-cmake-cuda.txt" 2>&1
echo "exit $?"; tail -4 "$OUT/run-cmake-cuda.txt"; keep run-cmake-cuda
sed -n '/## Profile/,/## Candidates/p' "$OUT/run-cmake-cuda/report.md"
echo "== $(date -u +%T) done"
