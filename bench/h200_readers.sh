#!/usr/bin/env bash
# Issue 37 on the H200: the journal's readers and the run context through real GPU runs.
# Two standalone Triton kernels through the whole loop (progress lines, report.md/html and
# summary.json read through kernelopt_core.events), then a run SIGKILLed (its whole process
# group) after its first candidate's result and continued with `kernelopt resume` (the header,
# GPU seconds and search time read back from the killed attempt's journal).
# From the repository root on the GPU machine, wheels in .whl/ (../shared/tools/h200-wheels):
#   bash bench/h200_readers.sh      Results: $OUT (default bench/results/out)
set -uo pipefail
OUT=${OUT:-bench/results/out}
mkdir -p "$OUT"
source bench/h200_site.sh
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
} > "$OUT/env.txt" 2>&1
export KERNELOPT_HOME=/tmp/kreaders
for kernel in softmax layernorm; do
  timeout 300 kernelopt run "examples/triton/$kernel.py" --iterations 4 --patience 4 \
    > "$OUT/$kernel.out" 2> "$OUT/$kernel.err"
  echo "exit $?" >> "$OUT/$kernel.err"
  save_run "$kernel"
done
journal=$KERNELOPT_HOME/runs/killed/journal.jsonl
setsid kernelopt run examples/triton/vecadd.py --iterations 4 --patience 4 --run-id killed \
  > "$OUT/killed.out" 2> "$OUT/killed.err" &
pid=$!
for _ in $(seq 1200); do grep -q '"candidate_result"' "$journal" 2>/dev/null && break; sleep 0.25; done
kill -9 -- "-$pid"; wait "$pid"; echo "killed: exit $?" >> "$OUT/killed.err"
cp "$journal" "$OUT/killed-journal-before-resume.jsonl"
timeout 300 kernelopt resume killed > "$OUT/resumed.out" 2> "$OUT/resumed.err"
echo "exit $?" >> "$OUT/resumed.err"
save_run resumed
