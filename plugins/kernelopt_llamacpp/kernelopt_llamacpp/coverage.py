"""What kernelopt did for a model's heaviest editable ops: ``python -m kernelopt_llamacpp.coverage
--state-root S --repo TREE [--campaign NAME] [--top 10]`` prints coverage.json — one object per
op among the top editable ops of the selection ``--top K`` wrote (top_ops.py): its share, whether
and on which case it is timed (or why not, from the source), the kernels the model ran for it
and those its pinned case dispatches, each knob offered with the kernels it reaches (reach.py),
the pinned case's bytes over its time (``pinned_rate``), and, for the ops a run optimized, the
candidates built, the verdict, the speedup, the median candidate cycle (journal: a candidate's
proposal to its result) and its roofline before and after against the run's measured peak."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from kernelopt_core.api import Knob, UsageError
from kernelopt_llamacpp.case_bytes import case_bytes
from kernelopt_llamacpp.reach import Reach, dispatched_instance


def knob_reach(knob: Knob, texts: dict[str, str], reach: Reach) -> list[str] | None:
    """The kernels a change of the knob's value reaches (its first file's edit); None: cannot
    tell."""
    text = texts.get(knob.file)
    match = re.search(knob.pattern, text, re.M) if text is not None else None
    if text is None or match is None:
        return None
    current = match.group(1)
    other = next((v for v in knob.values if v != current), None)
    if other is None:
        return None
    touched = reach.touched(knob.file, text[:match.start(1)] + other + text[match.end(1):])
    return sorted(touched) if touched is not None else None


def run_facts(run: Path) -> dict[str, Any]:
    if not (run / "summary.json").is_file():
        return {"run": run.name, "verdict": None}
    summary = json.loads((run / "summary.json").read_text())
    events = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()
              if line.strip()]
    proposed = {e["candidate"]: e["t"] for e in events if e["event"] == "candidate"}
    cycles = [e["t"] - proposed[e["candidate"]] for e in events
              if e["event"] == "candidate_result" and e.get("candidate") in proposed]
    return {"run": run.name, "verdict": summary.get("status"), "speedup": summary.get("speedup"),
            "baseline_ms": summary.get("baseline_ms"), "final_ms": summary.get("final_ms"),
            "noise_pct": summary.get("noise_pct"), "rounds_won": summary.get("rounds_won"),
            "candidates": summary.get("candidates"),
            "candidate_cycle_s": round(statistics.median(cycles), 1) if cycles else None,
            "wall_s": summary.get("wall_seconds"), "report_line": summary.get("report_line"),
            "roofline": roofline_facts(summary)}


def roofline_facts(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The op's bytes over its baseline's and final time against the run's measured peak: how
    far from its roofline the op was before the search and after (None: no bytes or peak)."""
    roof = summary.get("roofline") or {}
    nbytes, peak = roof.get("bytes"), roof.get("peak_gbps")
    if not nbytes or not peak:
        return None

    def rate(ms: float | None) -> float | None:
        return round(nbytes / (ms * 1e-3) / 1e9, 1) if ms else None

    before, after = rate(summary.get("baseline_ms")), rate(summary.get("final_ms"))
    return {"bytes": nbytes, "peak_gbps": peak, "baseline_gbps": before, "final_gbps": after,
            "baseline_of_peak": round(before / peak, 3) if before else None,
            "final_of_peak": round(after / peak, 3) if after else None,
            # a working set that fits in L2 is not held to the DRAM roofline (gates.md)
            "cache_resident": roof.get("cache_resident")}


def op_entry(row: dict[str, Any], root: Path, state: Path, digest: str, nodes: str | None,
             runs: dict[str, Path], table: dict[str, Any], model: str | None = None) -> dict[str, Any]:
    from kernelopt_llamacpp import harness, timing, tuning

    route = table[row["op"]]
    entry: dict[str, Any] = {"op": row["op"], "share": round(row["share"], 5),
                             "model_kernels": row["kernels"], "files": list(route.files),
                             # --top K's choice (top_ops.py): searched, or passed over and why
                             "chosen": row.get("chosen", False),
                             "passed_over": row.get("why") or None}
    source = (root / harness.FILE).read_bytes() if (root / harness.FILE).is_file() else b""
    try:
        added, match = timing.timed_cases(route, source, None, timing.model_node(route, nodes),
                                          model)
        entry.update(timed=True, why="", written_case=added[0] if added else None,
                     match=list(match) if match else None)
    except UsageError as exc:
        entry.update(timed=False, why=str(exc))
    pin_path = state / "llamacpp" / f"{digest}-{row['op']}.pin.json"
    pin = json.loads(pin_path.read_text()) if pin_path.is_file() else {}
    entry["pinned_case"] = pin.get("case")
    entry["pinned_rate"] = pinned_rate(row["op"], pin)
    entry["dispatched"] = [k.get("function") for k in pin.get("dispatched") or []]
    # whether the timed case runs a kernel the model ran for this op (None: not pinned yet)
    entry["dispatches_model_kernel"] = bool(set(entry["dispatched"]) & set(row["kernels"])) \
        if entry["dispatched"] else None
    texts = {f: (root / f).read_text(encoding="utf-8", errors="replace") for f in route.files}
    reach = Reach(texts)
    knobs = tuning.scan({f: t.encode() for f, t in texts.items()}, route.op, route.function)
    entry["knobs"] = [{"name": k.name, "file": k.file, "values": list(k.values),
                       "reaches": knob_reach(k, texts, reach)} for k in knobs]
    if entry["dispatched"]:
        launched = [dispatched_instance(k.get("kernel") or k["function"], k["function"])
                    for k in pin["dispatched"]]
        entry["dispatched_instances"] = launched
        for knob in entry["knobs"]:
            knob["reaches_dispatched"] = None if knob["reaches"] is None else \
                any(reach.may_run(t, k) for t in knob["reaches"] for k in launched)
    if row["op"] in runs:
        entry.update(run_facts(runs[row["op"]]))
    return entry


def pinned_rate(op: str, pin: dict[str, Any]) -> dict[str, Any] | None:
    """The pinned case's bytes over its time when pinned (the baseline's, before any search):
    the tool's kB/run, else the least its operands and output move (case_bytes.py)."""
    us, params = pin.get("us"), pin.get("params")
    if not us or params is None:
        return None
    nbytes = pin["kb"] * 1024 if pin.get("kb") else case_bytes(op, str(params))
    if not nbytes:
        return None
    return {"bytes": nbytes, "us": us, "gbps": round(nbytes / (us * 1e-6) / 1e9, 1)}


def campaign_runs(state: Path, name: str | None) -> dict[str, Path]:
    """Target name -> its run folder: the campaign's, else each op's newest run."""
    runs: dict[str, Path] = {}
    summary = state / "campaigns" / name / "summary.json" if name else None
    if summary is not None and summary.is_file():
        for result in json.loads(summary.read_text()).get("results", []):
            if (state / "runs" / result["run"]).is_dir():
                runs[result["target"]] = state / "runs" / result["run"]
        return runs
    for run in sorted((state / "runs").glob("*")) if (state / "runs").is_dir() else []:
        try:
            runs[json.loads((run / "summary.json").read_text())["target"]["name"]] = run
        except (OSError, ValueError, KeyError):
            continue
    return runs


def main(argv: list[str] | None = None) -> int:
    from kernelopt_llamacpp import ops

    parser = argparse.ArgumentParser(prog="python -m kernelopt_llamacpp.coverage")
    parser.add_argument("--state-root", required=True, type=Path)
    parser.add_argument("--repo", required=True, type=Path)
    parser.add_argument("--campaign")
    parser.add_argument("--top", type=int, default=10)
    a = parser.parse_args(argv)
    root = a.repo.resolve()
    digest = hashlib.sha1(str(root).encode()).hexdigest()[:10]
    chosen = a.state_root / "llamacpp" / f"{digest}-top.json"
    if not chosen.is_file():
        print(f"coverage: no {chosen}: run kernelopt with --top K on this tree first",
              file=sys.stderr)
        return 2
    selection = json.loads(chosen.read_text())
    table = ops.op_table(root)
    editable = [r for r in selection["ops"] if r["op"] in table
                and table[r["op"]].kind in ("kernel", "mixed")][:a.top]
    runs = campaign_runs(a.state_root, a.campaign)
    print(json.dumps({"profile": selection["profile"], "nodes": selection["nodes"],
                      "ops": [op_entry(r, root, a.state_root, digest, selection["nodes"], runs,
                                       table, selection.get("model")) for r in editable]},
                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
