"""The model check: after the runs of a model's kernels, the whole model measured every way the
user could run it, kernelopt's winners all in place at once — "is this better than what I have?"

The contract (docs/plugins.md): a backend whose targets are kernels of one program may offer
``model_compare(targets, winners, out_dir) -> Command | None``. ``winners`` maps a target's
name to a directory holding that target's editable files as its winner has them (only targets
that ended ``optimized``). The command runs the program in one process every way it knows and
prints one JSON line ``{"kernelopt_model": 1, "modes": {LABEL: {"ms": float, "spread_pct":
float, "match": bool, "windows": int, ...}, ...}, "baseline": LABEL, "kernelopt": LABEL}``:
``baseline`` is the mode kernelopt's winners replace kernels of, ``kernelopt`` what kernelopt
returns: the same mode with them (equal labels when there is no winner) or another mode the
same process measured faster, or that mode without them (``"choice": {"over": LABEL, "why":
str}`` says what it replaced and why), or
``{"kernelopt_model": 1, "error": str}``.

The result is journaled in every run it covers (event ``model_check``), so each run's
summary.json, report.md and report.html show it; a campaign journals it too. It is
information: it never changes a verdict.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import events, history, journal, process, report
from kernelopt_core.capabilities import ComparesModel
from kernelopt_core.lock import gpu_lock
from kernelopt_core.measure.parsers import json_objects
from kernelopt_core.target import Target

MARKER = "kernelopt_model"  # the result line's own key: other JSON the program logs is not it


@attrs.frozen
class Finished:
    """One target's finished run, as the model check sees it."""

    target: Target
    run_dir: Path


def winner_files(run_dir: Path, editable: Sequence[str]) -> dict[str, bytes] | None:
    """The editable files as the run's winner has them (its workspace tag); None when the run
    did not end optimized or its workspace is gone."""
    records = journal.effective(journal.read(run_dir / "journal.jsonl"))
    verdict = events.first(records, events.Verdict)
    repo = history.workspace_repo(records)
    ref = f"refs/tags/kernelopt/{run_dir.name}/winner".encode()
    if verdict is None or verdict.status != "optimized" or repo is None \
            or ref not in repo.refs:
        return None
    files = {rel: history.blob(repo, repo.refs[ref], rel) for rel in editable}
    return {rel: data for rel, data in files.items() if data is not None} or None


def amdahl(finished: Sequence[Finished], summaries: Sequence[dict[str, Any]]) -> float | None:
    """The whole model's speedup the kernels' results predict: 1 / (1 − Σ share·(1 − 1/s)),
    over the optimized ones; None when a share is unknown."""
    saved = 0.0
    for item, summary in zip(finished, summaries, strict=True):
        if item.target.time_share is None:
            return None
        speedup = float(summary.get("speedup") or 1.0)
        if summary.get("status") == "optimized" and speedup > 0:
            saved += item.target.time_share * (1.0 - 1.0 / speedup)
    return 1.0 / (1.0 - saved) if saved < 1.0 else None


def parse(stdout: str) -> tuple[dict[str, Any] | None, str]:
    """The one marked result line, checked; or None and why."""
    found = [obj for obj, _line in json_objects(stdout) if obj.get(MARKER) == 1]
    if len(found) != 1:
        return None, f"{len(found)} JSON lines marked {MARKER!r}: the command prints exactly one"
    line = found[0]
    if line.get("error"):
        return None, str(line["error"])
    modes = line.get("modes")
    if not isinstance(modes, dict) or not modes:
        return None, '"modes" is missing or empty'
    for label, mode in modes.items():
        ms = mode.get("ms") if isinstance(mode, dict) else None
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not math.isfinite(ms) \
                or ms <= 0:
            return None, f"mode {label!r}: ms {ms!r} is not a positive finite number"
    for key in ("baseline", "kernelopt"):
        if line.get(key) not in modes:
            return None, f'"{key}" {line.get(key)!r} is not one of the modes'
    return line, ""


def offered(backend: Any) -> bool:
    return isinstance(backend, ComparesModel)


def run(backend: Any, finished: Sequence[Finished], state_root: Path, out_dir: Path,
        ledger: journal.Journal | None = None,
        starting: Callable[[], None] | None = None) -> dict[str, Any] | None:
    """Measure the model with every winner of ``finished`` in place; journal the result in each
    of their runs (and in ``ledger``: a campaign's journal) and rebuild their reports. None when
    the backend offers no model check for these targets. ``starting``: called when it does,
    before the model runs."""
    if not isinstance(backend, ComparesModel) or not finished:
        return None
    out_dir.mkdir(parents=True, exist_ok=True)  # the command's working directory
    summaries = [history.summary(f.run_dir) for f in finished]
    winners: dict[str, Path] = {}
    for item in finished:
        files = winner_files(item.run_dir, item.target.editable)
        if files:
            home = out_dir / "winners" / re.sub(r"[^A-Za-z0-9_.-]", "_", item.target.name)
            for rel, data in files.items():
                (home / rel).parent.mkdir(parents=True, exist_ok=True)
                (home / rel).write_bytes(data)
            winners[item.target.name] = home
    command = backend.model_compare([f.target for f in finished], winners, out_dir)
    if command is None:
        return None
    if starting is not None:
        starting()
    started = time.perf_counter()
    with gpu_lock(state_root):  # the model runs on the GPU: nothing else times meanwhile
        result = process.run(command, out_dir / "model_check.log")
    line, why = parse(result.stdout) if result.ok else (None, f"{result.describe()}: "
                                                              f"{result.tail(800)}")
    record: dict[str, Any] = {
        "runs": [f.run_dir.name for f in finished], "winners": sorted(winners),
        "seconds": round(time.perf_counter() - started, 1),
        "amdahl_predicted": amdahl(finished, summaries), "log": str(out_dir / "model_check.log")}
    if line is None:
        record["error"] = why
    else:
        modes = line["modes"]
        base, ours = modes[line["baseline"]]["ms"], modes[line["kernelopt"]]["ms"]
        record.update(modes=modes, baseline=line["baseline"], kernelopt=line["kernelopt"],
                      match=all(bool(m.get("match")) for m in modes.values()),
                      measured_speedup=base / ours,
                      versus={label: m["ms"] / ours for label, m in modes.items()},
                      **{k: v for k, v in line.items() if k in ("device", "detail", "note")})
        choice = line.get("choice")
        if isinstance(choice, dict) and choice.get("over") and choice.get("why"):
            record["choice"] = str(choice["why"])  # another compile than the winners' returned
    for item in finished:
        run_journal = journal.Journal(item.run_dir / "journal.jsonl")
        try:
            run_journal.record(events.ModelCheck(**record))
        finally:
            run_journal.close()
        report.write_all(item.run_dir)
    if ledger is not None:
        ledger.record(events.ModelCheck(**record))
    return record
