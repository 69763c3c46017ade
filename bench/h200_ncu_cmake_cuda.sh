#!/usr/bin/env bash
# Issue 15: `kernelopt run examples/cmake-cuda --profiler ncu` alone (the third step of
# bench/h200_ncu_issue15.sh, run again after its table marked the bench's fill_input as the
# target's). Results in $OUT.
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
source bench/h200_site.sh
export KERNELOPT_HOME=/tmp/kstate-i15b
work=/tmp/i15-cuda; rm -rf $work; cp -r examples/cmake-cuda $work
(cd $work && kernelopt run . --profiler ncu --iterations 6 --budget-minutes 3) > "$OUT/run-cmake-cuda.txt" 2>&1
echo "exit $?"; tail -4 "$OUT/run-cmake-cuda.txt"
run=$(ls -d "$KERNELOPT_HOME"/runs/* | tail -1); mkdir -p "$OUT/run-cmake-cuda"
cp "$run"/{report.md,summary.json,journal.jsonl} "$OUT/run-cmake-cuda/"
sed -n '/## Profile/,/## Candidates/p' "$OUT/run-cmake-cuda/report.md"
