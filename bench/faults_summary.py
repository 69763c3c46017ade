"""The fault corpus's results (issue 36), from the journals of real runs.

Two subcommands, used by bench/h200_faults.sh on the GPU and by tests/test_fault_corpus.py on
a CPU:

  fingerprint OUT DIR [DIR ...]   every file under each DIR by size and mtime (a stat walk,
                                  bounded), written to OUT as JSON: the before/after of a run
  summarize --backend NAME --corpus DIR --faults RUN_DIR [--clean RUN_DIR]
            [--tree-before F --tree-after F] [--markers F] [--exit-code N] --out SUMMARY
                                  one backend's entry, merged into SUMMARY (JSON)

Per fault kind: whether it was rejected, at which gate and why, whether that is what its
header expects, how long detection took (journal timestamps: the candidate's start to its
failing gate), and the run-level outcomes copied to each kind: whether the run's verdict is
the clean-only run's, and whether the clean candidate (last) was measured within the noise
band of its clean-only measurement. A kind whose header says ``expect: none`` is one that
kernelopt is not expected to catch on that backend (``applies: false``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from pathlib import Path
from typing import Any

MAX_FILES = 200_000  # a fingerprint stops here (and says so): bounded on a big tree
HEADER = re.compile(r"^(?://|#) (kind|expect|reason): (.+)$", re.M)


def fingerprint(roots: list[Path]) -> dict[str, Any]:
    """path -> [size, mtime_ns] of every file under each root; ``truncated`` if bounded."""
    files: dict[str, list[int]] = {}
    truncated = False
    for root in roots:
        for dirpath, _dirs, names in os.walk(root):
            for name in names:
                full = os.path.join(dirpath, name)
                try:
                    st = os.lstat(full)
                except OSError:
                    continue
                files[full] = [st.st_size, st.st_mtime_ns]
                if len(files) >= MAX_FILES:
                    truncated = True
                    break
            if truncated:
                break
    return {"roots": [str(r) for r in roots], "files": files, "truncated": truncated}


def changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Paths added, removed or rewritten between two fingerprints."""
    old, new = before["files"], after["files"]
    return sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p))


def expectations(corpus: Path) -> dict[str, dict[str, str]]:
    """File name -> its header lines (kind, expect, reason)."""
    found = {}
    for path in sorted(corpus.iterdir()):
        if path.is_file() and path.suffix in (".cpp", ".cu", ".py"):
            header = dict(HEADER.findall(path.read_text(encoding="utf-8")))
            if set(header) == {"kind", "expect", "reason"}:
                found[path.name] = header
    return found


def load_events(run_dir: Path) -> list[dict[str, Any]]:
    journal = run_dir / "journal.jsonl"
    if not journal.is_file():
        return []
    events = []
    for line in journal.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue  # a run killed mid-line
    return events


def candidate_files(events: list[dict[str, Any]]) -> dict[str, str]:
    """Candidate id -> the basename of the file it replayed (``--candidate REL=FILE``)."""
    out = {}
    for e in events:
        if e.get("event") == "candidate":
            description = str(e.get("description", ""))
            out[e["candidate"]] = Path(description.split("=", 1)[-1]).name
    return out


def outcome(events: list[dict[str, Any]], cid: str) -> dict[str, Any]:
    """What happened to one candidate: result, failing gate's time since its start."""
    started = next((e["t"] for e in events
                    if e.get("event") == "candidate" and e.get("candidate") == cid), None)
    result = next((e for e in events
                   if e.get("event") == "candidate_result" and e.get("candidate") == cid), None)
    if result is None:
        return {"candidate": cid, "finished": False, "rejected": None}
    failed = next((e for e in events if e.get("event") == "gate" and e.get("candidate") == cid
                   and not e.get("final") and not e.get("passed")), None)
    detected = failed["t"] if failed is not None else result["t"]
    return {
        "candidate": cid, "finished": True, "rejected": not result.get("accepted"),
        "failed_gate": result.get("failed_gate"), "reason": result.get("reason", ""),
        "log_tail": str(result.get("log_tail", ""))[-1500:],
        "seconds_to_detection": (round(detected - started, 3)
                                 if started is not None and not result.get("accepted") else None),
        "wall_s": result.get("wall_s"),
    }


def run_facts(run_dir: Path | None) -> dict[str, Any]:
    """The run's verdict, end and wall time, from its journal."""
    if run_dir is None:
        return {}
    events = load_events(run_dir)
    empty: dict[str, Any] = {}
    verdict = next((e for e in reversed(events) if e.get("event") == "verdict"), empty)
    end = next((e for e in reversed(events) if e.get("event") == "end"), empty)
    return {"dir": str(run_dir), "status": verdict.get("status"),
            "winner": verdict.get("description"), "winner_knobs": verdict.get("knobs"),
            "winner_file": Path(str(verdict.get("description", "")).split("=", 1)[-1]).name
            if verdict else None,
            "exit_code": end.get("exit_code"), "wall_seconds": end.get("wall_seconds"),
            "complete": bool(end)}


def measured(events: list[dict[str, Any]], cid: str) -> dict[str, Any]:
    """The candidate's own times: its screen readings and, if it reached them, its final
    (confirm) rounds with the A/A noise the confirm gate reported."""
    out: dict[str, Any] = {}
    for e in events:
        if e.get("event") != "gate" or e.get("candidate") != cid:
            continue
        metrics = e.get("metrics") or {}
        times = [t for t in metrics.get("candidate_ms", []) if isinstance(t, (int, float))]
        if e.get("gate") == "screen" and times:
            out["screen_ms"] = statistics.median(times)
            out["screen_speedup"] = metrics.get("speedup")
        if e.get("gate") == "confirm" and times:
            out["confirm_ms"] = statistics.median(times)
            out["confirm_ratio"] = metrics.get("median_ratio")
            out["noise_pct"] = metrics.get("noise_pct")
    return out


def compare_clean(faulty: dict[str, Any], clean: dict[str, Any],
                  min_noise_pct: float) -> dict[str, Any]:
    """The clean candidate in the faulty run against the clean-only run: its time (confirm's
    median when both have one, else screen's) within the larger reported noise band."""
    key = "confirm_ms" if "confirm_ms" in faulty and "confirm_ms" in clean else "screen_ms"
    if key not in faulty or key not in clean:
        return {"measure": None, "within_aa_band": None, "faults_run": faulty,
                "clean_run": clean}
    noise = max([n for n in (faulty.get("noise_pct"), clean.get("noise_pct"))
                 if isinstance(n, (int, float))] or [min_noise_pct])
    ratio = faulty[key] / clean[key]
    return {"measure": key, "ratio": round(ratio, 4), "band_pct": round(noise, 3),
            "within_aa_band": abs(ratio - 1.0) * 100.0 <= noise,
            "faults_run": faulty, "clean_run": clean}


def summarize(args: argparse.Namespace) -> dict[str, Any]:
    corpus = Path(args.corpus)
    wanted = expectations(corpus)
    events = load_events(Path(args.faults))
    files = candidate_files(events)
    by_file = {name: cid for cid, name in files.items()}
    clean_name = args.clean_name or (list(files.values())[-1] if files else None)
    faults_run, clean_run = run_facts(Path(args.faults)), run_facts(
        Path(args.clean) if args.clean else None)
    same = None
    if clean_run:  # the same status and the same winning code (the report's diff)
        same = (faults_run.get("status") == clean_run.get("status")
                and _diff(Path(args.faults)) == _diff(Path(args.clean)))
    band: dict[str, Any] = {"within_aa_band": None}
    if args.clean and clean_name in by_file:
        clean_events = load_events(Path(args.clean))
        clean_ids = {n: c for c, n in candidate_files(clean_events).items()}
        if clean_name in clean_ids:
            band = compare_clean(measured(events, by_file[clean_name]),
                                 measured(clean_events, clean_ids[clean_name]),
                                 args.min_noise_pct)
    tree_changed: list[str] | None = None
    if args.tree_before and args.tree_after:
        tree_changed = changed(json.loads(Path(args.tree_before).read_text()),
                               json.loads(Path(args.tree_after).read_text()))
    markers = ([line for line in Path(args.markers).read_text().splitlines() if line.strip()]
               if args.markers and Path(args.markers).is_file() else [])
    kinds: dict[str, Any] = {}
    for name, header in wanted.items():
        entry: dict[str, Any] = {
            "file": name, "expected_gate": header["expect"],
            "expected_reason": header["reason"], "applies": header["expect"] != "none",
        }
        cid = by_file.get(name)
        entry.update(outcome(events, cid) if cid else {"candidate": None, "finished": False,
                                                       "rejected": None})
        entry["as_expected"] = _as_expected(header, entry)
        # a kind this run did not replay (h200_faults.sh KINDS=...) says nothing of the run
        entry["verdict_same_as_clean"] = same if cid else None
        entry["later_candidates_within_aa_band"] = band.get("within_aa_band") if cid else None
        # the files this kind leaves behind are named after it (outside_write's markers)
        entry["files_outside_workspace_changed"] = (
            len(markers) if header["kind"] == "outside_write" else 0)
        # of those, the ones kernelopt named (the workspace gate's paths): $HOME and the
        # folders above the state root are not watched
        named = [e for e in events if e.get("event") == "gate" and e.get("candidate") == cid
                 and e.get("gate") == "workspace"]
        entry["files_outside_named_by_kernelopt"] = (
            len((named[0].get("metrics") or {}).get("paths", [])) if named else 0)
        kinds[header["kind"]] = entry
    return {
        "corpus": str(corpus), "exit_code": args.exit_code, "faults_run": faults_run,
        "clean_run": clean_run, "clean_candidate": clean_name, "verdict_same_as_clean": same,
        "clean_candidate_times": band,
        "user_tree_changed": tree_changed, "outside_markers": markers, "kinds": kinds,
    }


def _diff(run_dir: Path) -> str | None:
    path = run_dir / "report.diff"
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _as_expected(header: dict[str, str], entry: dict[str, Any]) -> bool | None:
    if not entry.get("finished"):
        return None
    if header["expect"] == "none":
        return entry["rejected"] is False
    text = f"{entry.get('reason', '')}\n{entry.get('log_tail', '')}"
    return (entry["rejected"] is True and entry.get("failed_gate") == header["expect"]
            and header["reason"] in text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 bench/faults_summary.py")
    sub = parser.add_subparsers(dest="mode", required=True)
    fp = sub.add_parser("fingerprint")
    fp.add_argument("out", type=Path)
    fp.add_argument("dirs", nargs="+", type=Path)
    sm = sub.add_parser("summarize")
    sm.add_argument("--backend", required=True)
    sm.add_argument("--corpus", required=True)
    sm.add_argument("--faults", required=True, help="the run directory of the faults run")
    sm.add_argument("--clean", help="the run directory of the clean-only run")
    sm.add_argument("--clean-name", help="the clean candidate's file name [the last candidate]")
    sm.add_argument("--tree-before")
    sm.add_argument("--tree-after")
    sm.add_argument("--markers", help="a file listing files the faults left outside")
    sm.add_argument("--exit-code", type=int)
    sm.add_argument("--min-noise-pct", type=float, default=1.0)
    sm.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    if args.mode == "fingerprint":
        args.out.write_text(json.dumps(fingerprint(args.dirs)))
        return 0
    if not (Path(args.faults) / "journal.jsonl").is_file():
        print(f"faults_summary: no journal in {args.faults}", file=sys.stderr)
    entry = summarize(args)
    whole: dict[str, Any] = (json.loads(args.out.read_text()) if args.out.is_file()
                             else {"schema": 1})
    whole.setdefault("backends", {})[args.backend] = entry
    args.out.write_text(json.dumps(whole, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
