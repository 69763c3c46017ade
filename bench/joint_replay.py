"""Replay the tuner's joint search on an exhaustive grid recorded on the GPU (no GPU needed).

    python3 bench/joint_replay.py GRID.json JOURNAL.jsonl [--no-thread-rule]

GRID.json is bench/tuner_vs_grid.py's output (every configuration's ratio to the baseline and
the worker's seconds on it); JOURNAL.jsonl is the tuner run's journal from the same call (its
`knobs` event gives the baseline assignment). kernelopt_core.planners.joint.JointSearch runs on
the recorded ratios; each batch costs the recorded seconds of its configurations plus
BATCH_S (the baseline's reading that every sweep adds). Prints the evaluations, batches, the
replayed screening's share of the grid's GPU seconds and its winner against the grid's best.
Session 6 used it to check the thread rule on session 6's call-1 grids before running it
(bench/results/2026-12-01-h200-inductor/session6/call1-*.tar.gz, inside that folder's
raw.tar.xz, hold the journals)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kernelopt_core.planners.joint import JointSearch, threads_fit
from kernelopt_core.target import Knob

BATCH_S = 0.03  # the per-sweep baseline reading (~0.027 s on the H200)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("grid", type=Path)
    parser.add_argument("journal", type=Path)
    parser.add_argument("--no-thread-rule", action="store_true")
    a = parser.parse_args()
    data = json.loads(a.grid.read_text())
    results = data["grid_results"]
    table = {tuple(sorted(r["config"].items())): r for r in results}
    names = sorted({n for r in results for n in r["config"]})
    block = next(n for n in names if "BLOCK" in n)
    warps = next(n for n in names if n.startswith("num_warps"))
    values = {n: tuple(sorted({r["config"][n] for r in results}, key=int)) for n in (block, warps)}
    knobs_event = next(e for e in map(json.loads, a.journal.read_text().splitlines())
                       if e.get("event") == "knobs")
    start = {k["name"]: k["baseline"] for k in knobs_event["knobs"]}
    spent, batches = [0.0], []

    def evaluate(configs: list[dict[str, str]]) -> list[float | None]:
        batches.append(len(configs))
        spent[0] += BATCH_S
        rows = [table[tuple(sorted(c.items()))] for c in configs]
        spent[0] += sum(r["seconds"] for r in rows)
        return [r["ratio"] for r in rows]

    knobs = (Knob(block, "k.py", values[block], "x", "elements", "k"),
             Knob(warps, "k.py", values[warps], "x", "warps", "k"))
    rule = {} if a.no_thread_rule else {"plausible": threads_fit(knobs)}
    search = JointSearch([(block, values[block]), (warps, values[warps])], start, evaluate,
                         start_cost=1.0, **rule)
    ranked = search.run()
    best = min(r["ratio"] for r in results if r.get("ok"))
    grid_s = data["grid"]["sweep_gpu_seconds"]
    print(json.dumps({"kernel": data["kernel"], "evaluations": search.evaluations,
                      "batches": batches, "screening_s": round(spent[0], 3), "grid_s": grid_s,
                      "share": round(spent[0] / grid_s, 4), "winner": ranked[0][0],
                      "winner_vs_best": round(ranked[0][1] / best, 4)}))


if __name__ == "__main__":
    main()
