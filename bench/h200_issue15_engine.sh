#!/usr/bin/env bash
# Issue 15 on the H200: `kernelopt profile bench/ncu_engine --engine` (a whole program of three
# kernel files; the target is row_max.cu) ranks every kernel the program runs and says where each
# is defined; the program's wall time with and without ncu (the profiler's overhead). $OUT.
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
source bench/h200_site.sh
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
