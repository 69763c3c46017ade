"""The runner's bench workers: one record per tree role (its live worker, the kept best's, the
contents whose check passed), requests under the GPU lock, served checks and readings.

A backend offering ``bench_worker`` gets one persistent worker per tree role, replaced when the
tree's editable files change (the baseline and each candidate, never one process for two
trees): it is started outside the GPU lock (imports), its load, check, bench and sweep requests
each hold the lock, and between requests it is stopped (SIGSTOP) so nothing it runs can disturb
the other tree's readings. Spawning stays process.py's.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any, Protocol

import attrs

from kernelopt_core import events
from kernelopt_core.budget import Spent
from kernelopt_core.capabilities import ServesBenchWorker
from kernelopt_core.errors import BenchFailed, PrerequisiteError
from kernelopt_core.hookspecs import Backend
from kernelopt_core.journal import Journal
from kernelopt_core.lock import Held, gpu_lock, unlocked
from kernelopt_core.measure.parsers import BenchReading, json_time_lines
from kernelopt_core.process import ProcessResult
from kernelopt_core.settings import Settings
from kernelopt_core.target import Command, Target, Tree
from kernelopt_core.workers.protocol import Worker, WorkerError, WorkerMissing, start_worker
from kernelopt_core.workers.replies import LoadFailed, exit_code
from kernelopt_core.workers.replies import bench_seeds as draw_bench_seeds
from kernelopt_core.workers.spare import Spares


@attrs.define(eq=False)
class Loaded:
    """A worker and the tree content it loaded."""

    digest: str
    worker: Worker
    ops: frozenset[str] = frozenset()  # its load reply's "ops" (e.g. "compile")


@attrs.define
class TreeWorkers:
    """What the pool holds for one tree role."""

    live: Loaded | None = None  # the worker of the tree's current content
    keep: str | None = None  # the content whose worker outlives the tree's move (Pool.keep)
    kept: Loaded | None = None  # that worker, paused, once the tree moved on
    # contents whose served check passed: a served reading of any other content (a candidate
    # that rewrote its own file after the check) is refused
    checked: set[str] = attrs.field(factory=set)


class Owner(Protocol):
    """What the pool serves (the Runner): read through, never copied, so a runner whose settings
    are replaced (a test's shorter deadline) is served with the new ones."""

    backend: Backend
    target: Target
    settings: Settings
    journal: Journal
    spent: Spent


@attrs.define
class Pool:
    owner: Owner = attrs.field(repr=False, eq=False)  # the runner, which holds this pool
    trees: dict[str, TreeWorkers] = attrs.field(factory=dict)  # by tree role
    # the bench's two input sets for served readings: drawn per run, unknown to code under
    # test at import, distinct from the check seeds, the same for every tree of the run
    bench_seeds: tuple[int, int] = attrs.field(factory=draw_bench_seeds)
    spares: Spares = attrs.field(factory=Spares)  # per tree role, a worker started ahead

    @property
    def backend(self) -> Backend:
        return self.owner.backend

    @property
    def target(self) -> Target:
        return self.owner.target

    @property
    def settings(self) -> Settings:
        return self.owner.settings

    @property
    def journal(self) -> Journal:
        return self.owner.journal

    @property
    def spent(self) -> Spent:
        return self.owner.spent

    def command(self, tree: Tree) -> Command | None:
        """The backend's worker command for ``tree``; None when it serves none."""
        if not isinstance(self.backend, ServesBenchWorker) or self.target.bench is None:
            return None
        return self.backend.bench_worker(self.target, tree)

    def served(self, tree: Tree, unchecked: bool = False) -> bool:
        """True when the backend serves this tree's bench from a persistent worker (and, with
        ``unchecked``, its content has not passed a check in this process: a resumed run's)."""
        return self.command(tree) is not None and not (
            unchecked and self.digest(tree) in self._tree(tree.role).checked)

    def live(self) -> dict[str, tuple[str, Worker]]:
        """Tree role -> (content digest, worker) of every live worker."""
        return {role: (t.live.digest, t.live.worker) for role, t in self.trees.items() if t.live}

    def digest(self, tree: Tree) -> str:
        h = hashlib.sha256()
        for rel in self.target.editable:
            path = tree.src / rel
            h.update(rel.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"") + b"\0")
        return h.hexdigest()

    def _tree(self, role: str) -> TreeWorkers:
        return self.trees.setdefault(role, TreeWorkers())

    def check(self, tree: Tree, log: Path) -> tuple[str, ProcessResult] | None:
        """The served check of every configured seed: None when all pass, else (which seeds,
        the failure as the ProcessResult a check command would give)."""
        seeds = tuple(self.settings.seeds)
        digest = self.digest(tree)
        try:
            loaded = self.loaded(tree, digest, log)
            reply = self.request(loaded.worker, {"op": "check"},
                                 self.settings.timeouts.test_timeout_s * len(seeds))
        except WorkerError as exc:  # LoadFailed carries the worker's own exit code
            code = exc.code if isinstance(exc, LoadFailed) else 4
            return f"seeds {list(seeds)}", self._failed(tree, str(exc), code)
        if reply.get("ok"):
            self._tree(tree.role).checked.add(digest)
            return None
        return f"seeds {list(seeds)}", self._failed(tree, str(reply.get("error", "")),
                                                   exit_code(reply))

    def _failed(self, tree: Tree, detail: str, code: int) -> ProcessResult:
        command = self.command(tree)
        assert command is not None  # only served trees get here
        return ProcessResult(command, code, "", detail, 0.0)

    def loaded(self, tree: Tree, digest: str, log: Path) -> Loaded:
        """The live worker of ``tree``'s content: started outside the GPU lock, loaded inside it,
        an older content's closed first (or kept), stopped (SIGSTOP) between its requests."""
        slots = self._tree(tree.role)
        live = slots.live
        if live is not None and live.digest == digest and live.worker.alive():
            return live
        if live is not None:
            slots.live = None
            if live.digest == slots.keep and live.worker.alive():
                older, slots.kept = slots.kept, live  # stored before closing anything: no orphan
                if older is not None:
                    older.worker.close()  # one kept worker per tree: the newest best
            else:
                live.worker.close()
        kept = slots.kept
        if kept is not None and kept.digest == digest and kept.worker.alive():
            # the best candidate's content back in the tree for the final gates: its worker,
            # loaded and warm, serves again (no second load under the lock)
            slots.live, slots.kept = kept, None
            return kept
        return self._start(tree, digest, log)

    def _start(self, tree: Tree, digest: str, log: Path) -> Loaded:
        command = self.command(tree)
        assert command is not None  # only served trees get here
        started = time.perf_counter()
        spare = self.spares.take(tree.role, command)  # started ahead (spare.py)
        try:
            worker = spare or start_worker(command, log, self.settings.timeouts.test_timeout_s)
        except WorkerMissing as exc:
            raise PrerequisiteError(f"{exc} (needed by the {self.target.backend} backend)",
                                    hint=f"install `{command.argv[0]}` or put it on PATH") from exc
        worker.pause()
        self.spent.child_seconds += time.perf_counter() - started
        slots = self._tree(tree.role)
        slots.live = loaded = Loaded(digest, worker)
        self.journal.record(events.WorkerStart(
            tree=tree.role, pid=worker.pid, spare=spare is not None,
            seconds=round(time.perf_counter() - started, 3)))
        if tree.role == "candidate":  # the next candidate's, while this one loads and runs
            self.spares.prepare(tree.role, command, log, self.settings.timeouts.test_timeout_s)
        reply = self.request(worker, {"op": "load", "seeds": list(self.settings.seeds),
                                      "bench_seeds": list(self.bench_seeds)},
                             self.settings.timeouts.test_timeout_s)
        if not reply.get("ok"):
            slots.live = None
            worker.close()
            raise LoadFailed(f"worker load: {reply.get('error', '')}", exit_code(reply))
        loaded.ops = frozenset(str(op) for op in reply.get("ops", ()))
        return loaded

    def request(self, worker: Worker, payload: dict[str, Any], timeout_s: float,
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
                self.spent.gpu_seconds += (time.time() - held.acquired) if locked else 0.0
        if held_out is not None:
            held_out.append(held)
        if payload.get("op") != "bench":  # a bench request is journaled as its reading
            self.journal.record(events.WorkerRequest(
                op=payload.get("op"), pid=worker.pid, ok=bool(reply.get("ok")), asked=held.asked,
                gpu_lock=locked, acquired=held.acquired, released=held.released,
                stages=reply.get("stages")))  # a load's parts
        return reply

    def bench(self, tree: Tree, log: Path, work: float) -> tuple[BenchReading, Held]:
        """One served reading of ``tree``'s content, refused when that content never passed a
        check while another did."""
        held: list[Held] = []
        digest = self.digest(tree)
        if any(t.checked for t in self.trees.values()) and digest not in self._tree(tree.role).checked:
            raise BenchFailed(f"the {tree.role}'s files changed after its check (content "
                              f"{digest[:12]} was never checked): not timing unchecked code")
        try:
            worker = self.loaded(tree, digest, log).worker
            reply = self.request(worker, {"op": "bench", "work": work},
                                 self.settings.timeouts.bench_timeout_s, held)
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

    def retire(self, role: str, reason: str) -> None:
        """Close the live worker of ``role``: the next request gets a fresh one."""
        slots = self._tree(role)
        live, slots.live = slots.live, None
        if live is not None:
            live.worker.close()
            self.journal.record(events.WorkerRetired(tree=role, pid=live.worker.pid, reason=reason))

    def keep(self, tree: Tree) -> None:
        """Keep the worker of ``tree``'s current content when the tree moves on (the loop's
        new best: the final gates time it again); the previously kept one is closed then."""
        if self.served(tree):
            slots = self._tree(tree.role)
            slots.keep = self.digest(tree)
            if slots.kept is not None and slots.kept.digest != slots.keep:
                self._close_kept(slots)  # an older best: no longer wanted

    @staticmethod
    def _close_kept(slots: TreeWorkers) -> None:
        kept, slots.kept = slots.kept, None
        if kept is not None:
            kept.worker.close()

    def close(self) -> None:
        """Stop every worker (end of a run, a self-test or a target)."""
        try:
            self.spares.close()
            for slots in self.trees.values():
                self._close_kept(slots)
        finally:
            for slots in self.trees.values():
                live, slots.live = slots.live, None
                if live is not None:
                    live.worker.close()
