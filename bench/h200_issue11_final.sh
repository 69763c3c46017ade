#!/usr/bin/env bash
# Issue 11's last GPU call: the engine gate's whole-model comparison for each tuned kernel
# (bench/results/2026-12-01-h200-inductor/engine-inputs, from the tuner runs of the calls
# before), then the standalone tuner vs the exhaustive grid. Results under $OUT.
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
source bench/h200_site.sh
in=bench/results/2026-12-01-h200-inductor/engine-inputs
pf=triton_red_fused__softmax_add_exp_gelu_mean_mul_native_layer_norm_prepare_softmax_online_sigmoid_sub_0
echo "== $(date -u +%T) engine ABBA"
{
  bash bench/h200_engine_abba.sh examples/pointwise_fused.py $pf $in/pointwise_fused-original.py $in/pointwise_fused-tuned.py
  for k in triton_poi_fused_gelu_1 triton_red_fused_add_native_layer_norm_2; do
    bash bench/h200_engine_abba.sh examples/mlp.py $k $in/mlp-$k-original.py $in/mlp-$k-tuned.py
  done
} > "$OUT/engine-abba.jsonl" 2> "$OUT/engine-abba.err"
cut -c1-220 "$OUT/engine-abba.jsonl"
echo "== $(date -u +%T) standalone"
OUT=$OUT bash bench/h200_inductor.sh standalone
