#!/usr/bin/env bash
# Issue 13 on the H200: the NInfer fixture's CUDA path through `kernelopt run-ninfer` (sm_90,
# the fixture's relaxed guard allows it), and the refusal of an upstream-like tree (exit 3
# naming the GPU and CUDA found). From the repository root on the GPU machine; results in $OUT.
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
SITE_MARKER=kernelopt_ninfer source bench/h200_site.sh
export KERNELOPT_HOME=/tmp/kstate-ninfer
echo "== $(date -u +%T) tools"
{ nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader; nvcc --version | tail -2
  cmake --version | head -1; ninja --version; } 2>&1 | tee "$OUT/tools.txt"
echo "== $(date -u +%T) refusal of an upstream-like tree"
python3 -c "import sys; from pathlib import Path; sys.path.insert(0, 'plugins/kernelopt_ninfer/tests')
from conftest import write_upstream_tree; write_upstream_tree(Path('/tmp/ninfer-upstream'))"
kernelopt run-ninfer --op rmsnorm --repo /tmp/ninfer-upstream > "$OUT/refusal.txt" 2>&1
echo "exit $?"; cat "$OUT/refusal.txt" | head -8
echo "== $(date -u +%T) kernelopt run-ninfer --op rmsnorm on the fixture (CUDA)"
rm -rf /tmp/nf && cp -r plugins/kernelopt_ninfer/tests/fixture_repo /tmp/nf
(cd /tmp && timeout --signal=INT 380 kernelopt run-ninfer --op rmsnorm --repo /tmp/nf --device cuda \
  --case "rmsnorm rows=4096 cols=4096" --iterations 8 --patience 4 --final-rounds 10 \
  --budget-minutes 5) > "$OUT/run-rmsnorm.txt" 2>&1
echo "exit $?"; tail -12 "$OUT/run-rmsnorm.txt"
run=$(ls -d "$KERNELOPT_HOME"/runs/* 2>/dev/null | tail -1)
[ -n "$run" ] && mkdir -p "$OUT/run-rmsnorm" && cp -r "$run"/{report.md,report.diff,summary.json,journal.jsonl,baseline} "$OUT/run-rmsnorm/" 2>/dev/null
(cd /tmp/nf && git init -q . 2>/dev/null; git apply --check "$run/report.diff" && echo "report.diff applies") 2>&1 | tail -2
echo "== $(date -u +%T) done"
