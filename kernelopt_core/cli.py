"""The command line (click). Thin: flags → settings → core → ui."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from kernelopt_core import __version__, discovery, entry, history, model_check, model_view, ui
from kernelopt_core import settings as settings_mod
from kernelopt_core.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, KerneloptError, UsageError
from kernelopt_core.plugins import PluginHost
from kernelopt_core.run_flags import run_options
from kernelopt_core.target import Target


class KerneloptGroup(click.Group):
    """Adds plugin commands lazily, so `kernelopt --help` builds the plugin host only once."""

    host: PluginHost | None = None
    _commands_from: PluginHost | None = None

    def get_host(self) -> PluginHost:
        if self.host is None:
            self.host = PluginHost()
        if self._commands_from is not self.host:
            self._commands_from = self.host
            self.host.add_commands(
                self, lambda name, exc: ui.note(f"plugin {name!r} failed to add commands: {exc}")
            )
        return self.host

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.get_host()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands or name in ("run", "gate-selftest"):
            self.get_host()
        command = super().get_command(ctx, name)
        if command is not None and self.host is not None and (
                name in ("run", "gate-selftest") or getattr(command, "plugin_flags", False)):
            self._add_plugin_options(command)
        return command

    def _add_plugin_options(self, command: click.Command) -> None:
        """Plugin flags (``kernelopt_option_tables``) go on ``run``, ``gate-selftest``, ``profile``,
        run_command's commands and ``campaign`` (which hands them to its jobs), once per plugin
        host (a new host, as in tests, replaces the previous host's flags)."""
        added: tuple[PluginHost, list[click.Parameter]] | None = getattr(command, "_plugin_options",
                                                                          None)
        if added is not None and added[0] is self.host:
            return
        assert self.host is not None
        if added is not None:
            command.params = [p for p in command.params if all(p is not q for q in added[1])]
        taken = {n for p in command.params for n in (*p.opts, *p.secondary_opts, p.name or "")}
        options = self.host.run_options(taken)
        command.params.extend(options)
        command._plugin_options = (self.host, options)  # type: ignore[attr-defined]


@click.group(cls=KerneloptGroup)
@click.version_option(__version__, prog_name="kernelopt")
def cli() -> None:
    """kernelopt: make GPU kernels faster by search, with verdicts you can trust."""


def host_of(ctx: click.Context) -> PluginHost:
    root = ctx.find_root().command
    assert isinstance(root, KerneloptGroup)
    return root.get_host()


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
    ui.note(f"kernelopt {__version__}: {target.name} ({backend.name} backend) at {target.root}")
    return host, backend, target, settings


def execute(ctx: click.Context, path: Path, flags: dict[str, Any],
            forced: dict[str, Any] | None = None, watch: bool = False) -> int:
    """Resolve backend and targets, run the loop once per target (entry.run_each), print the
    outcomes; the exit code is entry.exit_code's. Used by plugin commands too."""
    from kernelopt_core import ui_watch

    resolved = entry.resolve(path, given(ctx, flags, forced), host_of(ctx))
    targets = resolved.targets
    for info in resolved.host.plugin_infos():  # a plugin left out must not go unnoticed
        if info.error:
            ui.note(f"{info.label} is not loaded: {info.error} (`kernelopt plugins`)")
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


def check_model(backend: Any, finished: list[Any], state_root: Path, out_dir: Path | None,
                ledger: Any = None) -> None:
    """The whole model, every winner in place (model_check.py), reported: campaign's."""
    if finished and out_dir is not None:
        show_model_check(model_check.run(backend, finished, state_root, out_dir, ledger, lambda: ui.note(
            f"model check: the whole model every way, {len(finished)} run(s)' winners in")))


def show_model_check(record: dict[str, Any] | None) -> None:
    if record is not None and record.get("error"):
        ui.note(f"model check failed ({record['seconds']} s): {record['error'][:600]}")
    elif record is not None:
        ui.table(*model_view.rows(record))
        ui.note(model_view.verdict_line(record))

@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@run_options
@click.option("--watch", is_flag=True, help="The live view (kernelopt watch) in this terminal.")
@click.pass_context
def run(ctx: click.Context, path: Path, watch: bool, **flags: Any) -> None:
    """Optimize the kernel at PATH (a file, directory, or git repository)."""
    ctx.exit(execute(ctx, path, flags, watch=watch))


@cli.command("gate-selftest")
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
    import json

    from kernelopt_core.selftest import run_selftest

    _host, backend, target, settings = resolve(ctx, path, flags)
    result = run_selftest(backend, target, settings, trials, planted_speedup, [ui.Progress()],
                          include_aa=not no_aa)
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
    ui.table(rows, ["decision", "trials", f"kernelopt (γ={settings.gates.gamma:g}, "
                    f"{result['protocol']['rounds']} rounds)", "naive (1 vs 1, γ=1.03)",
                    "median ratio"])
    ui.echo(f"{result['seconds_per_decision']:.2f} s per decision; JSON: "
            f"{result['dir']}/selftest.json")


@cli.command()
@click.pass_context
def plugins(ctx: click.Context) -> None:
    """List installed plugins, their versions and what each provides (exit 1: one FAILED)."""
    host = host_of(ctx)
    run_command = cli.get_command(ctx, "run")  # adds plugin flags, recording any clash
    assert run_command is not None
    rows = []
    for info in host.plugin_infos():
        provides = "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(info.provides.items()))
        status = "ok" if info.error is None else f"FAILED: {info.error}"
        rows.append([info.name, info.distribution, info.version,
                     "built-in" if info.builtin else "entry point", status, provides])
    ui.table(rows, ["plugin", "package", "version", "source", "status", "provides"])
    failed = [info for info in host.plugin_infos() if info.error]
    for note in (f"{info.name}: {note}" for info in host.plugin_infos() for note in info.notes):
        ui.note(note)
    for info in failed:
        ui.note(f"{info.name}: {info.hint or 'fix or disable it (KERNELOPT_DISABLE_PLUGINS)'}")
    if failed:  # like `pip check`: a CI notices a broken plugin
        ctx.exit(1)


def _state_root(state_root: Path | None) -> Path:
    return settings_mod.load(None, {"state_root": state_root}).state_root


@cli.command("history")
@click.option("--state-root", type=click.Path(path_type=Path))
@click.option("--all", "show_all", is_flag=True,
              help="Also the runs refused before any work (a usage or set-up error).")
def history_cmd(state_root: Path | None, show_all: bool) -> None:
    """List runs with their verdicts, speedups and tagged candidates."""
    root = _state_root(state_root)
    rows, hidden = history.table_rows(root, show_all)
    if hidden:
        ui.note(f"{hidden} run(s) refused before any work not shown (--all shows them)")
    if not rows:
        ui.note(f"no runs under {root / 'runs'}")
        return
    ui.table(rows, ["run", "target", "status", "speedup", "tags (kernelopt/<run>/...)"])


@cli.command("report")
@click.argument("run_ref", default="last")
@click.option("--state-root", type=click.Path(path_type=Path))
def report_cmd(run_ref: str, state_root: Path | None) -> None:
    """Rebuild a run's report from its journal and print it (RUN: id, prefix or `last`)."""
    from kernelopt_core import report

    run_dir = history.find_run(_state_root(state_root), run_ref)
    report.write_all(run_dir)
    ui.echo((run_dir / "report.md").read_text())


@cli.command("resume")
@click.argument("run_ref")
@click.option("--state-root", type=click.Path(path_type=Path))
def resume_cmd(run_ref: str, state_root: Path | None) -> None:
    """Continue a killed or interrupted run from its journal (RUN: id, prefix or `last`):
    the command it recorded, from the directory it ran in, with --run-id RUN."""
    from kernelopt_core import journal

    root = _state_root(state_root)
    run_dir = history.find_run(root, run_ref)
    header = journal.header(run_dir / "journal.jsonl")
    argv, cwd = (header.argv, header.cwd) if header else ([], None)
    if len(argv) < 2:
        raise UsageError(f"{run_dir / 'journal.jsonl'} records no command to resume",
                         hint=f"run the command again with --run-id {run_dir.name}")
    args = [a for i, a in enumerate(argv[1:], 1)  # the recorded --run-id is given again below
            if a != "--run-id" and not a.startswith("--run-id=") and argv[i - 1] != "--run-id"]
    if cwd and not Path(cwd).is_dir():
        raise UsageError(f"run {run_dir.name} ran in {cwd}, which no longer exists",
                         hint=f"run its command again there with --run-id {run_dir.name}")
    if cwd:
        os.chdir(cwd)
    target = header.target.get("name") if header else None  # the one of a PATH with several
    code = cli.main(args=[*args, *(["--target", target] if target else []), "--run-id",
                          run_dir.name, "--state-root", str(root.resolve())],
                    standalone_mode=False)
    sys.exit(code or 0)


@cli.command()
@click.option("--smoke", is_flag=True, help="Also compile, configure and run a tiny project.")
@click.option("--measure-peak", "measure_peak", type=click.Choice(["cpu", "cuda", "hip"]),
              help="Measure the device's peak bandwidth again now (the roofline gate's bound).")
@click.option("--state-root", type=click.Path(path_type=Path))
@click.pass_context
def setup(ctx: click.Context, smoke: bool, measure_peak: str | None,
          state_root: Path | None) -> None:
    """Check prerequisites: what is found, what is missing, and what to do."""
    from kernelopt_core import setup_check

    if measure_peak:
        ui.echo(setup_check.measure_peak(_state_root(state_root), measure_peak))
        return

    rows = setup_check.prerequisites(host_of(ctx))
    ui.table([[r.name, "found" if r.found else "missing", r.detail] for r in rows],
             ["prerequisite", "status", "detail / what to do"])
    if smoke:
        results = setup_check.smoke()
        ui.table([[r.name, "ok" if r.found else "FAILED", r.detail] for r in results],
                 ["smoke test", "status", "detail"])
        if not all(r.found for r in results):
            ctx.exit(3)


def main() -> None:
    def terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminate)
    # SIGINT interrupts cleanly even when the shell that started us ignored it (a background
    # job of a non-interactive shell inherits SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except click.exceptions.Abort:
        sys.exit(EXIT_INTERRUPTED)
    except KeyboardInterrupt:
        ui.error("interrupted", EXIT_INTERRUPTED)
        sys.exit(EXIT_INTERRUPTED)
    except KerneloptError as exc:
        ui.error(str(exc), exc.exit_code, type(exc).__name__)
        sys.exit(exc.exit_code)
    except Exception as exc:
        from kernelopt_core.crash import report_crash

        sys.exit(report_crash(exc, cli.host))
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # -m: run the module the commands import, whose classes they know
    import kernelopt_core.cli

    kernelopt_core.cli.main()
