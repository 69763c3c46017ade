"""``kernelopt campaign PATH...``: many targets under one budget, every GPU of a host (or of a
cluster, through an executor plugin) at once, resumable.

Each target of each PATH (a kernel file, a directory of kernels, a model's top kernels, a
project) becomes one job: ``kernelopt run PATH --target NAME --run-id CAMPAIGN-NN`` plus the
arguments after ``--``, run by an executor (kernelopt_core.executors) on one GPU. Jobs start in
order of expected gain — the target's share of its model's GPU time (1 / the number of targets
of its PATH when unknown) times its headroom to the roofline (1 − the fraction of peak its last
run in this state root reached; 1 when it has none: unknown is promising) — and the campaign's
budgets (GPU minutes, LLM dollars, wall minutes) are split over the jobs in that proportion
(wall minutes per GPU slot). The campaign journal (``campaigns/NAME/campaign.jsonl``) records
the plan and each result; running the same campaign again runs every job's command again, and
each run resumes from its own journal (a finished one returns at once). The report ranks the
results and sums the effect on each model (Amdahl over its optimized kernels).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import events, history
from kernelopt_core.executors import Job, JobResult
from kernelopt_core.journal import Journal, read
from kernelopt_core.target import Target


@attrs.frozen
class Entry:
    """One target of the campaign, before it runs."""

    key: str  # its run id
    path: str
    target: str
    backend: str
    share: float  # of its model's (or its PATH's) GPU time
    headroom: float  # to the roofline, from its last run here (1.0 when unknown)
    headroom_known: bool
    share_known: bool = False  # the target's own share of a model's GPU time (not 1/n)
    # the fraction of peak its call reached in its program's profile (profiled_fraction), shown
    # and journaled beside the plan; not a headroom (see profiled_fraction)
    profiled_fraction: float | None = None

    @property
    def priority(self) -> float:
        return self.share * self.headroom


def last_fractions(state_root: Path) -> dict[tuple[str, str, str], float]:
    """(backend, target name, root) -> the fraction of peak the newest finished run of that
    target under ``state_root`` reached (its baseline's when nothing won). Read once, from the
    runs' summary.json files only: a run without one (still running) is not touched."""
    found: dict[tuple[str, str, str], float] = {}
    for run_dir in history.runs(state_root):  # oldest first: the newest run wins
        try:
            summary = json.loads((run_dir / "summary.json").read_text())
        except (OSError, ValueError):
            continue
        t = summary.get("target", {})
        fraction = (summary.get("roofline") or {}).get("fraction")
        if fraction is not None:
            found[(t.get("backend"), t.get("name"), t.get("root"))] = float(fraction)
    return found


# the device's (peak GB/s, cache bytes) for a target of a PATH, None where not known
Peaks = Callable[[str, Target], tuple[float, int] | None]


def profiled_fraction(target: Target, peak_gbps: float, cache_bytes: int) -> float | None:
    """The fraction of ``peak_gbps`` the target's profiled call moved its bytes at (its
    ``bytes_moved`` over its ``profiled_ms``); None where either is unknown or its bytes fit
    the cache (the profile times a call inside its program, cache unflushed, so such a call may
    be served from the cache). Only shown and journaled, not used as a headroom: on the six
    kernels of two campaigns (ConvNeXt-T, Llama prefill; H100, 2026-12-07) it did not predict
    the tuner's wins — 0.89 of the peak gave 1.12×, 1.04× and nothing, 0.55 gave 1.63×, 0.23
    and 0.39 (rotary prologues computing cos/sin inline, their bytes under the cache: raw
    figures) 1.08× and nothing — and the in-situ time ran up to 17 % under the same call
    timed alone with the cache flushed."""
    ms = target.profiled_ms or 0.0
    if not target.bytes_moved or ms <= 0 or peak_gbps <= 0 or target.bytes_moved < cache_bytes:
        return None
    return target.bytes_moved / (ms * 1e-3) / (peak_gbps * 1e9)


def plan(name: str, found: Sequence[tuple[str, Sequence[Target]]], state_root: Path,
         peaks: Peaks | None = None) -> list[Entry]:
    """The campaign's entries, highest expected gain first (ties: the order given); with
    ``peaks``, each entry's profiled_fraction beside it."""
    entries: list[Entry] = []
    fractions = last_fractions(state_root)
    for path, targets in found:
        for target in targets:
            fraction = fractions.get((target.backend, target.name, str(target.root)))
            share = target.time_share if target.time_share is not None else 1.0 / len(targets)
            device = peaks(path, target) if peaks is not None else None
            entries.append(Entry(f"{name}-{len(entries) + 1:02d}", path, target.name,
                                 target.backend, share,
                                 max(0.0, 1.0 - fraction) if fraction is not None else 1.0,
                                 fraction is not None, target.time_share is not None,
                                 profiled_fraction(target, *device) if device else None))
    return sorted(entries, key=lambda e: -e.priority)


def budgets(entries: Sequence[Entry], slots: int, gpu_minutes: float | None,
            usd: float | None, wall_minutes: float | None) -> dict[str, list[str]]:
    """Each job's share of the campaign's budgets, as ``kernelopt run`` flags."""
    weights = [max(e.priority, 1e-3) for e in entries]  # a target with no headroom still runs
    total = sum(weights)
    flags: dict[str, list[str]] = {}
    for entry, weight in zip(entries, weights, strict=True):
        part = weight / total
        out: list[str] = []  # floors: a run's budgets must be positive (settings validation)
        if gpu_minutes is not None:
            out += ["--budget-gpu-seconds", f"{max(1.0, gpu_minutes * 60 * part):.1f}"]
        if usd is not None:
            out += ["--budget-cost", f"{max(0.0001, usd * part):.4f}"]
        if wall_minutes is not None:  # the slots run side by side
            share = min(wall_minutes, wall_minutes * slots * part)
            out += ["--budget-minutes", f"{max(0.1, share):.2f}"]
        flags[entry.key] = out
    return flags


def jobs(entries: Sequence[Entry], state_root: Path, run_args: Sequence[str],
         budget_flags: dict[str, list[str]], cwd: Path) -> list[Job]:
    kernelopt = (sys.executable, "-c", "from kernelopt_core.cli import main; main()")
    # each job one kernel: the model check with every winner comes once, after all of them
    return [Job(e.key, (*kernelopt, "run", e.path, "--target", e.target, "--run-id", e.key,
                        "--state-root", str(state_root), "--no-model-check",
                        *budget_flags[e.key], *run_args),
                str(cwd)) for e in entries]


def run(name: str, entries: Sequence[Entry], job_list: Sequence[Job], executor: Any,
        gpus: Sequence[str], state_root: Path,
        on_result: Callable[[JobResult, dict[str, Any]], None]) -> dict[str, Any]:
    """Run the jobs; each result is journaled with its run's summary. The campaign summary."""
    directory = state_root / "campaigns" / name
    fresh = not (directory / "campaign.jsonl").is_file()
    journal = Journal(directory / "campaign.jsonl")
    if fresh:  # run again, a campaign keeps the plan it started with (recorded())
        journal.record(events.Campaign(
            name=name, executor=executor.name, gpus=list(gpus),
            entries=[attrs.asdict(e) | {"priority": e.priority} for e in entries],
            jobs=[list(j.argv) for j in job_list]))
    else:
        journal.record(events.CampaignResumed(executor=executor.name, gpus=list(gpus)))
    lock = threading.Lock()  # an executor may report from any thread

    def done(result: JobResult) -> None:
        summary = _run_summary(state_root, result.key)
        with lock:
            journal.record(events.Job(**attrs.asdict(result), summary=summary))
            on_result(result, summary)

    try:
        executor.run(job_list, gpus, done, directory / "logs")
    finally:
        journal.close()
    return write_summary(directory)


def write_summary(directory: Path) -> dict[str, Any]:
    """summary.json from the campaign's journal (again after a model check)."""
    outcome = summarize(directory / "campaign.jsonl")
    (directory / "summary.json").write_text(json.dumps(outcome, indent=2) + "\n")
    return outcome


def recorded(state_root: Path, name: str, cwd: Path) -> tuple[list[Entry], list[Job]] | None:
    """The plan a campaign of this name started with (its entries and jobs), or None: run
    again, it runs the same jobs — the same run ids and budget shares — and each resumes."""
    path = state_root / "campaigns" / name / "campaign.jsonl"
    header = events.first(read(path), events.Campaign) if path.is_file() else None
    if header is None:
        return None
    fields = {f.name for f in attrs.fields(Entry)}
    entries = [Entry(**{k: v for k, v in e.items() if k in fields}) for e in header.entries]
    jobs = [Job(e.key, tuple(argv), str(cwd)) for e, argv in zip(entries, header.jobs,
                                                                 strict=True)]
    return entries, jobs


def _run_summary(state_root: Path, run_id: str) -> dict[str, Any]:
    run_dir = state_root / "runs" / run_id
    if not (run_dir / "journal.jsonl").is_file():
        return {}
    try:
        return history.summary(run_dir)
    except (OSError, ValueError):
        return {}


def summarize(journal_path: Path) -> dict[str, Any]:
    """The campaign's results from its journal: ranked by the time they save (share × (1 −
    1/speedup)), and per model the whole-model effect Amdahl predicts from them."""
    records = read(journal_path)
    header = events.first(records, events.Campaign)
    entries = {e["key"]: e for e in (header.entries if header else [])}
    # a later result for a job (a rerun) wins
    results = {job.key: job for job in events.of(records, events.Job)}
    rows = []
    for key, entry in entries.items():
        job = results.get(key)
        s = (job.summary if job else None) or {}
        speedup = float(s.get("speedup") or 1.0) if s.get("status") == "optimized" else 1.0
        rows.append({"run": key, "path": entry["path"], "target": entry["target"],
                     "status": s.get("status", "not run" if job is None else "error"),
                     "speedup": speedup, "share": entry["share"],
                     "saved": entry["share"] * (1 - 1 / speedup),
                     "share_known": entry.get("share_known", False),
                     "gpu_seconds": s.get("gpu_seconds"), "worker": job.worker if job else None,
                     "gpu": job.gpu if job else None, "attempts": job.attempts if job else None,
                     "report_line": s.get("report_line")})
    rows.sort(key=lambda r: -r["saved"])
    models: dict[str, dict[str, Any]] = {}
    for row in rows:  # the targets of one model (a PATH whose targets carry their time share)
        if not row["share_known"]:
            continue
        m = models.setdefault(row["path"], {"share_optimized": 0.0, "time_after": 1.0})
        m["time_after"] -= row["saved"]
        m["share_optimized"] += row["share"] if row["speedup"] > 1 else 0.0
    for m in models.values():
        m["amdahl_speedup"] = 1.0 / m["time_after"] if m["time_after"] > 0 else None
    # the whole model measured with its winners (model_check.py): the newest
    for check in events.of(records, events.ModelCheck):
        if check.runs and check.runs[0] in entries:
            path = entries[check.runs[0]]["path"]
            models.setdefault(path, {"amdahl_speedup": None})["measured"] = check.data()
    return {"name": header.name if header else None,
            "executor": header.executor if header else None,
            "gpus": header.gpus if header else None, "results": rows, "models": models,
            "verified": sum(1 for r in rows if r["status"] == "optimized")}
