#!/usr/bin/env bash
# One llama.cpp op through the product at the model's heaviest node, on a fresh GPU machine
# (one device call): kernelopt run-llamacpp --op OP --nodes NODES, the run's folder to $OUT.
#   OP=SOFT_MAX BUDGET=5 OUT=DIR bash bench/h200_llamacpp_op.sh
# Nodes: the H200 recording of the 7B-wide random model (tests/fixtures/h200-llama-model).
set -uo pipefail
source bench/h200_llamacpp_tree.sh
S=/tmp/kstate-llamacpp-op
export CCACHE_DIR=/tmp/ccache CCACHE_MAXSIZE=20G
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -2; nproc; } > "$OUT/machine.txt" 2>&1
NODES=/tmp/nodes-prefill.txt
gzip -dc plugins/kernelopt_llamacpp/tests/fixtures/h200-llama-model/nodes-prefill.txt.gz > "$NODES"
kernelopt run-llamacpp --op "${OP:-SOFT_MAX}" --repo "$REPO" --nodes "$NODES" \
  --budget-minutes "${BUDGET:-5}" --state-root "$S" > "$OUT/run.log" 2>&1
echo "run-llamacpp: exit $?" | tee -a "$OUT/run.log"
tar -C "$S" --exclude='*.gguf' --exclude=base-src --exclude=base-build --exclude=work \
  -czf "$OUT/state.tar.gz" runs llamacpp 2>/dev/null
tail -5 "$OUT/run.log"
