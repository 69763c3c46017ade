"""Where a campaign's target runs execute: the ``local`` executor (this host, one job per GPU
at a time) and, through ``kernelopt_register_executors``, others (kernelopt-dask: a Dask
cluster of many hosts).

A job is one whole ``kernelopt run`` as a child process, so a target's baseline and candidates
are always timed on the GPU the job was given (timings never mix devices). Its command names
its run (``--run-id``), so a job that is run again — after a worker died, or the campaign was
killed — resumes that run from its journal instead of starting over (docs/scaling.md).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from kernelopt_core import process
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.target import Command


@attrs.frozen
class Job:
    """One campaign target's run: ``argv`` (a ``kernelopt run ... --run-id ID`` command line),
    run in ``cwd`` with ``env`` added; the executor adds ``CUDA_VISIBLE_DEVICES``."""

    key: str  # unique in the campaign (its run id)
    argv: tuple[str, ...]
    cwd: str
    env: dict[str, str] = attrs.field(factory=dict)
    timeout_s: float = 24 * 3600.0


@attrs.frozen
class JobResult:
    key: str
    returncode: int
    output_tail: str  # the end of stdout and stderr
    worker: str  # where it ran: "local" or the executor's worker name
    gpu: str  # the CUDA_VISIBLE_DEVICES it was given
    seconds: float
    attempts: int = 1  # more than one when a worker was lost and the job ran again


class LocalExecutor:
    """Jobs on this host: one worker thread per GPU slot, each job a child process that sees
    only its slot's GPU."""

    name = "local"

    def run(self, jobs: Sequence[Job], gpus: Sequence[str],
            on_result: Callable[[JobResult], None], log_dir: Path) -> None:
        todo: queue.Queue[Job] = queue.Queue()
        for job in jobs:
            todo.put(job)
        lock = threading.Lock()

        def slot(gpu: str) -> None:
            while True:
                try:
                    job = todo.get_nowait()
                except queue.Empty:
                    return
                started = time.monotonic()
                result = process.run(Command(job.argv, Path(job.cwd),
                                             env={**job.env, "CUDA_VISIBLE_DEVICES": gpu},
                                             timeout_s=job.timeout_s, label=f"campaign {job.key}"),
                                     log_dir / f"{job.key}.log")
                tail = (result.stdout[-2000:] + result.stderr[-2000:]).strip()
                with lock:
                    on_result(JobResult(job.key, result.returncode, tail, "local", gpu,
                                        round(time.monotonic() - started, 3)))

        threads = [threading.Thread(target=slot, args=(gpu,), daemon=True) for gpu in gpus]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def listed_gpus() -> list[str]:
    """The lines ``nvidia-smi -L`` lists a GPU on (``GPU 0: NVIDIA H200 (UUID: ...)``); MIG
    devices' indented lines are not GPUs of their own. Empty without a working nvidia-smi.
    Kept here, with the GPU slots: executors are contract and import no backend kit."""
    found = process.run(Command(("nvidia-smi", "-L"), Path.cwd(), timeout_s=30))
    return [line for line in found.stdout.splitlines() if line.startswith("GPU ")] if found.ok else []


def visible_gpus(env: dict[str, str] | None = None) -> list[str]:
    """This host's GPU slots: CUDA_VISIBLE_DEVICES's entries when set, else nvidia-smi's
    count, else one slot ("0") so a CPU campaign still runs."""
    env = dict(os.environ) if env is None else env
    listed = env.get("CUDA_VISIBLE_DEVICES")
    if listed is not None and listed.strip():
        return [g.strip() for g in listed.split(",") if g.strip()]
    return [str(i) for i in range(len(listed_gpus()))] or ["0"]


@hookimpl
def kernelopt_register_executors() -> list[object]:
    return [LocalExecutor()]
