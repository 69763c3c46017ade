#!/usr/bin/env bash
# Profilers on the H200, through the product (the `profilers` suite: `python -m bench run
# profilers PART...`; results under $OUT). Every ncu run uses --clock-control none.
#   capture  raw Nsight Compute output for the ncu parser's fixtures (bench/h200_ncu_capture.sh)
#   product  `kernelopt profile bench/ncu_multikernel` (a three-kernel CUDA program): the
#            ranking; `kernelopt run examples/triton/softmax.py --profiler ncu` and
#            `kernelopt run examples/cmake-cuda --profiler ncu`: report.md's profile table
#            (was bench/h200_ncu_issue15.sh; its third step alone was h200_ncu_cmake_cuda.sh)
#   engine   `kernelopt profile bench/ncu_engine --engine` (a whole program of three kernel
#            files; the target is row_max.cu): every kernel the program runs, ranked, and
#            where each is defined; the program's wall time with and without ncu
#            (was bench/h200_issue15_engine.sh)
# From the repository root on the GPU machine, wheels in .whl/ (../shared/tools/h200-wheels).
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
source bench/h200_site.sh
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(product engine)
for part in "${parts[@]}"; do
case "$part" in
capture)
  OUT=$OUT bash bench/h200_ncu_capture.sh ;;
product)
  (
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
  ) ;;
engine)
  (
  export KERNELOPT_HOME=/tmp/kstate-engine
  echo "== $(date -u +%T) kernelopt profile bench/ncu_engine --engine"
  timeout 240 kernelopt profile bench/ncu_engine --engine --profiler ncu > "$OUT/profile-engine.txt" 2>&1
  echo "exit $?"; head -30 "$OUT/profile-engine.txt"
  cp -r "$KERNELOPT_HOME/profiles" "$OUT/profiles-engine" 2>/dev/null
  echo "== $(date -u +%T) the engine's wall time, plain and under ncu (3 each)"
  exe=$(ls -d "$KERNELOPT_HOME"/work/*/base-build/pipeline 2>/dev/null | head -1)
  [ -z "$exe" ] && exe=$(find "$KERNELOPT_HOME" -name pipeline -type f -perm -u+x | head -1)
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  for i in 1 2 3; do
    /usr/bin/time -f "plain %e s" "$exe" --steps 20 2>&1 | tail -1
    /usr/bin/time -f "ncu %e s" "$ncu" --clock-control none --print-summary per-kernel \
      --metrics gpu__time_duration.sum "$exe" --steps 20 2>&1 | tail -1
  done | tee "$OUT/engine-overhead.txt"
  echo "== $(date -u +%T) done"
  ) ;;
*) echo "unknown part $part (capture | product | engine)" >&2; exit 2 ;;
esac
done
