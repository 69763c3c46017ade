"""A bench worker started ahead for the next content of a tree.

A candidate's correctness stage began with starting its worker: the program's own start-up
(for the Triton backend: torch, triton, the CUDA context, Inductor's runtime; about 3.8 s on an
H200) before the worker could load the candidate. The candidate tree keeps its path from one
candidate to the next, so the next candidate's worker command is usually this one's: a spare,
spawned (and sent ``hello``, without waiting for the reply) as soon as a worker of the tree is
taken, does its start-up meanwhile. A spare has loaded nothing (its ``load`` request comes when
it is taken), so every content still gets a fresh process; a spare whose command does not
match the one needed, or that died, is closed and never used. No thread: the parent-death
signal of a worker (process.py) follows the thread that spawned it.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from kernelopt_core.target import Command
from kernelopt_core.workers.protocol import Worker, WorkerError, start_worker


@attrs.define
class Spares:
    """At most one spare per tree role: role -> (its command, the worker)."""

    by_role: dict[str, tuple[Command, Worker]] = attrs.field(factory=dict)

    def prepare(self, role: str, command: Command, log: Path | None, timeout_s: float) -> None:
        """Spawn a spare for ``role`` with ``command``; returns at once. A spare that cannot
        start is no spare (the next worker is started as before and meets the same error)."""
        self.discard(role)
        try:
            self.by_role[role] = (command, start_worker(command, log, timeout_s, wait=False))
        except (WorkerError, OSError):
            pass

    def take(self, role: str, command: Command) -> Worker | None:
        """The spare of ``role``, started up, if it was spawned with ``command``; else None."""
        found = self.by_role.pop(role, None)
        if found is None:
            return None
        spawned_with, worker = found
        if spawned_with != command or not worker.alive():
            worker.close()
            return None
        try:
            worker.ready()
        except WorkerError:  # it did not start: the caller starts a worker of its own
            return None
        return worker

    def settle(self) -> None:
        """Let every spare finish its start-up now (before a timed reading: a spare's imports
        and CUDA context never overlap one)."""
        for role, (_command, worker) in list(self.by_role.items()):
            try:
                worker.ready()
            except WorkerError:
                self.by_role.pop(role, None)

    def discard(self, role: str) -> None:
        found = self.by_role.pop(role, None)
        if found is not None:
            found[1].close()

    def close(self) -> None:
        for role in list(self.by_role):
            self.discard(role)
