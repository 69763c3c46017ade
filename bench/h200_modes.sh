#!/usr/bin/env bash
# Issue 53 on the GPU: the engine finds the captured kernel by its code, and a model tuned on
# top of the compile its user has (max-autotune), checked in every mode in one process.
#   bash bench/h200_modes.sh identity MODEL [TOP]      capture (default compile), then the
#        engine's pair mode, baseline against itself, for each of the top TOP kernels (2): the
#        kernel found, by code, and the A/A band of the whole model
#   bash bench/h200_modes.sh swapcheck MODEL MODE [TOP]   capture in MODE, the top TOP (1)
#        standalone kernels through the engine's pair mode in MODE twice: A/A (the baseline's
#        file against itself) and a slowed candidate (XBLOCK=16, a template's 16x16 tiles), which must show the model
#        slower (the swap took effect, CUDA graphs included); the capture's Triton templates
#        (kernels/triton_tem_*.py) are kept beside
#   bash bench/h200_modes.sh template MODEL MODE   the capture `kernelopt run` makes in MODE, then
#        `kernelopt run MODEL --kernel T --compile-mode MODE` for its largest GEMM template T
#        (the tuner on the template's tiles, the gates, the engine, the model check)
#   bash bench/h200_modes.sh forms MODEL [TOP]   the default compile's capture with each reduction's
#        other form, then `kernelopt run MODEL --kernel K` for the TOP (1) largest reduction
#        kernels that have one (REDUCTION_FORM searched beside the launch keywords)
#   bash bench/h200_modes.sh depthwise MODEL   each depthwise convolution of the model as the
#        library runs it and as kernelopt's Triton kernel (kernelopt_triton/depthwise.py, its
#        fastest of 19 launches per shape), alone (do_bench) and in the whole model through
#        lowerings.lowered() and swap_depthwise() (reduce-overhead and default, each a compile
#        apart), outputs
#        checked (bench/depthwise_probe.py; ROUNDS= 10, LIMIT= seconds 540, SEARCH= seconds of
#        launch search, all shapes together, 200)
#   bash bench/h200_modes.sh modes MODEL [MODE]   the compile modes alone, no kernel tuned: one
#        model_compare process (MODE, default reduce-overhead, as the model's own compile,
#        against eager, default and max-autotune; MODES= to change that list), LIMIT= seconds (290)
#   bash bench/h200_modes.sh campaign MODEL MODE [TOP]   `kernelopt campaign MODEL --top TOP
#        --compile-mode MODE` (1), its folder and runs (MODEL-campaign.tar.gz) and its model
#        check (model_compare.json), the capture's race.json and depthwise.json; MODE
#        race: no --compile-mode, the capture races default against reduce-overhead (race.json).
#        CAMPAIGN_NAME= names the campaign (default MODEL-MODE-HHMMSS): a later call on the same
#        warm machine with the same CAMPAIGN_NAME, MODEL, MODE and TOP resumes it (finished runs
#        kept, a cut one resumed, then the model check again), for a model whose campaign and
#        model check do not fit one call (ConvNeXt's cold max-autotune)
#   bash bench/h200_modes.sh use MODEL CHECK   kernelopt_triton.optimized(model, CHECK) as a user
#        calls it (CHECK: a campaign's name under this KERNELOPT_HOME, or a folder): what went in,
#        outputs against eager, its time against the default compile (bench/use_optimized.py)
# From the repository root on the GPU machine, wheels in .whl/ (../shared/tools/h200-wheels).
# Results go to $OUT (default bench/results/modes); progress lines start with "==".
set -uo pipefail
OUT=${OUT:-bench/results/modes}; mkdir -p "$OUT"
source bench/h200_site.sh
export KERNELOPT_HOME=${KERNELOPT_HOME:-/tmp/kstate-modes}
t0=$(date +%s)
say() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
model_device_txt "$OUT/device.txt"
part=$1; model=$2; m=$(basename "$model" .py)
case "$part" in
  identity)
    cap=/tmp/cap-$m; rm -rf "$cap"
    timeout 200 python3 -m kernelopt_triton.inductor capture "$model" --out "$cap" > "$OUT/$m-capture.log" 2>&1
    say "$m capture: exit $?"
    timeout 60 python3 -m kernelopt_triton.inductor generate "$cap" --top "${3:-2}" >> "$OUT/$m-capture.log" 2>&1
    cp "$cap/ranking.txt" "$OUT/$m-ranking.txt"
    for k in $(python3 -c 'import json,sys; print(" ".join(k["name"] for k in json.load(open(sys.argv[1]))["kernels"][:int(sys.argv[2])]))' "$cap/kernels.json" "${3:-2}"); do
      t=$cap/targets/$k.py
      [ -f "$t" ] || { say "$k: no standalone file"; continue; }
      timeout 240 python3 -m kernelopt_triton.engine "$model" --kernel "$k" --source "$t" \
        --baseline-source "$t" --capture-source "$cap/kernels/$k.py" --cache-dir "$cap/cache" \
        > "$OUT/$m-engine-$k.log" 2>&1
      say "$k engine A/A: exit $?"; tail -1 "$OUT/$m-engine-$k.log" | cut -c1-600
    done ;;
  swapcheck)
    mode=$3; cap=/tmp/cap-$m-$mode; rm -rf "$cap"
    timeout 300 python3 -m kernelopt_triton.inductor capture "$model" --out "$cap" \
      --compile-mode "$mode" > "$OUT/$m-$mode-capture.log" 2>&1
    say "$m capture ($mode): exit $?"
    timeout 60 python3 -m kernelopt_triton.inductor generate "$cap" --top "${4:-1}" >> "$OUT/$m-$mode-capture.log" 2>&1
    cp "$cap/ranking.txt" "$OUT/$m-$mode-ranking.txt"; cp "$cap/kernels.json" "$OUT/$m-$mode-kernels.json"
    mkdir -p "$OUT/$m-$mode-templates"; cp "$cap"/kernels/triton_tem_*.py "$OUT/$m-$mode-templates/" 2>/dev/null
    for t in "$cap"/targets/*.py; do
      k=$(basename "$t" .py); case "$k" in *_orig) continue ;; esac
      # slowed: XBLOCK=16, or a GEMM template's 16x16 tiles (its grid must follow)
      python3 -c 'import re,sys; s=open(sys.argv[1]).read(); s=re.sub(r"XBLOCK=\d+", "XBLOCK=16", s, count=1); s=re.sub(r"(BLOCK_[MN]: tl.constexpr = )\d+", r"\g<1>16", s); open(sys.argv[2],"w").write(s)' "$t" "/tmp/slow-$k.py"
      for side in aa slow; do
        src=$t; [ $side = slow ] && src=/tmp/slow-$k.py
        timeout 240 python3 -m kernelopt_triton.engine "$model" --kernel "$k" --source "$src" \
          --baseline-source "$t" --capture-source "$cap/kernels/$k.py" --cache-dir "$cap/cache" \
          --compile-mode "$mode" --rounds 8 > "$OUT/$m-$mode-engine-$side-$k.log" 2>&1
        say "$k engine $side ($mode): exit $?"; tail -1 "$OUT/$m-$mode-engine-$side-$k.log" | cut -c1-700
      done
    done ;;
  template)
    mode=$3; digest=$(sha256sum "$model" | cut -c1-12)
    cap=$KERNELOPT_HOME/work/inductor-$m-$digest-$mode
    [ -f "$cap/kernels.json" ] || timeout 300 python3 -m kernelopt_triton.inductor capture \
      "$(realpath "$model")" --out "$cap" --compile-mode "$mode" > "$OUT/$m-$mode-capture.log" 2>&1
    cp "$cap/ranking.txt" "$OUT/$m-$mode-ranking.txt"; cp "$cap/kernels.json" "$OUT/$m-$mode-kernels.json"
    mkdir -p "$OUT/$m-$mode-templates"; cp "$cap"/kernels/triton_tem_*.py "$OUT/$m-$mode-templates/" 2>/dev/null
    k=$(python3 -c 'import json,sys; print(next((k["name"] for k in json.load(open(sys.argv[1]))["kernels"] if k["name"].startswith("triton_tem_")), ""))' "$cap/kernels.json")
    say "$m capture ($mode): largest template ${k:-none}"
    [ -n "$k" ] || exit 0
    timeout --signal=INT --kill-after=15 "${RUN_LIMIT:-420}" kernelopt run "$model" --kernel "$k" \
      --compile-mode "$mode" ${RUN_ARGS:-} > "$OUT/$m-$mode-template-run.log" 2>&1
    say "$k run: exit $?"; tail -25 "$OUT/$m-$mode-template-run.log" | cut -c1-400
    save_run "$m-$mode-template-run"
    cp "$cap"/targets/"$k"*.py "$OUT/$m-$mode-templates/" 2>/dev/null ;;
  forms)
    # each reduction kernel's other form (inductor_forms.py) on the GPU: the default compile's
    # capture with its second compile, then `kernelopt run MODEL --kernel K --compile-mode
    # default` for the TOP (1) largest reduction kernels that have a form, RUN_LIMIT each
    digest=$(sha256sum "$model" | cut -c1-12)
    cap=$KERNELOPT_HOME/work/inductor-$m-$digest-default
    grep -qs '"forms"' "$cap/kernels.json" || timeout 300 python3 -m kernelopt_triton.inductor capture \
      "$(realpath "$model")" --out "$cap" --compile-mode default > "$OUT/$m-forms-capture.log" 2>&1
    cp "$cap/ranking.txt" "$OUT/$m-forms-ranking.txt"; cp "$cap/kernels.json" "$OUT/$m-forms-kernels.json"
    say "$m capture: $(tail -1 "$OUT/$m-forms-capture.log" 2>/dev/null)"
    for k in $(python3 -c 'import json,sys; print(" ".join([k["name"] for k in json.load(open(sys.argv[1]))["kernels"] if k.get("form")][:int(sys.argv[2])]))' "$cap/kernels.json" "${3:-1}"); do
      timeout --signal=INT --kill-after=15 "${RUN_LIMIT:-240}" kernelopt run "$model" --kernel "$k" \
        --compile-mode default ${RUN_ARGS:-} > "$OUT/$m-forms-$k.log" 2>&1
      say "$k run: exit $?"; tail -25 "$OUT/$m-forms-$k.log" | cut -c1-400
      save_run "$m-forms-$k"
    done ;;
  depthwise)
    timeout "${LIMIT:-540}" python3 bench/depthwise_probe.py "$model" --rounds "${ROUNDS:-10}" \
      --search-seconds "${SEARCH:-200}" \
      --out "$OUT/$m-depthwise.json" > "$OUT/$m-depthwise.log" 2>&1
    say "$m depthwise: exit $?"; tail -8 "$OUT/$m-depthwise.log" | cut -c1-600 ;;
  modes)
    mode=${3:-reduce-overhead}
    timeout "${LIMIT:-290}" python3 -m kernelopt_triton.model_compare "$model" --compile-mode "$mode" \
      --modes "${MODES:-eager,default,max-autotune}" --rounds "${ROUNDS:-10}" --windows 3 \
      --cache-dir "/tmp/modes-cache-$m" --out "$OUT/$m-modes.json" > "$OUT/$m-modes.log" 2>&1
    say "$m modes: exit $?"; grep "^model_compare:" "$OUT/$m-modes.log"
    show_modes "$OUT/$m-modes.json" || tail -5 "$OUT/$m-modes.log" ;;
  campaign)
    mode=$3; name=${CAMPAIGN_NAME:-$m-$mode-$(date +%H%M%S)}
    given=(--compile-mode "$mode"); [ "$mode" = race ] && given=()
    timeout --signal=INT --kill-after=15 "${RUN_LIMIT:-480}" kernelopt campaign "$model" \
      --top "${4:-1}" "${given[@]}" --name "$name" ${RUN_ARGS:-} > "$OUT/$m-campaign.log" 2>&1
    say "$m campaign ($mode): exit $?"; tail -30 "$OUT/$m-campaign.log"
    # the campaign's ledger and its runs' summary, report and journal in one file (a call
    # brings back 8 files, none deeper than two folders under $OUT)
    ( cd "$KERNELOPT_HOME" && tar -czf "$OUT/$m-campaign.tar.gz" "campaigns/$name" \
        $(for run in runs/"$name"-*; do printf '%s ' "$run"/{summary.json,report.md,journal.jsonl}; done) ) 2>/dev/null
    cp "$KERNELOPT_HOME/campaigns/$name"/model-*/model_compare.json "$OUT/$m-model_compare.json" 2>/dev/null
    folder=$mode; [ "$mode" = race ] && folder=file
    cp "$KERNELOPT_HOME/work/inductor-$m-"*"-$folder/kernels.json" "$OUT/$m-kernels.json" 2>/dev/null
    cp "$KERNELOPT_HOME/work/inductor-$m-"*"-$folder/race.json" "$OUT/$m-race.json" 2>/dev/null
    # the capture's depthwise choice (per shape: the launches tried, both sides' GPU times)
    cp "$KERNELOPT_HOME/work/inductor-$m-"*"-$folder/depthwise.json" "$OUT/$m-capture-depthwise.json" 2>/dev/null ;;
  use)
    timeout "${LIMIT:-300}" python3 bench/use_optimized.py "$model" "$3" > "$OUT/$m-optimized.json" \
      2> "$OUT/$m-optimized.log"
    say "$m optimized ($3): exit $?"; tail -c 1500 "$OUT/$m-optimized.json"; tail -5 "$OUT/$m-optimized.log" ;;
esac
