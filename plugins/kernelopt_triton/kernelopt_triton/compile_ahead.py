"""A sweep's configurations compiled before the GPU lock is taken (the core's ``compile``
request, sent just before ``sweep`` to a worker whose ``load`` reply lists it).

Compiling is CPU work (MLIR passes, ptxas), and with the kernel-file convention it happened on
a configuration's first launch, inside the sweep, under the GPU lock: measured on the H200
(2026-12-01), compiling was most of a screened configuration's GPU-lock time (a first compile
0.15-1.7 s against 0.05-0.45 s to check and time it), and a fused Inductor reduction took
~4 s. Here each configuration's file is imported and its ``launch()`` run with every
``@triton.jit`` launch turned into Triton's compile-only warmup, its compiles submitted to a
thread pool (Triton's AsyncCompileMode, one per module; the compiler releases the GIL, so
they run side by side). The modules are kept, their kernels compiled, and the sweep that
follows checks and times them under the lock. (This replaces a process pool that compiled
under the lock: ~5-30 s to start its processes, and the lock held meanwhile.)

Nothing may run on the device outside the lock: while a file is imported and its launch run,
a torch dispatch mode refuses every operation on a device tensor but allocation and views
(an input fill, a ``.item()``, a copy), and an autotuner (it would time configurations) is
refused too; such a configuration is left for the sweep to compile under the lock. Advisory:
a configuration that fails here is met again by the sweep, which reports it; one still
compiling at the deadline is failed without the sweep trying it (it would wait for the same
compile under the lock); one that never started is left to the sweep.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelopt_triton.loading import DeadlinePassed, deadline, load, module_name

NO_DEADLINE_S = 600.0  # a wait is never unbounded

# torch operations allowed on device tensors while compiling ahead: allocation, views and
# metadata, nothing that launches a kernel or reads device memory
ALLOWED_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "view",
    "_unsafe_view", "as_strided", "_reshape_alias", "reshape", "t", "transpose", "permute",
    "expand", "unsqueeze", "squeeze", "slice", "select", "alias", "detach", "view_as",
    "unflatten", "flatten", "split", "chunk", "unbind", "narrow", "diagonal", "sym_size",
    "sym_stride", "sym_numel", "sym_storage_offset", "is_contiguous", "size", "stride",
    "dim", "numel", "storage_offset",
})


class NotAhead(Exception):
    """This configuration cannot be compiled ahead without touching the device."""


def threads() -> int:
    """Compile threads: the cores this process may use, less one for the worker and one for
    the core."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 2
    return max(1, min(16, cores - 2))


@contextlib.contextmanager
def _compile_only() -> Iterator[None]:
    """In the block: every @triton.jit launch compiles its kernel and returns (Triton's own
    ``warmup``), an autotuner refuses to run, and a torch operation that would run on the
    device raises NotAhead."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    def on_device(value: Any) -> bool:
        if isinstance(value, torch.Tensor):
            return value.device.type != "cpu"
        if isinstance(value, (torch.device, str)):
            return torch.device(value).type != "cpu"
        return False

    class NoDeviceWork(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            name = func.overloadpacket.__name__
            touches = any(on_device(v) for v in tree_leaves((args, kwargs)))
            if touches and name not in ALLOWED_OPS:
                raise NotAhead(f"torch.{name} on the device")
            return func(*args, **kwargs)

    jit_run, tuner_run = JITFunction.run, Autotuner.run

    def compile_only(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        return jit_run(self, *args, grid=grid, warmup=True, **kwargs)

    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotAhead("an autotuner times configurations")

    JITFunction.run, Autotuner.run = compile_only, refuse
    try:
        with NoDeviceWork():
            yield
    finally:
        JITFunction.run, Autotuner.run = jit_run, tuner_run


class _Timed(ThreadPoolExecutor):
    """A thread pool that knows when each task started (a compile still running at the
    deadline is stuck; one never started was only queued behind it)."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers, thread_name_prefix="kernelopt-compile")
        self.workers = workers
        self.started: dict[Future[Any], float] = {}
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        box: list[Future[Any]] = []

        def timed() -> Any:
            with self._lock:  # the future is in box once submit returned
                self.started[box[0]] = time.monotonic()
            return fn(*args, **kwargs)

        with self._lock:
            future = super().submit(timed)
            box.append(future)
        return future


class CompileAhead:
    """One worker session's compiled-ahead modules, by the configuration's source text."""

    def __init__(self) -> None:
        self.modules: dict[str, ModuleType] = {}
        self.stuck: dict[str, str] = {}

    def compile(self, variants: list[tuple[Path, str, str]], args: list[Any],
                deadline_s: float | None) -> dict[str, Any]:
        """``variants``: (file, module role, its text), the files written. Returns how many
        compiled ahead, how many were stuck at the deadline, and why others were left to the
        sweep."""
        try:
            from triton.runtime._async_compile import AsyncCompileMode, active_mode
        except ImportError:  # an older Triton: the sweep compiles under the lock, as before
            return {"compiled": 0, "stuck": 0, "left": {"*": "no AsyncCompileMode in Triton"}}
        executor = _Timed(threads())
        owned: list[tuple[str, ModuleType, Any]] = []
        seen: set[str] = set()
        left: dict[str, str] = {}
        with _compile_only():
            for path, role, text in variants:
                if text in seen:
                    continue  # the same source twice: compiled once
                seen.add(text)
                mode = AsyncCompileMode(executor, ignore_errors=True)  # per module: no
                token = active_mode.set(mode)  # kernel shared with another module's cache
                module = None
                try:
                    with deadline(deadline_s):  # an import can hang too
                        module = load(path, role)
                        module.launch(*args)
                    owned.append((text, module, mode))
                    continue
                except DeadlinePassed:
                    self.stuck[text] = self._late(deadline_s)
                except NotAhead as exc:
                    left[role] = str(exc)
                except Exception:  # the sweep meets it again and reports it
                    pass
                finally:
                    active_mode.reset(token)
                sys.modules.pop(module_name(path, role), None)  # failed, or half imported
        self._wait(executor, [f for _t, _m, mode in owned for f in mode.raw_futures],
                   deadline_s or NO_DEADLINE_S)
        for text, module, mode in owned:
            futures = list(mode.raw_futures)
            if any(not f.done() for f in futures):  # still compiling past its deadline
                self.stuck[text] = self._late(deadline_s)
            elif not any(f.cancelled() for f in futures):
                for future_kernel in mode.future_kernels.values():  # into its JIT cache
                    future_kernel.result(ignore_errors=True)
                self.modules[text] = module
                continue
            sys.modules.pop(module.__name__, None)  # never started: the sweep compiles it
        return {"compiled": len(self.modules), "stuck": len(self.stuck), "left": left}

    @staticmethod
    def _wait(executor: _Timed, futures: list[Future[Any]], deadline_s: float) -> None:
        """Until every compile finished, or every running one has run past the deadline while
        nothing else can start (no task queued, or every thread held by a stuck compile);
        then what never started is cancelled (the sweep compiles it)."""
        limit = time.monotonic() + NO_DEADLINE_S + deadline_s * max(1, len(futures))
        while time.monotonic() < limit:
            pending = [f for f in futures if not f.done()]
            if not pending:
                break
            now = time.monotonic()
            running = [f for f in pending if f in executor.started]
            stuck = running and all(now - executor.started[f] > deadline_s for f in running)
            if stuck and (len(running) == len(pending) or len(running) >= executor.workers):
                break
            time.sleep(0.02)
        executor.shutdown(wait=False, cancel_futures=True)  # a stuck thread ends on its own

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

