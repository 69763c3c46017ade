#!/usr/bin/env bash
# Issue 36 on a GPU: the GPU fault corpus (tests/faults/cuda, tests/faults/triton) replayed
# through the real product. Per backend, ONE kernelopt run replays every fault file as a
# --candidate and then a clean candidate (a correct faster variant, last), and a second run
# replays only the clean candidate (the verdict and the times to compare with). The user's
# tree, the state root and the directories above them are fingerprinted before and after;
# files the faults left outside are listed and removed. bench/faults_summary.py then writes
# $OUT/summary.json.
#
# Run from the repository root on the GPU machine, with wheels of this repo's packages in
# .whl/ (../shared/tools/h200-wheels builds them):
#   bash bench/h200_faults.sh [all|cuda|triton]     results go to $OUT (default bench/results/out)
#   bash bench/h200_faults.sh llamacpp-clean|llamacpp-faults|llamacpp   (not part of `all`)
#   KINDS="hang" bash bench/h200_faults.sh llamacpp   (the llama.cpp faults run replays only those)
# Sized for one 10-minute device call (both backends in DEADLINE=525 s after the set-up): one
# seed, one screen reading, two final rounds, 20 s per test/bench command for CUDA (30 s for
# Triton, whose worker's load makes the inputs). Each run is capped by `timeout` so a slow part
# cannot eat the next one's time (time a part leaves unused goes to the later ones); a capped
# run still leaves its journal, and the summary says so. Two device calls instead:
# `bash bench/h200_faults.sh cuda`, then `... triton` with the same OUT (summary.json merges).
#
# llama.cpp (SOFT_MAX at the model's node, the corpus generated from the tree's own softmax.cu
# by bench/llamacpp_faults.py): a cold build of test-backend-ops takes ~220 s, so it is not in
# `all`, and its two runs fit one 10-minute call only when ccache is already warm. Two calls on
# one warm machine: `llamacpp-clean` (the cold build, the clean candidate alone), then
# `llamacpp-faults` (the faults run, its build served by the shared ccache); either order works.
# Both keep their runs in /tmp/kfaults-llamacpp, so the second call's summary.json holds both;
# each call brings back what it has (the device tool's $OUT is fresh per call).
set -uo pipefail
OUT=${OUT:-bench/results/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
source bench/h200_site.sh
PART=${1:-all}
DEADLINE=${DEADLINE:-525}  # seconds for this script, the set-up above excluded
W=/tmp/kfaults            # the user's trees and the state roots of these runs
MARKER=kernelopt_fault_outside_write.txt
REPO=$(pwd)
RUNS_DIR=$W      # the state roots of run_one's runs
RESULTS=$OUT     # run_one's records (run dir, journal, fingerprints), one folder per run
t0=$(date +%s)
say() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
rm -rf "$W"; mkdir -p "$W"
RUN_CMD=()  # run_one's kernelopt command before its flags; empty: `run PROJECT`

{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=index,name,driver_version,memory.total \
    --format=csv,noheader; nvcc --version | tail -2
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  kernelopt --version; } > "$OUT/env.txt" 2>&1

markers() {  # markers FILE: list (then remove) the files outside_write left in /tmp and $HOME
  { find /tmp -xdev -name "$MARKER" 2>/dev/null; [ -e "$HOME/$MARKER" ] && echo "$HOME/$MARKER"; } \
    | sort -u > "$1"
  xargs -r rm -f < "$1"
}

left() {  # left LATER_S: the seconds this part may take, keeping LATER_S for the parts after it
  echo $(( t0 + DEADLINE - $(date +%s) - $1 ))
}

# run_one NAME PROJECT CAP_S TIMEOUT_S CANDIDATE...: one kernelopt run, its own state root
run_one() {
  local name=$1 project=$2 cap=$3 tmo=$4; shift 4
  if [ "$cap" -lt 30 ]; then say "$name: skipped, ${cap} s left"; return 0; fi
  local state=$RUNS_DIR/state-$name rec=$RESULTS/$name args=() c cmd=("${RUN_CMD[@]}")
  for c in "$@"; do args+=(--candidate "$c"); done
  [ ${#cmd[@]} -gt 0 ] || cmd=(run "$project")
  rm -rf "$state" "$rec"; mkdir -p "$rec"
  python3 bench/faults_summary.py fingerprint "$rec/tree-before.json" "$project"
  say "$name: kernelopt ${cmd[0]} (${#args[@]} args, at most ${cap} s)"
  KERNELOPT_HOME=$state KERNELOPT_TEST_TIMEOUT_S=$tmo KERNELOPT_BENCH_TIMEOUT_S=$tmo \
    timeout -k 15 "$cap" kernelopt "${cmd[@]}" --state-root "$state" --final-rounds 2 \
    --screen-runs 1 --seeds 1 "${args[@]}" > "$rec/run.out" 2> "$rec/run.err"
  local rc=$?
  echo "exit $rc" >> "$rec/run.err"
  echo "$rc" > "$rec/exit_code"
  python3 bench/faults_summary.py fingerprint "$rec/tree-after.json" "$project"
  markers "$rec/markers.txt"
  local run; run=$(ls -d "$state"/runs/* 2>/dev/null | tail -1)
  if [ -n "$run" ]; then
    echo "$run" > "$rec/run_dir"
    cp "$run"/{summary.json,report.md,report.diff,journal.jsonl} "$rec/" 2>/dev/null
    tar -czf "$rec/run.tar.gz" -C "$(dirname "$run")" "$(basename "$run")" 2>/dev/null
  fi
  # nothing of the run may still be running: list what is (then kill only those, by pid)
  pgrep -f "$state" > "$rec/left_running.txt" 2>/dev/null || true
  xargs -r kill -9 < "$rec/left_running.txt" 2>/dev/null || true
  say "$name: exit $rc, $(wc -l < "$rec/markers.txt") outside file(s), $(wc -l < "$rec/left_running.txt") left running"
}

summarize() {  # summarize BACKEND CORPUS CLEAN_NAME: the backend's entry of $OUT/summary.json
  local b=$1 corpus=$2 clean_name=$3 clean_dir=() rec=$RESULTS/$1
  [ -s "$rec-faults/run_dir" ] || { say "$b: no faults run to summarize"; return 0; }
  [ -s "$rec-clean/run_dir" ] && clean_dir=(--clean "$(cat "$rec-clean/run_dir")")
  python3 bench/faults_summary.py summarize --backend "$b" --corpus "$corpus" \
    --faults "$(cat "$rec-faults/run_dir")" "${clean_dir[@]}" --clean-name "$clean_name" \
    --tree-before "$rec-faults/tree-before.json" --tree-after "$rec-faults/tree-after.json" \
    --markers "$rec-faults/markers.txt" --exit-code "$(cat "$rec-faults/exit_code")" \
    --out "$OUT/summary.json"
}

markers "$OUT/stale-markers.txt"  # an earlier session's: not this one's to count

if [ "$PART" = all ] || [ "$PART" = cuda ]; then
  project=$W/cuda-project
  cp -r examples/cmake-cuda "$project"
  rm -rf "$project/build"
  # the clean candidate: the tuner's fast knobs (as h200_gate.sh mkfast)
  sed -e 's/^#define BLOCK_SIZE 32$/#define BLOCK_SIZE 512/' \
    -e 's/^#define ROWS_PER_BLOCK 1$/#define ROWS_PER_BLOCK 2/' \
    -e 's/^#define VEC 1$/#define VEC 4/' examples/cmake-cuda/kernel.cu > "$W/clean.cu"
  cands=()
  for f in "$REPO"/tests/faults/cuda/*.cu; do cands+=("kernel.cu=$f"); done
  later=0; [ "$PART" = all ] && later=180  # the Triton part's share
  run_one cuda-faults "$project" "$(left $((later + 70)))" 20 "${cands[@]}" "kernel.cu=$W/clean.cu"
  run_one cuda-clean "$project" "$(left "$later")" 20 "kernel.cu=$W/clean.cu"
  summarize cuda tests/faults/cuda clean.cu
fi

if [ "$PART" = all ] || [ "$PART" = triton ]; then
  project=$W/triton-project
  mkdir -p "$project"
  cp examples/triton/softmax.py "$project/softmax.py"
  # the clean candidate: a block of 4096 columns (measured 1.32x on the H200, Dec 1)
  sed -e 's/BLOCK_SIZE=128, num_warps=1)/BLOCK_SIZE=4096, num_warps=1)/' \
    examples/triton/softmax.py > "$W/clean.py"
  cands=()
  for f in "$REPO"/tests/faults/triton/*.py; do cands+=("softmax.py=$f"); done
  run_one triton-faults "$project/softmax.py" "$(left 45)" 30 "${cands[@]}" \
    "softmax.py=$W/clean.py"
  run_one triton-clean "$project/softmax.py" "$(left 0)" 30 "softmax.py=$W/clean.py"
  summarize triton tests/faults/triton clean.py
fi

case $PART in llamacpp|llamacpp-faults|llamacpp-clean)
  LW=/tmp/kfaults-llamacpp  # kept between this part's two calls: the summary needs both runs
  mkdir -p "$LW"
  # the vendored tree at /tmp/llama.cpp, unpacked once (its script also sets REPO: keep ours)
  repo_root=$REPO; source bench/h200_llamacpp_tree.sh; TREE=$REPO; REPO=$repo_root
  cd "$REPO" || exit 1
  export CCACHE_DIR=/tmp/ccache CCACHE_MAXSIZE=20G  # h200_llamacpp_op.sh's: a later build is warm
  NODES=$LW/nodes-prefill.txt
  gzip -dc plugins/kernelopt_llamacpp/tests/fixtures/h200-llama-model/nodes-prefill.txt.gz > "$NODES"
  # the corpus, from the tree's own softmax.cu (clean.cu: CUDA_SOFT_MAX_BLOCK_SIZE 64)
  rm -rf "$LW/variants"
  python3 bench/llamacpp_faults.py "$TREE" "$LW/variants" || exit 1
  RUNS_DIR=$LW RESULTS=$LW/results
  RUN_CMD=(run-llamacpp --op SOFT_MAX --repo "$TREE" --nodes "$NODES")
  rel=ggml/src/ggml-cuda/softmax.cu
  clean=$rel=$LW/variants/clean.cu
  if [ "$PART" != llamacpp-clean ]; then
    cands=()
    for f in "$LW"/variants/*.cu; do
      k=$(basename "$f" .cu)
      # KINDS="hang trap": only those kinds (a re-measure); default every kind
      [ "$k" = clean ] || { [ -n "${KINDS:-}" ] && [[ " $KINDS " != *" $k "* ]]; } \
        || cands+=("$rel=$f")
    done
    later=0; [ "$PART" = llamacpp ] && later=150  # the clean-only run's share (ccache warm)
    # 60 s per test/bench command: test-backend-ops starts slower than the CMake example's test
    run_one llamacpp-faults "$TREE" "$(left "$later")" 60 "${cands[@]}" "$clean"
  fi
  [ "$PART" = llamacpp-faults ] || run_one llamacpp-clean "$TREE" "$(left 0)" 60 "$clean"
  summarize llamacpp "$LW/variants" clean.cu
  cp -r "$LW/variants" "$OUT/llamacpp-variants"
  for d in "$RESULTS"/llamacpp-*; do [ -d "$d" ] && cp -r "$d" "$OUT/"; done
  RESULTS=$OUT
  ;;
esac

[ -f "$OUT/summary.json" ] && python3 - "$OUT/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for b, e in s.get("backends", {}).items():
    print(f"{b}: faults run {e['faults_run'].get('status')} (exit {e['exit_code']}), clean-only "
          f"{e['clean_run'].get('status')}, same verdict {e['verdict_same_as_clean']}, clean "
          f"candidate within band {e['clean_candidate_times'].get('within_aa_band')}")
    for k, v in e["kinds"].items():
        print(f"  {k:16} rejected={v['rejected']} gate={v.get('failed_gate')} "
              f"expected={v['expected_gate']} ok={v['as_expected']} "
              f"t={v.get('seconds_to_detection')} :: {str(v.get('reason'))[:120]}")
EOF
# the device tool brings back few files: everything but summary.json and env.txt in one tarball
# (only what this script wrote: the runs' folders and the stale-markers list, never an OUT's
# other files)
( cd "$OUT" && made=$(ls -d stale-markers.txt cuda-faults cuda-clean triton-faults triton-clean \
    llamacpp-faults llamacpp-clean llamacpp-variants 2>/dev/null; true) && [ -n "$made" ] \
    && tar -czf faults-runs.tar.gz $made && rm -rf $made )
say "done"
