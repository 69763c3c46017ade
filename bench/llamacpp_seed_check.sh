#!/usr/bin/env bash
# The harness's seeded inputs (plugins/kernelopt_llamacpp/kernelopt_llamacpp/harness.py) against
# the real ggml, on the CPU: test-backend-ops.cpp of the carried llama.cpp, harnessed, compiled
# into bench/llamacpp_seedcheck.cpp, which initializes an f16 and a q4_1 tensor of 4096 × 256
# after a first tensor of another size, and prints a hash of the bytes. The same seed must give
# the same hash in every process; another seed or no seed, another.
#   OUT=DIR bash bench/llamacpp_seed_check.sh   (.whl/llama.cpp-trimmed.tar.gz: make_llamacpp_tarball.sh)
set -euo pipefail
OUT=${OUT:-/tmp/seed-check}; mkdir -p "$OUT"
W=/tmp/seed-check-work; rm -rf "$W"; mkdir -p "$W"
tar -xzf .whl/llama.cpp-trimmed.tar.gz -C "$W"
T=$W/llama.cpp
python3 -c 'import sys; from kernelopt_llamacpp import harness
p = harness.patched(open(sys.argv[1]).read()); assert p and harness.seeds_inputs(p), "no seeded harness"
open(sys.argv[2], "w").write(p)' "$T/tests/test-backend-ops.cpp" "$W/tbo-patched.cpp"
cmake -S "$T" -B "$W/build" -G Ninja -DGGML_CUDA=OFF -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF > "$OUT/configure.log" 2>&1
ninja -C "$W/build" ggml > "$OUT/build.log" 2>&1
g++ -std=c++17 -O1 -w -DTBO_PATCHED="\"$W/tbo-patched.cpp\"" -I "$T/ggml/include" bench/llamacpp_seedcheck.cpp \
  -o "$W/seedcheck" -L "$W/build/bin" -lggml -lggml-base -lggml-cpu -Wl,-rpath,"$W/build/bin" -lpthread
{ for seed in 1 1 2 2; do for first in 16 100000; do for type in f16 q4_1; do
    echo "KERNELOPT_TBO_SEED=$seed first=$first $(KERNELOPT_TBO_SEED=$seed "$W/seedcheck" $type $first)"
  done; done; done
  for n in 1 2; do echo "unseeded first=16 $("$W/seedcheck" f16 16)"; done
} | tee "$OUT/hashes.txt"
