"""``kernelopt profile PATH``: the baseline only, under a profiler — its kernels by share of
device time and the metrics table; nothing is optimized. ``--engine``: the whole program
instead of the bench, in the phases the backend splits it into (``Backend.profile_phases``:
llama.cpp's prompt and generation, every launch of each), each ranked apart, with the
backend's label of each kernel (``Backend.kernel_labels``: its ggml op, or the library) where
it gives one. The plugins' flags (``[llamacpp] op``, ``e2e_model``, …) are on it as on ``run``.
A built-in command, added through the same hook as a plugin's (``kernelopt_register_commands``).

The tree is built in the private workspace (the user's directory is never written), the
bench runs once under the profiler with the GPU lock held, and everything lands in
``<state root>/profiles/<id>/`` (journal.jsonl, the profiler's raw output, profile.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from kernelopt_core import events, ui
from kernelopt_core.capabilities import LabelsKernels, SplitsPhases
from kernelopt_core.commands.common import shell
from kernelopt_core.errors import UsageError
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.profiling.bench import Profiling, defined_kernels
from kernelopt_core.profiling.view import kernel_table, locate, ranking, sources, suggestion
from kernelopt_core.run_context import RunContext
from kernelopt_core.session import new_run_id, prepare_state_root


@click.command("profile")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--profiler", help="A registered profiler (`kernelopt plugins` lists them); "
              "default: the descriptor's `profiler`, else ncu.")
@click.option("--target", help="The target to profile when PATH has several.")
@click.option("--engine", "whole_program", is_flag=True,
              help="Profile the target's whole program (its engine command, or the phases the "
              "backend splits it into: llama.cpp's prompt and generation), every kernel it "
              "runs, instead of its bench: which kernel is worth a target.")
@click.option("--backend", help="Force a backend instead of detecting it.")
@click.option("--state-root", type=click.Path(path_type=Path), help="Where profiles/ goes.")
@click.pass_context
def profile_command(ctx: click.Context, path: Path, whole_program: bool, **flags: Any) -> None:
    """Profile the unmodified target: build it, run its bench (or with --engine, its whole
    program) once under the profiler, and print the kernels ranked by share of device time,
    where the target's are defined, and their metrics per launch."""
    host, backend, target, settings = shell(ctx).resolve(ctx, path, flags)
    if not target.editable and not whole_program:  # llama.cpp's whole model: no bench of its own
        raise UsageError(f"{target.name} is a whole program with no kernel to edit: profile it "
                         "with --engine", hint=f"kernelopt profile {path} --engine")
    run_id = new_run_id()
    out = settings.state_root / "profiles" / run_id
    prepare_state_root(settings.state_root)
    context = RunContext.open(run_id, out, backend, target, settings)
    context.write_header(sys.argv)
    workspace = context.workspace
    try:
        profiling = Profiling(settings.profiler or "ncu", host, context)
        workspace.acquire(run_id, lambda holder: ui.note(
            f"waiting for the workspace of {target.name}, held by {holder}"))
        workspace.start(run_id)
        built = context.runner.build(workspace.baseline_tree, out / "build.log")
        if built is not None and not built.ok:
            raise UsageError(f"the target does not build: {built.describe()}\n{built.tail()}",
                             hint=f"make the unmodified target build (log: {out / 'build.log'})")
        program = "engine" if whole_program else "bench"
        tree = workspace.baseline_tree
        # the whole program in phases profiled apart (llama.cpp: prompt, generation), where the
        # backend splits it; else its engine command, or the bench
        split = ((backend.profile_phases(target, tree) or {})
                 if whole_program and isinstance(backend, SplitsPhases) else {})
        profiles = {name: profiling.run(tree, workspace.files, out / name, "baseline", program,
                                        command, whole_program=True, phase=name)
                    for name, command in split.items()} or \
            {program: profiling.run(tree, workspace.files, out, "baseline", program)}
        names = sorted({str(k.get("name", "")) for p in profiles.values()
                        for k in p.get("kernels", [])})
        labels = (backend.kernel_labels(target, tree, names)
                  if isinstance(backend, LabelsKernels) and names else None)
    except (KeyboardInterrupt, Exception) as exc:
        context.record_failure(exc, "profile")
        raise
    else:
        context.journal.record(events.End(exit_code=0,
                                          gpu_seconds=round(context.runner.gpu_seconds, 3)))
    finally:
        context.close()
    for phase, profile in profiles.items():
        if not profile:
            raise UsageError(f"{target.name} has no {program} command to profile",
                             hint=f"declare `{program}` for the target (docs/descriptor.md)")
        if "error" in profile:
            raise UsageError(f"profiling the {phase} failed: {profile['error']}",
                             hint=f"the profiler's log and raw output are in {out}")
    # where each kernel is defined: the snapshot in memory (the workspace is released)
    tree_names = defined_kernels(backend, target, sources(workspace.files))
    markdown = [f"# Profile of {target.name} ({profiling.name})", ""]
    for phase, profile in profiles.items():
        markdown += _show(locate(profile, tree_names), phase if split else "", labels)
    (out / "profile.md").write_text("\n".join(markdown) + "\n", encoding="utf-8")
    ui.note(f"raw output, journal and profile.md: {out}")


def _show(profile: dict[str, Any], phase: str, labels: dict[str, str] | None) -> list[str]:
    """One profile's ranking, hint and metrics table on the console; its markdown lines."""
    rows = ranking(profile, labels)
    table = kernel_table([(phase or "baseline", profile)])
    header = ["share", "total µs", "launches", "µs/launch", "defined in",
              *(["what"] if labels is not None else []), "kernel"]
    hint = suggestion(profile)
    total = sum(float(k.get("total_us", 0.0)) for k in profile.get("kernels", []))
    title = f"{phase}: {total:.1f} µs of kernel time" if phase else ""
    if title:
        ui.echo()
        ui.echo(title)
    ui.table(rows, header)
    if hint:
        ui.note(hint)
    ui.echo()
    for line in table:
        ui.echo(line)
    if profile.get("launches_profiled", 0) >= profile.get("launch_limit", float("inf")):
        ui.note(f"the profiler stopped at {profile['launch_limit']} launches: a longer "
                "program's later kernels are not in this ranking")
    return [*([f"## {title}", ""] if title else []),
            "| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(r) + " |" for r in rows), "",
            *([f"- {hint}", ""] if hint else []), *table, ""]


profile_command.plugin_flags = True  # type: ignore[attr-defined]  # cli adds the plugins' flags


@hookimpl
def kernelopt_register_commands(cli: click.Group) -> None:
    cli.add_command(profile_command)
