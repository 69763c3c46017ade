"""Starting runs without the command line: PATH and settings → backend, targets, settings →
one loop per target → results. ``kernelopt run`` (cli.py) and ``kernelopt_core.api.run``
both go through here; the CLI adds only what it prints.

    from kernelopt_core.api import run
    [result] = run("examples/cmake-cpu", iterations=3, seeds=(1,))
    result.status, result.summary["speedup"], result.run_dir
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import discovery, model_check
from kernelopt_core import settings as settings_mod
from kernelopt_core.errors import EXIT_INTERRUPTED, EXIT_PREREQUISITE, UsageError
from kernelopt_core.hookspecs import Backend
from kernelopt_core.plugin_checks import returned
from kernelopt_core.plugins import PluginHost
from kernelopt_core.settings import Settings
from kernelopt_core.target import Target


@attrs.frozen
class Resolved:
    """What a PATH and its settings resolve to before any run."""

    host: PluginHost
    backend: Backend
    targets: tuple[Target, ...]  # in the order they run
    settings: Settings


@attrs.frozen
class RunResult:
    """One target's run, as ``kernelopt run`` ends it."""

    target: Target
    run_id: str
    run_dir: Path  # its journal, report.md, report.diff, summary.json
    status: str  # optimized | matched | fallback | unverified | error
    exit_code: int  # 0 optimized, 1 no win, 2 usage, 3 prerequisite, 4 kernelopt's bug
    summary: dict[str, Any]  # summary.json


def resolve(path: Path, given: dict[str, Any], host: PluginHost | None = None) -> Resolved:
    """PATH and the settings the caller gave (a flag's name → value; only those given, so
    kernelopt.toml and the environment still fill in the rest) → the backend, the targets to
    run and the merged settings."""
    host = host or PluginHost()
    if not path.exists():
        raise UsageError(f"{path} does not exist", hint="give a kernel file, directory or repo")
    path = path.resolve()
    backend, path, focus, settings = discovery.locate(
        host, path, lambda toml: settings_mod.load(toml, given, tables=tuple(host.option_tables())))
    targets = discovery.choose_targets(
        returned(backend, "discover", backend.discover(path, settings)), settings.target, path)
    if focus is not None:
        targets = discovery.focus_targets(targets, focus, path)
    if settings.run_id and len(targets) > 1:
        raise UsageError(f"--run-id names one run, but {path} has {len(targets)} targets",
                         hint="pick one with --target, or leave --run-id out")
    return Resolved(host, backend, tuple(targets), settings)


def _known_settings(given: dict[str, Any], host: PluginHost) -> None:
    """api.run's keywords are the run's flag names; a misspelled one must not be ignored."""
    tables = settings_mod.with_gate_tables(host.option_tables())
    known = {*settings_mod.FIELDS, "option", *settings_mod.keys_of(tables).values()}
    unknown = sorted(set(given) - known)
    if unknown:
        guesses = {k: difflib.get_close_matches(k, known, n=1) for k in unknown}
        raise UsageError(
            "unknown setting " + ", ".join(f"{k!r}" + (f" (did you mean {g[0]!r}?)" if g else "")
                                           for k, g in guesses.items()),
            hint="api.run takes the flags of `kernelopt run` by name, e.g. iterations=3 "
                 "(`kernelopt run --help`; a plugin's options: `kernelopt plugins`)")


def run_each(resolved: Resolved, listeners: Callable[[Target], Sequence[Callable[..., Any]]],
             argv: Sequence[str] | None = None) -> Iterator[RunResult]:
    """One loop per target, in turn, each its own run; ``listeners(target)``: what receives
    that run's journal events (the CLI's progress lines). Stops after an interrupted run or a
    missing prerequisite (the next target would hit it too)."""
    from kernelopt_core.loop import Loop

    for target in resolved.targets:
        outcome = Loop(resolved.host, resolved.backend, target, resolved.settings,
                       list(listeners(target)), argv=list(argv or sys.argv)).run()
        yield RunResult(target, outcome.run_id, outcome.run_dir, outcome.status,
                        outcome.exit_code, outcome.summary)
        if outcome.exit_code in (EXIT_INTERRUPTED, EXIT_PREREQUISITE):
            break


def check_model(resolved: Resolved, results: Sequence[RunResult],
                started: Callable[[], None] = lambda: None) -> dict[str, Any] | None:
    """After the runs: the whole model with every winner in place, where the backend offers
    it and the settings ask for it (model_check.py); its record, or None."""
    finished = [model_check.Finished(r.target, r.run_dir) for r in results
                if r.exit_code in (0, 1)]
    if not (resolved.settings.model_check and finished and model_check.offered(resolved.backend)
            and all(r.exit_code != EXIT_INTERRUPTED for r in results)):
        return None
    root = resolved.settings.state_root
    return model_check.run(resolved.backend, finished, root,
                           root / "models" / finished[0].run_dir.name, None, started)


def exit_code(results: Sequence[RunResult]) -> int:
    """The most severe error (4 > 3 > 2) of any run, else 0 if any ended optimized, else 1."""
    codes = [r.exit_code for r in results]
    severe = [c for c in codes if c not in (0, 1)]
    return max(severe) if severe else (0 if 0 in codes else 1)


def run(path: str | Path, *, host: PluginHost | None = None, **given: Any) -> list[RunResult]:
    """Optimize the kernel(s) at ``path`` as ``kernelopt run PATH`` does, printing nothing:
    ``given`` are the run's settings by flag name (``iterations=3``, ``backend="cmake"``, a
    plugin's option such as ``top=2``), merged with kernelopt.toml, the user's config and the
    environment as the CLI merges them. Each target's result, in the order they ran; the
    model check, where it applies, is journaled in each run. Bad input raises the same errors
    the CLI exits 2 or 3 with (``UsageError``, ``PrerequisiteError``)."""
    host = host or PluginHost()
    _known_settings(given, host)
    resolved = resolve(Path(path), {k: v for k, v in given.items() if v is not None}, host)
    results = list(run_each(resolved, lambda target: (), argv=["kernelopt_core.api.run"]))
    check_model(resolved, results)
    return results
