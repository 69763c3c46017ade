#!/usr/bin/env bash
# Real torch.compile architectures on the H200 (examples/models/: a Llama-style decoder prefill,
# GPT-2 small, a timm ViT-B/16; random weights from a config, nothing downloaded).
#   bash bench/h200_models.sh probe [MODEL ...]   capture + ranking, the top kernel's check
#        (wall of a 3-seed check process), the engine gate's pair mode on baseline vs itself
#        (A/A: its wall and noise), and the model four ways (python -m kernelopt_triton.model_compare, modes
#        eager, default, max-autotune)
#   bash bench/h200_models.sh run [MODEL ...]     `kernelopt run MODEL --top $TOP` with defaults
#        (its wall, verdicts, engine gate seconds, correctness seconds per candidate from the
#        journal; the model four ways with every winner in place: the run's model check);
#        KTIMES=1: each kernel as Inductor's default and max-autotune tuned it, by do_bench
#        (bench/inductor_kernel_times.py), then its captured, max-autotune and kernelopt
#        configs by kernelopt's harness and do_bench alike (bench/inductor_mode_gap.py);
#        COMPARE=1: the model four ways again by the bench's own model_compare call;
#        summary.json via bench/models_summary.py
#   bash bench/h200_models.sh campaign [MODEL ...]   `kernelopt campaign MODEL --top $TOP`
#        (jobs, verdicts, the campaign's one model check; its folder copied to $OUT)
#   bash bench/h200_models.sh gap [MODEL ...]     the top $TOP kernels as default and as
#        max-autotune tuned them: do_bench of each (bench/inductor_kernel_times.py, sources and
#        configs kept) and kernelopt's harness on the standalone file with each config
#        (bench/inductor_mode_gap.py; WINNERS=FILE: kernelopt's configs from earlier runs)
# From the repository root on the GPU machine, wheels in .whl/ (../shared/tools/h200-wheels).
# Results go to $OUT (default bench/results/models). Progress lines start with "==".
set -uo pipefail
OUT=${OUT:-bench/results/models}
TOP=${TOP:-1}
mkdir -p "$OUT"
source bench/h200_site.sh
export KERNELOPT_HOME=${KERNELOPT_HOME:-/tmp/kstate-models}
part=$1; shift
models=("$@"); [ ${#models[@]} -eq 0 ] && models=(examples/models/llama_prefill.py \
  examples/models/gpt2.py examples/models/vit.py)
t0=$(date +%s)
say() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
timed() {  # timed LABEL LIMIT CMD...: run, print the wall, keep the log
  local label=$1 limit=$2; shift 2
  local s; s=$(date +%s.%N)
  timeout --signal=INT --kill-after=15 "$limit" "$@" > "$OUT/$label.log" 2>&1
  local rc=$?
  say "$label: exit $rc, $(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" "$s") s"
  [ $rc -eq 0 ] || tail -15 "$OUT/$label.log"
  return $rc
}
kernel_times() {  # kernel_times MODEL M DIR: each kernel as default and as max-autotune tuned it
  local mode
  for mode in default max-autotune; do
    timed "$2-kernel-times-$mode" 400 python3 bench/inductor_kernel_times.py "$1" \
      --mode "$mode" --out "$3/$2-${mode/-/}.json" --sources "$3/$2-${mode/-/}"
  done
}
python3 -c 'import torch, transformers, timm, triton; print("torch", torch.__version__, "transformers", transformers.__version__, "timm", timm.__version__, "triton", triton.__version__)' | tee "$OUT/versions.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$OUT/versions.txt"

case "$part" in
  probe)
    for model in "${models[@]}"; do
      m=$(basename "$model" .py); cap=/tmp/cap-$m
      rm -rf "$cap"
      timed "$m-capture" 300 python3 -m kernelopt_triton.inductor capture "$model" --out "$cap" --steps 5 || continue
      cp "$cap/ranking.txt" "$OUT/$m-ranking.txt"; cat "$cap/ranking.txt"
      tar -czf "$OUT/$m-capture.tar.gz" -C "$cap" kernels.json profile.txt ranking.txt \
        device_events.json output_code kernels 2>/dev/null
      timed "$m-generate" 120 python3 -m kernelopt_triton.inductor generate "$cap" --top 3
      k=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernels"][0]["name"])' "$cap/kernels.json")
      t=$cap/targets
      timed "$m-check" 120 python3 -m kernelopt_triton.harness check "$t/$k.py" --seeds 1,2,3 --oracle "$t/${k}_orig.py"
      timed "$m-check-again" 120 python3 -m kernelopt_triton.harness check "$t/$k.py" --seeds 1,2,3 --oracle "$t/${k}_orig.py"
      timed "$m-engine-pair" 300 python3 -m kernelopt_triton.engine "$model" --kernel "$k" \
        --source "$t/$k.py" --baseline-source "$t/$k.py" --cache-dir "$cap/engine-cache"
      tail -1 "$OUT/$m-engine-pair.log"
      timed "$m-engine-pair-warm" 300 python3 -m kernelopt_triton.engine "$model" --kernel "$k" \
        --source "$t/$k.py" --baseline-source "$t/$k.py" --cache-dir "$cap/engine-cache"
      tail -1 "$OUT/$m-engine-pair-warm.log"
      timed "$m-compare" 420 python3 -m kernelopt_triton.model_compare "$model" \
        --modes eager,default,max-autotune --out "$OUT/$m-compare.json"
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print({k: (round(v["ms"],3), v["match_eager"], v.get("compile_s")) for k, v in d["modes"].items()})' "$OUT/$m-compare.json"
    done ;;
  run)
    for model in "${models[@]}"; do
      m=$(basename "$model" .py)
      before=$(ls "$KERNELOPT_HOME/runs" 2>/dev/null | wc -l)
      timed "$m-run" "${RUN_LIMIT:-300}" kernelopt run "$model" --top "$TOP" ${RUN_ARGS:-}
      grep -E "^(optimized|matched|fallback|unverified)|verdict" "$OUT/$m-run.log" | tail -4
      swaps=(); wins=()
      for run in $(ls -d "$KERNELOPT_HOME"/runs/* 2>/dev/null | tail -n +$((before + 1))); do
        s=$run/summary.json; [ -f "$s" ] || continue
        read -r status name < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(d["status"], d["target"]["name"])' "$s")
        say "$m: $name $status"
        [ "$status" = optimized ] || continue
        k=${name#"$m"-}; cap=$(ls -d "$KERNELOPT_HOME"/work/inductor-"$m"-*/ | head -1)
        win=/tmp/win-$m-$k; rm -rf "$win"; cp -r "$cap/targets" "$win"
        (cd "$win" && patch -s -p1 < "$run/report.diff") && swaps+=(--swap "$k=$win/$k.py") \
          && wins+=(--winner "$k=$win/$k.py")
      done
      if [ "${KTIMES:-0}" = 1 ]; then  # each kernel as default and max-autotune tuned it (do_bench)
        mkdir -p "$OUT/kernel-times"
        kernel_times "$model" "$m" "$OUT/kernel-times"
        # the captured, max-autotune's and kernelopt's configs of each kernel, by both timers
        cap=$(ls -d "$KERNELOPT_HOME"/work/inductor-"$m"-*/ | head -1)
        timed "$m-gap" 400 python3 bench/inductor_mode_gap.py "$cap/targets" \
          "$OUT/kernel-times/$m-maxautotune.json" ${wins[@]+"${wins[@]}"}
      fi
      [ "${COMPARE:-0}" = 1 ] || continue  # the run's own model check has the model four ways
      modes=eager,default,max-autotune; [ ${#swaps[@]} -gt 0 ] && modes=$modes,kernelopt
      timed "$m-compare" 300 python3 -m kernelopt_triton.model_compare "$model" --modes "$modes" \
        "${swaps[@]}" --out "$OUT/$m-compare.json"
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print({k: (round(v["ms"],3), v["match_eager"], v.get("compile_s")) for k, v in d["modes"].items()})' "$OUT/$m-compare.json"
    done ;;
  campaign)  # kernelopt campaign MODEL --top $TOP: its kernels under one budget, one model check
    for model in "${models[@]}"; do
      m=$(basename "$model" .py); name=$m-top$TOP-$(date +%H%M%S)
      timed "$m-campaign" "${RUN_LIMIT:-560}" kernelopt campaign "$model" --top "$TOP" \
        --name "$name" ${RUN_ARGS:-}
      tail -25 "$OUT/$m-campaign.log"
      cp -r "$KERNELOPT_HOME/campaigns/$name" "$OUT/$m-campaign" 2>/dev/null
    done ;;
  gap)  # each top kernel: default vs max-autotune config, by do_bench and by kernelopt's harness
    for model in "${models[@]}"; do
      m=$(basename "$model" .py); cap=/tmp/cap-$m; kt=$OUT/kernel-times
      rm -rf "$cap"; mkdir -p "$kt"
      timed "$m-capture" 300 python3 -m kernelopt_triton.inductor capture "$model" --out "$cap" --steps 5 || continue
      timed "$m-generate" 120 python3 -m kernelopt_triton.inductor generate "$cap" --top "$TOP"
      kernel_times "$model" "$m" "$kt"
      timed "$m-gap" 400 python3 bench/inductor_mode_gap.py "$cap/targets" "$kt/$m-maxautotune.json" \
        ${WINNERS:+--winners-json "$WINNERS"}
      cat "$OUT/$m-gap.log"; cp -r "$cap/targets" "$OUT/$m-targets"
    done ;;
  *) echo "usage: $0 probe|run|campaign|gap [MODEL ...]" >&2; exit 2 ;;
esac
say "done"
