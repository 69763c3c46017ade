"""``kernelopt run`` and ``kernelopt gate-selftest``, and the run machinery a plugin's command
shares (``run_command``: run-llamacpp, run-ninfer): flags → settings → entry → ui."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from kernelopt_core import __version__, discovery, entry, ui, ui_watch
from kernelopt_core.commands.common import host_of, show_model_check
from kernelopt_core.errors import EXIT_INTERNAL
from kernelopt_core.gates.options import ConfirmOptions
from kernelopt_core.run_flags import run_options
from kernelopt_core.selftest import run_selftest
from kernelopt_core.target import Target


def run_command(name: str, *, help: str, forced: dict[str, Any],
                resolve_path: Callable[[dict[str, Any]], Path],
                params: Sequence[click.Parameter] = ()) -> click.Command:
    """A command that runs the loop as ``kernelopt run`` does, with every run flag, ``params``
    (a name ``run`` already has is skipped) and ``forced`` settings (e.g. the backend).
    ``resolve_path(flags)`` gives the target's path from the flags (popping its own params'
    values) or raises a KerneloptError; plugins contribute such commands through
    ``kernelopt_register_commands`` (run-llamacpp)."""

    @click.pass_context
    def callback(ctx: click.Context, **flags: Any) -> None:
        path = resolve_path(flags)
        ctx.exit(execute(ctx, path, flags, forced=forced))

    command = click.command(name, help=help)(run_options(callback))
    command.plugin_flags = True  # type: ignore[attr-defined]  # the plugins' flags go on it too
    taken = {n for p in command.params for n in (*p.opts, p.name or "")}
    for param in params:
        if param.name not in taken:
            command.params.append(param)
    return command


def given(ctx: click.Context, flags: dict[str, Any],
          forced: dict[str, Any] | None = None) -> dict[str, Any]:
    """The flags the user gave: a click default is not "given" (kernelopt.toml and -o must
    still win over it); ``forced``: values a command fixes (run-llamacpp's backend)."""
    defaults = (click.core.ParameterSource.DEFAULT, click.core.ParameterSource.DEFAULT_MAP)
    return {**{k: v for k, v in flags.items() if ctx.get_parameter_source(k) not in defaults},
            **(forced or {})}


def resolve_all(ctx: click.Context, path: Path, flags: dict[str, Any],
                forced: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """PATH and flags → (plugin host, backend, targets to run, settings) (entry.resolve)."""
    found = entry.resolve(path, given(ctx, flags, forced), host_of(ctx))
    return found.host, found.backend, list(found.targets), found.settings


def resolve(ctx: click.Context, path: Path, flags: dict[str, Any]) -> tuple[Any, ...]:
    """PATH and flags → (plugin host, backend, the one target, settings)."""
    host, backend, targets, settings = resolve_all(ctx, path, flags)
    target = discovery.choose_target(targets, None, path)
    for line in settings.notes:  # e.g. a gate's option still in [run]
        ui.note(f"note: {line}")
    ui.note(f"kernelopt {__version__}: {target.name} ({backend.name} backend) at {target.root}")
    return host, backend, target, settings


def execute(ctx: click.Context, path: Path, flags: dict[str, Any],
            forced: dict[str, Any] | None = None, watch: bool = False) -> int:
    """Resolve backend and targets, run the loop once per target (entry.run_each), print the
    outcomes; the exit code is entry.exit_code's. Used by plugin commands too."""
    resolved = entry.resolve(path, given(ctx, flags, forced), host_of(ctx))
    targets = resolved.targets
    for info in resolved.host.plugin_infos():  # a plugin left out must not go unnoticed
        if info.error:
            ui.note(f"{info.label} is not loaded: {info.error} (`kernelopt plugins`)")
    for line in resolved.settings.notes:  # e.g. a gate's option still in [run]
        ui.note(f"note: {line}")
    for preface in dict.fromkeys(t.preface for t in targets if t.preface):
        ui.echo(preface.rstrip("\n"))
    shown: list[Any] = []  # the running target's view

    def start(target: Target) -> list[Any]:
        count = f" [{targets.index(target) + 1}/{len(targets)}]" if len(targets) > 1 else ""
        ui.note(f"kernelopt {__version__}: {target.name} ({resolved.backend.name} backend) at "
                f"{target.root}{count}")
        shown[:] = [ui_watch.LiveView() if watch else ui.Progress()]  # one way of showing it
        return shown

    results: list[entry.RunResult] = []
    try:
        for result in entry.run_each(resolved, start, sys.argv):
            getattr(shown[0], "stop", lambda: None)()  # a live view stops with its run
            results.append(result)
            ui.summary(result.summary, str(result.run_dir))
            if result.summary.get("error"):
                ui.error(result.summary["error"], result.exit_code, result.summary.get("error_kind"))
                if result.exit_code == EXIT_INTERNAL:
                    ui.note(f"this is a bug in kernelopt; the traceback is in {result.run_dir}/error.log")
    finally:
        for view in shown:  # whatever ends the run
            getattr(view, "stop", lambda: None)()
    if len(targets) > 1:
        ui.table([[r.target.name, r.status, r.summary["report_line"], r.run_id] for r in results],
                 ["target", "status", "report line", "run"])
    finished = sum(r.exit_code in (0, 1) for r in results)
    show_model_check(entry.check_model(resolved, results, lambda: ui.note(
        f"model check: the whole model every way, {finished} run(s)' winners in")))
    return entry.exit_code(results)


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@run_options
@click.option("--watch", is_flag=True, help="The live view (kernelopt watch) in this terminal.")
@click.pass_context
def run(ctx: click.Context, path: Path, watch: bool, **flags: Any) -> None:
    """Optimize the kernel at PATH (a file, directory, or git repository)."""
    ctx.exit(execute(ctx, path, flags, watch=watch))


@click.command("gate-selftest")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--trials", type=int, default=20, show_default=True, help="Decisions of each kind.")
@click.option("--planted-speedup", type=float, help="Also decide against a truly X× faster "
              "candidate (its bench does less work through {work}, calibrated to X).")
@click.option("--no-aa", is_flag=True, help="With --planted-speedup: only the planted decisions.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON result instead of a table.")
@click.option("--backend")
@click.option("--target")
@click.option("--gamma", type=float)
@click.option("--final-rounds", type=int)
@click.option("--worker-rounds", type=int)
@click.option("--state-root", type=click.Path(path_type=Path))
@click.pass_context
def gate_selftest(ctx: click.Context, path: Path, trials: int, planted_speedup: float | None,
                  no_aa: bool, as_json: bool, **flags: Any) -> None:
    """Measure the confirm gate's false-accept rate (A/A) and detection rate (planted)."""
    host, backend, target, settings = resolve(ctx, path, flags)
    result = run_selftest(host, backend, target, settings, trials, planted_speedup,
                          [ui.Progress()], include_aa=not no_aa)
    if as_json:
        ui.echo(json.dumps(result, indent=2))
        return
    rows = []
    if not no_aa:
        rows.append(["A/A (identical)", trials, f"{result['false_accepts']} false accepts",
                     f"{result['naive']['false_accepts']} false accepts",
                     f"{result['results']['aa']['median_ratio']:.4f}"])
    if planted_speedup:
        rows.append([f"planted {planted_speedup:g}×", trials, f"{result['detections']} detected",
                     f"{result['naive']['detections']} detected",
                     f"{result['measured_planted_ratio']:.4f}"])
    ui.table(rows, ["decision", "trials", f"kernelopt (γ={settings.section(ConfirmOptions).gamma:g}, "
                    f"{result['protocol']['rounds']} rounds)", "naive (1 vs 1, γ=1.03)",
                    "median ratio"])
    ui.echo(f"{result['seconds_per_decision']:.2f} s per decision; JSON: "
            f"{result['dir']}/selftest.json")
