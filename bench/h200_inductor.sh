#!/usr/bin/env bash
# torch.compile models on the H200: capture + ranking, the tuner per top kernel, the engine gate,
# and Inductor's own max-autotune + coordinate descent per kernel, side by side.
#
# The `inductor` suite (until issue 56 this script was bench/h200_triton.sh).
# Run from the repository root on the GPU machine with wheels in .whl/ (../shared/tools/h200-wheels):
#   bash bench/h200_inductor.sh [MODEL ...]    (default: examples/pointwise_fused.py examples/mlp.py)
# The earlier bench/h200_inductor.sh's calls, which recorded fixtures and results, still work:
# `models [MODEL ...]` is this script with PRODUCT=0 by default, `standalone [KERNEL ...]` is
# bench/h200_tuner_vs_grid.sh.
# Results go to $OUT (default bench/results/triton). Sized for a 10-minute device call: TOP kernels
# per model (default 1), ITER tuner iterations (default 6), RUN_ARGS more `kernelopt run` flags, SKIP_TIMES=1 skips Inductor's own timings, TIMES_FROM=DIR takes an earlier call's. Progress lines start with "==".
set -uo pipefail
case "${1:-}" in
  standalone) shift; exec bash bench/h200_tuner_vs_grid.sh "$@" ;;
  models) shift; PRODUCT=${PRODUCT:-0} ;;
esac
OUT=${OUT:-bench/results/triton}
TOP=${TOP:-1} ITER=${ITER:-6}
mkdir -p "$OUT"
source bench/h200_site.sh
export KERNELOPT_HOME=/tmp/kstate-triton
models=("$@"); [ ${#models[@]} -eq 0 ] && models=(examples/pointwise_fused.py examples/mlp.py)
t0=$(date +%s)
say() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
summary="$OUT/summary.txt"; : > "$summary"

for model in "${models[@]}"; do
  m=$(basename "$model" .py); cap=/tmp/cap-$m
  say "$m: capture (default torch.compile) + ranking"
  rm -rf "$cap"
  python3 -m kernelopt_triton.inductor capture "$model" --out "$cap" --steps 5 > "$OUT/$m-capture.log" 2>&1 \
    || { say "$m: capture failed"; tail -20 "$OUT/$m-capture.log"; continue; }
  cp "$cap/ranking.txt" "$OUT/$m-ranking.txt"; cat "$cap/ranking.txt"
  # the capture as a CI fixture: output code, profiler table, device events, kernels.json
  tar -czf "$OUT/$m-capture.tar.gz" -C "$cap" kernels.json profile.txt ranking.txt \
    device_events.json output_code kernels 2>/dev/null
  python3 -m kernelopt_triton.inductor generate "$cap" --top "$TOP" | tee -a "$OUT/$m-capture.log"

  if [ -n "${TIMES_FROM:-}" ]; then  # an earlier call's Inductor times (same session)
    cp "$TIMES_FROM/$m-default.json" "$TIMES_FROM/$m-maxautotune.json" "$TIMES_FROM/$m-times.log" "$OUT/"
  elif [ "${SKIP_TIMES:-0}" != 1 ]; then
    say "$m: Inductor per-kernel times, default and max-autotune + coordinate descent"
    python3 bench/inductor_kernel_times.py "$model" --mode default --out "$OUT/$m-default.json" \
      > "$OUT/$m-times.log" 2>&1
    python3 bench/inductor_kernel_times.py "$model" --mode max-autotune --out "$OUT/$m-maxautotune.json" \
      >> "$OUT/$m-times.log" 2>&1
  fi
  grep -E '^ +(default|max-autotune) ' "$OUT/$m-times.log"

  for f in "$cap"/targets/*.json; do
    k=$(basename "$f" .json); src="$cap/targets/$k.py"
    [ -e "$src" ] || continue  # skipped.json, or a kernel generate skipped
    say "$m/$k: kernelopt run (tuner, $ITER iterations)"
    before=$(ls "$KERNELOPT_HOME"/runs 2>/dev/null || true)
    kernelopt run "$src" --iterations "$ITER" --patience 3 ${RUN_ARGS:-} > "$OUT/$m-$k-run.log" 2>&1
    echo "exit $?" >> "$OUT/$m-$k-run.log"
    # this kernel's run only: a run that failed before making one must not pick up the last one's
    run=$(comm -13 <(echo "$before") <(ls "$KERNELOPT_HOME"/runs 2>/dev/null) | tail -1)
    run=${run:+$KERNELOPT_HOME/runs/$run}
    tuned=$cap/tuned; rm -rf "$tuned"; cp -r "$cap/targets" "$tuned"
    if [ -n "$run" ] && [ -s "$run/report.diff" ]; then
      (cd "$tuned" && git apply -p1 "$run/report.diff" 2>/dev/null || patch -p1 -s < "$run/report.diff")
    fi
    [ -n "$run" ] && cp "$run/summary.json" "$OUT/$m-$k-summary.json"
    [ -n "$run" ] && cp "$run/journal.jsonl" "$OUT/$m-$k-journal.jsonl"
    say "$m/$k: the original and the tuned kernel file timed as Inductor's are (do_bench median)"
    python3 bench/triton_vs_do_bench.py "$src" "$tuned/$k.py" > "$OUT/$m-$k-dobench.jsonl" 2>> "$OUT/$m-$k-run.log"

    say "$m/$k: engine gate, baseline and tuned in ABBA order (each a fresh compile)"
    bash bench/h200_engine_abba.sh "$model" "$k" "$src" "$tuned/$k.py" \
      > "$OUT/$m-$k-engine.jsonl" 2> "$OUT/$m-$k-engine.log"
    python3 - "$m" "$k" "$OUT" "$cap/kernels.json" >> "$summary" <<'EOF'
import json, statistics, sys
from pathlib import Path
from kernelopt_core.gates.engine import amdahl
m, k, out, rec = sys.argv[1], sys.argv[2], Path(sys.argv[3]), json.loads(Path(sys.argv[4]).read_text())
def load(p):  # a JSON file, or a log whose last line is one
    try:
        text = Path(p).read_text().strip()
    except OSError:
        return {}
    for chunk in (text, text.splitlines()[-1] if text else ""):
        try:
            return json.loads(chunk)
        except ValueError:
            pass
    return {}
share = next((x["share"] for x in rec["kernels"] if x["name"] == k), 0.0)
s = load(out / f"{m}-{k}-summary.json")
def engine_runs(side):  # one side's ABBA runs (bench/h200_engine_abba.sh), their median time
    path = out / f"{m}-{k}-engine.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    runs = [r["run"] for r in map(json.loads, lines) if r.get("side") == side]
    times = sorted(r["time_ms"] for r in runs if r.get("time_ms"))
    matches = [r.get("match") for r in runs]
    return {"time_ms": statistics.median(times) if times else None,
            "times_ms": times, "match": all(matches) if matches and side == "tuned" else None,
            "detail": runs[-1].get("detail") if runs else None, "spread_pct": [r.get("spread_pct") for r in runs]}
base, cand = engine_runs("original"), engine_runs("tuned")
d = load(out / f"{m}-default.json").get("ms", {}).get(k)
a = load(out / f"{m}-maxautotune.json").get("ms", {}).get(k)
ks = s.get("speedup") or 1.0
predicted = amdahl(share, ks)
model_x = base.get("time_ms", 0) / cand["time_ms"] if cand.get("time_ms") else None
fmt = lambda v: f"{v * 1e3:.1f} us" if v else "n/a"
db = [json.loads(x) for x in (out / f"{m}-{k}-dobench.jsonl").read_text().splitlines() if x.strip()] \
    if (out / f"{m}-{k}-dobench.jsonl").exists() else []
screen = next((json.loads(x) for x in (out / f"{m}-{k}-journal.jsonl").read_text().splitlines()
               if '"screening"' in x), {}) if (out / f"{m}-{k}-journal.jsonl").exists() else {}
record = {"model": m, "name": k, "share": share,
          "inductor_default_us": d and d * 1e3, "inductor_max_autotune_us": a and a * 1e3,
          "kernelopt_original_us": db[0]["do_bench_ms"] * 1e3 if len(db) > 0 else None,
          "kernelopt_us": db[1]["do_bench_ms"] * 1e3 if len(db) > 1 else None,
          "verdict": s.get("status"), "speedup": ks, "report_line": s.get("report_line"),
          "gpu_seconds": s.get("gpu_seconds"), "screening": {x: screen.get(x) for x in ("grid", "evaluations", "failed", "gpu_seconds")},
          "model_ms_before": base.get("time_ms"), "model_ms_after": cand.get("time_ms"),
          "model_runs_ms": {"before": base["times_ms"], "after": cand["times_ms"]},
          "model_window_spread_pct": {"before": base["spread_pct"], "after": cand["spread_pct"]},
          "model_speedup": model_x, "amdahl": predicted, "match": cand.get("match")}
with open(out / "summary.jsonl", "a") as fh:
    fh.write(json.dumps(record) + "\n")
print(f"{m} {k}\n  share {100 * share:.1f}%  kernelopt: {s.get('status')} {ks:.3f}x "
      f"({s.get('baseline_ms')} -> {s.get('final_ms')} ms)  Inductor default {fmt(d)}, "
      f"max-autotune+coordesc {fmt(a)}\n  engine: base {base.get('time_ms')} ms, tuned {cand.get('time_ms')} ms, "
      f"model {model_x and round(model_x, 4)}x vs Amdahl {predicted:.4f}x, match {cand.get('match')} "
      f"({cand.get('detail')})")
EOF
    tail -3 "$summary"
  done
  if [ "${PRODUCT:-1}" = 1 ]; then  # the product path: capture, ranking, tuner, engine gate in the loop
    say "$m: kernelopt run $model --top $TOP (the engine gate inside the loop)"
    before=$(ls "$KERNELOPT_HOME"/runs 2>/dev/null || true)
    kernelopt run "$model" --top "$TOP" --iterations "$ITER" --patience 3 > "$OUT/$m-product.log" 2>&1
    echo "exit $?" >> "$OUT/$m-product.log"
    for name in $(comm -13 <(echo "$before") <(ls "$KERNELOPT_HOME"/runs 2>/dev/null)); do
      cp "$KERNELOPT_HOME/runs/$name/summary.json" "$OUT/$m-product-$name-summary.json"
      cp "$KERNELOPT_HOME/runs/$name/report.md" "$OUT/$m-product-$name-report.md"
    done
    tail -5 "$OUT/$m-product.log"
  fi
done
say "done"; cat "$summary"
