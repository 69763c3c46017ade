#!/usr/bin/env bash
# Issue 10 (measurement engine v2) on the H200. From the repository root on the GPU machine,
# with wheels of this repo's packages in .whl/ (../shared/tools/h200-wheels):
#   bash bench/h200_measure.sh PART
# PART (each on the GPU named by CUDA_VISIBLE_DEVICES, its own state root):
#   env        date, GPU, driver, torch/triton versions
#   dobench    harness reading vs triton.testing.do_bench (softmax.py, softmax_fp16.py)
#   run        kernelopt run examples/triton/softmax.py --iterations 6 (GPU seconds per candidate)
#   hacks      the Triton reward-hack corpus replayed through the loop, policy on and off
#   aa N [C]   gate-selftest A/A, N decisions in self-tests of C, on examples/triton/softmax_fp16.py
#   planted N  gate-selftest, a planted 3 % speedup, N decisions (γ = 1.01)
#   sweep      bulk screening timed: 20 knob configurations of softmax.py in one worker
#   probe N    where slow readings come from: bench/level_probe.py (load phases of both
#              examples; readings back to back and with a 3 ms gap) and N planted decisions,
#              each beside an nvidia-smi log of clocks, power and clock-event reasons (10 ms)
# Results go to $OUT (default bench/results/out).
set -uo pipefail
OUT=${OUT:-bench/results/out}
mkdir -p "$OUT"
source bench/h200_site.sh
gpu=${CUDA_VISIBLE_DEVICES:-0}
export KERNELOPT_HOME=/tmp/kmeasure-$gpu
FP16=examples/triton/softmax_fp16.py
case "$1" in
  env)
    { date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
      python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
      git log -1 --format='commit %H' 2>/dev/null || true; } ;;
  dobench)
    python3 bench/triton_vs_do_bench.py examples/triton/softmax.py "$FP16" ;;
  run)
    /usr/bin/time -f 'wall %e s' kernelopt run examples/triton/softmax.py --iterations 6 --patience 6
    echo "exit $?"; save_run run-softmax ;;
  hacks|hacks-nopolicy)  # hacks: policy on, then off; hacks-nopolicy: only the second run
    args=(); for h in tests/reward_hacks/triton/*.py; do args+=(--candidate "softmax.py=$h"); done
    [ "$1" = hacks ] && kernelopt run examples/triton/softmax.py --final-rounds 3 --worker-rounds 6 "${args[@]}"
    [ "$1" = hacks ] && { echo "exit $?"; save_run hacks-policy; }
    kernelopt run examples/triton/softmax.py --final-rounds 3 --worker-rounds 6 \
      --gates build,correctness,screen "${args[@]}"
    echo "exit $?"; save_run hacks-nopolicy ;;
  aa)  # aa TRIALS [CHUNK]: TRIALS decisions, one self-test of CHUNK each (a partial result survives)
    chunk=${3:-$2}; done_=0; n=0
    while [ "$done_" -lt "$2" ]; do
      n=$((n + 1))
      kernelopt gate-selftest "$FP16" --trials "$chunk" --json > "$OUT/aa-gpu$gpu-$n.json"
      echo "aa chunk $n exit $?"; done_=$((done_ + chunk))
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print({k: d[k] for k in ("trials","false_accepts","seconds_per_decision")}, d["results"]["aa"])' "$OUT/aa-gpu$gpu-$n.json"
    done ;;
  planted)
    kernelopt gate-selftest "$FP16" --trials "$2" --planted-speedup 1.03 --no-aa --gamma 1.01 \
      --json > "$OUT/planted-gpu$gpu.json"
    echo "exit $?"; tail -c 1500 "$OUT/planted-gpu$gpu.json" ;;
  sweep)
    python3 bench/sweep_probe.py examples/triton/softmax.py BLOCK_SIZE=1024,2048,4096,8192 \
      num_warps=1,2,4,8,16 > "$OUT/sweep.json"
    echo "exit $?"; head -c 600 "$OUT/sweep.json" ;;
  probe)
    fields=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
    nvidia-smi --query-gpu=$fields --format=csv,noheader >/dev/null 2>&1 || fields=${fields%,*}
    nvidia-smi --query-gpu=$fields --format=csv,noheader -lms 10 > "$OUT/probe-smi.csv" &
    smi=$!; date -u +'host clock %s.%N'; nvidia-smi --query-gpu=timestamp --format=csv,noheader
    for k in examples/triton/softmax.py "$FP16"; do python3 bench/level_probe.py "$k" --load-profile; done
    python3 bench/level_probe.py "$FP16" --readings 300 > "$OUT/probe-nogap.jsonl"
    python3 bench/level_probe.py "$FP16" --readings 200 --gap-ms 3 > "$OUT/probe-gap3.jsonl"
    kernelopt gate-selftest "$FP16" --trials "$2" --planted-speedup 1.03 --no-aa --gamma 1.01 \
      --json > "$OUT/probe-planted.json"
    echo "exit $?"; kill $smi
    cp "$(ls -d "$KERNELOPT_HOME"/selftest/* | tail -1)/journal.jsonl" "$OUT/probe-planted-journal.jsonl" ;;
  *) echo "usage: $0 env|dobench|run|hacks|aa N|planted N" >&2; exit 2 ;;
esac
