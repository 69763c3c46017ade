"""What is installed: ``kernelopt setup`` (prerequisites, ``--smoke``, ``--measure-peak``) and
``kernelopt plugins``."""

from __future__ import annotations

from pathlib import Path

import click

from kernelopt_core import setup_check, ui
from kernelopt_core.commands.common import shell
from kernelopt_core.commands.common import state_root as root_of


@click.command()
@click.pass_context
def plugins(ctx: click.Context) -> None:
    """List installed plugins, their versions and what each provides (exit 1: one FAILED)."""
    host = shell(ctx).get_host()
    run_command = shell(ctx).get_command(ctx, "run")  # adds plugin flags, recording any clash
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


@click.command()
@click.option("--smoke", is_flag=True, help="Also compile, configure and run a tiny project.")
@click.option("--measure-peak", "measure_peak", type=click.Choice(["cpu", "cuda", "hip"]),
              help="Measure the device's peak bandwidth again now (the roofline gate's bound).")
@click.option("--state-root", type=click.Path(path_type=Path))
@click.pass_context
def setup(ctx: click.Context, smoke: bool, measure_peak: str | None,
          state_root: Path | None) -> None:
    """Check prerequisites: what is found, what is missing, and what to do."""
    if measure_peak:
        ui.echo(setup_check.measure_peak(root_of(state_root), measure_peak))
        return

    rows = setup_check.prerequisites(shell(ctx).get_host())
    ui.table([[r.name, "found" if r.found else "missing", r.detail] for r in rows],
             ["prerequisite", "status", "detail / what to do"])
    if smoke:
        results = setup_check.smoke()
        ui.table([[r.name, "ok" if r.found else "FAILED", r.detail] for r in results],
                 ["smoke test", "status", "detail"])
        if not all(r.found for r in results):
            ctx.exit(3)
