"""Several versions of an Inductor kernel compiled side by side in one process, switchable.

The engine gate and the model comparison compile the model once and then choose, between
calls, which version of a kernel the compiled model runs: Inductor's wrapper module calls
``NAME.run(...)`` on a module global, and ``AsyncCompile.triton`` (which makes that global) is
wrapped so that kernel NAME becomes a ``SwitchedKernel``: every version is compiled from
Inductor's own source with the version's ``@triton.jit`` function(s) and launch config swapped
in (``engine.swap_kernel_source``; ``None`` keeps Inductor's source and its own autotuning), and
``run`` forwards to the version selected. Nothing else of the model is compiled twice.
Only calls from a graph's wrapper module are switched or renamed (``wrapper_graph``).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


class VersionFailed(Exception):
    """One version of a kernel did not compile (or its swap did not apply)."""

    def __init__(self, label: str, name: str, why: str) -> None:
        super().__init__(f"{label} version of {name}: {why}")
        self.label = label


class SwitchedKernel:
    """The object the compiled model calls for one kernel: forwards to the selected version."""

    def __init__(self, name: str, compiled: dict[str, Any], failed: dict[str, str]) -> None:
        self._name = name
        self._compiled = compiled  # label -> CachingAutotuner or a future of one
        self._failed = failed
        self._resolved: dict[str, Any] = {}
        self.active = next(iter(compiled)) if compiled else next(iter(failed))

    def kernel(self, label: str | None = None) -> Any:
        label = label or self.active
        if label in self._failed:
            raise VersionFailed(label, self._name, self._failed[label])
        if label not in self._resolved:
            from torch._inductor.codecache import CodeCacheFuture

            found = self._compiled[label]
            try:
                self._resolved[label] = found.result() if isinstance(found, CodeCacheFuture) else found
            except Exception as exc:  # a parallel compile's error surfaces here
                self._failed[label] = f"{type(exc).__name__}: {exc}"
                raise VersionFailed(label, self._name, self._failed[label]) from exc
        return self._resolved[label]

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self.kernel().run(*args, **kwargs)

    def __getattr__(self, item: str) -> Any:
        if item.startswith("_"):
            raise AttributeError(item)
        return getattr(self.kernel(), item)


class KernelSwitch:
    """``versions``: kernel name -> {label: candidate file text, or None for Inductor's own}."""

    def __init__(self, versions: dict[str, dict[str, str | None]],
                 swap: Callable[[str, str, str], str]) -> None:
        self.versions = versions
        self.swap = swap
        self.kernels: dict[str, SwitchedKernel] = {}
        self.enabled = True  # off while another compile (max-autotune) must not be switched

    def wants(self, kernel_name: str) -> bool:
        return self.enabled and kernel_name in self.versions

    def make(self, compile_one: Callable[[str, str], Any], kernel_name: str,
             source_code: str) -> SwitchedKernel:
        """Every version of ``kernel_name`` compiled (``compile_one(name, source)``: Inductor's
        own AsyncCompile.triton), behind one switched kernel."""
        compiled: dict[str, Any] = {}
        failed: dict[str, str] = {}
        for label, text in self.versions[kernel_name].items():
            try:
                source = source_code if text is None else self.swap(source_code, text, kernel_name)
                compiled[label] = compile_one(kernel_name, source)
            except Exception as exc:  # this version fails, the others still run
                failed[label] = f"{type(exc).__name__}: {exc}"
        self.kernels[kernel_name] = SwitchedKernel(kernel_name, compiled, failed)
        return self.kernels[kernel_name]

    def select(self, label: str) -> None:
        """Every switched kernel that has a version ``label`` runs it from the next call on."""
        for name, kernel in self.kernels.items():
            if label in self.versions[name]:
                kernel.active = label

    def resolve(self, label: str) -> None:
        """Compile (or wait for) version ``label`` of every kernel now; VersionFailed if one fails."""
        for name, kernel in self.kernels.items():
            if label in self.versions[name]:
                kernel.kernel(label)

    def missing(self) -> list[str]:
        """Kernels asked for that the model never compiled (a stale capture, another model)."""
        return sorted(set(self.versions) - set(self.kernels))


def renamed_source(source: str, name: str, new: str) -> str:
    """Inductor's kernel source with kernel ``name`` called ``new`` (the function, its metadata)."""
    return re.sub(rf"\b{re.escape(name)}\b", new, source)


class UniqueKernelNames:
    """One name per kernel across a model's compiled graphs.

    Inductor numbers kernels per graph, so a model with graph breaks has a
    ``triton_poi_fused_add_0`` in each graph: different code under one name, merged in the
    profiler and in any swap by name. This keeps the name in the first graph that compiles it
    and calls it ``NAME_g{k}`` in the k-th other graph (the function, its metadata and so what
    the profiler reports). Graphs compile in the order the model runs them, so the capture and
    every later engine run of the same model give the same names. ``renamed``: (wrapper module
    file, Inductor's name) -> the name given. ``enabled`` False: names are left alone (another
    compile of the model in the same process, e.g. max-autotune's, must not take names first).
    """

    def __init__(self) -> None:
        self.graphs: dict[str, list[str]] = {}  # Inductor's name -> wrapper modules, in order
        self.renamed: dict[tuple[str, str], str] = {}
        self.enabled = True

    def name(self, graph: str, kernel_name: str, source_code: str) -> tuple[str, str]:
        """The kernel's name in this graph, and its source under that name."""
        if not self.enabled:
            return kernel_name, source_code
        owners = self.graphs.setdefault(kernel_name, [])
        if graph not in owners:
            owners.append(graph)
        k = owners.index(graph)
        if not k:
            return kernel_name, source_code
        new = f"{kernel_name}_g{k}"
        self.renamed[(graph, kernel_name)] = new
        return new, renamed_source(source_code, kernel_name, new)


def wrapper_graph(frame: Any) -> str | None:
    """The wrapper module (one compiled graph) that made this call, or None when the caller is
    not a module under Inductor's cache directory (Inductor's own codegen also calls
    AsyncCompile.triton, to start compiles early: those calls are left alone)."""
    file = frame.f_globals.get("__file__") if frame is not None else None
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if not file or not cache:
        return None
    resolved, root = Path(file).resolve(), Path(cache).resolve()
    return str(resolved) if resolved.is_relative_to(root) else None


def install(names: UniqueKernelNames, switch: KernelSwitch | None = None) -> None:
    """Wrap AsyncCompile.triton once: a call from a graph's wrapper module gets the graph's
    unique kernel name, then, if the switch wants that kernel, every version of it."""
    from torch._inductor.async_compile import AsyncCompile

    original = AsyncCompile.triton

    def triton(self: Any, kernel_name: str, source_code: str, *args: Any, **kwargs: Any) -> Any:
        graph = wrapper_graph(sys._getframe(1))
        if graph is None:
            return original(self, kernel_name, source_code, *args, **kwargs)
        kernel_name, source_code = names.name(graph, kernel_name, source_code)
        if switch is not None and switch.wants(kernel_name):
            return switch.make(lambda n, src: original(self, n, src, *args, **kwargs),
                               kernel_name, source_code)
        return original(self, kernel_name, source_code, *args, **kwargs)

    AsyncCompile.triton = triton  # type: ignore[method-assign]
