"""``kernelopt campaign``: the command (kernelopt_core.campaign does the work)."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

import click

from kernelopt_core import campaign, model_check, ui
from kernelopt_core.capabilities import ConfiguresItself
from kernelopt_core.commands.common import check_model, shell
from kernelopt_core.errors import UsageError
from kernelopt_core.executors import visible_gpus
from kernelopt_core.gates.options import RooflineOptions
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.journal import Journal
from kernelopt_core.measure.device import cached_device
from kernelopt_core.resume import check_run_id
from kernelopt_core.target import Target


@click.command("campaign")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--name", help="The campaign's name (its runs are NAME-01, NAME-02, ...); the "
              "same name again resumes it. Default: campaign-<UTC time>.")
@click.option("--backend", help="The backend of every PATH (default: detected), e.g. llamacpp.")
@click.option("--executor", default="local", show_default=True,
              help="Where jobs run: local (this host), or an installed executor (dask).")
@click.option("--gpus", help="The GPUs to use, one job on each at a time, e.g. 0 or 0,1 "
              "(default: CUDA_VISIBLE_DEVICES, else every GPU nvidia-smi lists, else one slot).")
@click.option("--budget-gpu-minutes", type=float, help="GPU-lock minutes for the whole campaign.")
@click.option("--budget-usd", type=float, help="LLM dollars for the whole campaign.")
@click.option("--budget-minutes", type=float, help="Wall minutes of search for the whole campaign, "
              "split over its runs (each run's baseline build and final gates come on top).")
@click.option("--run-args", default="", help="Arguments for every target's `kernelopt run` "
              "(one string), e.g. \"--iterations 8 --planner tuner\".")
@click.option("--state-root", type=click.Path(path_type=Path))
@click.pass_context
def campaign_command(ctx: click.Context, paths: tuple[Path, ...], name: str | None,
                     backend: str | None, executor: str, gpus: str | None, budget_gpu_minutes: float | None,
                     budget_usd: float | None, budget_minutes: float | None, run_args: str,
                     state_root: Path | None, **plugin_flags: Any) -> None:
    """Optimize every target of PATHS under one budget, on every GPU (docs/scaling.md).

    The plugins' run flags (e.g. --top K for a model file) go to every target's run."""
    host = shell(ctx).get_host()
    executors = host.registry("executors")
    if executor not in executors:
        raise UsageError(f"no executor {executor!r}",
                         hint=f"installed: {', '.join(sorted(executors))} (pip install "
                              "kernelopt-dask for dask)")
    name = check_run_id(name or time.strftime("campaign-%Y%m%dT%H%M%SZ", time.gmtime()))
    extra = shlex.split(run_args)
    if backend and any(a.split("=", 1)[0] == "--backend" for a in extra):
        raise UsageError(f"--backend is given twice: as a campaign flag and in --run-args "
                         f"{run_args!r}", hint="give it once")
    extra += _as_run_args(ctx.command, plugin_flags, extra)
    extra += ["--backend", backend] if backend else []
    slots = _slots(gpus, visible_gpus)
    found = []
    settings_by_path: dict[str, Any] = {}
    checks: list[tuple[Any, bool]] = []  # each PATH's backend, and whether to check its model
    first: Any = None  # the first PATH's settings: the executor's options come from them
    # `run` as the group gives it: with the plugins' flags (--top), which <run-args> may use
    run_command = shell(ctx).get_command(ctx, "run")
    assert run_command is not None
    for path in paths:  # each PATH's targets, as `kernelopt run PATH <run-args>` finds them
        # the campaign's state root too: a backend may read it while discovering (llama.cpp's
        # --top K ranks by the model's profile recorded there)
        rooted = [*extra, *(["--state-root", str(state_root)] if state_root else [])]
        run_ctx = run_command.make_context("run", [str(path), *rooted], parent=ctx)
        flags = {k: v for k, v in run_ctx.params.items() if k != "path"}
        _host, path_backend, targets, settings = shell(ctx).resolve_all(run_ctx, path, flags)
        for line in settings.notes:  # e.g. a gate's option still in [run]
            ui.note(f"note: {line}")
        found.append((str(path.resolve()), targets))
        settings_by_path[str(path.resolve())] = settings
        checks.append((path_backend, settings.model_check))
        first = first or settings
    state = (state_root or first.state_root).resolve()
    chosen = executors[executor]
    if isinstance(chosen, ConfiguresItself):  # its own options ([dask] scheduler)
        chosen = chosen.configure(first)
    again = campaign.recorded(state, name, Path.cwd())
    if again is not None:  # the same campaign: its plan, run ids and budget shares as started
        entries, jobs = again
        if sorted({e.path for e in entries}) != sorted({p for p, _ in found}):
            raise UsageError(f"campaign {name} was started with other PATHs: "
                             f"{', '.join(sorted({e.path for e in entries}))}",
                             hint="give the same PATHs to resume it, or another --name")
        # the model check after the jobs puts in the targets found now: they must be the jobs'
        if {(e.path, e.target) for e in entries} != {(p, t.name) for p, ts in found for t in ts}:
            raise UsageError(f"campaign {name} was started with other targets: "
                             f"{', '.join(sorted(e.target for e in entries))}",
                             hint="give the flags it was started with (e.g. the same --top) "
                                  "to resume it, or another --name")
        ui.note(f"campaign {name} exists: its {len(jobs)} jobs run again, each resuming its run")
    else:
        entries = campaign.plan(name, found, state, _peaks(state, settings_by_path))
    ui.table([[e.key, e.target, e.path, f"{e.share:.3f}",
               f"{e.headroom:.2f}" if e.headroom_known else "unknown", f"{e.priority:.3f}",
               f"{e.profiled_fraction:.2f}" if e.profiled_fraction is not None else "-"]
              for e in entries],
             ["run", "target", "path", "share", "headroom", "priority", "profiled of peak"])
    if again is None:
        budget = campaign.budgets(entries, len(slots), budget_gpu_minutes, budget_usd,
                                  budget_minutes)
        jobs = campaign.jobs(entries, state, extra, budget, Path.cwd())

    def arrived(result: Any, summary: dict[str, Any]) -> None:
        ui.note(f"{result.key} on {result.worker} GPU {result.gpu} ({result.seconds:.0f} s): "
                f"{summary.get('report_line') or f'exit {result.returncode}'}")

    outcome = campaign.run(name, entries, jobs, chosen, slots, state, arrived)
    if _check_models(name, found, checks, outcome, state):
        outcome = campaign.write_summary(state / "campaigns" / name)
    ui.table([[r["run"], r["target"], r["status"], f"{r['speedup']:.2f}×", f"{r['share']:.3f}",
               f"{r['saved']:.3f}"] for r in outcome["results"]],
             ["run", "target", "status", "speedup", "share", "time saved (of its model)"])
    for path, model in outcome["models"].items():
        if model["amdahl_speedup"] is not None:
            ui.note(f"{path}: {model['amdahl_speedup']:.3f}× predicted for the whole model "
                    f"(Amdahl over its optimized kernels)")
    ui.note(f"campaign {name}: {outcome['verified']} of {len(entries)} targets optimized; "
            f"{state / 'campaigns' / name / 'summary.json'}")
    ctx.exit(0 if outcome["verified"] else 1)


def _peaks(state: Path, settings_by_path: dict[str, Any]) -> campaign.Peaks:
    """A target's device peak and cache size for its profiled fraction: the peak its roofline
    gate will read (``--peak-gbps``, the descriptor's, else the one measured on this machine),
    and the cache size measured with it; None until this machine's device cache holds a record
    (without the cache size a call the cache may serve cannot be told apart). Never measures:
    a plan only shows the fraction, and a campaign's jobs may run on other GPUs or hosts."""
    def peak(path: str, target: Target) -> tuple[float, int] | None:
        if not (target.bytes_moved and target.profiled_ms):
            return None
        cached = cached_device(state, target.device)
        if cached is None:
            return None
        given = settings_by_path[path].section(RooflineOptions).peak_gbps or target.peak_gbps
        gbps = given or cached.peak_gbps
        return (float(gbps), cached.cache_bytes) if gbps else None

    return peak


def _check_models(name: str, found: list[tuple[str, Any]], checks: list[tuple[Any, bool]],
                  outcome: dict[str, Any], state: Path) -> bool:
    """Each model PATH: the whole model with its runs' winners in place (model_check.py),
    journaled in the campaign too. True when one ran."""
    directory = state / "campaigns" / name
    ledger = Journal(directory / "campaign.jsonl")
    ran = False
    try:
        for n, ((path, targets), (backend, wanted)) in enumerate(zip(found, checks, strict=True)):
            runs = {r["target"]: r["run"] for r in outcome["results"] if r["path"] == path
                    and r["status"] in ("optimized", "matched", "fallback", "unverified")}
            done = [model_check.Finished(t, state / "runs" / runs[t.name])
                    for t in targets if t.name in runs]
            if wanted and done and model_check.offered(backend):
                check_model(backend, done, state, directory / f"model-{n + 1}", ledger)
                ran = True
    finally:
        ledger.close()
    return ran


# each job's share of the campaign's budgets (campaign.budgets): a flag for all jobs would
# override it
CAMPAIGN_WRITES = {"--budget-cost": "--budget-usd", "--budget-gpu-seconds": "--budget-gpu-minutes",
                   "--budget-minutes": "--budget-minutes"}


def _as_run_args(command: click.Command, given: dict[str, Any], run_args: list[str]) -> list[str]:
    """The plugin flags given to the campaign (unset ones are None), as `kernelopt run`
    arguments after ``run_args``."""
    in_run_args = {token.split("=", 1)[0] for token in run_args}
    args: list[str] = []
    for param in command.params:
        value = given.get(param.name or "")
        if value is None or not isinstance(param, click.Option):
            continue
        opts = {*param.opts, *param.secondary_opts}
        owned = sorted(opts & CAMPAIGN_WRITES.keys())
        if owned:
            raise UsageError(f"{owned[0]}: the campaign gives each job its share of the "
                             f"campaign's budget", hint=f"give {CAMPAIGN_WRITES[owned[0]]} for "
                             "the whole campaign")
        if opts & in_run_args:
            raise UsageError(f"{param.opts[0]} is given twice: as a campaign flag and in "
                             f"--run-args {shlex.join(run_args)!r}", hint="give it once")
        if param.is_flag:
            args += [param.opts[0]] if value else param.secondary_opts[:1]
        else:
            for item in value if param.multiple else (value,):
                args += [param.opts[0], str(item)]
    return args


def _slots(gpus: str | None, visible: Any) -> list[str]:
    """--gpus: the GPU indices (or UUIDs) to use, comma-separated; each is one slot."""
    if gpus is None:
        return list(visible())
    slots = [g.strip() for g in gpus.split(",") if g.strip()]
    if not slots or len(set(slots)) != len(slots):
        raise UsageError(f"--gpus {gpus!r}: give each GPU once, comma-separated",
                         hint="e.g. --gpus 0 or --gpus 0,1")
    return slots


campaign_command.plugin_flags = True  # type: ignore[attr-defined]  # cli adds the plugins' flags


@hookimpl
def kernelopt_register_commands(cli: click.Group) -> None:
    cli.add_command(campaign_command)
