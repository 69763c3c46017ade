"""kernelopt-example-executor: the ``serial`` campaign executor, which runs a campaign's jobs
one after another on the first GPU slot (a machine whose GPUs the user shares with others,
or a CI runner), each job a child process that sees only that GPU.

Choose it with ``kernelopt campaign PATH... --executor serial``. An executor decides where
and when each job runs; the job itself is the same ``kernelopt run ... --run-id ID``
command line whatever runs it, so a job run again resumes its run from its journal. It
imports only ``kernelopt_core.api`` and the standard library.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from kernelopt_core.api import Command, Job, JobResult, hookimpl, run_process


class SerialExecutor:
    name = "serial"

    def run(self, jobs: Sequence[Job], gpus: Sequence[str],
            on_result: Callable[[JobResult], None], log_dir: Path) -> None:
        gpu = gpus[0] if gpus else "0"
        for job in jobs:  # the campaign's priority order
            started = time.monotonic()
            done = run_process(Command(job.argv, Path(job.cwd),
                                       env={**job.env, "CUDA_VISIBLE_DEVICES": gpu},
                                       timeout_s=job.timeout_s, label=f"campaign {job.key}"),
                               log_dir / f"{job.key}.log")
            tail = (done.stdout[-2000:] + done.stderr[-2000:]).strip()
            on_result(JobResult(job.key, done.returncode, tail, self.name, gpu,
                                round(time.monotonic() - started, 3)))


@hookimpl
def kernelopt_register_executors() -> list[SerialExecutor]:
    return [SerialExecutor()]
