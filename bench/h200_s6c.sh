#!/usr/bin/env bash
# Session 6, third GPU call (issue 11 with the sample's thread rule, commit d7b8893 on): the
# Triton kernel of examples/pointwise_fused.py against Inductor default and max-autotune +
# coordinate descent in the same call (bench/h200_triton.sh: capture, Inductor's times, the
# tuner, do_bench of both files, the engine gate A-B-B-A), then vecadd's tuner against its
# grid with the confirmation's nine readings (bench/tuner_vs_grid.py). Results in $OUT.
set -uo pipefail
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"
source bench/h200_site.sh
echo "== $(date -u +%T) pointwise_fused"
OUT=$OUT TOP=1 PRODUCT=0 bash bench/h200_triton.sh examples/pointwise_fused.py
OUT=$OUT bash bench/h200_inductor.sh standalone examples/triton/vecadd.py
echo "== $(date -u +%T) done"
