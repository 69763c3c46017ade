"""summary.json of a models results folder (bench/h200_models.sh run): one object per model.

    python3 bench/models_summary.py RESULTS_DIR [MORE_DIR ...] [--kernel-times DIR] > summary.json

Reads, under RESULTS_DIR: runs/<run_id>/ or kernelopt-runs-*/<run_id>/ {summary.json,
journal.jsonl} (the kernelopt runs; a campaign's model check from <model>-campaign/summary.json; the
model four ways from their model check, `model` in summary.json, else from
runs/<model>-compare.json: kernelopt_triton.model_compare run by the bench), runs/console-*.txt (the `timed`
lines: each `kernelopt run`'s wall, capture included), kernel-times/<model>-maxautotune.json
(bench/inductor_kernel_times.py: Inductor's max-autotune + coordinate descent per kernel,
do_bench), and with --gap DIR: DIR/<model>-gap.log (bench/inductor_mode_gap.py: each kernel's
captured, max-autotune and kernelopt configs by one timer, then the other, in one process: a
kernel's "same_timer"). Nothing is measured here: every number is copied or derived (Amdahl) from those.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any


def _stage_seconds(events: list[dict[str, Any]], stage: str) -> list[float]:
    """Seconds from each ``stage`` event to the next stage event (or the end)."""
    out = []
    stages = [e for e in events if e["event"] in ("stage", "end", "verdict")]
    for here, after in zip(stages, stages[1:], strict=False):
        if here.get("stage") == stage:
            out.append(after["t"] - here["t"])
    return out


def _preface_share(run: Path, kernel: str) -> float | None:
    """The kernel's share from the ranking the run printed first (preface.txt)."""
    preface = run / "preface.txt"
    found = re.search(rf"^\s*\d+\s+([\d.]+)%\s.*\s{re.escape(kernel)}$",
                      preface.read_text() if preface.is_file() else "", re.M)
    return float(found.group(1)) / 100.0 if found else None


def _walls(results: Path) -> dict[str, float]:
    walls: dict[str, float] = {}
    for console in sorted([*results.glob("runs/console-*.txt"), *results.glob("console*.txt")]):
        for m in re.finditer(r"== \[\d+s\] (\S+)-(?:run|campaign): exit \d+, ([\d.]+) s",
                             console.read_text()):
            walls[m.group(1)] = float(m.group(2))
    return walls


def _gaps(folder: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """model -> kernel -> {role: {config, harness_us, do_bench_us, ...}} from <model>-gap.log
    (bench/inductor_mode_gap.py: the captured, max-autotune and kernelopt configs, both timers)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for log in sorted(folder.glob("*-gap.log")):
        model = log.name[: -len("-gap.log")]
        for line in log.read_text().splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                out.setdefault(model, {})[row["kernel"]] = {
                    k: v for k, v in row.items() if isinstance(v, dict)}
    return out


def summarize(results: Path, more: tuple[Path, ...] = (), times_dir: Path | None = None,
              gap_dir: Path | None = None) -> list[dict[str, Any]]:
    """``results`` and ``more``: folders with runs/ or kernelopt-runs-*/ (and console*.txt,
    a campaign's <model>-campaign/summary.json); kernel-times/ from ``times_dir`` (default:
    ``results``); <model>-gap.log from ``gap_dir``."""
    walls: dict[str, float] = {}
    for folder in (results, *more):
        walls.update(_walls(folder))
    models: dict[str, dict[str, Any]] = {}
    # runs/ (h200_models.sh run) or kernelopt-runs-*/ (h200_collect.sh's copy of a state root)
    runs = sorted(p for folder in (results, *more)
                  for runs_dir in [folder / "runs", *folder.glob("kernelopt-runs-*")]
                  if runs_dir.is_dir() for p in runs_dir.iterdir() if (p / "summary.json").is_file())
    campaign_checks = {Path(path).stem: model["measured"] for folder in (results, *more)
                       for campaign_summary in folder.glob("*-campaign/summary.json")
                       for path, model in json.loads(campaign_summary.read_text())["models"].items()
                       if model.get("measured")}
    gaps = _gaps(gap_dir) if gap_dir else {}
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        events = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
        name = summary["target"]["name"]
        model, _, kernel = name.partition("-")
        entry = models.setdefault(model, {"model": model, "wall_s": walls.get(model),
                                          "kernels": [], "runs": []})
        entry["runs"].append(run.name)
        times_file = (times_dir or results) / "kernel-times" / f"{model}-maxautotune.json"
        autotuned = json.loads(times_file.read_text())["ms"] if times_file.is_file() else {}
        engine = summary.get("engine") or {}
        correctness = _stage_seconds(events, "correctness")
        gate_s = round(sum(_stage_seconds(events, "engine")), 1) or None
        if gate_s is not None:  # the slowest gate of the model's runs
            entry["engine_gate_s"] = max(gate_s, entry.get("engine_gate_s") or 0.0)
        entry.setdefault("engine_gate_s", None)
        entry.setdefault("correctness_s_per_candidate", []).extend(round(s, 1) for s in correctness)
        every = entry["correctness_s_per_candidate"]
        entry["correctness_s_median"] = round(statistics.median(every), 1) if every else None
        entry["kernels"].append({
            "name": kernel, "share": engine.get("time_share") or _preface_share(run, kernel),
            "baseline_us": round(1e3 * summary["baseline_ms"], 2),
            "kernelopt_us": round(1e3 * summary["final_ms"], 2),
            "inductor_max_autotune_us": (round(1e3 * autotuned[kernel], 2) if kernel in autotuned
                                         else None),
            "verdict": summary["status"], "speedup": summary["speedup"],
            "rounds_won": summary.get("rounds_won"), "noise_pct": summary.get("noise_pct"),
            "engine_gate": {k: engine.get(k) for k in ("passed", "speedup", "amdahl_speedup")},
            "engine_gate_s": gate_s,
        })
        if kernel in gaps.get(model, {}):  # one timer's readings of each config, one process
            entry["kernels"][-1]["same_timer"] = gaps[model][kernel]
        if summary.get("model") and summary["model"].get("modes"):  # the product's model check
            entry["model_check"] = summary["model"]
    for model, entry in models.items():
        checked = entry.pop("model_check", None) or campaign_checks.get(model)
        compare_file = next((f / "runs" / f"{model}-compare.json" for f in (results, *more)
                             if (f / "runs" / f"{model}-compare.json").is_file()),
                            results / "runs" / f"{model}-compare.json")
        if checked is not None:
            modes = {label: {**m, "match_eager": m["match"]} for label, m in checked["modes"].items()}
            entry["model_check_s"] = checked.get("seconds")
        elif compare_file.is_file():  # the bench's own four-way compare (results before it)
            modes = json.loads(compare_file.read_text())["modes"]
        else:
            continue
        ms = {key: modes[mode]["ms"] if mode in modes else None for key, mode in
              (("eager", "eager"), ("compile_default", "default"),
               ("max_autotune", "max-autotune"), ("kernelopt", "kernelopt"))}
        entry["model_ms"] = {k: round(v, 4) if v else None for k, v in ms.items()}
        entry["model_spread_pct"] = {mode: info["spread_pct"] for mode, info in modes.items()}
        entry["match"] = all(info["match_eager"] for info in modes.values())
        # Amdahl from the verified kernel wins only (a fallback's kernel is unchanged)
        share = sum(k["share"] or 0.0 for k in entry["kernels"] if k["verdict"] == "optimized")
        new = sum((k["share"] or 0.0) / k["speedup"] for k in entry["kernels"]
                  if k["verdict"] == "optimized")
        entry["amdahl_predicted"] = round(1.0 / (1.0 - share + new), 4)
        entry["measured_speedup"] = (round(ms["compile_default"] / ms["kernelopt"], 4)
                                     if ms["kernelopt"] and ms["compile_default"] else None)
        entry["measured_vs_max_autotune"] = (round(ms["max_autotune"] / ms["kernelopt"], 4)
                                             if ms["kernelopt"] and ms["max_autotune"] else None)
    return list(models.values())


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python3 bench/models_summary.py")
    parser.add_argument("results", type=Path, nargs="+", help="folders with runs/ in them")
    parser.add_argument("--kernel-times", type=Path, help="the folder with kernel-times/")
    parser.add_argument("--gap", type=Path, help="the folder with <model>-gap.log")
    ns = parser.parse_args()
    print(json.dumps(summarize(ns.results[0], tuple(ns.results[1:]), ns.kernel_times, ns.gap),
                     indent=1))
