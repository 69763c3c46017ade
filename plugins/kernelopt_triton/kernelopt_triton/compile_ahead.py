"""A sweep's configurations compiled before the GPU lock is taken (the core's ``compile``
request, sent just before ``sweep``).

Compiling is CPU work (MLIR passes, ptxas), and with the kernel-file convention it happened on
a configuration's first launch, inside the sweep, under the GPU lock: measured on the H200
(2026-12-01), compiling was most of a screened configuration's GPU-lock time (a first compile
0.15-1.7 s against 0.05-0.45 s to check and time it), and a fused Inductor reduction took
~4 s. Here each configuration's file is imported and its ``launch()`` run with every
``@triton.jit`` launch turned into Triton's compile-only warmup (nothing is launched on the
device), its compiles submitted to a thread pool (Triton's AsyncCompileMode; the compiler
releases the GIL, so they run side by side). The modules are kept, their kernels compiled, and
the sweep that follows checks and times them under the lock. (It replaces a process pool that
compiled under the lock: ~5-30 s to start its processes, and the lock held meanwhile.)

What a launch wrapper does besides launching its kernels (allocating outputs) still runs here.
A kernel behind ``@triton.autotune`` is left to the sweep (its autotuner would time configs).
Advisory: a configuration that fails here is met again by the
sweep, which reports it; one still compiling at the deadline is failed without the sweep
trying it (it would wait for the same compile under the lock).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from types import ModuleType
from typing import Any

NO_DEADLINE_S = 600.0  # a wait is never unbounded


def threads() -> int:
    """Compile threads: the machine's cores less one for the worker and one for the core."""
    return max(1, min(16, (os.cpu_count() or 2) - 2))


@contextlib.contextmanager
def _compile_only() -> Iterator[None]:
    """Every @triton.jit launch in the block compiles its kernel and returns (Triton's own
    ``warmup``: specialization, cache and compile as a launch would do them, no launch)."""
    from triton.runtime.jit import JITFunction

    original = JITFunction.run

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        return original(self, *args, grid=grid, warmup=True, **kwargs)

    JITFunction.run = run
    try:
        yield
    finally:
        JITFunction.run = original


def _autotuned(module: ModuleType) -> bool:
    from triton.runtime.autotuner import Autotuner

    return any(isinstance(value, Autotuner) for value in vars(module).values())


class CompileAhead:
    """One worker session's compiled-ahead modules, by the configuration's source text."""

    def __init__(self) -> None:
        self.modules: dict[str, ModuleType] = {}
        self.stuck: dict[str, str] = {}

    def compile(self, variants: list[tuple[Path, str, str]], args: list[Any],
                deadline_s: float | None) -> dict[str, Any]:
        """``variants``: (file, module role, its text), the files written. Returns how many
        compiled ahead and how many were stuck at the deadline."""
        from kernelopt_triton.harness import DeadlinePassed, deadline, load

        try:
            from triton.runtime._async_compile import AsyncCompileMode, active_mode
        except ImportError:  # an older Triton: the sweep compiles under the lock, as before
            return {"compiled": 0, "stuck": 0, "skipped": "no AsyncCompileMode in this Triton"}
        self.release()
        executor = ThreadPoolExecutor(threads(), thread_name_prefix="kernelopt-compile")
        mode = AsyncCompileMode(executor, ignore_errors=True)
        token = active_mode.set(mode)
        owned: list[tuple[str, ModuleType, list[Any]]] = []
        try:
            with _compile_only():
                for path, role, text in variants:
                    before = len(mode.raw_futures)
                    module = None
                    try:
                        with deadline(deadline_s):  # an import can hang too
                            module = load(path, role)
                            if not _autotuned(module):
                                module.launch(*args)
                                owned.append((text, module, mode.raw_futures[before:]))
                                continue
                    except DeadlinePassed:
                        self.stuck[text] = self._late(deadline_s)
                    except Exception:  # the sweep meets it again and reports it
                        pass
                    if module is not None:
                        sys.modules.pop(module.__name__, None)
        finally:
            active_mode.reset(token)
        rounds = math.ceil(max(1, len(mode.raw_futures)) / threads())
        _done, pending = wait(mode.raw_futures, timeout=(deadline_s or NO_DEADLINE_S) * rounds)
        executor.shutdown(wait=False)  # a stuck compile's thread ends on its own
        for future_kernel in mode.future_kernels.values():
            if future_kernel.future.done():  # its kernel into the JIT function's cache
                future_kernel.result(ignore_errors=True)
        for text, module, futures in owned:
            if any(f in pending for f in futures):
                self.stuck[text] = self._late(deadline_s)
                sys.modules.pop(module.__name__, None)
            else:
                self.modules[text] = module
        return {"compiled": len(self.modules), "stuck": len(self.stuck)}

    @staticmethod
    def _late(deadline_s: float | None) -> str:
        # the sweep's own deadline words: the worker is retired after it, as after the sweep's
        return f"took longer than {deadline_s or NO_DEADLINE_S:g} s (compiling ahead of the sweep)"

    def take(self, text: str) -> ModuleType | str | None:
        """The compiled module of this source (the sweep owns it now), why it must not be
        tried, or None: the sweep loads and compiles it itself."""
        if text in self.stuck:
            return self.stuck.pop(text)
        return self.modules.pop(text, None)

    def release(self) -> None:
        for module in self.modules.values():
            sys.modules.pop(module.__name__, None)
        self.modules.clear()
        self.stuck.clear()
