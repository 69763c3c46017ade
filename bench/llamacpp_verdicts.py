"""verdicts.json for issue 12, from the runs bench/h200_llamacpp.sh saved (each part's folder:
journal.jsonl, summary.json and the op's pin):

    python3 bench/llamacpp_verdicts.py OUT.json PART_DIR[:WORD] [...] [--builds DIR[:WORD] ...]

One object per run: op, case, checkable, status, speedup, candidates_built, clean_build_s (the
baseline's build step: configure + clean build), candidate_cycle_s (median over the built
candidates of build + correctness + screen, from their gate events), engine (generated tokens/s
before and after — 1000 / the median ms per token the engine gate's rounds measured — and
whether the outputs matched, when the engine gate ran). Only what the journal holds; a missing value is
null, never a guess.

A run that reused an earlier run's workspace (no ``warm_build`` event: its baseline tree was
already built) has no clean build of its own: its clean_build_s is null, unless one of the
``--builds`` runs built that same workspace (the journal's workspace folder) before it; the
latest such run's time is then used, ``clean_build_from`` names its folder, and
``clean_build_cache`` says what ``DIR:WORD`` said of it (e.g. ``cold``: ccache empty; ``warm``:
another op's build had filled it), since the journal does not record the cache's state. A
run that built its own baseline gets ``clean_build_cache`` from its own ``PART_DIR:WORD``.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from kernelopt_core.journal import read


def _stage_seconds(events: list[dict[str, Any]], stage: str) -> float | None:
    """Seconds from a ``stage`` event to the next event of the main flow."""
    for i, event in enumerate(events):
        if event["event"] == "stage" and event.get("stage") == stage:
            later = next((e for e in events[i + 1:] if e["event"] in ("stage", "warm_build")), None)
            return round(later["t"] - event["t"], 1) if later else None
    return None


def _cycles(events: list[dict[str, Any]]) -> list[float]:
    """Each candidate's build + correctness + screen: from its build stage to its result."""
    out = []
    for i, event in enumerate(events):
        if event["event"] == "stage" and event.get("stage") == "build" and "candidate" in event:
            cid = event["candidate"]
            result = next((e for e in events[i:] if e["event"] == "candidate_result"
                           and e["candidate"] == cid), None)
            gates = {e["gate"] for e in events[i:] if e["event"] == "gate"
                     and e.get("candidate") == cid and not e.get("final")}
            if result is not None and "build" in gates and result.get("failed_gate") != "build":
                out.append(result["t"] - event["t"])
    return out


def _per_s(ms: list[float] | None) -> float | None:
    return round(1000.0 / statistics.median(ms), 2) if ms else None


def verdict(part: Path) -> dict[str, Any]:
    events = read(part / "journal.jsonl")  # a torn last line skipped
    summary = json.loads((part / "summary.json").read_text()) if (part / "summary.json").is_file() \
        else {}
    target = events[0].get("target", {})
    pin: dict[str, Any] = next((json.loads(p.read_text()) for p in part.glob("*.pin.json")), {})
    results = [e for e in events if e["event"] == "candidate_result"]
    built = sum(1 for e in results if "build" in e.get("gates_passed", []))
    cycles = _cycles(events)
    engine = next((e for e in events if e["event"] == "gate" and e.get("gate") == "engine"
                   and e.get("final") and not e.get("skipped")), None)
    metrics = (engine or {}).get("metrics", {})
    workspace = next((e for e in events if e["event"] == "workspace"), {})
    built_here = any(e["event"] == "warm_build" for e in events)
    return {
        "part": part.name, "op": target.get("name"), "root": target.get("root"),
        "workspace": workspace.get("dir"), "started": events[0].get("t"),
        "case": pin.get("case"), "checkable": pin.get("checkable"),
        "status": summary.get("status"), "speedup": summary.get("speedup"),
        "report_line": summary.get("report_line"),
        "candidates_built": built, "candidates": len(results),
        "workspace_reused": not built_here,
        "clean_build_s": _stage_seconds(events, "baseline build") if built_here else None,
        "candidate_cycle_s": round(statistics.median(cycles), 1) if cycles else None,
        "candidate_cycles_s": [round(c, 1) for c in cycles],
        # the engine reports ms per generated token (its time_ms): tokens/s is 1000 / median
        "engine": {"tokens_per_s_before": _per_s(metrics.get("baseline_ms")),
                   "tokens_per_s_after": _per_s(metrics.get("candidate_ms")),
                   "match": engine.get("passed"), "reason": engine.get("reason")}
        if engine else None,
    }


def _spec(spec: str) -> tuple[str, str | None]:
    """DIR[:WORD] as (DIR, WORD or None)."""
    folder, _, cache = spec.partition(":")
    return folder, cache or None


def main(argv: list[str]) -> int:
    split = argv.index("--builds") if "--builds" in argv else len(argv)
    if split < 2 or argv.count("--builds") > 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    builds: list[tuple[str, str | None, dict[str, Any]]] = []  # (folder, its cache, its row)
    for folder, cache in map(_spec, argv[split + 1:]):
        if (Path(folder) / "journal.jsonl").is_file():
            builds.append((folder, cache, verdict(Path(folder))))
    rows = []
    for folder, cache in map(_spec, argv[1:split]):
        if (Path(folder) / "journal.jsonl").is_file():
            rows.append(verdict(Path(folder)))
            if cache and rows[-1]["workspace_reused"]:
                print(f"{folder}: ':{cache}' ignored, the run built no baseline of its own",
                      file=sys.stderr)
            elif cache:
                rows[-1]["clean_build_cache"] = cache
    for row in rows:
        if not row["workspace_reused"]:
            continue
        lenders = [b for b in builds if not b[2]["workspace_reused"] and b[2]["clean_build_s"]
                   and b[2]["workspace"] == row["workspace"] and b[2]["started"] < row["started"]]
        if lenders:
            source, said, lender = max(lenders, key=lambda b: b[2]["started"])
            row.update(clean_build_s=lender["clean_build_s"], clean_build_from=source,
                       clean_build_cache=said)
    out.write_text(json.dumps(rows, indent=1) + "\n")
    for row in rows:
        print(row["part"], row["op"], row["status"], row["candidates_built"],
              row["clean_build_s"], row["candidate_cycle_s"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
