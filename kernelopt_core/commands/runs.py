"""The runs under a state root: ``kernelopt history``, ``report`` and ``resume``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from kernelopt_core import history, journal, report, ui
from kernelopt_core.commands.common import state_root as root_of
from kernelopt_core.errors import UsageError


@click.command("history")
@click.option("--state-root", type=click.Path(path_type=Path))
@click.option("--all", "show_all", is_flag=True,
              help="Also the runs refused before any work (a usage or set-up error).")
def history_cmd(state_root: Path | None, show_all: bool) -> None:
    """List runs with their verdicts, speedups and tagged candidates."""
    root = root_of(state_root)
    rows, hidden = history.table_rows(root, show_all)
    if hidden:
        ui.note(f"{hidden} run(s) refused before any work not shown (--all shows them)")
    if not rows:
        ui.note(f"no runs under {root / 'runs'}")
        return
    ui.table(rows, ["run", "target", "status", "speedup", "tags (kernelopt/<run>/...)"])


@click.command("report")
@click.argument("run_ref", default="last")
@click.option("--state-root", type=click.Path(path_type=Path))
def report_cmd(run_ref: str, state_root: Path | None) -> None:
    """Rebuild a run's report from its journal and print it (RUN: id, prefix or `last`)."""
    run_dir = history.find_run(root_of(state_root), run_ref)
    report.write_all(run_dir)
    ui.echo((run_dir / "report.md").read_text())


@click.command("resume")
@click.argument("run_ref")
@click.option("--state-root", type=click.Path(path_type=Path))
@click.pass_context
def resume_cmd(ctx: click.Context, run_ref: str, state_root: Path | None) -> None:
    """Continue a killed or interrupted run from its journal (RUN: id, prefix or `last`):
    the command it recorded, from the directory it ran in, with --run-id RUN."""
    root = root_of(state_root)
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
    group = ctx.find_root().command  # the whole command line, run again with the recorded args
    code = group.main(args=[*args, *(["--target", target] if target else []), "--run-id",
                            run_dir.name, "--state-root", str(root.resolve())],
                      standalone_mode=False)
    sys.exit(code or 0)
