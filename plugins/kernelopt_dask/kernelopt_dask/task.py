"""What runs on a Dask worker: one job, as a child process that sees only the worker's GPU.

This module is pickled by reference, so every worker host needs kernelopt and kernelopt-dask
installed (the same versions as the campaign's host). The child is spawned through the core
(``run_process``): its own session, the job's timeout, and PR_SET_PDEATHSIG, so a worker
process that is killed takes its ``kernelopt run`` along instead of leaving it on the GPU.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from kernelopt_core.api import Command, Job, JobResult, run_process

GPU_ENV = "CUDA_VISIBLE_DEVICES"
PROBE = ".kernelopt-dask-{token}"  # written by the campaign in log_dir; a worker must see it


class WorkerSetupError(RuntimeError):
    """The worker cannot run a job as kernelopt needs (no GPU of its own, no shared state
    root): the job's failure, reported with the worker's name. ``args``: the message and the
    worker's address, by which the campaign gives that worker no more jobs."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def attempts_path(log_dir: Path, key: str) -> Path:
    return log_dir / f"{key}.attempts"


def count_attempts(log_dir: Path, key: str, token: str) -> int:
    """The attempts of ``key`` in the campaign run ``token`` (one JSON line each; earlier
    campaign runs' lines stay, as history, and do not count)."""
    try:
        lines = attempts_path(log_dir, key).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return 0
    count = 0
    for line in lines:
        try:
            count += json.loads(line).get("run") == token
        except (ValueError, AttributeError):
            continue  # a line torn by a worker killed mid-write
    return count


def _record_attempt(log_dir: Path, key: str, token: str, worker: str, gpu: str) -> int:
    line = json.dumps({"run": token, "worker": worker, "host": socket.gethostname(), "gpu": gpu,
                       "pid": os.getpid(), "started": time.time()}) + "\n"
    # one O_APPEND write: attempts of one job never overlap (Dask reruns a task only after
    # its worker is gone), and a line is whole or torn, never merged with another
    fd = os.open(attempts_path(log_dir, key), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return count_attempts(log_dir, key, token)


def _worker() -> tuple[str, str]:
    """This worker's name (its address when it has none) and its address."""
    from distributed import get_worker

    worker = get_worker()
    name = str(worker.name) if worker.name is not None else str(worker.address)
    return name, str(worker.address)


def run_job(job: Job, log_dir: str, token: str) -> JobResult:
    """The task: run ``job`` with ``CUDA_VISIBLE_DEVICES`` set to this worker's own."""
    name, address = _worker()
    gpu = os.environ.get(GPU_ENV, "").strip()
    if not gpu or "," in gpu:
        raise WorkerSetupError(
            f"worker {name} has {GPU_ENV}={gpu!r}: a kernelopt worker owns exactly one GPU; "
            f"start each `dask worker` with {GPU_ENV}=<one GPU> and --resources GPU=1", address)
    logs = Path(log_dir)
    if not (logs / PROBE.format(token=token)).exists():
        raise WorkerSetupError(
            f"worker {name} on {socket.gethostname()} does not see the campaign's log folder "
            f"{log_dir}: the kernelopt state root must be on a filesystem shared by the "
            "campaign's host and every worker, at the same path", address)
    attempts = _record_attempt(logs, job.key, token, name, gpu)
    started = time.monotonic()
    result = run_process(Command(job.argv, Path(job.cwd), env={**job.env, GPU_ENV: gpu},
                                 timeout_s=job.timeout_s, label=f"campaign {job.key}"),
                         logs / f"{job.key}.log")
    tail = result.tail()
    if result.missing or result.timed_out:
        tail = f"{result.describe()}\n{tail}".strip()
    return JobResult(job.key, result.returncode, tail, name, gpu,
                     round(time.monotonic() - started, 3), attempts)
