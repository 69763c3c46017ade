#!/usr/bin/env bash
# ROPE's correctness check is three independent test-backend-ops runs (one per core seed).
# Times the product's check (three runs at once, whole and split over processes by the case
# list), then (unless SHARDS_ONLY=1) one run of the tool at -j 16, 8, 4 and 32 and three runs at
# once with -j 16 and with -j 5 each. Needs .whl/llama.cpp-trimmed.tar.gz; results in
# $OUT/rope-testjobs.txt.
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
SITE_MARKER=kernelopt_llamacpp source bench/h200_site.sh  # ccache from the carried wheel
export CCACHE_DIR=/tmp/ccache CCACHE_MAXSIZE=20G
REPO=/tmp/llama.cpp
[ -d "$REPO" ] || tar -xzf .whl/llama.cpp-trimmed.tar.gz -C /tmp
# laid out like a kernelopt workspace (WORK/NAME/base-src, base-build) and configured with the
# backend's arguments (compute capability, not "native"), so that with ccache's base directory
# at WORK a later run-llamacpp --op ROPE on this machine finds this build's objects in ccache
WORK=/tmp/kstate-llamacpp/work J=$WORK/testjobs
B=$J/base-build
# a baseline tree an earlier run-llamacpp built on this machine saves the ~4-minute build
# (ROPE's first; another op's tool is the same binary but for the harness's opt-in case)
for built in "$WORK"/llamacpp-{ROPE,*}-*/base-build; do
  [ -x "$built/bin/test-backend-ops" ] && B=$built && break
done
t0=$(date +%s)
if [ -x "$B/bin/test-backend-ops" ]; then
  echo "reusing $B" | tee "$OUT/rope-testjobs.txt"
else
  mkdir -p "$J" && rm -rf "$J/base-src" && cp -a "$REPO" "$J/base-src"
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
  CCACHE_BASEDIR=$WORK cmake -S "$J/base-src" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_TOOLS=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DGGML_CUDA_FA=OFF > "$OUT/configure.log" 2>&1
  CCACHE_BASEDIR=$WORK cmake --build "$B" --target test-backend-ops -j "$(nproc)" > "$OUT/build.log" 2>&1
fi
[ -x "$B/bin/test-backend-ops" ] || { echo "build failed: $OUT/build.log" | tee -a "$OUT/rope-testjobs.txt"; exit 1; }
echo "$B: ready after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/rope-testjobs.txt"
elapsed() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" "$1" "$(date +%s.%N)"; }
one() {  # one LABEL JOBS [OP]: a test run: wall, user and system seconds (CPU-bound when
  # user + sys is near nproc x wall), OK count
  TIMEFORMAT="%R s wall %U s user %S s sys"
  { time "$B/bin/test-backend-ops" test -o "${3:-ROPE}" -b CUDA0 -j "$2" > "$OUT/$1.txt" 2>&1; } 2> "$OUT/$1.time"
  echo "$1 -j $2 $(cat "$OUT/$1.time") $(grep -c "^  ${3:-ROPE}(.*): .*OK" "$OUT/$1.txt") OK $(grep -c 'FAIL' "$OUT/$1.txt") FAIL"
}
# the product's own check (python -m kernelopt_llamacpp.tbo check), three seeds' runs at once:
# whole (-o ROPE, which writes the case list), then each run split over 2, 3 and 4 processes by
# that list; SHARDS_ONLY=1 skips the tool-alone timings below (measured in call 9)
wrapper() {  # wrapper LABEL ARGS...: wall seconds and the wrapper's last line; this checkout's
  # code, not a wheel a warm machine may have installed from an older commit
  local label=$1 s; shift; s=$(date +%s.%N)
  PYTHONPATH="$PWD/plugins/kernelopt_llamacpp:$PWD${PYTHONPATH:+:$PYTHONPATH}" \
    python3 -m kernelopt_llamacpp.tbo check --tool "$B/bin/test-backend-ops" --op ROPE --runs 3 \
    --cases "$OUT/rope.cases.json" "$@" > "$OUT/$label.txt" 2>&1; local rc=$?
  echo "$label $* rc $rc $(elapsed "$s") s: $(tail -1 "$OUT/$label.txt")"
}
rm -f "$OUT/rope.cases.json"
one warmup16 16 | tee -a "$OUT/rope-testjobs.txt"  # the first GPU work after the build
wrapper wrap-whole --shards 1 --jobs 4 | tee -a "$OUT/rope-testjobs.txt"  # writes the list
[ -s "$OUT/rope.cases.json" ] || { echo "no case list: see $OUT/wrap-whole.txt" | tee -a "$OUT/rope-testjobs.txt"; exit 1; }
wrapper wrap-whole-again --shards 1 --jobs 4 | tee -a "$OUT/rope-testjobs.txt"
for shards in 2 3 4; do
  wrapper "wrap-shards$shards" --shards "$shards" --jobs 4 | tee -a "$OUT/rope-testjobs.txt"
done
wrapper wrap-shards2-j2 --shards 2 --jobs 2 | tee -a "$OUT/rope-testjobs.txt"
[ "${SHARDS_ONLY:-0}" = 1 ] && { nproc >> "$OUT/rope-testjobs.txt"; exit 0; }
# each worker opens its own CUDA backend and CPU reference backend: if opening them dominates,
# fewer workers are as fast
# the fixed cost: process start, every op's test cases built, backends opened (no case matches)
one nomatch16 16 NO_SUCH_OP | tee -a "$OUT/rope-testjobs.txt"
for j in 16 8 4; do one "single$j" "$j" | tee -a "$OUT/rope-testjobs.txt"; done
for j in 16 5; do
  s=$(date +%s.%N)
  one "three${j}-a" "$j" > "$OUT/three$j-a.line" & one "three${j}-b" "$j" > "$OUT/three$j-b.line" &
  one "three${j}-c" "$j" > "$OUT/three$j-c.line" & wait
  cat "$OUT"/three$j-?.line >> "$OUT/rope-testjobs.txt"
  echo "three at once -j $j: $(elapsed "$s") s" | tee -a "$OUT/rope-testjobs.txt"
done
one single32 32 | tee -a "$OUT/rope-testjobs.txt"
nproc >> "$OUT/rope-testjobs.txt"
