"""Build, check and bench one tree through its backend: the services gates use.

Commands come from the backend; they are spawned only through :mod:`kernelopt_core.process`.
Check, bench and engine steps hold the GPU lock, and every timed window is journaled.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import attrs

from kernelopt_core import process
from kernelopt_core.errors import BenchParseError, PrerequisiteError, UsageError
from kernelopt_core.hookspecs import Backend
from kernelopt_core.journal import Journal
from kernelopt_core.lock import Held, gpu_lock
from kernelopt_core.measure.parsers import BenchReading, parse
from kernelopt_core.process import ProcessResult
from kernelopt_core.settings import Settings
from kernelopt_core.target import Command, Target, Tree


@attrs.define
class Runner:
    backend: Backend
    target: Target
    settings: Settings
    journal: Journal
    gpu_seconds: float = 0.0  # time holding the GPU lock
    child_seconds: float = 0.0  # time inside child processes
    interpreted: bool = False  # some bench reading came from an interpreter (e.g. Triton's)

    def _with_timeout(self, command: Command, timeout_s: float) -> Command:
        # the descriptor's own timeout wins when it is tighter
        return attrs.evolve(command, timeout_s=min(command.timeout_s, timeout_s))

    def _spawn(self, command: Command, log: Path) -> ProcessResult:
        result = process.run(command, log)
        self.child_seconds += result.seconds
        if result.missing:
            raise PrerequisiteError(
                f"{result.describe()} (needed by the {self.target.backend} backend)",
                hint=f"install `{command.argv[0]}` or put it on PATH",
            )
        return result

    def build(self, tree: Tree, log: Path) -> ProcessResult | None:
        """Run the build commands in order; the first failing result, or the last one."""
        tree.build.mkdir(parents=True, exist_ok=True)
        result = None
        for command in self.backend.build(self.target, tree):
            result = self._spawn(self._with_timeout(command, self.settings.build_timeout_s), log)
            if not result.ok:
                return result
        return result

    def spawn_locked(self, command: Command, log: Path) -> tuple[ProcessResult, Held]:
        """Spawn under the GPU lock (verify, bench, profile and engine steps)."""
        with gpu_lock(self.settings.state_root) as held:
            result = self._spawn(command, log)
        self.gpu_seconds += held.released - held.acquired
        return result, held

    def check(self, tree: Tree, seed: int, log: Path) -> ProcessResult:
        command = self._with_timeout(
            self.backend.check(self.target, tree, seed), self.settings.test_timeout_s
        )
        return self.spawn_locked(command, log)[0]

    def check_all(self, tree: Tree, log: Path) -> tuple[str, ProcessResult] | None:
        """Every configured seed; None when all pass, else (which seeds, the failing result).

        One process for all seeds when the backend offers ``check_seeds`` (each seed still gets
        its own fresh inputs; what is saved is the process start-up), else one per seed."""
        seeds = tuple(self.settings.seeds)
        method = getattr(self.backend, "check_seeds", None)
        command = method(self.target, tree, seeds) if method is not None else None
        if command is not None:
            command = self._with_timeout(command, self.settings.test_timeout_s * len(seeds))
            result = self.spawn_locked(command, log)[0]
            return None if result.ok else (f"seeds {list(seeds)}", result)
        for seed in seeds:
            result = self.check(tree, seed, log)
            if not result.ok:
                return f"seed {seed}", result
        return None

    def has_bench(self, tree: Tree) -> bool:
        return self.target.bench is not None and self._bench_command(tree) is not None

    def _bench_command(self, tree: Tree, work: float = 1.0) -> Command | None:
        if work == 1.0:
            return self.backend.bench(self.target, tree)
        if "work" not in inspect.signature(self.backend.bench).parameters:
            raise UsageError(
                f"the {self.target.backend} backend cannot plant a faster candidate",
                hint="its bench() takes no `work` argument (the cmake backend: use the {work} "
                "placeholder in the bench command)",
            )
        return self.backend.bench(self.target, tree, work=work)

    def bench(self, tree: Tree, log: Path, purpose: str, work: float = 1.0) -> BenchReading:
        """One bench invocation (a fresh process) under the GPU lock; its time in ms.

        ``work`` < 1 asks the bench to do that fraction of the work (gate self-test only)."""
        command = self._bench_command(tree, work)
        assert command is not None and self.target.bench is not None
        command = self._with_timeout(command, self.settings.bench_timeout_s)
        result, held = self.spawn_locked(command, log)
        if not result.ok:
            raise BenchFailed(f"bench {result.describe()}:\n{result.tail()}")
        try:
            reading = parse(self.target.bench, result.stdout, command.display())
        except BenchParseError as exc:
            if tree.role == "baseline":
                raise  # the user's bench breaks the contract: a usage error (exit 2)
            # a candidate's output that breaks it (a forged second time line, garbage) is that
            # candidate's failure, not the run's
            raise BenchFailed(f"{exc}\n{result.tail()}") from exc
        if reading.extra.get("interpreted"):
            self.interpreted = True  # an interpreter's times: never a device speedup
        self.journal.write(
            "bench",
            tree=tree.role,
            purpose=purpose,
            ms=reading.time_ms,
            checksum=reading.extra.get("checksum"),
            **({"interpreted": True} if reading.extra.get("interpreted") else {}),
            acquired=held.acquired,
            released=held.released,
        )
        return reading

    def shape_check(self, tree: Tree, seed: int, log: Path) -> ProcessResult | None:
        """The backend's check of the exact timed shape and launch path, if it has one."""
        method = getattr(self.backend, "shape_check", None)
        command = method(self.target, tree, seed) if method is not None else None
        if command is None:
            return None
        command = self._with_timeout(command, self.settings.test_timeout_s)
        return self.spawn_locked(command, log)[0]

    def has_engine(self, tree: Tree) -> bool:
        return self.backend.engine(self.target, tree) is not None

    def engine(self, tree: Tree, log: Path, env: dict[str, str] | None = None) -> ProcessResult | None:
        """One run of the whole program (model, app) with ``env`` added (the engine contract:
        KERNELOPT_ENGINE_OUT, KERNELOPT_ENGINE_REFERENCE; docs/plugins.md)."""
        command = self.backend.engine(self.target, tree)
        if command is None:
            return None
        command = attrs.evolve(command, env={**command.env, **(env or {})})
        command = self._with_timeout(command, self.settings.bench_timeout_s)
        return self.spawn_locked(command, log)[0]


class BenchFailed(Exception):
    """A bench invocation exited non-zero (a candidate's failure, not the run's)."""
