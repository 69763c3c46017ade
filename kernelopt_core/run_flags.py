"""The flags of `kernelopt run` (and of plugin commands made by run_command) for the core's
settings; their defaults shown in `--help` come from Settings itself. The built-in gates'
options (``--gamma``, ``--final-rounds``, ``--kappa``...) are their option tables' flags
(gates/options.py), added as every plugin's are (cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kernelopt_core.settings import FIELDS


def default(name: str) -> Any:
    """A setting's default, as `run --help` shows it (one source: Settings)."""
    value: Any = FIELDS[name].default
    return value.factory() if hasattr(value, "factory") else value  # an attrs Factory


def run_options(fn: Any) -> Any:
    options = [
        click.option("--backend", help="Backend plugin to use (default: detected)."),
        click.option("--target", help="Target name, when the project declares several."),
        click.option("--planner", help="tuner | agents | any installed planner."),
        click.option(
            "--iterations", type=int, help=f"Most candidates to evaluate [{default('iterations')}]."
        ),
        click.option(
            "--patience",
            type=int,
            help=f"Stop after N candidates without a new best [{default('patience')}].",
        ),
        click.option("--target-speedup", type=float, help="Stop once this speedup is reached."),
        click.option(
            "--budget-minutes", type=float,
            help="Wall minutes for the search, counted once the baseline is built, timed and "
                 f"probed [{default('budget_minutes')}]."
        ),
        click.option(
            "--budget-gpu-seconds", type=float, help="GPU-lock seconds budget for the search [none]."
        ),
        click.option("--plans", type=int, help=f"Proposals per expansion [{default('plans')}]."),
        click.option("--beam", type=int, help=f"Beam width [{default('beam')}]."),
        click.option(
            "--seeds", help=f"Comma-separated correctness seeds [{','.join(map(str, default('seeds')))}]."
        ),
        click.option("--gates", "candidate_gates", help="Candidate gates, in order (comma list)."),
        click.option("--final-gates", help="Final gates, in order (comma list)."),
        click.option(
            "--profiler",
            help="Profile the baseline and the winner (ncu, nsys, rocprof, ...): report.md's table.",
        ),
        click.option(
            "--model-check/--no-model-check",
            default=None,
            help="After a model's kernels: time the whole model every way (eager, compile, "
            "max-autotune, kernelopt's winners in place) in one process [on].",
        ),
        click.option(
            "-o",
            "--option",
            multiple=True,
            metavar="KEY=VALUE",
            help="A backend option (e.g. -o op=SOFT_MAX); plugins' own flags do the same.",
        ),
        click.option(
            "--state-root",
            type=click.Path(path_type=Path),
            help="State directory [./.kernelopt or $KERNELOPT_HOME].",
        ),
        click.option("--run-id", help="Name the run; if a run of that name exists (killed, "
                     "interrupted), resume it from its journal (docs/scaling.md)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn
