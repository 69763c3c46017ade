"""A sweep's configurations compiled in parallel before the worker times them one by one.

Triton compiles a kernel on its first launch, in the launching process, and a fused Inductor
reduction takes seconds to compile: measured on the H200 (2026-12-01), screening
examples/pointwise_fused.py's kernel cost 4.0 GPU-s per configuration, most of it compiling,
so a serial sweep spent its budget on the compiler. A pool of processes launches each
configuration once on the same arguments; Triton's on-disk cache (same TRITON_CACHE_DIR, same
source file and module name, same specialization) then hands the worker the compiled kernel.
The pool starts in the background (its processes import torch: seconds, ~30 s measured for 7);
the worker keeps compiling one at a time until processes are ready, so a small batch never
waits for a pool it does not need.

What a pool process reports is advisory, with one exception: a configuration still compiling
at the deadline is failed without the worker trying it (it would hang the worker the same
way). A compile error or a failed launch in the pool is left for the worker to meet and
report itself, so a pool process's broken CUDA context never fails a good configuration.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from multiprocessing.pool import Pool
from pathlib import Path
from typing import Any

# in a pool process: the bench arguments, made once (None: the start failed, compile nothing)
_ARGS: list[Any] | None = None


def _start(oracle: str, seed: int, ready_dir: str) -> None:
    """A pool process's start: torch, the device and the original's bench arguments; then a
    file in ``ready_dir`` says it is ready. It never raises: a pool whose initializer fails
    restarts its processes forever."""
    global _ARGS
    try:
        from kernelopt_triton.harness import contract, load, make_args, setup_device

        torch, device, _interpreted = setup_device()
        spec = contract(load(Path(oracle), "oracle"), Path(oracle))
        _ARGS = make_args(torch, spec, seed, device)
    except BaseException:
        _ARGS = None
    with contextlib.suppress(OSError):
        (Path(ready_dir) / str(os.getpid())).touch()


def _compile(path: str, role: str) -> None:
    """Import one configuration's file under the worker's module name and launch it once. What
    goes wrong here is not reported: the worker meets it again and reports it itself."""
    from kernelopt_triton.harness import load

    if _ARGS is None:
        return
    Path(path + STARTED).touch()  # the parent tells a stuck compile from a queued one
    try:
        module = load(Path(path), role)
        try:
            module.launch(*_ARGS)
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()
        finally:
            sys.modules.pop(module.__name__, None)
    except Exception:
        pass


# a new pool's processes import torch and make the arguments first: not the configurations' time
START_ALLOWANCE_S = 60.0
NO_DEADLINE_S = 600.0  # a wait is never unbounded: a pool process that died leaves its task open
STARTED = ".started"


def pool_size() -> int:
    """Up to 8 processes, leaving the worker and the core a core each. Fixed per machine: a
    sweep of fewer configurations than the last must not restart the pool (~30 s measured on
    the H200 for 7 processes importing torch and making a 128 MiB input)."""
    return max(1, min(8, (os.cpu_count() or 2) - 2))


class Precompiler:
    """The pool of one bench worker's sessions: started once a compile is slow, kept until
    close."""

    def __init__(self, oracle: Path, seed: int, processes: int | None = None) -> None:
        self.oracle, self.seed, self.processes = oracle, seed, processes
        self._pool: Pool | None = None
        self._ready_dir: Path | None = None

    @property
    def size(self) -> int:
        return self.processes or pool_size()

    def start(self) -> None:
        """Start the pool's processes without waiting for them (no pool below two processes,
        or where the machine cannot make one: the worker then compiles one at a time)."""
        if self._pool is not None or self.size < 2:
            return
        self._ready_dir = Path(tempfile.mkdtemp(prefix="kernelopt-pool-"))
        context = multiprocessing.get_context("spawn")
        try:
            self._pool = context.Pool(self.size, initializer=_start,
                                      initargs=(str(self.oracle), self.seed,
                                                str(self._ready_dir)))
        except OSError:
            self._forget_ready_dir()

    def ready(self) -> int:
        """How many of the pool's processes have started (0 without a pool)."""
        if self._pool is None or self._ready_dir is None:
            return 0
        with contextlib.suppress(OSError):
            return sum(1 for _ in self._ready_dir.iterdir())
        return 0

    def run(self, variants: list[tuple[Path, str]], deadline_s: float | None) -> list[str | None]:
        """Per variant (file, module role): None when it compiled (or failed in a way the worker
        will meet itself), else why the worker must not try it. Starts the pool if it is not
        running and waits for it (the worker's sweep calls this only once processes are
        ready)."""
        if not variants:
            return []
        self.start()
        if self._pool is None:
            return [None] * len(variants)
        ready = self.ready()
        pending = [self._pool.apply_async(_compile, (str(path), role)) for path, role in variants]
        # the processes that have started take the work; the rest join as they start
        rounds = math.ceil(len(variants) / max(1, min(ready, self.size)))
        end = time.monotonic() + (deadline_s or NO_DEADLINE_S) * rounds + (
            START_ALLOWANCE_S if ready == 0 else 0.0)
        verdicts: list[str | None] = []
        expired = False
        for (path, _role), result in zip(variants, pending, strict=True):
            try:
                result.get(max(0.05, end - time.monotonic()))
                verdicts.append(None)
            except multiprocessing.TimeoutError:
                expired = True
                # queued behind stuck compiles, never started: the worker tries it itself
                started = Path(str(path) + STARTED).exists()
                verdicts.append(f"compiling took more than {deadline_s or NO_DEADLINE_S:g} s "
                                "(in the compile pool)" if started and deadline_s else None)
            except Exception:  # the pool process died (a crash in the compiler): advisory
                verdicts.append(None)
        if expired:  # the stuck compiles hold pool processes: start afresh next time
            self.close()
        return verdicts

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None
        self._forget_ready_dir()

    def _forget_ready_dir(self) -> None:
        if self._ready_dir is not None:
            shutil.rmtree(self._ready_dir, ignore_errors=True)
            self._ready_dir = None
