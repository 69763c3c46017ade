"""Every launch the depthwise choice will time (depthwise_timing.choose_for_model), compiled
before it on all the host's cores. A launch's first use compiles it, one after another: on an
H100 host MobileNetV3-Large's search spent its 150 s on 5 of its 12 shapes that way, each new
kernel size or stride compiling its own launches (bench/results/2026-12-07-h100-depthwise-kernel).

Threads, not processes: Triton's compile (MLIR passes, LLVM, ptxas) runs mostly outside the
GIL — four of ConvNeXt's 7×7 launches for sm_90 on this 2-core machine took 14.5 s one after
another, 8.7 s on two threads, 8.3 s in two processes — and a thread fills the kernel's own
cache, so the search's first launch of each is no compile. Each launch is compiled as a call
would compile it (depthwise.kernel_call on tensors of the meta device: the same arguments, the
compile alone, ``JITFunction.warmup``); one the budget leaves out compiles at its first use, as
before. The module imports torch: only the processes that run a model load it.
"""

from __future__ import annotations

import concurrent.futures
import os
import time
from collections.abc import Iterable
from typing import Any

import attrs
import torch

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


def _meta_call(job: Job) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments with tensors of the meta device (shapes and strides, no memory)."""
    x = torch.empty(job.x_shape, dtype=job.dtype, device="meta").contiguous(
        memory_format=torch.channels_last)
    weight = torch.empty(job.weight_shape, dtype=job.dtype, device="meta")
    bias = torch.empty(job.weight_shape[0], dtype=job.dtype, device="meta") if job.bias else None
    args, constants, _ = kernel_call(x, weight, bias, job.stride, job.padding, job.dilation,
                                     job.launch)
    return args, constants


def same_compile(job: Job) -> tuple[Any, ...]:
    """What Triton compiles a launch for, as far as it matters here: the constants, the warps,
    the dtype, and each integer argument's class (1, a multiple of 16, 64-bit, other) — two
    jobs alike in these are one compile, the second a cache hit."""
    args, constants = _meta_call(job)
    classes = tuple("1" if a == 1 else "64" if abs(a) >= 2**31 else "16" if a % 16 == 0 else "-"
                    for a in args if isinstance(a, int))
    return (str(job.dtype), tuple(sorted(constants.items())), classes)


def compile_one(job: Job) -> None:
    """The launch compiled for the current device as a call would compile it, not run."""
    args, constants = _meta_call(job)
    depthwise_conv2d_kernel.warmup(
        *(a.dtype if isinstance(a, torch.Tensor) else a for a in args), grid=(1,), **constants)


def precompile(jobs: Iterable[Job], deadline: float, device_index: int | None = None,
               workers: int | None = None) -> dict[str, Any]:
    """Each distinct compile among ``jobs`` (same_compile), in their order, on ``workers``
    threads (the host's cores) until ``deadline`` (time.monotonic()): those not begun by then
    are left to their first use. A compile that fails is counted (the search skips that
    launch as before). ``device_index``: the CUDA device the threads compile for."""
    begun = time.monotonic()
    distinct: dict[tuple[Any, ...], Job] = {}
    for job in jobs:
        distinct.setdefault(same_compile(job), job)

    def compile_on_device(job: Job) -> None:
        if device_index is None:
            compile_one(job)
        else:
            with torch.cuda.device(device_index):
                compile_one(job)

    if deadline <= begun:  # the budget is spent: every launch compiles at its first use
        return {"compiles": len(distinct), "compiled": 0, "failed": 0, "left": len(distinct),
                "seconds": 0.0}
    with concurrent.futures.ThreadPoolExecutor(workers or os.cpu_count() or 1) as pool:
        futures = [pool.submit(compile_on_device, job) for job in distinct.values()]
        _, late = concurrent.futures.wait(futures, timeout=max(0.0, deadline - time.monotonic()))
        cut = sum(future.cancel() for future in late)  # the running ones finish
    failed = [f.exception() for f in futures if not f.cancelled() and f.exception() is not None]
    return {"compiles": len(distinct), "compiled": len(futures) - cut - len(failed),
            "failed": len(failed), "left": cut, "seconds": round(time.monotonic() - begun, 1),
            **({"first_error": f"{type(failed[0]).__name__}: {failed[0]}"[:300]}
               if failed else {})}
