"""The public face for plugin authors: everything a plugin package imports from the core.

A plugin imports from ``kernelopt_core.api`` only (tests/test_architecture.py enforces this
for the plugins in this repository); a bench-worker *child* program imports
``kernelopt_core.bench_worker`` instead (standard library only, so the child starts fast).
Every name below is documented in docs/plugins.md; anything else in ``kernelopt_core`` is the
engine's and may change between releases.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kernelopt_core.backend_kit import (
    CudaGpu,
    Nvcc,
    cuda_gpus,
    cuda_kernel_names,
    find_nvcc,
    gpu_arch,
    nvcc_version,
    read_pin,
    write_pin,
)
from kernelopt_core.budget import Budget
from kernelopt_core.capabilities import (
    BenchesWork,
    ChecksInputs,
    ChecksProvider,
    ChecksSeeds,
    ChecksShape,
    ClaimsSpeedup,
    ComparesModel,
    ConfiguresItself,
    DefinesKernels,
    Exhaustive,
    LabelsKernels,
    PairsEngine,
    ProbesCompile,
    RequiresGates,
    SelectsItself,
    ServesBenchWorker,
    SplitsPhases,
    UsesPlugins,
    benches_work,
)
from kernelopt_core.cmake_support import cmake_commands, needs_configure
from kernelopt_core.cuda_ledger import build as cuda_ledger_build
from kernelopt_core.cuda_ledger import watch as cuda_ledger_watch
from kernelopt_core.entry import RunResult
from kernelopt_core.entry import run as _run_entry
from kernelopt_core.errors import (
    EXIT_INTERNAL,
    EXIT_NO_WIN,
    EXIT_OPTIMIZED,
    EXIT_PREREQUISITE,
    EXIT_USAGE,
    BenchFailed,
    BenchParseError,
    BudgetExhausted,
    KerneloptError,
    PlannerError,
    PluginError,
    PrerequisiteError,
    UsageError,
)
from kernelopt_core.executors import Job, JobResult, listed_gpus, visible_gpus
from kernelopt_core.gates.base import (
    FALLBACK,
    MATCHED,
    UNVERIFIED,
    Confirmed,
    EventLog,
    GateContext,
    GateResult,
    GateServices,
)
from kernelopt_core.gates.engine import OUT_ENV as ENGINE_OUT_ENV
from kernelopt_core.gates.engine import REFERENCE_ENV as ENGINE_REFERENCE_ENV
from kernelopt_core.gates.options import ConfirmOptions, RooflineOptions, ScreenOptions, ShapeOptions
from kernelopt_core.hookspecs import Backend, DocHit, Executor, Gate, LLMProvider, Planner, Profiler, hookimpl
from kernelopt_core.knobs import (
    anchored_pattern,
    current_values,
    define_pattern,
    launch_bounds_knobs,
    powers_around,
    source_texts,
    unroll_knobs,
)
from kernelopt_core.knobs import apply as apply_knobs
from kernelopt_core.llm_check import check_llm_provider
from kernelopt_core.lock import gpu_lock
from kernelopt_core.measure.device import DeviceInfo, cached_device
from kernelopt_core.measure.parsers import ANSI, BenchLine, BenchReading
from kernelopt_core.measure.stats import SIGN_ALPHA, sign_test_p
from kernelopt_core.options import option, option_table
from kernelopt_core.planners.base import (
    Outcome,
    PlanContext,
    Profile,
    Proposal,
    Screened,
    TunerFrontier,
)
from kernelopt_core.process import OUTPUT_CAP, ProcessResult
from kernelopt_core.process import run as _run
from kernelopt_core.profiling.parsers import KernelProfile, MetricColumn, ncu_kernels
from kernelopt_core.profiling.store import RecordedProfile, last_profile
from kernelopt_core.search import Node
from kernelopt_core.settings import (
    GateSettings,
    SearchSettings,
    Settings,
    Timeouts,
    read_dotenv,
    read_toml,
    toml_line,
)
from kernelopt_core.target import BenchSpec, Command, Knob, Target, Tree
from kernelopt_core.ui import echo, note

__all__ = [
    # the hooks and the protocols their records follow
    "hookimpl", "Backend", "Gate", "Planner", "Profiler", "LLMProvider", "DocHit", "Executor",
    # a backend's optional methods, one capability protocol each (the core tests isinstance)
    "ChecksShape", "ChecksSeeds", "BenchesWork", "benches_work", "PairsEngine", "ComparesModel",
    "SplitsPhases", "LabelsKernels", "ProbesCompile", "ServesBenchWorker", "DefinesKernels",
    # a planner's optional methods, likewise
    "SelectsItself", "UsesPlugins", "ChecksInputs", "ChecksProvider",
    # a gate's and a planner's optional attributes, likewise (absent: their defaults)
    "RequiresGates", "ClaimsSpeedup", "Exhaustive", "ConfiguresItself",
    "Job", "JobResult",
    # what a backend describes
    "Target", "Tree", "Command", "Knob", "BenchSpec", "Settings", "SearchSettings",
    "GateSettings", "Timeouts",
    # a plugin's own typed options (kernelopt_option_tables); the built-in gates' tables, read
    # with settings.section(ConfirmOptions).gamma by a gate that holds to the same margin
    "option", "option_table", "ScreenOptions", "ConfirmOptions", "ShapeOptions", "RooflineOptions",
    # gates and planners
    "GateContext", "GateServices", "GateResult", "Confirmed", "MATCHED", "FALLBACK", "UNVERIFIED",
    "PlanContext", "Proposal", "Outcome", "Profile", "TunerFrontier", "Screened", "Node", "Budget",
    "BenchReading", "BenchLine", "EventLog", "sign_test_p", "SIGN_ALPHA", "cached_device",
    "DeviceInfo",
    "ENGINE_OUT_ENV", "ENGINE_REFERENCE_ENV",
    "KernelProfile", "MetricColumn", "ncu_kernels", "RecordedProfile", "last_profile",
    # errors and exit codes
    "KerneloptError", "UsageError", "PrerequisiteError", "BenchParseError", "BenchFailed",
    "PlannerError", "PluginError",
    "BudgetExhausted", "EXIT_OPTIMIZED", "EXIT_NO_WIN", "EXIT_USAGE", "EXIT_PREREQUISITE",
    "EXIT_INTERNAL",
    # the backend kit
    "run_process", "run_on_gpu", "gpu_lock", "ProcessResult", "OUTPUT_CAP", "cmake_commands",
    "needs_configure",
    "define_pattern", "powers_around", "current_values", "anchored_pattern", "apply_knobs",
    "launch_bounds_knobs", "unroll_knobs", "source_texts",
    "find_nvcc", "nvcc_version", "Nvcc", "cuda_gpus", "CudaGpu", "gpu_arch", "listed_gpus",
    "visible_gpus", "read_pin", "write_pin", "cuda_kernel_names", "cuda_ledger_build",
    "cuda_ledger_watch",
    "read_toml", "toml_line", "read_dotenv", "ANSI",
    "run_command", "repo_path",
    # a plugin command's output, through the one UI; the LLM setting checked
    "echo", "note", "check_llm_provider",
    # runs from Python, as `kernelopt run` starts them
    "run", "RunResult",
]


def run(path: str | Path, **settings: Any) -> list[RunResult]:
    """Optimize the kernel(s) at ``path`` as ``kernelopt run PATH`` does, printing nothing:
    ``settings`` by flag name (``iterations=3``, ``backend="cmake"``, a plugin's option such
    as ``top=2``), merged with kernelopt.toml, the user's config and the environment as the
    CLI merges them. Returns each target's ``RunResult`` in the order they ran; bad input
    raises the errors the CLI exits 2 or 3 with (``UsageError``, ``PrerequisiteError``)."""
    return _run_entry(path, **settings)


def repo_path(flags: dict[str, Any], env: str, what: str) -> Path:
    """For a ``run_command`` whose tree comes from ``--repo``: that flag's value (popped), else
    ``env`` from the environment, else from ``./.env``; a UsageError naming both when none."""
    repo = flags.pop("repo", None) or os.environ.get(env) or read_dotenv(Path.cwd() / ".env").get(env)
    if not repo:
        raise UsageError(f"no {what} given",
                         hint=f"pass --repo PATH or set {env} (environment or .env)")
    return Path(repo)


def run_process(command: Command, log: Path | None = None, cap: int = OUTPUT_CAP,
                under_test: bool = False) -> ProcessResult:
    """Run a command that does not use the GPU (a tool, a query) through the core's one
    spawner: its own session, the command's timeout, a process-group kill, capped output
    (``cap`` bytes of each stream), the log written to ``log``. ``under_test``: it runs the
    code under test (a wrapper's test or bench program), so a process it leaves running in
    its session is killed and the result is not ``ok`` (``left_running``)."""
    return _run(command, log, cap, own_group=under_test)


def run_on_gpu(command: Command, state_root: Path, log: Path | None = None,
               cap: int = OUTPUT_CAP) -> ProcessResult:
    """Run a command that uses the GPU (a capture, a profile) outside the loop: as
    ``run_process``, holding the GPU lock of ``state_root`` (``settings.state_root``) so it
    never overlaps another run's timed window."""
    with gpu_lock(state_root):
        return _run(command, log, cap)


def run_command(name: str, *, help: str, forced: dict[str, Any],
                resolve_path: Callable[[dict[str, Any]], Path],
                params: Sequence[Any] = ()) -> Any:
    """A click command that runs the loop as ``kernelopt run`` does, for
    ``kernelopt_register_commands``: every run flag plus ``params`` (click parameters; a name
    ``run`` already has is skipped), ``forced`` settings (e.g. ``{"backend": "llamacpp"}``),
    and ``resolve_path(flags)`` giving the target's path (it pops its own params' values and
    may raise UsageError / PrerequisiteError)."""
    from kernelopt_core.commands.run import run_command as make  # the CLI only when a plugin asks

    return make(name, help=help, forced=forced, resolve_path=resolve_path, params=params)
