"""``kernelopt watch [RUN|last]``: a live view of a run from its journal — stage, candidate n
of N and what it tries, the best so far and its course, confirm rounds as they land, GPU
seconds, waits, LLM calls and cost. A built-in command, added through the same hook as a
plugin's (``kernelopt_register_commands``). Read-only: it works from another terminal, over
ssh, during the run or after it."""

from __future__ import annotations

from pathlib import Path

import click

from kernelopt_core import history
from kernelopt_core.commands.common import state_root as root_of
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.ui_watch import watch  # rich where installed, else plain text


@click.command("watch")
@click.argument("run_ref", default="last")
@click.option("--once", is_flag=True, help="Print the current state once and exit.")
@click.option("--state-root", type=click.Path(path_type=Path),
              help="State directory [./.kernelopt or $KERNELOPT_HOME].")
def watch_command(run_ref: str, once: bool, state_root: Path | None) -> None:
    """Watch a run (RUN: its id or a prefix of it, default the newest) until it ends."""
    run_dir = history.find_run(root_of(state_root), run_ref)
    watch(run_dir / "journal.jsonl", once)


@hookimpl
def kernelopt_register_commands(cli: click.Group) -> None:
    cli.add_command(watch_command)
