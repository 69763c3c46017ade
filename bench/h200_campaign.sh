#!/usr/bin/env bash
# Issue 16 on a 2-GPU host (nvidia-h200-x2): the same campaign of the four standalone Triton
# examples on one GPU, then on both (the local executor), then on a local Dask cluster of two
# workers (one per GPU; needs kernelopt-dask and distributed in .whl/). Each mode has its own
# state root and Triton cache, so none starts warm from another. From the repository root:
#   bash bench/h200_campaign.sh MODE...    MODE: one | two | dask | dask1 (dask on GPU 0 only)
# Results go to $OUT: MODE.log, MODE-summary.json, MODE-campaign.jsonl, throughput.jsonl.
set -uo pipefail
OUT=${OUT:-bench/results/out}
mkdir -p "$OUT"
SITE_MARKER=kernelopt_triton source bench/h200_site.sh
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  echo "$(nproc) CPUs, $(python3 --version), host $(hostname), commit $(git rev-parse HEAD 2>/dev/null)"
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
} > "$OUT/env.txt" 2>&1
KERNELS=(examples/triton/softmax.py examples/triton/layernorm.py examples/triton/vecadd.py
         examples/triton/softmax_fp16.py)
RUN_ARGS=${RUN_ARGS:---iterations 6 --patience 6 --final-rounds 6}
for mode in "$@"; do
  case $mode in
    one) args=(--gpus 0) ;;
    two) args=(--gpus 0,1) ;;
    dask) args=(--gpus 0,1 --executor dask) ;;
    dask1) args=(--gpus 0 --executor dask) ;;  # one worker: Dask's cost against "one"
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
  state=/tmp/kstate-campaign-$mode
  rm -rf "$state"
  t0=$(date +%s.%N)
  TRITON_CACHE_DIR=/tmp/triton-cache-$mode kernelopt campaign "${KERNELS[@]}" "${args[@]}" \
    --name "c-$mode" --run-args "$RUN_ARGS" --state-root "$state" > "$OUT/$mode.log" 2>&1
  echo "exit $?" >> "$OUT/$mode.log"
  t1=$(date +%s.%N)
  cp "$state/campaigns/c-$mode/summary.json" "$OUT/$mode-summary.json" 2>/dev/null
  cp "$state/campaigns/c-$mode/campaign.jsonl" "$OUT/$mode-campaign.jsonl" 2>/dev/null
  # throughput: candidates that went through the candidate gates (built, checked, screened or
  # rejected by a gate), and those accepted, per hour of the campaign's wall time
  python3 - "$mode" "$t0" "$t1" "$state" >> "$OUT/throughput.jsonl" <<'PY'
import json, pathlib, sys
mode, t0, t1, state = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), pathlib.Path(sys.argv[4])
done = accepted = 0
verdicts = {}
for journal in state.glob("runs/*/journal.jsonl"):
    events = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    results = [e for e in events if e["event"] == "candidate_result"]
    done += len(results)
    accepted += sum(1 for e in results if e["accepted"])
    verdict = next((e for e in events if e["event"] == "verdict"), {})
    header = events[0].get("target", {}) if events else {}
    verdicts[header.get("name", journal.parent.name)] = verdict.get("status")
hours = (t1 - t0) / 3600
print(json.dumps({"mode": mode, "wall_s": round(t1 - t0, 1), "candidates": done,
                  "accepted": accepted, "candidates_per_hour": round(done / hours, 1),
                  "accepted_per_hour": round(accepted / hours, 1), "verdicts": verdicts}))
PY
done
cat "$OUT/throughput.jsonl"
