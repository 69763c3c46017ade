"""``kernelopt apply RUN``: the run's winner written into the user's tree (history.apply), the
step report.md and the console print; ``kernelopt revert RUN`` undoes it."""

from __future__ import annotations

from pathlib import Path

import click

from kernelopt_core import history, ui
from kernelopt_core.commands.common import state_root as root_of
from kernelopt_core.hookspecs import hookimpl


def _run_dir(run_ref: str, state_root: Path | None) -> Path:
    """RUN (an id, a prefix or `last`) under the state root these flags and settings name."""
    return history.find_run(root_of(state_root), run_ref)


@click.command("apply")
@click.argument("run_ref")
@click.option("--state-root", type=click.Path(path_type=Path))
def apply_command(run_ref: str, state_root: Path | None) -> None:
    """Write RUN's winner into your tree; refuses if those files changed since the run began."""
    run_dir = _run_dir(run_ref, state_root)
    for rel in history.apply(run_dir):
        ui.echo(f"applied {rel}")
    ui.note(f"`kernelopt revert {run_dir.name}` undoes it")


@click.command("revert")
@click.argument("run_ref")
@click.option("--state-root", type=click.Path(path_type=Path))
def revert_command(run_ref: str, state_root: Path | None) -> None:
    """Undo RUN's applied winner in your tree; refuses if those files changed since."""
    for rel in history.revert(_run_dir(run_ref, state_root)):
        ui.echo(f"restored {rel}")


@hookimpl
def kernelopt_register_commands(cli: click.Group) -> None:
    cli.add_command(apply_command)
    cli.add_command(revert_command)
