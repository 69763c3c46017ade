"""The baseline's steps before the search: build, test (it must pass) and bench — each
failure a usage error that says what to fix (nothing is searched). Its profile:
kernelopt_core.profiling."""

from __future__ import annotations

import time
from pathlib import Path

from kernelopt_core import events, evidence, history, process, warm_build
from kernelopt_core import journal as journal_mod
from kernelopt_core.errors import BenchFailed, UsageError
from kernelopt_core.gates.options import ScreenOptions
from kernelopt_core.run_context import RunContext
from kernelopt_core.target import Target


def measure(context: RunContext, log_dir: Path,
            recorded: events.Baseline | None = None) -> float | None:
    """Build, test and bench the unmodified tree (``settings.section(ScreenOptions).screen_runs`` times); its
    median time (ms), None without a bench, kept in ``context.baseline.ms``. A candidate tree
    without a build yet starts from a copy of this one's (warm_build). ``recorded``: the
    ``baseline`` event of the run being resumed — the same content was timed then, so it is
    built and tested but not timed again (kernelopt_core.resume)."""
    context.baseline.ms = ms = _measure(context, log_dir, recorded)
    return ms


EARLIER_RUNS_READ = 20  # the newest runs searched for the target's last baseline build


def earlier_build(state_root: Path, target: Target, run_id: str) -> tuple[str, float] | None:
    """The newest other run of the same target (backend, name, root) whose baseline built: its
    id and that build's seconds (clean or incremental, as it happened). Only the headers of
    other targets' runs are read."""
    for run_dir in reversed(history.runs(state_root)[-EARLIER_RUNS_READ:]):
        path = run_dir / "journal.jsonl"
        header = journal_mod.header(path) if run_dir.name != run_id else None
        if header is None or (header.target.get("backend"), header.target.get("name"),
                              header.target.get("root")) != (target.backend, target.name,
                                                             str(target.root)):
            continue
        built = next((e for e in events.of(journal_mod.read(path), events.Built)
                      if e.tree == "baseline" and e.ok is not False), None)
        if built is not None:
            return run_dir.name, built.seconds
    return None


def _measure(context: RunContext, log_dir: Path, recorded: events.Baseline | None) -> float | None:
    runner, journal, workspace, stage = (context.runner, context.journal, context.workspace,
                                         context.stage)
    tree = workspace.baseline_tree
    earlier = earlier_build(context.settings.state_root, context.target, context.run_id)
    stage("baseline build", **({"earlier_run": earlier[0], "earlier_seconds": earlier[1]}
                               if earlier else {}))
    started = time.monotonic()
    result = runner.build(tree, log_dir / "build.log")
    if result is not None:  # a target with build commands: what each step took
        journal.record(events.Built(
            tree="baseline", ok=result.ok, seconds=round(time.monotonic() - started, 3),
            steps=[{"label": label, "seconds": round(s, 3)} for label, s in runner.build_steps]))
    if result is not None and not result.ok:
        raise UsageError(
            f"the baseline does not build: {result.describe()}\n{result.tail()}",
            hint=f"make the unmodified target build (full log: {log_dir / 'build.log'})",
        )
    warm = warm_build.seed(tree, workspace.candidate_tree, lambda command: process.run(
        command, log_dir / "warm-build.log", cap=warm_build.COMPDB_CAP))
    if warm is not None:
        journal.record(warm)
    stage("baseline test")
    failed, said = evidence.checked(runner.check_all, tree, log_dir / "test.log")
    if failed is not None:
        which, result = failed
        raise UsageError(
            f"the baseline fails its own test ({which}): {result.describe()}\n"
            f"{result.tail()}",
            hint="kernelopt only optimizes a kernel whose unmodified test passes; fix "
            f"the test or the kernel first (full log: {log_dir / 'test.log'})",
        )
    if said:  # what the passing test printed about itself (kernelopt_core.evidence)
        journal.record(events.CheckEvidence(tree="baseline", evidence=said))
    if recorded is not None:  # checked again (a bench worker times only checked content)
        return recorded.ms
    if not runner.has_bench(tree):
        journal.record(events.Baseline(ms=None, samples=[], note="no bench command"))
        return None
    stage("baseline bench")
    try:
        samples = [runner.bench(tree, log_dir / "bench.log", "baseline").time_ms
                   for _ in range(context.settings.section(ScreenOptions).screen_runs)]
    except BenchFailed as exc:
        raise UsageError(f"the baseline's bench fails: {exc}") from exc
    ms = sorted(samples)[len(samples) // 2]
    journal.record(events.Baseline(ms=ms, samples=samples))
    return ms
