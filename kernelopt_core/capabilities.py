"""The optional methods of a backend and of a planner, and the optional attributes of a gate
and of a planner, one small protocol each: the core asks ``isinstance(backend, ChecksSeeds)``
(the method exists and is not None), never getattr, and mypy then knows the call's types; an
optional attribute is read through a function that gives its documented default
(``claims_speedup(gate)``). Part of the plugin contract: kernelopt_core.hookspecs
documents each method in Backend's and Planner's docstrings; plugins import these from
kernelopt_core.api (they moved here from hookspecs, which no longer has them)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, runtime_checkable

if TYPE_CHECKING:
    from kernelopt_core.hookspecs import Backend
    from kernelopt_core.settings import Settings
    from kernelopt_core.target import Command, Knob, Target, Tree


# One protocol per optional Backend method: the core asks ``isinstance(backend, ChecksSeeds)``
# (the method exists and is not None), never getattr, and mypy then knows the call's types.


@runtime_checkable
class ChecksShape(Protocol):
    """A backend with ``shape_check``: the timed shape and launch path checked apart."""

    def shape_check(self, target: Target, tree: Tree, seed: int) -> Command | None: ...


@runtime_checkable
class ChecksSeeds(Protocol):
    """A backend with ``check_seeds``: every seed checked by one command."""

    def check_seeds(self, target: Target, tree: Tree, seeds: tuple[int, ...]) -> Command | None: ...


@runtime_checkable
class BenchesWork(Protocol):
    """A backend whose ``bench`` accepts ``work`` (the fraction of its timed work to do).
    Every backend has ``bench``, so ``isinstance`` cannot tell: ask :func:`benches_work`."""

    def bench(self, target: Target, tree: Tree, work: float = 1.0) -> Command | None: ...


def benches_work(backend: Backend) -> TypeGuard[BenchesWork]:
    """True when ``backend.bench`` takes ``work``: a parameter, which only its signature shows."""
    return "work" in inspect.signature(backend.bench).parameters


@runtime_checkable
class PairsEngine(Protocol):
    """A backend with ``engine_pair``: both versions in one whole-program run."""

    def engine_pair(self, target: Target, baseline: Tree, candidate: Tree) -> Command | None: ...


@runtime_checkable
class ComparesModel(Protocol):
    """A backend with ``model_compare``: the whole model with every winner in place."""

    def model_compare(self, targets: list[Target], winners: dict[str, Path], out_dir: Path
                      ) -> Command | None: ...


@runtime_checkable
class SplitsPhases(Protocol):
    """A backend with ``profile_phases``: the whole program profiled in phases."""

    def profile_phases(self, target: Target, tree: Tree) -> dict[str, Command] | None: ...


@runtime_checkable
class LabelsKernels(Protocol):
    """A backend with ``kernel_labels``: profiled kernels named in the backend's terms."""

    def kernel_labels(self, target: Target, tree: Tree, kernels: list[str]) -> dict[str, str]: ...


@runtime_checkable
class ProbesCompile(Protocol):
    """A backend with ``compile_probe``: knob values that do not compile dropped up front."""

    def compile_probe(self, target: Target, tree: Tree, probe_dir: Path) -> Command | None: ...


@runtime_checkable
class ServesBenchWorker(Protocol):
    """A backend with ``bench_worker``: a persistent worker per tree (kernelopt_core.workers)."""

    def bench_worker(self, target: Target, tree: Tree) -> Command | None: ...


@runtime_checkable
class DefinesKernels(Protocol):
    """A backend with ``kernel_names``: which kernels the given files define (name -> file),
    so a profile tells the target's kernels from the harness's and the libraries'."""

    def kernel_names(self, target: Target, files: dict[str, bytes]) -> dict[str, str]: ...


# One protocol per optional Planner method (see Planner).


@runtime_checkable
class SelectsItself(Protocol):
    """A planner chosen without ``--planner`` when its ``select`` says so (see Planner)."""

    selection_rank: int

    def select(self, settings: Settings, target: Target) -> tuple[bool, str]: ...


@runtime_checkable
class UsesPlugins(Protocol):
    """A planner handed the plugin host before use (see Planner); ``host`` is a
    kernelopt_core.plugins.PluginHost (typed Any: the contract imports nothing of the core's)."""

    def use_plugins(self, host: Any) -> None: ...


@runtime_checkable
class ChecksInputs(Protocol):
    """A planner that checks its inputs before the search (see Planner)."""

    def check_inputs(self, settings: Settings, target: Target, knobs: tuple[Knob, ...]) -> None: ...


@runtime_checkable
class ChecksProvider(Protocol):
    """A planner that asks its service once before any build (see Planner)."""

    def check_provider(self, settings: Settings) -> str | None: ...


# The optional attributes of a gate and of a planner, one protocol each, with the default the
# core takes when a plugin's object leaves one out (read through the functions below).


@runtime_checkable
class RequiresGates(Protocol):
    """A gate that needs other gates before it in its phase (default: none)."""

    requires: tuple[str, ...]


@runtime_checkable
class ClaimsSpeedup(Protocol):
    """A gate whose pass can back an ``optimized`` verdict (default: False)."""

    claims_speedup: bool


@runtime_checkable
class Exhaustive(Protocol):
    """A planner every proposal of which must be evaluated: patience does not stop its search
    (default: False)."""

    exhaustive: bool


@runtime_checkable
class ConfiguresItself(Protocol):
    """An executor with options of its own (kernelopt-dask's ``[dask]`` scheduler): the
    campaign runs ``configure(settings)``'s executor instead of the registered one."""

    def configure(self, settings: Settings) -> Any: ...


def required_gates(gate: object) -> tuple[str, ...]:
    """The gates ``gate`` needs before it in its phase; () when it declares none."""
    return tuple(gate.requires) if isinstance(gate, RequiresGates) else ()


def claims_speedup(gate: object) -> bool:
    """Whether a pass of ``gate`` can back an ``optimized`` verdict; False when undeclared."""
    return isinstance(gate, ClaimsSpeedup) and bool(gate.claims_speedup)


def is_exhaustive(planner: object) -> bool:
    """Whether patience must not stop ``planner``'s search; False when undeclared."""
    return isinstance(planner, Exhaustive) and bool(planner.exhaustive)
