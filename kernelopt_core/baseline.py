"""The baseline's steps before the search: build, test (it must pass), bench, and an optional
profile — each failure a usage error that says what to fix (nothing is searched)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelopt_core.errors import BenchFailed, PrerequisiteError, UsageError
from kernelopt_core.hookspecs import Backend
from kernelopt_core.journal import Journal
from kernelopt_core.plugins import PluginHost
from kernelopt_core.runner import Runner
from kernelopt_core.target import Target, Tree


def measure(runner: Runner, journal: Journal, tree: Tree, log_dir: Path, screen_runs: int,
            stage: Callable[[str], None]) -> float | None:
    """Build, test and bench the unmodified tree; its median time (ms), None without a bench."""
    stage("baseline build")
    result = runner.build(tree, log_dir / "build.log")
    if result is not None and not result.ok:
        raise UsageError(
            f"the baseline does not build: {result.describe()}\n{result.tail()}",
            hint=f"make the unmodified target build (full log: {log_dir / 'build.log'})",
        )
    stage("baseline test")
    failed = runner.check_all(tree, log_dir / "test.log")
    if failed is not None:
        which, result = failed
        raise UsageError(
            f"the baseline fails its own test ({which}): {result.describe()}\n"
            f"{result.tail()}",
            hint="kernelopt only optimizes a kernel whose unmodified test passes; fix "
            f"the test or the kernel first (full log: {log_dir / 'test.log'})",
        )
    if not runner.has_bench(tree):
        journal.write("baseline", ms=None, samples=[], note="no bench command")
        return None
    stage("baseline bench")
    try:
        samples = [runner.bench(tree, log_dir / "bench.log", "baseline").time_ms
                   for _ in range(screen_runs)]
    except BenchFailed as exc:
        raise UsageError(f"the baseline's bench fails: {exc}") from exc
    ms = sorted(samples)[len(samples) // 2]
    journal.write("baseline", ms=ms, samples=samples)
    return ms


def profile(name: str | None, host: PluginHost, backend: Backend, target: Target, tree: Tree,
            runner: Runner, journal: Journal, out_dir: Path,
            stage: Callable[..., None]) -> dict[str, Any]:
    """The baseline's bench under the profiler ``name`` (under the GPU lock); its metrics."""
    if not name:
        return {}
    profilers = host.registry("profilers")
    if name not in profilers:
        raise UsageError(f"unknown profiler {name!r}",
                         hint=f"known profilers: {', '.join(sorted(profilers))}")
    profiler = profilers[name]
    reason = profiler.unavailable_reason()
    if reason:
        raise PrerequisiteError(f"profiler {name!r} is unavailable: {reason}")
    command = backend.bench(target, tree)
    if command is None:
        return {}
    stage("profile", profiler=name)
    out_dir.mkdir(parents=True, exist_ok=True)
    result, _held = runner.spawn_locked(profiler.wrap(command, out_dir), out_dir / f"{name}.log")
    metrics = profiler.parse(out_dir) if result.ok else {"error": result.describe()}
    journal.write("profile", profiler=name, metrics=metrics)
    return metrics
