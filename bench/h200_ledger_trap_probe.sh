#!/usr/bin/env bash
# Issue 36, a diagnosis: the llama.cpp trap variant (a device-side assert in soft_max_f32,
# bench/llamacpp_faults.py) timed out under the check with the CUDA ledger loaded, where it
# failed in 13 s without it (2026-12-04). On a fresh machine, from .whl/llama.cpp-trimmed.tar.gz:
# builds test-backend-ops with the trap variant (the op runs' configure arguments) and the
# ledger library, then runs `test-backend-ops test -o SOFT_MAX -b CUDA0 -j 4` (one process with the -j of each of the
# check's; the check itself ran four such shards) plain, with the ledger,
# and with the ledger and GGML_NO_BACKTRACE=1. A run still alive after 25 s gets its processes'
# threads (kernel wait channels, stacks, and gdb's backtraces when gdb is here), then is killed.
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
t0=$(date +%s)
[ -d /tmp/llama.cpp ] || tar -xzf .whl/llama.cpp-trimmed.tar.gz -C /tmp
python3 bench/llamacpp_faults.py /tmp/llama.cpp /tmp/trap-variants > /dev/null || exit 1
cp /tmp/trap-variants/trap.cu /tmp/llama.cpp/ggml/src/ggml-cuda/softmax.cu
B=/tmp/trap-build
{ cmake -S /tmp/llama.cpp -B $B -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=ON \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF -DGGML_CUDA_FA=OFF \
  && timeout 470 cmake --build $B --target test-backend-ops -j16; } > "$OUT/build.txt" 2>&1 \
  || { tail -20 "$OUT/build.txt"; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s" | tee "$OUT/summary.txt"
CUPTI=$(PYTHONPATH=. python3 -c 'from kernelopt_core.cuda_ledger import cupti_library as c; print(c())')
LIB=/tmp/trap-ledger.so
cc -shared -fPIC -O2 "-DKO_CUPTI_PATH=\"$CUPTI\"" kernelopt_core/data/cuda_ledger.c -ldl -lpthread \
  -o $LIB || exit 1
T=$B/bin/test-backend-ops
{ echo "cupti: $CUPTI"; echo "gdb: $(command -v gdb || echo none)"; echo "lldb: $(command -v lldb || echo none)"
  ldd --version | head -1; } | tee -a "$OUT/summary.txt"
probe() {  # probe NAME ENV...
  local name=$1; shift
  local t1; t1=$(date +%s.%N)
  env "$@" timeout -s KILL 40 "$T" test -o SOFT_MAX -b CUDA0 -j 4 > "$OUT/$name.txt" 2>&1 &
  local pid=$!
  for _ in $(seq 25); do sleep 1; kill -0 $pid 2>/dev/null || break; done
  if kill -0 $pid 2>/dev/null; then
    { ps -eo pid,ppid,stat,wchan:32,etimes,cmd --forest | grep -v "ps -eo" | tail -25
      for p in $(pgrep -f "$T"; pgrep -x gdb; pgrep -x lldb); do echo "== pid $p $(cat /proc/$p/cmdline | tr '\0' ' ' | cut -c1-120)"
        for t in /proc/$p/task/*; do echo "-- $t $(cat $t/comm) $(cat $t/wchan)"; cat $t/stack 2>/dev/null | head -6; done
        command -v gdb >/dev/null && timeout 20 gdb -p $p -batch -ex "thread apply all bt 14" 2>&1 | grep -v "^\[" | tail -150
      done; } > "$OUT/$name.stacks.txt" 2>&1
    pkill -KILL -f "$T"; pkill -KILL -x gdb
  fi
  wait $pid; local rc=$?
  echo "$name: exit $rc in $(python3 -c "import time; print(round(time.time() - $t1, 1))") s; $(grep -c . "$OUT/$name.txt") lines; last: $(grep . "$OUT/$name.txt" | tail -1 | cut -c1-160)" | tee -a "$OUT/summary.txt"
}
probe plain
probe ledger CUDA_INJECTION64_PATH=$LIB KERNELOPT_CUDA_LEDGER=/tmp/trap-ledger.txt
probe ledger-nobt CUDA_INJECTION64_PATH=$LIB KERNELOPT_CUDA_LEDGER=/tmp/trap-ledger.txt GGML_NO_BACKTRACE=1
probe plain-again
cat /tmp/trap-ledger.txt >> "$OUT/summary.txt" 2>/dev/null
echo "done in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
