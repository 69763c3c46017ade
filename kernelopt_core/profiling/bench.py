"""A tree's bench under a profiler, under the GPU lock and never inside a timed window: the
baseline's at the start of a run, the winner's at its end, a baseline's alone for
``kernelopt profile``. What the kernels say: kernelopt_core.profiling.view."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Protocol

import attrs

from kernelopt_core import events
from kernelopt_core.capabilities import DefinesKernels
from kernelopt_core.errors import PrerequisiteError, UsageError
from kernelopt_core.plugin_checks import returned
from kernelopt_core.profiling.view import annotate
from kernelopt_core.run_context import RunContext
from kernelopt_core.target import Command, Target, Tree

PROFILE_TIMEOUT_FACTOR = 5  # a profiled bench may take this many bench timeouts


class Profilers(Protocol):
    """What Profiling asks of the plugin host (plugins.PluginHost, which is above it: the host
    loads the built-in ``profile`` command that uses this module)."""

    def registry(self, kind: str) -> dict[str, Any]: ...

    def origin(self, kind: str, name: str) -> str | None: ...


class Profiling:
    """One run's profiler: the baseline's bench at the start, the winner's at the end."""

    def __init__(self, name: str | None, host: Profilers, context: RunContext) -> None:
        self.name, self.context = name, context
        self.profiler: Any = None
        self.blame = ""  # a third-party profiler's package, named in its faults
        if name:
            profilers = host.registry("profilers")
            if name not in profilers:
                raise UsageError(f"unknown profiler {name!r}",
                                 hint=f"known profilers: {', '.join(sorted(profilers))}")
            self.profiler = profilers[name]
            origin = host.origin("profilers", name)
            self.blame = f" ({origin})" if origin else ""
            reason = self.profiler.unavailable_reason()
            if reason:
                raise PrerequisiteError(f"profiler {name!r} is unavailable: {reason}")

    def run(self, tree: Tree, files: dict[str, bytes], out_dir: Path, label: str,
            program: str = "bench", command: Command | None = None, whole_program: bool = False,
            phase: str | None = None, candidate: str | None = None) -> dict[str, Any]:
        """``tree``'s bench under the profiler; the annotated profile (journaled as a
        ``profile`` event with ``label``), {} without a profiler or a bench. ``files``: the
        tree's files (relative path → content), of which the editable ones name the target's
        kernels. ``program``: "bench", or "engine" (the whole program the kernel serves);
        ``command``: that program's command when the caller has it (a phase of the whole
        program: ``Backend.profile_phases``); ``whole_program``: profile every launch, where
        the profiler's ``wrap`` takes it (ncu: duration and launch shape, one pass each)."""
        if self.profiler is None:
            return {}
        if command is None:
            backend, target = self.context.backend, self.context.target
            command = returned(backend, "engine", backend.engine(target, tree)) \
                if program == "engine" else returned(backend, "bench", backend.bench(target, tree))
        if command is None:
            return {}
        self.context.stage("profile", profiler=self.name, tree=label, program=program)
        out_dir.mkdir(parents=True, exist_ok=True)
        try:
            wrapped = self._wrap(command, out_dir, whole_program)
        except Exception as exc:  # a profiler's fault drops its profile, never the run
            metrics = self._fault("wrap", exc)
        else:
            result, _held = self.context.runner.spawn_locked(wrapped, out_dir / f"{self.name}.log",
                                                     own_group=False)
            metrics = {"error": result.describe()} if not result.ok else \
                self._read(out_dir, files)
        self.context.journal.record(events.Profile(profiler=str(self.name), tree=label, program=program,
                                           metrics=metrics, phase=phase, candidate=candidate))
        return metrics

    def _wrap(self, command: Command, out_dir: Path, whole_program: bool) -> Command:
        # every launch of a phase, where the profiler can say so (ncu: one pass each)
        whole = whole_program and "whole_program" in inspect.signature(
            self.profiler.wrap).parameters
        wrapped = self.profiler.wrap(command, out_dir, whole_program=True) if whole \
            else self.profiler.wrap(command, out_dir)
        # a profiler replays kernels (ncu: dozens of passes each): one bound for every
        # profiler, here, rather than a factor in each
        return attrs.evolve(wrapped, timeout_s=min(
            PROFILE_TIMEOUT_FACTOR * command.timeout_s,
            PROFILE_TIMEOUT_FACTOR * self.context.settings.timeouts.bench_timeout_s))

    def _read(self, out_dir: Path, files: dict[str, bytes]) -> dict[str, Any]:
        # the target's kernels: those its editable files define (not its test's or bench's,
        # e.g. an input fill in the bench program)
        target = self.context.target
        names = defined_kernels(self.context.backend, target,
                                {k: v for k, v in files.items() if k in target.editable})
        try:
            parsed = self.profiler.parse(out_dir)
            # annotate reads what parse gave (its kernels, the columns it declared): a
            # malformed one is the profiler's failure too
            return annotate(parsed, names) if "error" not in parsed else parsed
        except Exception as exc:  # a profiler's reader that breaks is its own failure
            return self._fault("parse", exc)

    def _fault(self, step: str, exc: Exception) -> dict[str, Any]:
        """A profiler's exception as the profile's error, naming a third-party plugin."""
        return {"error": f"{self.name}'s {step} failed: {type(exc).__name__}: {exc}{self.blame}"}


def defined_kernels(backend: Any, target: Target, files: dict[str, bytes]) -> dict[str, str]:
    """The kernels ``files`` define, as the backend recognises them (name -> file); none for a
    backend that does not say (``DefinesKernels``)."""
    return backend.kernel_names(target, files) if isinstance(backend, DefinesKernels) else {}
