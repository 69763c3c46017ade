"""Build, check and bench one tree through its backend: the services gates use. Commands come
from the backend, spawned only through :mod:`kernelopt_core.process`; check, bench and engine
steps hold the GPU lock, and every timed window is journaled. A backend offering
``bench_worker`` is served by a pool of persistent workers (:mod:`kernelopt_core.workers`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import events, process
from kernelopt_core.budget import Spent
from kernelopt_core.capabilities import ChecksSeeds, ChecksShape, PairsEngine, benches_work
from kernelopt_core.errors import BenchFailed, BenchParseError, PrerequisiteError, UsageError
from kernelopt_core.gates.options import ConfirmOptions
from kernelopt_core.hookspecs import Backend
from kernelopt_core.journal import Journal
from kernelopt_core.lock import Held, gpu_lock
from kernelopt_core.measure.parsers import BenchReading, parse
from kernelopt_core.plugin_checks import returned
from kernelopt_core.process import ProcessResult
from kernelopt_core.settings import Settings
from kernelopt_core.target import Command, Knob, Target, Tree
from kernelopt_core.workers.pool import Pool
from kernelopt_core.workers.protocol import Worker
from kernelopt_core.workers.replies import how_timed
from kernelopt_core.workers.sweep import sweep


@attrs.define
class Runner:
    backend: Backend
    target: Target
    settings: Settings
    journal: Journal
    interpreted: bool = False  # some bench reading came from an interpreter (e.g. Triton's)
    spent: Spent = attrs.field(factory=Spent)  # GPU-lock and child seconds, the pool's included
    pool: Pool = attrs.field(init=False, repr=False, eq=False)  # its owner is this runner
    # the last build's steps: each command's label (else its program) and wall seconds
    build_steps: list[tuple[str, float]] = attrs.field(factory=list, init=False, eq=False)

    def __attrs_post_init__(self) -> None:
        self.pool = Pool(self)

    @property
    def gpu_seconds(self) -> float:  # time holding the GPU lock
        return self.spent.gpu_seconds

    @gpu_seconds.setter
    def gpu_seconds(self, value: float) -> None:  # a resumed run starts from its recorded spend
        self.spent.gpu_seconds = value

    @property
    def child_seconds(self) -> float:  # time inside child processes
        return self.spent.child_seconds

    @property
    def workers(self) -> dict[str, tuple[str, Worker]]:
        """Tree role -> (content digest, worker) of every live worker."""
        return self.pool.live()

    def _with_timeout(self, command: Command, timeout_s: float) -> Command:  # the tighter wins
        return attrs.evolve(command, timeout_s=min(command.timeout_s, timeout_s))

    def spawn(self, command: Command, log: Path, own_group: bool = False) -> ProcessResult:
        result = process.run(command, log, own_group=own_group)
        self.spent.child_seconds += result.seconds
        if result.missing and not command.cwd.is_dir():
            raise UsageError(
                f"{command.label or 'the'} command cannot start: its working directory "
                f"{command.cwd} does not exist ({result.describe()})",
                hint="check the command's cwd (the backend's, or kernelopt.toml's)")
        if result.missing and "Permission denied" in result.stderr:
            raise UsageError(
                f"{command.label or 'the'} program {command.argv[0]} is not executable "
                f"({result.describe()})",
                hint=f"chmod +x {command.argv[0]}, or run it through its interpreter in "
                     "kernelopt.toml (python3 {repo}/bench.py)")
        if result.missing and os.sep in command.argv[0]:  # a path: the project's own program
            raise UsageError(
                f"{command.label or 'the'} program {command.argv[0]} does not exist "
                f"({result.describe()})",
                hint="check the command's path in kernelopt.toml (a program the build makes: "
                     "{build}/NAME; one of the repository's: {repo}/PATH) and that the build "
                     "makes it")
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
        self.build_steps = []
        for command in returned(self.backend, "build", self.backend.build(self.target, tree)):
            result = self.spawn(self._with_timeout(command, self.settings.timeouts.build_timeout_s), log)
            self.build_steps.append((command.label or Path(command.argv[0]).name, result.seconds))
            if not result.ok:
                return result
        return result

    def spawn_locked(self, command: Command, log: Path,
                     own_group: bool = True) -> tuple[ProcessResult, Held]:
        """Spawn under the GPU lock (verify, bench, profile and engine steps); spares settled.
        ``own_group``: the code under test runs, so nothing it starts may outlive it (a
        profiler's own daemon may: Profiling passes False)."""
        self.pool.spares.settle()
        with gpu_lock(self.settings.state_root) as held:
            result = self.spawn(command, log, own_group)
        self.spent.gpu_seconds += held.released - held.acquired
        return result, held

    def check(self, tree: Tree, seed: int, log: Path) -> ProcessResult:
        command = self._with_timeout(
            returned(self.backend, "check", self.backend.check(self.target, tree, seed)),
            self.settings.timeouts.test_timeout_s)
        return self.spawn_locked(command, log)[0]

    def check_all(self, tree: Tree, log: Path) -> tuple[str, ProcessResult] | None:
        """Every configured seed; None when all pass, else (which seeds, the failing result).
        One command for all seeds when the backend offers ``check_seeds``, else one per seed."""
        if self.served(tree):
            return self.pool.check(tree, log)
        seeds = tuple(self.settings.seeds)
        command = (returned(self.backend, "check_seeds", self.backend.check_seeds(self.target, tree, seeds))
                   if isinstance(self.backend, ChecksSeeds) else None)
        if command is not None:
            command = self._with_timeout(command, self.settings.timeouts.test_timeout_s * len(seeds))
            result = self.spawn_locked(command, log)[0]
            return None if result.ok else (f"seeds {list(seeds)}", result)
        for seed in seeds:
            result = self.check(tree, seed, log)
            if not result.ok:
                return f"seed {seed}", result
        return None

    # ------------------------------------------------------------------ bench workers
    def served(self, tree: Tree, unchecked: bool = False) -> bool:
        """True when the backend serves this tree's bench from a persistent worker (and, with
        ``unchecked``, its content has not passed a check in this process: a resumed run's)."""
        return self.pool.served(tree, unchecked)

    def keep(self, tree: Tree) -> None:
        """Keep the worker of ``tree``'s current content for when the tree holds it again."""
        self.pool.keep(tree)

    def close_workers(self) -> None:
        """Stop every worker (end of a run, a self-test or a target)."""
        self.pool.close()

    def sweep(self, tree: Tree, configs: list[dict[str, str]], log: Path,
              knobs: tuple[Knob, ...] | None = None) -> list[dict[str, Any]] | None:
        """Bulk screening of ``configs`` in ``tree``'s worker (workers/sweep.py); None when the
        backend has no worker."""
        return sweep(self.pool, tree, configs, log, knobs)

    def confirm_rounds(self, candidate: Tree) -> int:
        """Rounds for confirm and the self-test: the fewest for an interpreter's times (they
        cannot back a claim), more when both trees are served by workers (a round then costs
        milliseconds, not process start-ups)."""
        if self.interpreted:
            return 2
        baseline = attrs.evolve(candidate, role="baseline")
        options = self.settings.section(ConfirmOptions)
        if self.served(candidate) and self.served(baseline):
            return max(options.final_rounds, options.worker_rounds)
        return options.final_rounds

    def has_bench(self, tree: Tree) -> bool:
        return self.target.bench is not None and self._bench_command(tree) is not None

    def _bench_command(self, tree: Tree, work: float = 1.0) -> Command | None:
        if work == 1.0:
            return returned(self.backend, "bench", self.backend.bench(self.target, tree))
        if not benches_work(self.backend):
            raise UsageError(
                f"the {self.target.backend} backend cannot plant a faster candidate",
                hint="its bench() takes no `work` argument (the cmake backend: use the {work} "
                "placeholder in the bench command)",
            )
        return returned(self.backend, "bench", self.backend.bench(self.target, tree, work=work))

    def bench(self, tree: Tree, log: Path, purpose: str, work: float = 1.0) -> BenchReading:
        """One bench reading under the GPU lock (a fresh process, or one request to the tree's
        worker when the backend serves benches); its time in ms.

        ``work`` < 1 asks the bench to do that fraction of the work (gate self-test only)."""
        if self.served(tree):
            reading, held = self.pool.bench(tree, log, work)
        else:
            reading, held = self._fresh_bench(tree, log, work)
        if reading.interpreted:
            self.interpreted = True  # an interpreter's times: never a device speedup
        self.journal.record(events.Bench(
            tree=tree.role, purpose=purpose, ms=reading.time_ms,
            checksum=reading.checksum, shape=reading.shape,
            interpreted=True if reading.interpreted else None,
            asked=held.asked, acquired=held.acquired, released=held.released,
            timer=reading.timer, how=how_timed(reading) or None,
        ))
        return reading

    def _fresh_bench(self, tree: Tree, log: Path, work: float) -> tuple[BenchReading, Held]:
        command = self._bench_command(tree, work)
        assert command is not None and self.target.bench is not None
        command = self._with_timeout(command, self.settings.timeouts.bench_timeout_s)
        result, held = self.spawn_locked(command, log)
        if not result.ok:
            raise BenchFailed(f"bench {result.describe()}:\n{result.tail()}")
        try:
            return parse(self.target.bench, result.stdout, command.display()), held
        except BenchParseError as exc:
            if tree.role == "baseline":
                raise  # the user's bench breaks the contract: a usage error (exit 2)
            # a candidate's output that breaks it (a forged second time line, garbage) is that
            # candidate's failure, not the run's
            raise BenchFailed(f"{exc}\n{result.tail()}") from exc

    def shape_check(self, tree: Tree, seed: int, log: Path) -> ProcessResult | None:
        """The backend's check of the exact timed shape and launch path, if it has one."""
        command = (returned(self.backend, "shape_check", self.backend.shape_check(self.target, tree, seed))
                   if isinstance(self.backend, ChecksShape) else None)
        return None if command is None else self.spawn_locked(
            self._with_timeout(command, self.settings.timeouts.test_timeout_s), log)[0]

    def has_engine(self, tree: Tree) -> bool:
        return returned(self.backend, "engine", self.backend.engine(self.target, tree)) is not None

    def engine_pairs(self) -> bool:  # the backend runs both versions in one engine process
        return isinstance(self.backend, PairsEngine)

    def engine(self, tree: Tree, log: Path, env: dict[str, str] | None = None,
               baseline: Tree | None = None) -> ProcessResult | None:
        """One whole-program run with ``env`` added (KERNELOPT_ENGINE_OUT/_REFERENCE); with
        ``baseline``, the backend's one run of both versions (``engine_pair``; docs/plugins.md)."""
        if baseline is not None:
            assert isinstance(self.backend, PairsEngine)  # the engine gate asked engine_pairs()
            command = returned(self.backend, "engine_pair",
                               self.backend.engine_pair(self.target, baseline, tree))
        else:
            command = returned(self.backend, "engine", self.backend.engine(self.target, tree))
        if command is None:
            return None
        command = attrs.evolve(command, env={**command.env, **(env or {})},
                               timeout_s=min(command.timeout_s, self.settings.timeouts.bench_timeout_s))
        return self.spawn_locked(command, log)[0]
