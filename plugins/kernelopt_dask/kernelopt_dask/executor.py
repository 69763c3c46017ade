"""The ``dask`` executor: a campaign's jobs as Dask distributed tasks, one GPU per worker.

``scheduler = "local"`` starts a cluster on this host (a scheduler in this process and one
worker process per GPU slot, each seeing only its slot); any other value is the address of a
running ``dask scheduler`` whose workers the user started, one per GPU (docs/scaling.md).

Every task asks for the worker resource ``GPU: 1``, so a worker runs one job at a time. A
worker that dies mid-job is Dask's to handle: the scheduler runs the task again elsewhere (up
to ``distributed.scheduler.allowed-failures`` times), and the job's command resumes its run
from the journal. ``distributed`` is imported inside the methods so that loading the plugin
(``kernelopt --help``) stays fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelopt_core.api import EXIT_INTERNAL, Job, JobResult, Settings, UsageError
from kernelopt_dask.dispatch import Dispatch, gpu_workers
from kernelopt_dask.options import DaskOptions
from kernelopt_dask.task import GPU_ENV, PROBE, count_attempts

if TYPE_CHECKING:
    from distributed import Client, Future

LOCAL = "local"
QUIET = logging.ERROR  # Dask's own log lines (a restarted worker...) stay off the campaign's UI
STOP_TIMEOUT_S = 30.0  # restarting remote workers on Ctrl-C
POLL_S = 0.5  # a job's end wakes the loop at once; this is how often it looks for new workers


class DaskExecutor:
    """``kernelopt campaign --executor dask``. The registered object has the default options;
    ``configure(settings)`` gives one with the run's ``[dask]`` table (the campaign looks it up
    with getattr, as the core does for a backend's optional methods)."""

    name = "dask"

    def __init__(self, options: DaskOptions | None = None) -> None:
        self.options = options or DaskOptions()

    def configure(self, settings: Settings) -> DaskExecutor:
        """This executor with the run's ``[dask]`` options (the registered one has defaults)."""
        return DaskExecutor(settings.section(DaskOptions))

    def run(self, jobs: Sequence[Job], gpus: Sequence[str],
            on_result: Callable[[JobResult], None], log_dir: Path) -> None:
        """Run every job once to its end and call ``on_result`` once per job, in this thread,
        as results arrive; a job whose task failed (not a lost worker: Dask reruns those) gets
        a result with returncode EXIT_INTERNAL and the error. ``gpus``: the slots of the local
        cluster; a remote scheduler's workers bring their own."""
        if not jobs:
            return
        keys = [job.key for job in jobs]
        if len(set(keys)) != len(keys):
            raise UsageError("campaign jobs with the same key: "
                             + ", ".join(sorted({k for k in keys if keys.count(k) > 1})),
                             hint="give every target its own run id")
        log_dir = log_dir.resolve()
        log_dir.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(6)  # this campaign run: task keys and attempt lines
        probe = log_dir / PROBE.format(token=token)
        probe.write_text("the dask executor's shared-folder check\n", encoding="utf-8")
        try:
            with self._client(gpus) as client:
                self._submit_all(client, jobs, log_dir, token, on_result)
        finally:
            probe.unlink(missing_ok=True)

    # ------------------------------------------------------------------ cluster and client

    @property
    def remote(self) -> bool:
        return self.options.scheduler != LOCAL

    @contextlib.contextmanager
    def _client(self, gpus: Sequence[str]) -> Iterator[Client]:
        if self.remote:
            with self._remote_client() as client:
                yield client
        else:
            with self._local_client(gpus) as client:
                yield client

    @contextlib.contextmanager
    def _local_client(self, gpus: Sequence[str]) -> Iterator[Client]:
        from distributed import Client, Nanny, Scheduler, SpecCluster

        slots = [g.strip() for g in gpus if g.strip()]
        if not slots:
            raise UsageError("the dask executor's local cluster has no GPU slot",
                             hint="set CUDA_VISIBLE_DEVICES to this host's GPUs (e.g. 0,1)")
        if len(set(slots)) != len(slots) or any("," in s for s in slots):
            raise UsageError(f"GPU slots {slots}: each slot must be one GPU, listed once",
                             hint="list each GPU once, e.g. CUDA_VISIBLE_DEVICES=0,1")
        # a Nanny per slot: the worker is its own process (its CUDA_VISIBLE_DEVICES set before
        # anything in it starts), and a worker process that dies is started again on its slot
        workers = {f"gpu-{slot}": {"cls": Nanny, "options": {
            "nthreads": 1, "resources": {"GPU": 1}, "env": {GPU_ENV: slot}, "host": "127.0.0.1",
            "memory_limit": 0,  # the job's memory is its child's, not the worker's to police
            "silence_logs": QUIET}} for slot in slots}
        scheduler = {"cls": Scheduler, "options": {
            "host": "127.0.0.1", "port": 0, "dashboard": False, "dashboard_address": "127.0.0.1:0"}}
        cluster = SpecCluster(workers=workers, scheduler=scheduler, silence_logs=QUIET,
                              name="kernelopt")
        try:
            client = Client(cluster, set_as_default=False)
            try:
                try:
                    client.wait_for_workers(len(slots), timeout=self.options.worker_wait_s)
                except (TimeoutError, asyncio.TimeoutError):  # two classes on Python 3.10
                    raise UsageError(
                        f"the local Dask cluster did not start its {len(slots)} GPU workers "
                        f"within {self.options.worker_wait_s:g} s",
                        hint="raise [dask] worker_wait_s on a slow host") from None
                yield client
            finally:
                client.close()
        finally:
            cluster.close()  # its Nannies stop the worker processes, whose children die too

    @contextlib.contextmanager
    def _remote_client(self) -> Iterator[Client]:
        from distributed import Client

        address = self.options.scheduler
        wait_s = self.options.worker_wait_s
        try:
            client = Client(address, timeout=wait_s, set_as_default=False)
        except (OSError, TimeoutError, asyncio.TimeoutError) as exc:
            raise UsageError(
                f"cannot reach the Dask scheduler at {address} ([dask] scheduler) within "
                f"{wait_s:g} s: {exc}",
                hint="start `dask scheduler` on the head node and give its address (e.g. "
                "tcp://head:8786); check the host name, port and firewall, or use "
                "scheduler = \"local\" for this host's GPUs") from None
        except ValueError as exc:  # an unknown protocol, a malformed address
            raise UsageError(f"[dask] scheduler = {address!r} is not a Dask address: {exc}",
                             hint="give tcp://HOST:PORT (`dask scheduler` listens on 8786), "
                             "or \"local\"") from None
        try:
            self._wait_for_gpu_worker(client, address, wait_s)
            yield client
        finally:
            client.close()

    @staticmethod
    def _wait_for_gpu_worker(client: Client, address: str, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while not gpu_workers(client):
            if time.monotonic() >= deadline:
                count = len(client.sync(client.scheduler.identity, n_workers=-1)
                            .get("workers", {}))
                raise UsageError(
                    f"no worker of the Dask scheduler {address} offers the resource GPU after "
                    f"{wait_s:g} s ({count} worker(s), none started with --resources GPU=1)",
                    hint=f"on each GPU host start one worker per GPU: `{GPU_ENV}=N dask worker "
                    f"{address} --nthreads 1 --resources GPU=1`, or raise [dask] worker_wait_s")
            time.sleep(POLL_S)

    # ------------------------------------------------------------------ jobs

    def _submit_all(self, client: Client, jobs: Sequence[Job], log_dir: Path, token: str,
                    on_result: Callable[[JobResult], None]) -> None:
        """Each job out in the campaign's order on the next free GPU (kernelopt_dask.dispatch),
        its result handed on as it ends."""
        from distributed import as_completed

        dispatch = Dispatch(client, list(jobs), str(log_dir), token)
        try:
            pending = as_completed(dispatch.top_up(), loop=client.loop)
            while not pending.is_empty():
                if not pending.has_ready():
                    dispatch.wake.wait(POLL_S)  # a job ended, or look for joined workers
                    dispatch.wake.clear()
                    pending.update(dispatch.top_up())
                    continue
                for future in pending.next_batch(block=False):
                    taken = dispatch.take(future)
                    if taken is None:
                        continue
                    job, submitted = taken
                    pending.update(dispatch.top_up())  # the GPU's next job before the journal
                    on_result(self._result(future, job, log_dir, token, submitted))
                    future.release()
        except BaseException:  # Ctrl-C, or on_result raised: no job may keep its GPU
            self._stop(client, dispatch.submitted)
            raise

    @staticmethod
    def _result(future: Future, job: Job, log_dir: Path, token: str,
                submitted: float) -> JobResult:
        if future.status == "finished":
            result = future.result()
            if isinstance(result, JobResult):
                return result
            error = f"the task returned {type(result).__name__}, not a JobResult"
        else:
            error = _describe(future)
        # a task that failed on its worker (or ran out of allowed failures): a result all the
        # same, so the campaign goes on; seconds are since submission (the run time is unknown)
        return JobResult(job.key, EXIT_INTERNAL, f"dask: {error}", "unknown", "unknown",
                         round(time.monotonic() - submitted, 3),
                         max(1, count_attempts(log_dir, job.key, token)))

    def _stop(self, client: Client, futures: list[Future]) -> None:
        """Cancel what has not started; a running task cannot be cancelled inside its thread,
        so on a remote cluster the workers running ours are restarted (their Nannies kill the
        worker process, and the job's child dies with it). The local cluster is closed after
        this, which does the same."""
        ours = {f.key for f in futures}
        busy: list[str] = []
        with contextlib.suppress(Exception):
            busy = [w for w, keys in client.processing().items() if ours & set(keys)]
        with contextlib.suppress(Exception):
            client.cancel(futures, force=True)
        if self.remote and busy:
            with contextlib.suppress(Exception):
                client.restart_workers(busy, timeout=STOP_TIMEOUT_S, raise_for_error=False)


def _describe(future: Any) -> str:
    if future.status == "error":
        exc = future.exception()
        return f"{type(exc).__name__}: {exc}"
    return f"the task ended {future.status}"
