"""Build, check and bench one tree through its backend: the services gates use. Commands come
from the backend, spawned only through :mod:`kernelopt_core.process`; check, bench and engine
steps hold the GPU lock, and every timed window is journaled.

A backend offering ``bench_worker`` gets one persistent worker per tree role, replaced when the
tree's editable files change (the baseline and each candidate, never one process for two
trees): it is started outside the GPU lock (imports), its load, check, bench and sweep requests
each hold the lock, and between requests it is stopped (SIGSTOP) so nothing it runs can disturb
the other tree's readings.
"""

from __future__ import annotations

import hashlib
import inspect
import time
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import process, sweep_protocol
from kernelopt_core.errors import BenchFailed, BenchParseError, PrerequisiteError, UsageError
from kernelopt_core.hookspecs import Backend
from kernelopt_core.journal import Journal
from kernelopt_core.lock import Held, gpu_lock, unlocked
from kernelopt_core.measure.parsers import BenchReading, json_time_lines, parse
from kernelopt_core.process import ProcessResult, Worker, WorkerError, WorkerMissing
from kernelopt_core.settings import Settings
from kernelopt_core.target import Command, Knob, Target, Tree
from kernelopt_core.worker_replies import LoadFailed, exit_code, how_timed
from kernelopt_core.worker_replies import bench_seeds as draw_bench_seeds
from kernelopt_core.worker_spare import Spares


@attrs.define
class Runner:
    backend: Backend
    target: Target
    settings: Settings
    journal: Journal
    gpu_seconds: float = 0.0  # time holding the GPU lock
    child_seconds: float = 0.0  # time inside child processes
    interpreted: bool = False  # some bench reading came from an interpreter (e.g. Triton's)
    workers: dict[str, tuple[str, Worker]] = attrs.field(factory=dict)  # role -> (digest, live one)
    # role -> the content to keep a worker of (keep()); that worker, paused, once its tree moves on
    kept: dict[str, str] = attrs.field(factory=dict)
    retained: dict[str, tuple[str, Worker]] = attrs.field(factory=dict)
    # (role, digest) of every tree content whose served check passed: a served reading of any
    # other content (a candidate that rewrote its own file after the check) is refused
    checked: set[tuple[str, str]] = attrs.field(factory=set)
    # the bench's two input sets for served readings: drawn per run, unknown to code under
    # test at import, distinct from the check seeds, the same for every tree of the run
    bench_seeds: tuple[int, int] = attrs.field(factory=draw_bench_seeds)
    worker_ops: dict[int, frozenset[str]] = attrs.field(factory=dict)  # pid -> its load's "ops"
    spares: Spares = attrs.field(factory=Spares)  # per tree role, a worker started ahead

    def _with_timeout(self, command: Command, timeout_s: float) -> Command:  # the tighter wins
        return attrs.evolve(command, timeout_s=min(command.timeout_s, timeout_s))
    def spawn(self, command: Command, log: Path) -> ProcessResult:
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
            result = self.spawn(self._with_timeout(command, self.settings.build_timeout_s), log)
            if not result.ok:
                return result
        return result

    def spawn_locked(self, command: Command, log: Path) -> tuple[ProcessResult, Held]:
        """Spawn under the GPU lock (verify, bench, profile and engine steps); spares settled."""
        self.spares.settle()
        with gpu_lock(self.settings.state_root) as held:
            result = self.spawn(command, log)
        self.gpu_seconds += held.released - held.acquired
        return result, held

    def check(self, tree: Tree, seed: int, log: Path) -> ProcessResult:
        command = self._with_timeout(
            self.backend.check(self.target, tree, seed), self.settings.test_timeout_s
        )
        return self.spawn_locked(command, log)[0]

    def check_all(self, tree: Tree, log: Path) -> tuple[str, ProcessResult] | None:
        """Every configured seed; None when all pass, else (which seeds, the failing result).
        One command for all seeds when the backend offers ``check_seeds``, else one per seed."""
        seeds = tuple(self.settings.seeds)
        if self.served(tree):
            digest = self._digest(tree)
            try:
                reply, _worker = self._ask(tree, digest, log, {"op": "check"},
                                           self.settings.test_timeout_s * len(seeds))
            except WorkerError as exc:  # LoadFailed carries the worker's own exit code
                code = exc.code if isinstance(exc, LoadFailed) else 4
                return f"seeds {list(seeds)}", self._failed(tree, str(exc), code)
            if reply.get("ok"):
                self.checked.add((tree.role, digest))
                return None
            return f"seeds {list(seeds)}", self._failed(tree, str(reply.get("error", "")),
                                                       exit_code(reply))
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

    # ------------------------------------------------------------------ bench workers
    def served(self, tree: Tree, unchecked: bool = False) -> bool:
        """True when the backend serves this tree's bench from a persistent worker (and, with
        ``unchecked``, its content has not passed a check in this process: a resumed run's)."""
        method = getattr(self.backend, "bench_worker", None)
        return (method is not None and self.target.bench is not None
                and method(self.target, tree) is not None
                and not (unchecked and (tree.role, self._digest(tree)) in self.checked))

    def _digest(self, tree: Tree) -> str:
        h = hashlib.sha256()
        for rel in self.target.editable:
            path = tree.src / rel
            h.update(rel.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"") + b"\0")
        return h.hexdigest()

    def _ask(self, tree: Tree, digest: str, log: Path, payload: dict[str, Any],
             timeout_s: float, held_out: list[Held] | None = None) -> tuple[dict[str, Any], Worker]:
        """One request to the worker of ``tree``'s content ``digest``; WorkerError on a breach."""
        worker = self._worker(tree, digest, log)
        return self._request(worker, payload, timeout_s, held_out), worker

    def _worker(self, tree: Tree, digest: str, log: Path) -> Worker:
        """The live worker of ``tree``'s content: started outside the GPU lock, loaded inside it,
        an older content's closed first, stopped (SIGSTOP) between its requests."""
        slot = self.workers.get(tree.role)
        if slot is not None and slot[0] == digest and slot[1].alive():
            return slot[1]
        if slot is not None:
            self.workers.pop(tree.role, None)
            if slot[0] == self.kept.get(tree.role) and slot[1].alive():
                older = self.retained.get(tree.role)
                self.retained[tree.role] = slot  # stored before closing anything: no orphan
                if older is not None:
                    older[1].close()  # one kept worker per tree: the newest best
            else:
                slot[1].close()
        kept = self.retained.get(tree.role)
        if kept is not None and kept[0] == digest and kept[1].alive():
            # the best candidate's content back in the tree for the final gates: its worker,
            # loaded and warm, serves again (no second load under the lock)
            self.workers[tree.role] = self.retained.pop(tree.role)
            return kept[1]
        command = self.backend.bench_worker(self.target, tree)  # type: ignore[attr-defined]
        started = time.perf_counter()
        spare = self.spares.take(tree.role, command)  # started ahead (worker_spare.py)
        try:
            worker = spare or process.start_worker(command, log, self.settings.test_timeout_s)
        except WorkerMissing as exc:
            raise PrerequisiteError(f"{exc} (needed by the {self.target.backend} backend)",
                                    hint=f"install `{command.argv[0]}` or put it on PATH") from exc
        worker.pause()
        self.child_seconds += time.perf_counter() - started
        self.workers[tree.role] = (digest, worker)
        self.journal.write("worker_start", tree=tree.role, pid=worker.pid, spare=spare is not None,
                           seconds=round(time.perf_counter() - started, 3))
        if tree.role == "candidate":  # the next candidate's, while this one loads and runs
            self.spares.prepare(tree.role, command, log, self.settings.test_timeout_s)
        reply = self._request(worker, {"op": "load", "seeds": list(self.settings.seeds),
                                       "bench_seeds": list(self.bench_seeds)},
                              self.settings.test_timeout_s)
        if not reply.get("ok"):
            self.workers.pop(tree.role, None)
            worker.close()
            raise LoadFailed(f"worker load: {reply.get('error', '')}", exit_code(reply))
        self.worker_ops[worker.pid] = frozenset(str(op) for op in reply.get("ops", ()))
        return worker

    def _request(self, worker: Worker, payload: dict[str, Any], timeout_s: float,
                 held_out: list[Held] | None = None, locked: bool = True) -> dict[str, Any]:
        """One request; under the GPU lock unless ``locked`` is False (CPU work only)."""
        if payload.get("op") in ("bench", "sweep"):
            self.spares.settle()  # a spare's start-up never overlaps a timed reading
        reply: dict[str, Any] = {}
        with gpu_lock(self.settings.state_root) if locked else unlocked() as held:
            try:
                worker.resume()
                reply = worker.request(payload, timeout_s)
                worker.pause()
            finally:
                self.gpu_seconds += (time.time() - held.acquired) if locked else 0.0
        if held_out is not None:
            held_out.append(held)
        if payload.get("op") != "bench":  # a bench request is journaled as its reading
            self.journal.write("worker_request", op=payload.get("op"), pid=worker.pid,
                               ok=bool(reply.get("ok")), asked=held.asked, gpu_lock=locked,
                               acquired=held.acquired, released=held.released,
                               **{k: reply[k] for k in ("stages",) if k in reply})  # load's parts
        return reply

    def _failed(self, tree: Tree, detail: str, code: int) -> ProcessResult:
        """A served check's failure as the ProcessResult a check command would give."""
        return ProcessResult(self.backend.bench_worker(self.target, tree), code, "", detail, 0.0)  # type: ignore[attr-defined]

    def keep(self, tree: Tree) -> None:
        """Keep the worker of ``tree``'s current content when the tree moves on (the loop's
        new best: the final gates time it again); the previously kept one is closed then."""
        if self.served(tree):
            self.kept[tree.role] = self._digest(tree)
            held = self.retained.get(tree.role)
            if held is not None and held[0] != self.kept[tree.role]:
                self._close_retained(tree.role)  # an older best: no longer wanted

    def _close_retained(self, role: str) -> None:
        slot = self.retained.pop(role, None)
        if slot is not None:
            slot[1].close()

    def close_workers(self) -> None:
        """Stop every worker (end of a run, a self-test or a target)."""
        try:
            self.spares.close()
            for role in list(self.retained):
                self._close_retained(role)
        finally:
            for role in list(self.workers):
                try:
                    self.workers[role][1].close()
                finally:
                    self.workers.pop(role, None)

    def _served_bench(self, tree: Tree, log: Path, work: float) -> tuple[BenchReading, Held]:
        held: list[Held] = []
        digest = self._digest(tree)
        if self.checked and (tree.role, digest) not in self.checked:
            raise BenchFailed(f"the {tree.role}'s files changed after its check (content "
                              f"{digest[:12]} was never checked): not timing unchecked code")
        try:
            reply, worker = self._ask(tree, digest, log, {"op": "bench", "work": work},
                                      self.settings.bench_timeout_s, held)
        except WorkerError as exc:
            raise BenchFailed(str(exc)) from exc
        if not reply.get("ok"):
            raise BenchFailed(f"bench worker: {reply.get('error', '')}")
        forged, _invalid = json_time_lines(worker.new_stdout())
        if forged:
            raise BenchFailed(f"the worker printed a time line on its stdout, which is never "
                              f"the reply channel (forged output): {forged[0][1][:200]!r}")
        reading = reply.get("reading")
        time_ms = reading.get("time_ms") if isinstance(reading, dict) else None
        if not isinstance(time_ms, (int, float)) or not time_ms > 0 or time_ms == float("inf"):
            raise BenchFailed(f"bench worker: reply without a positive finite time_ms: {str(reply)[:300]}")
        assert isinstance(reading, dict)
        return BenchReading(float(time_ms), {k: v for k, v in reading.items() if k != "time_ms"}), held[-1]

    def sweep(self, tree: Tree, configs: list[dict[str, str]], log: Path,
              knobs: tuple[Knob, ...] | None = None) -> list[dict[str, Any]] | None:
        """Bulk screening: each configuration of ``knobs`` (default: the target's declared ones;
        knob name -> value) applied to ``tree``'s source inside its worker, checked on the
        first seed and timed there, one process for all. None when the backend has no worker.
        Results follow ``configs``' order: ``{"config", "ok", "time_ms", "error"}``, and the
        tree's own time as ``reference_ms``."""
        if not self.served(tree):
            return None
        configs_in = sweep_protocol.payload(self.target.knobs if knobs is None else knobs, tree,
                                            configs)
        held: list[Held] = []
        request = {"configs": configs_in, "deadline_s": self.settings.screen_config_timeout_s}
        timeout = sweep_protocol.timeout_s(self.settings, len(configs))
        try:
            worker = self._worker(tree, self._digest(tree), log)
            if "compile" in self.worker_ops.get(worker.pid, ()):  # CPU work: outside the lock
                ahead = self._request(worker, {"op": "compile", **request}, timeout, locked=False)
                self.journal.write("compiled_ahead", compiled=ahead.get("compiled"),
                                   stuck=ahead.get("stuck"), left=ahead.get("left"))
            reply = self._request(worker, {"op": "sweep", **request}, timeout, held)
        except WorkerError as exc:
            raise BenchFailed(str(exc)) from exc
        results_in = reply.get("results")
        if (not reply.get("ok") or not isinstance(results_in, list)
                or len(results_in) != len(configs)
                or not all(isinstance(r, dict) for r in results_in)):
            raise BenchFailed(f"sweep: {str(reply.get('error', 'malformed results'))[:2000]}")
        results = [{**r, "config": c} for r, c in zip(results_in, configs, strict=True)]
        if sweep_protocol.poisoned(results):  # the next request gets a fresh worker
            slot = self.workers.pop(tree.role, None)
            if slot is not None:
                slot[1].close()
                self.journal.write("worker_retired", tree=tree.role, pid=slot[1].pid,
                                   reason="a screened configuration ran past its deadline or "
                                   "hit a CUDA error")
        self.journal.write("sweep", tree=tree.role, configs=len(configs),
                           ok=sum(bool(r.get("ok")) for r in results),
                           reference_ms=reply.get("reference_ms"), results=results,
                           acquired=held[-1].acquired, released=held[-1].released)
        return [{**r, "reference_ms": reply.get("reference_ms")} for r in results]

    def confirm_rounds(self, candidate: Tree) -> int:
        """Rounds for confirm and the self-test: the fewest for an interpreter's times (they
        cannot back a claim), more when both trees are served by workers (a round then costs
        milliseconds, not process start-ups)."""
        if self.interpreted:
            return 2
        baseline = attrs.evolve(candidate, role="baseline")
        if self.served(candidate) and self.served(baseline):
            return max(self.settings.final_rounds, self.settings.worker_rounds)
        return self.settings.final_rounds

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
        bench: Any = self.backend.bench  # `work` is an optional parameter, checked above
        return bench(self.target, tree, work=work)

    def bench(self, tree: Tree, log: Path, purpose: str, work: float = 1.0) -> BenchReading:
        """One bench reading under the GPU lock (a fresh process, or one request to the tree's
        worker when the backend serves benches); its time in ms.

        ``work`` < 1 asks the bench to do that fraction of the work (gate self-test only)."""
        if self.served(tree):
            reading, held = self._served_bench(tree, log, work)
        else:
            reading, held = self._fresh_bench(tree, log, work)
        if reading.extra.get("interpreted"):
            self.interpreted = True  # an interpreter's times: never a device speedup
        self.journal.write(
            "bench",
            tree=tree.role,
            purpose=purpose,
            ms=reading.time_ms,
            checksum=reading.extra.get("checksum"),
            **({"shape": str(reading.extra["shape"])} if reading.extra.get("shape") else {}),
            **({"interpreted": True} if reading.extra.get("interpreted") else {}),
            asked=held.asked, acquired=held.acquired, released=held.released,
            **({"timer": reading.extra["timer"]} if "timer" in reading.extra else {}),
            **({"how": how} if (how := how_timed(reading)) else {}),
        )
        return reading

    def _fresh_bench(self, tree: Tree, log: Path, work: float) -> tuple[BenchReading, Held]:
        command = self._bench_command(tree, work)
        assert command is not None and self.target.bench is not None
        command = self._with_timeout(command, self.settings.bench_timeout_s)
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
        method = getattr(self.backend, "shape_check", None)
        command = method(self.target, tree, seed) if method is not None else None
        return None if command is None else self.spawn_locked(
            self._with_timeout(command, self.settings.test_timeout_s), log)[0]

    def has_engine(self, tree: Tree) -> bool:
        return self.backend.engine(self.target, tree) is not None

    def engine_pairs(self) -> bool:  # the backend runs both versions in one engine process
        return callable(getattr(self.backend, "engine_pair", None))

    def engine(self, tree: Tree, log: Path, env: dict[str, str] | None = None,
               baseline: Tree | None = None) -> ProcessResult | None:
        """One whole-program run with ``env`` added (KERNELOPT_ENGINE_OUT/_REFERENCE); with
        ``baseline``, the backend's one run of both versions (``engine_pair``; docs/plugins.md)."""
        command = (self.backend.engine_pair(self.target, baseline, tree)  # type: ignore[attr-defined]
                   if baseline is not None else self.backend.engine(self.target, tree))
        if command is None:
            return None
        command = attrs.evolve(command, env={**command.env, **(env or {})},
                               timeout_s=min(command.timeout_s, self.settings.bench_timeout_s))
        return self.spawn_locked(command, log)[0]
