#!/usr/bin/env bash
# kernelopt-llamacpp's child programs against REAL llama.cpp tools, on a machine without a GPU.
# The CUDA half (editing ggml-cuda, run-llamacpp verdicts) needs the H200: bench/h200_llamacpp.sh.
# What this proves on CPU: the op table from the real ggml-cuda.cu; the tbo wrapper's check,
# case pinning and bench against the real test-backend-ops (its CPU backend, same console
# format); the GGUF writer and the engine command against real llama-completion/llama-bench.
#
#   bash bench/cpu_llamacpp_real.sh            (from the repository root, kernelopt-llamacpp[gguf]
#                                               installed; fetches the llama_cpp_python sdist)
# Env: SRC (a llama.cpp tree; default: the one vendored in llama_cpp_python 0.3.36, downloaded),
#      BUILD (default /tmp/llamacpp-cpu-build; reused when it already holds the tools),
#      OUT (default bench/results/out).
set -euo pipefail
OUT=${OUT:-bench/results/out}
BUILD=${BUILD:-/tmp/llamacpp-cpu-build}
mkdir -p "$OUT"
source bench/llamacpp_src.sh
T=$BUILD/bin/test-backend-ops
{ date -u +%Y-%m-%dT%H:%M:%SZ; uname -m; nproc; grep -m1 "model name" /proc/cpuinfo || true
  c++ --version | head -1; cmake --version | head -1; echo "SRC=$SRC"; } > "$OUT/env.txt"

if [ -x "$T" ] && [ -x "$BUILD/bin/llama-completion" ] && [ -x "$BUILD/bin/llama-bench" ]; then
  echo "reused $BUILD (build times not measured in this invocation)" > "$OUT/build.txt"
else  # the backend's configure, with the CUDA backend off (no nvcc here)
  t0=$(date +%s)
  cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_TOOLS=ON > "$OUT/configure.log" 2>&1
  t1=$(date +%s)
  cmake --build "$BUILD" --target test-backend-ops llama-completion llama-bench -j "$(nproc)" \
    > "$OUT/build.log" 2>&1
  t2=$(date +%s)
  echo "configure $((t1 - t0)) s, clean build of test-backend-ops llama-completion llama-bench" \
    "$((t2 - t1)) s on $(nproc) cores" > "$OUT/build.txt"
fi

say() { echo "== $*" | tee -a "$OUT/summary.txt"; }
: > "$OUT/summary.txt"
say "op table from $SRC/ggml/src/ggml-cuda/ggml-cuda.cu"
python3 -m kernelopt_llamacpp.ops "$SRC" > "$OUT/op-table.txt"
grep -E '^\| (SOFT_MAX|ROPE|RMS_NORM|MUL_MAT|OUT_PROD) ' "$OUT/op-table.txt" | tee -a "$OUT/summary.txt" || true

for op in SOFT_MAX ROPE; do
  say "$op: tbo check (test-backend-ops test -o $op -b CPU)"
  python3 -m kernelopt_llamacpp.tbo check --tool "$T" --op "$op" --backend CPU > "$OUT/$op-check.txt" 2>&1 \
    && echo "exit 0" >> "$OUT/summary.txt" || echo "exit $?" >> "$OUT/summary.txt"
  tail -1 "$OUT/$op-check.txt" | tee -a "$OUT/summary.txt"
  say "$op: tbo bench, first (pins the case), then second (the pinned case only)"
  rm -f "$OUT/$op.pin.json"
  for i in 1 2; do
    python3 -m kernelopt_llamacpp.tbo bench --tool "$T" --op "$op" --backend CPU \
      --pin "$OUT/$op.pin.json" > "$OUT/$op-bench-$i.txt" 2>&1 || echo "exit $?" >> "$OUT/$op-bench-$i.txt"
    python3 - "$OUT/$op-bench-$i.txt" "$OUT/$op.pin.json" >> "$OUT/summary.txt" <<'PY'
import json, sys
from kernelopt_core.measure.parsers import parse
from kernelopt_core.target import BenchSpec
from kernelopt_llamacpp import tbo
pin = json.load(open(sys.argv[2]))
spec = BenchSpec(format="regex", regex=tbo.line_regex(pin["case"]), unit="us")
reading = parse(spec, open(sys.argv[1]).read(), "tbo bench")
print(f"pinned {pin['case']} (checkable {pin['checkable']}, {len(pin['candidates'])} perf cases): "
      f"{reading.time_ms:.4f} ms parsed by the core's regex")
PY
  done
done

say "engine: random-weight GGUF with the tree's vocab, baseline then candidate (same build)"
python3 -m kernelopt_llamacpp.gguf_model --vocab "$SRC/models/ggml-vocab-llama-spm.gguf" \
  --out /tmp/kernelopt-random-llama.gguf > "$OUT/engine-model.txt" 2>&1
KERNELOPT_ENGINE_OUT=/tmp/kernelopt-engine-base.txt python3 -m kernelopt_llamacpp.engine \
  --build "$BUILD" --model /tmp/kernelopt-random-llama.gguf | tee -a "$OUT/summary.txt"
KERNELOPT_ENGINE_OUT=/tmp/kernelopt-engine-cand.txt KERNELOPT_ENGINE_REFERENCE=/tmp/kernelopt-engine-base.txt \
  python3 -m kernelopt_llamacpp.engine --build "$BUILD" --model /tmp/kernelopt-random-llama.gguf \
  | tee -a "$OUT/summary.txt"
cp /tmp/kernelopt-engine-base.txt "$OUT/engine-greedy-text.txt"
say "done"
