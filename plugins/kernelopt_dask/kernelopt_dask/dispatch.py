"""Which campaign job goes out to the Dask cluster next, and when.

No more jobs out than the cluster has running workers offering the resource GPU, the next one
submitted as one ends or a GPU worker joins, in the campaign's order: Dask by itself hands
every task to a worker at submission, ahead of time and in an order of its own, so jobs could
wait behind a long one while another GPU sat idle (on an H200 a one-worker campaign ran its
targets 1, 4, 3, 2). A worker whose setup failed a job (no GPU of its own, no shared state
root) is given no more while another can run them: being always free, it would otherwise
fail most of the campaign.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from kernelopt_core.api import Job
from kernelopt_dask.task import WorkerSetupError, run_job

if TYPE_CHECKING:
    from distributed import Client, Future


def gpu_workers(client: Client) -> list[str]:
    """The running workers that offer the resource GPU, now (workers come and go; Dask gives
    no task to one still starting, paused or closing)."""
    # the scheduler's answer itself: scheduler_info() returns an attribute that the client's
    # own periodic refresh overwrites with an empty worker list
    identity = client.sync(client.scheduler.identity, n_workers=-1)
    return [address for address, w in identity.get("workers", {}).items()
            if w.get("status") == "running" and w.get("resources", {}).get("GPU", 0) >= 1]


def _unfit_worker(future: Any) -> set[str]:
    """The worker whose setup failed this job, if that is how it failed."""
    if future.status == "error":
        exc = future.exception()
        if isinstance(exc, WorkerSetupError) and len(exc.args) > 1:
            return {str(exc.args[1])}
    return set()


class Dispatch:
    def __init__(self, client: Client, jobs: list[Job], log_dir: str, token: str) -> None:
        self.client, self.log_dir, self.token = client, log_dir, token
        self.waiting = list(jobs)  # the campaign's order: highest priority first
        # out: submitted and not yet taken back, each with its submission time and the
        # workers it is pinned to (None: any GPU worker)
        self.out: dict[Future, tuple[Job, float, tuple[str, ...] | None]] = {}
        self.submitted: list[Future] = []  # every one, for stopping them all
        self.unfit: set[str] = set()
        self.workers: list[str] = []
        self.resubmits: Counter[str] = Counter()
        self.wake = threading.Event()  # set as any job ends

    def top_up(self) -> list[Future]:
        """Submit waiting jobs while fewer are out than usable GPU workers (at least one)."""
        try:
            self.workers = gpu_workers(self.client)
        except OSError:  # the scheduler did not answer this once: last known workers
            pass
        self._take_back_stranded()
        usable = tuple(w for w in self.workers if w not in self.unfit)
        pin = usable if self.unfit and usable else None
        added: list[Future] = []
        while self.waiting and len(self.out) < max(1, len(usable)):
            job = self.waiting.pop(0)
            again = self.resubmits[job.key]
            future = self.client.submit(
                run_job, job, self.log_dir, self.token, pure=False, resources={"GPU": 1},
                key=f"kernelopt-{job.key}-{self.token}" + (f"-{again}" if again else ""),
                workers=list(pin) if pin else None)
            self.out[future] = (job, time.monotonic(), pin)
            self.submitted.append(future)
            future.add_done_callback(lambda _: self.wake.set())
            added.append(future)
        return added

    def take(self, future: Future) -> tuple[Job, float] | None:
        """The job a future that ended ran and when it was submitted; None for one taken back
        as stranded, or reported twice."""
        entry = self.out.pop(future, None)
        if entry is None:
            return None
        self.unfit.update(_unfit_worker(future))
        return entry[0], entry[1]

    def _take_back_stranded(self) -> None:
        """A job pinned to workers that are all gone (its worker died mid-job, and Dask's rerun
        may go only where it was pinned) would wait forever: cancel it and put it back at the
        head of the line, to be pinned afresh."""
        alive = set(self.workers)
        stranded = [(future, job) for future, (job, _, pin) in self.out.items()
                    if pin and not future.done() and not alive.intersection(pin)]
        for future, job in stranded:
            del self.out[future]
            self.resubmits[job.key] += 1
            self.client.cancel(future)
        self.waiting[:0] = [job for _, job in stranded]
