#!/usr/bin/env bash
# The engine gate's whole-model comparison on its own: MODEL compiled with kernel KERNEL swapped
# for ORIGINAL and for TUNED (standalone kernel files, inductor_gen.py), in ABBA order ROUNDS
# times (default 1), each run a fresh process and compile; TUNED's outputs are compared with
# the first ORIGINAL run's. One JSON line per run, tagged with its side, to stdout.
#   bash bench/h200_engine_abba.sh MODEL KERNEL ORIGINAL TUNED
set -uo pipefail
model=$1 kernel=$2 original=$3 tuned=$4
work=$(mktemp -d); mkdir -p "$work/original" "$work/tuned"
trap 'rm -rf "$work"' EXIT
cp "$original" "$work/original/$kernel.py"; cp "$tuned" "$work/tuned/$kernel.py"
n=0
for _ in $(seq "${ROUNDS:-1}"); do
  for side in original tuned tuned original; do
    n=$((n + 1)); ref=
    [ $side = tuned ] && ref=$work/reference.pt
    out=$work/run$n.pt; [ $n = 1 ] && out=$work/reference.pt
    line=$(env KERNELOPT_ENGINE_OUT="$out" ${ref:+KERNELOPT_ENGINE_REFERENCE=$ref} \
      python3 -m kernelopt_triton.engine "$model" --kernel "$kernel" \
      --source "$work/$side/$kernel.py" 2>> "$work/engine.log" | tail -1)
    case "$line" in "{"*) ;; *) line='{"error": "engine run failed"}' ;; esac
    echo "{\"side\": \"$side\", \"model\": \"$model\", \"kernel\": \"$kernel\", \"run\": $line}"
  done
done
tail -5 "$work/engine.log" >&2
