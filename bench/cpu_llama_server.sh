#!/usr/bin/env bash
# The agents planner against a real OpenAI-compatible server nobody here wrote: llama.cpp's
# llama-server (CPU build) serving the random-weight GGUF of kernelopt_llamacpp.gguf_model.
# Its replies are nonsense: the run must end with a clear message, no traceback, no hang, and
# the report's call accounting must match the server's own request log (issue 14 item 12).
#
#   bash bench/cpu_llama_server.sh     (repository root; kernelopt, kernelopt-cmake and
#                                       kernelopt-llamacpp[gguf] installed)
# Env: SRC (a llama.cpp tree; default: the one vendored in llama_cpp_python 0.3.36, downloaded),
#      BUILD (default /tmp/llama-server-build; reused when it holds bin/llama-server),
#      OUT (default bench/results/out).
# Two cases, each a `kernelopt run examples/cmake-cpu --planner agents --iterations 2`:
#   nojinja  llama-server --no-jinja: it refuses requests that carry tools (an error reply), so
#            no LLM call succeeds and the run must exit 3 naming server, model and its words;
#   jinja    llama-server as it starts by default (jinja templates, tool calls parsed): calls
#            succeed, the random model never makes a usable tool call, so each attempt must be
#            a candidate row "rejected at planner" and the run ends 1.
# The server's own count of chat requests: its log's "processing task, is_child = 0" lines
# (one per completion it ran) plus "got exception" lines (one per request it refused).
set -uo pipefail
OUT=${OUT:-bench/results/out}
BUILD=${BUILD:-/tmp/llama-server-build}
mkdir -p "$OUT"
source bench/llamacpp_src.sh
SERVER=$BUILD/bin/llama-server
{ date -u +%Y-%m-%dT%H:%M:%SZ; uname -m; nproc; c++ --version | head -1; echo "SRC=$SRC";
  git -C . log -1 --format='kernelopt commit %H' 2>/dev/null || true; } > "$OUT/env.txt"
if [ ! -x "$SERVER" ]; then
  start=$(date +%s)
  cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=ON > "$OUT/configure.log" 2>&1 || { tail -20 "$OUT/configure.log"; exit 1; }
  cmake --build "$BUILD" --target llama-server -j"$(nproc)" > "$OUT/build.log" 2>&1 \
    || { tail -30 "$OUT/build.log"; exit 1; }
  echo "llama-server built in $(( $(date +%s) - start )) s" | tee "$OUT/build.txt"
fi
MODEL=/tmp/kernelopt-random-llama.gguf
python3 -m kernelopt_llamacpp.gguf_model --vocab "$SRC/models/ggml-vocab-llama-spm.gguf" \
  --out "$MODEL" > /dev/null || exit 1

run_case() {  # run_case NAME [SERVER FLAGS...]
  local name=$1; shift
  local port=$((18000 + RANDOM % 2000)) dir=/tmp/kopt-llama-$name
  rm -rf "$dir"; mkdir -p "$dir"; cp -r examples/cmake-cpu "$dir/project"
  # the random model says 512 tokens of context; the prompts need more (its weights do not care)
  "$SERVER" -m "$MODEL" --port "$port" -c 8192 -n 64 --override-kv llama.context_length=int:8192 \
    "$@" > "$OUT/$name-server.log" 2>&1 &
  local server=$!
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break; sleep 0.2
  done
  local t0; t0=$(date +%s)
  (cd "$dir" && OPENAI_API_KEY=unused KERNELOPT_LLM_BACKOFF_S=0.2 timeout 900 kernelopt run project \
     --planner agents --provider openai --base-url "http://127.0.0.1:$port/v1" \
     --model random-llama --iterations 2 > "$OUT/$name-stdout.txt" 2> "$OUT/$name-stderr.txt")
  local code=$?
  kill "$server"; wait "$server" 2>/dev/null
  local run; run=$(ls -d "$dir"/.kernelopt/runs/* | tail -1)
  cp "$run/summary.json" "$OUT/$name-summary.json"; cp "$run/report.md" "$OUT/$name-report.md"
  cp "$run/journal.jsonl" "$OUT/$name-journal.jsonl"
  python3 - "$name" "$code" "$(( $(date +%s) - t0 ))" "$OUT" <<'EOF'
import json, re, sys
from pathlib import Path
name, code, seconds, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
s = json.loads((out / f"{name}-summary.json").read_text())
log = (out / f"{name}-server.log").read_text(errors="replace")
served = (len(re.findall(r"processing task, is_child = 0", log))
          + len(re.findall(r"got exception", log)))
attempts = s["llm"]["calls"] + s["llm"]["failed_attempts"]
err = (out / f"{name}-stderr.txt").read_text()
row = {"case": name, "exit": code, "seconds": seconds, "status": s["status"],
       "report_line": s["report_line"], "llm_calls": s["llm"]["calls"],
       "failed_attempts": s["llm"]["failed_attempts"], "server_requests": served,
       "accounting_matches": attempts == served, "traceback": "Traceback" in err,
       "candidates": s["candidates"], "error": s.get("error"),
       "rows": [line for line in (out / f"{name}-report.md").read_text().splitlines()
                if line.startswith("| c")]}
print(json.dumps(row, indent=1))
with open(out / "summary.jsonl", "a") as fh:
    fh.write(json.dumps(row) + "\n")
EOF
}
: > "$OUT/summary.jsonl"
run_case nojinja --no-jinja
run_case jinja
