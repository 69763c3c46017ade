#!/usr/bin/env bash
# What a real llama.cpp model dispatches on the GPU, recorded raw (one device call, ~7 min):
# a random-weight Llama-style GGUF at a 7B-class width, llama-bench's prompt (pp512) and
# generation (tg) under ncu (every kernel's time, grid, block, registers), the graph's nodes
# with their shapes and types (llama-eval-callback), and the kernels each op's perf cases in
# test-backend-ops launch. kernelopt-llamacpp's profile ranking, perf-case generation and knob
# filtering are tested against these recordings.
#
# Run from the repository root on the GPU machine, with .whl/ from ../shared/tools/h200-wheels
# gguf and .whl/llama.cpp-trimmed.tar.gz (bench/make_llamacpp_tarball.sh; it keeps examples/
# for llama-eval-callback):   OUT=DIR bash bench/h200_llamacpp_model.sh
# Env: ARCH (llama, or gpt2: NORM instead of RMS_NORM, GELU, learned positions; GPT-2 small's
#      768/3072/12 unless N_* say otherwise)
#      N_EMBD (4096) N_FF (11008) N_HEAD (32) N_LAYER (4) TG (16 generated tokens under ncu)
#      OPS (the ops whose perf cases are profiled)
#      PARTS ("bench nodes tbo", default those three): bench = llama-bench with and without
#      ncu, nodes = llama-eval-callback, tbo = each op's perf cases under ncu (only what the
#      parts need is built); product = the same ranking through the product,
#      `kernelopt profile TREE --backend llamacpp --engine --e2e --profiler ncu` (its own build)
set -uo pipefail
source bench/h200_llamacpp_tree.sh
B=/tmp/llamacpp-model-build
MODEL=/tmp/llama-model.gguf
t0=$(date +%s)
say() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
step() {  # step LABEL LIMIT CMD...: run with a time limit, log to $OUT/LABEL.log, say the wall
  local label=$1 limit=$2; shift 2
  local s=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$label.log" 2>&1
  local rc=$?
  say "$label: exit $rc, $(( $(date +%s) - s )) s"
  [ $rc -eq 0 ] || tail -8 "$OUT/$label.log"
  return $rc
}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -2;
  ncu --version | tail -1; nproc; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

# the build kernelopt-llamacpp uses for an op run with the engine gate, plus the eval callback
step configure 120 cmake -S "$REPO" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=ON || exit 1
PARTS=${PARTS:-bench nodes tbo}
if [[ " $PARTS " == *" product "* ]]; then
  step product 580 kernelopt profile "$REPO" --backend llamacpp --engine --e2e --profiler ncu \
    --state-root /tmp/kstate-llamacpp-model
  cp -r /tmp/kstate-llamacpp-model/profiles "$OUT/product-profiles" 2>/dev/null
  find "$OUT/product-profiles" -name 'ncu.csv' -exec gzip -f {} + 2>/dev/null
  [ "$PARTS" = product ] && { say done; exit 0; }
fi
targets=()
case " $PARTS " in *" bench "*) targets+=(llama-bench) ;; esac
case " $PARTS " in *" nodes "*) targets+=(llama-eval-callback) ;; esac
case " $PARTS " in *" tbo "*) targets+=(test-backend-ops) ;; esac
step build 330 cmake --build "$B" --target "${targets[@]}" -j "$(nproc)" || exit 1

if [ "${ARCH:-llama}" = gpt2 ]; then
  step model 120 python3 -m kernelopt_llamacpp.gguf_model --arch gpt2 \
    --vocab "$REPO/models/ggml-vocab-gpt-2.gguf" --n-embd "${N_EMBD:-768}" --n-ff "${N_FF:-3072}" \
    --n-head "${N_HEAD:-12}" --n-layer "${N_LAYER:-4}" --f16 --out "$MODEL" || exit 1
else
  step model 120 python3 -m kernelopt_llamacpp.gguf_model --vocab "$REPO/models/ggml-vocab-llama-spm.gguf" \
    --n-embd "${N_EMBD:-4096}" --n-ff "${N_FF:-11008}" --n-head "${N_HEAD:-32}" \
    --n-layer "${N_LAYER:-4}" --f16 --out "$MODEL" || exit 1
fi
ls -la "$MODEL" >> "$OUT/model.log"

# tokens/s without a profiler, then each phase under ncu (kernels serialized: shares, not speed)
if [[ " $PARTS " == *" bench "* ]]; then
step bench 120 "$B/bin/llama-bench" -m "$MODEL" -p 512 -n 128 -r 3 -ngl 99 -fa off -o jsonl
cp "$OUT/bench.log" "$OUT/bench.jsonl"
NCU_METRICS=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread
for phase in prefill decode; do
  if [ $phase = prefill ]; then args=(-p 512 -n 0); else args=(-p 0 -n "${TG:-16}"); fi
  step "ncu-$phase" 150 ncu --clock-control none --csv --print-units base --metrics "$NCU_METRICS" \
    --log-file "$OUT/ncu-$phase.csv" "$B/bin/llama-bench" -m "$MODEL" "${args[@]}" -r 1 -ngl 99 -fa off -o jsonl
done
fi

# the graph's nodes: op, result type and shape, sources' shapes (prompt of ~500 tokens, and one;
# llama-eval-callback runs without warm-up by itself)
if [[ " $PARTS " == *" nodes "* ]]; then
prompt=$(python3 -c 'print(" ".join(["the quick brown fox jumps over a lazy dog"] * 55))')
step nodes-prefill 120 "$B/bin/llama-eval-callback" -m "$MODEL" -p "$prompt" -c 1024 -ngl 99 -fa off
step nodes-decode 120 "$B/bin/llama-eval-callback" -m "$MODEL" -p "the" -c 1024 -ngl 99 -fa off
for phase in prefill decode; do
  grep -E '^common_debug_cb_eval:|ggml_debug' "$OUT/nodes-$phase.log" > "$OUT/nodes-$phase.txt"
  gzip -f "$OUT/nodes-$phase.log"
done
fi

# which kernels each op's perf cases launch (the first launches of `test-backend-ops perf -o OP`)
[[ " $PARTS " == *" tbo "* ]] && for op in ${OPS:-RMS_NORM NORM ROPE SOFT_MAX MUL ADD CPY GET_ROWS SWIGLU SILU SCALE CONT}; do
  step "tbo-perf-$op" 40 "$B/bin/test-backend-ops" perf -o "$op" -b CUDA0
  step "ncu-tbo-$op" 60 ncu --clock-control none --csv --print-units base --metrics "$NCU_METRICS" \
    --launch-count 60 --log-file "$OUT/ncu-tbo-$op.csv" "$B/bin/test-backend-ops" perf -o "$op" -b CUDA0
done
say done
