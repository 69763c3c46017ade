"""Several versions of an Inductor kernel compiled side by side in one process, switchable.

The engine gate and the model comparison compile the model once and then choose, between
calls, which version of a kernel the compiled model runs: Inductor's wrapper module calls
``NAME.run(...)`` on a module global, and ``AsyncCompile.triton`` (which makes that global) is
wrapped so that kernel NAME becomes a ``SwitchedKernel``: every version is compiled from
Inductor's own source with the version's ``@triton.jit`` function(s) and launch config swapped
in (``engine.swap_kernel_source``; ``None`` keeps Inductor's source and its own autotuning), and
``run`` forwards to the version selected. Nothing else of the model is compiled twice.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
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

    def install(self) -> None:
        from torch._inductor.async_compile import AsyncCompile

        original = AsyncCompile.triton
        switch = self

        def triton(self: Any, kernel_name: str, source_code: str, *args: Any, **kwargs: Any) -> Any:
            wanted = switch.versions.get(kernel_name) if switch.enabled else None
            if wanted is None:
                return original(self, kernel_name, source_code, *args, **kwargs)
            compiled: dict[str, Any] = {}
            failed: dict[str, str] = {}
            for label, text in wanted.items():
                try:
                    source = source_code if text is None else switch.swap(source_code, text, kernel_name)
                    compiled[label] = original(self, kernel_name, source, *args, **kwargs)
                except Exception as exc:  # this version fails, the others still run
                    failed[label] = f"{type(exc).__name__}: {exc}"
            switch.kernels[kernel_name] = SwitchedKernel(kernel_name, compiled, failed)
            return switch.kernels[kernel_name]

        AsyncCompile.triton = triton  # type: ignore[method-assign]

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
    profiler and in any swap by name. Installed (outermost) on ``AsyncCompile.triton``, this
    keeps the name in the first graph that compiles it and calls it ``NAME_g{k}`` in the k-th
    other graph (the function, its metadata and so what the profiler reports). Graphs compile in
    the order the model runs them, so the capture and every later engine run of the same model
    give the same names. ``renamed``: (wrapper module file, Inductor's name) -> the name given.
    """

    def __init__(self) -> None:
        self.graphs: dict[str, list[str]] = {}  # Inductor's name -> wrapper modules, in order
        self.renamed: dict[tuple[str, str], str] = {}

    def install(self) -> None:
        from torch._inductor.async_compile import AsyncCompile

        original = AsyncCompile.triton
        names = self

        def triton(self: Any, kernel_name: str, source_code: str, *args: Any, **kwargs: Any) -> Any:
            # called from the wrapper module's top level: its globals say which graph this is
            scope = sys._getframe(1).f_globals
            graph = str(scope.get("__file__") or id(scope))
            owners = names.graphs.setdefault(kernel_name, [])
            if graph not in owners:
                owners.append(graph)
            k = owners.index(graph)
            if k:
                new = f"{kernel_name}_g{k}"
                names.renamed[(graph, kernel_name)] = new
                source_code, kernel_name = renamed_source(source_code, kernel_name, new), new
            return original(self, kernel_name, source_code, *args, **kwargs)

        AsyncCompile.triton = triton  # type: ignore[method-assign]
