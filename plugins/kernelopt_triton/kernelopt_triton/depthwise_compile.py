"""Every launch the depthwise choice will time (depthwise_timing.choose_for_model), compiled
before it on all the host's cores. A launch's first use compiles it, one after another: on an
H100 host MobileNetV3-Large's search spent its 150 s on 5 of its 12 shapes that way, each new
kernel size or stride compiling its own launches (bench/results/2026-12-07-h100-depthwise-kernel).

Each launch is bound as a call would bind it (depthwise.kernel_call on tensors of the meta
device: the same arguments, ``JITFunction.warmup``: the compile alone) under Triton's own
``AsyncCompileMode``, which hands each compile not yet cached to a thread pool, one per
Triton cache key (two launches Triton would compile alike are one compile), and files each
compiled kernel in the kernel's own cache as it leaves: the search's first launch of it is then
no compile. Threads, not processes: Triton's compile (MLIR passes, LLVM, ptxas) runs mostly
outside the GIL — four of ConvNeXt's 7×7 launches for sm_90 on the developers' 2-core
machine took 14.5 s one after another, 8.7 s on two threads, 8.3 s in two processes. A launch
not compiled by the deadline, or whose compile failed, compiles at its first use as before.
The module imports torch: only the processes that run a model load it.
"""

from __future__ import annotations

import concurrent.futures
import inspect
import os
import time
from collections.abc import Iterable
from typing import Any

import attrs
import torch
import triton

from kernelopt_triton.depthwise import Config, depthwise_conv2d_kernel, kernel_call


@attrs.frozen
class Job:
    """One launch at one convolution's shape, dtype and settings."""

    x_shape: tuple[int, ...]
    dtype: torch.dtype
    weight_shape: tuple[int, ...]
    bias: bool
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    launch: Config


def warm(job: Job) -> Any:
    """The launch bound for the current device as a call would bind it, and compiled (or, under
    an AsyncCompileMode, its compile submitted), not run."""
    x = torch.empty(job.x_shape, dtype=job.dtype, device="meta").contiguous(
        memory_format=torch.channels_last)
    weight = torch.empty(job.weight_shape, dtype=job.dtype, device="meta")
    bias = torch.empty(job.weight_shape[0], dtype=job.dtype, device="meta") if job.bias else None
    args, constants, _ = kernel_call(x, weight, bias, job.stride, job.padding, job.dilation,
                                     job.launch)
    return depthwise_conv2d_kernel.warmup(
        *(a.dtype if isinstance(a, torch.Tensor) else a for a in args), grid=(1,), **constants)


MAX_WORKERS = 32  # compiles at once: each an LLVM pipeline in this process and a ptxas


def _cores() -> int:
    try:
        cores = len(os.sched_getaffinity(0))  # the cores this process may run on
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return min(cores, MAX_WORKERS)


def precompile(jobs: Iterable[Job], deadline: float, workers: int | None = None) -> dict[str, Any]:
    """Each launch of ``jobs`` compiled for the current CUDA device on ``workers`` threads (the
    host's cores), in their order, until ``deadline`` (time.monotonic()) and the compiles then
    running: those not begun are left to their first use. Counts: ``launches`` (the jobs),
    ``compiles`` (Triton's distinct ones not in the kernel's own cache before: one in Triton's
    cache on disk is loaded from there), ``compiled``, ``failed`` (with a launch that could
    not be bound), ``left``, ``seconds``."""
    begun = time.monotonic()
    jobs = list(jobs)
    if deadline <= begun:
        return {"launches": len(jobs), "skipped": "the search's budget was spent before it"}
    async_mode = getattr(triton, "AsyncCompileMode", None)
    if async_mode is None or "ignore_errors" not in inspect.signature(async_mode).parameters:
        return {"launches": len(jobs), "skipped": f"Triton {triton.__version__} has no "
                "AsyncCompileMode(ignore_errors=...)"}  # each launch compiles at its first use
    unbound: list[BaseException] = []  # a launch that could not even be bound
    with concurrent.futures.ThreadPoolExecutor(workers or _cores()) as pool:
        # ignore_errors: a failed compile is not filed (counted below); the search meets it again
        with async_mode(pool, ignore_errors=True) as mode:
            try:
                for job in jobs:
                    try:  # a launch cached or submitted already is no new compile
                        warm(job)
                    except Exception as exc:
                        unbound.append(exc)
                futures = list(mode.raw_futures)
                _, late = concurrent.futures.wait(futures,
                                                  timeout=max(0.0, deadline - time.monotonic()))
            except BaseException:  # an interrupt: leaving the mode waits only for those running
                for future in mode.raw_futures:
                    future.cancel()
                raise
            left = sum(future.cancel() for future in late)
        # leaving the mode waited for the running compiles and filed every compiled kernel
    failed = unbound + [f.exception() for f in futures
                        if not f.cancelled() and f.exception() is not None]
    return {"launches": len(jobs), "compiles": len(futures),
            "compiled": len(futures) - left - (len(failed) - len(unbound)),
            "failed": len(failed), "left": left, "seconds": round(time.monotonic() - begun, 1),
            **({"first_error": f"{type(failed[0]).__name__}: {failed[0]}"[:300]}
               if failed else {})}
