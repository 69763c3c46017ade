#!/usr/bin/env bash
# The perf cases kernelopt-llamacpp writes from test-backend-ops' own test structs
# (kernelopt_llamacpp/perfcases.py), compiled into the real tool and run, on the CPU backend
# (no GPU needed): the harness's patch with NORM's case (the tool has none), MUL's at a
# Llama's broadcast norm-weight shape, SOFT_MAX's at its attention shape and a unary op the
# tool never spells out. Each case is then run in perf mode and, with the harness's
# variable, in test mode (selected by its full case string).
#   bash bench/cpu_llamacpp_perfcases.sh        (OUT=DIR for the logs; SRC=a llama.cpp tree)
# Takes ~8 min on 2 cores (most of it the CPU build of test-backend-ops).
set -euo pipefail
OUT=${OUT:-bench/results/out}
mkdir -p "$OUT"
source bench/llamacpp_src.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$SRC" "$work/llama.cpp"
python3 - "$work/llama.cpp" > "$OUT/cases.txt" <<'EOF'
import sys
from pathlib import Path
from kernelopt_llamacpp import harness, perfcases
tool = Path(sys.argv[1]) / harness.FILE
source = tool.read_text()
cases = (
    perfcases.generate(source, "NORM"),
    perfcases.generate(source, "MUL", (4096, 512, 1, 1), enum="GGML_OP_MUL", ne_b=(4096, 1, 1, 1)),
    perfcases.generate(source, "SOFT_MAX", (512, 512, 32, 1), enum="GGML_OP_SOFT_MAX"),
    perfcases.generate(source, "GELU_ERF", enum="GGML_UNARY_OP_GELU_ERF"),
)
tool.write_text(harness.patched(source, cases))
print("\n".join(cases))
EOF
cat "$OUT/cases.txt"
cmake -S "$work/llama.cpp" -B "$work/b" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
  -DLLAMA_BUILD_SERVER=OFF > "$OUT/configure.log" 2>&1
s=$(date +%s)
cmake --build "$work/b" --target test-backend-ops -j "$(nproc)" > "$OUT/build.log" 2>&1
echo "built test-backend-ops with the written cases in $(( $(date +%s) - s )) s" | tee "$OUT/summary.txt"
tool=$work/b/bin/test-backend-ops
for op in NORM MUL SOFT_MAX GELU_ERF; do
  "$tool" perf -o "$op" -b CPU > "$OUT/perf-$op.log" 2>&1
done
# the written cases' lines (their shapes as the tool prints them), then each alone in test mode
grep -hE 'NORM\(type=f32,ne=\[4096,512,1,1\]|MUL\(type=f32,ne=\[4096,1,1,1\],nr=\[1,512,1,1\]|SOFT_MAX\(type=f32,ne=\[512,512,32,1\]|GELU_ERF\(type=f32,ne_a=\[4096,512,1,1\]' \
  "$OUT"/perf-*.log | sed 's/\x1b\[[0-9;]*m//g' | tee -a "$OUT/summary.txt"
grep -hoE '^ +[A-Z_]+\((type=f32,ne=\[4096,512,1,1\],v=0[^)]*|type=f32,ne=\[4096,1,1,1\],nr=\[1,512,1,1\][^)]*)\)' \
  "$OUT"/perf-NORM.log "$OUT"/perf-MUL.log | sed 's/^ *//' | while read -r case; do
  rc=0
  KERNELOPT_TBO_PERF_IN_TEST=1 "$tool" test -o "$case" -b CPU > "$OUT/test-${case%%(*}.log" 2>&1 || rc=$?
  passed=$(sed 's/\x1b\[[0-9;]*m//g' "$OUT/test-${case%%(*}.log" | grep -E '^ +[0-9]+/[0-9]+ tests passed' || true)
  echo "test -o '$case': exit $rc,${passed:- no tests-passed line}" | tee -a "$OUT/summary.txt"
done
