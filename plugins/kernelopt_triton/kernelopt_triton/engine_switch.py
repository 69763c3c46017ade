"""Several versions of an Inductor kernel compiled side by side in one process, switchable.

The engine gate and the model comparison (without CUDA graphs) compile the model once and then
choose, between calls, which version of a kernel the compiled model runs; under CUDA graphs each
version is a compile of its own, each with one version (engine.compile_apart): Inductor's wrapper module calls
``NAME.run(...)`` on a module global, and ``AsyncCompile.triton`` (which makes that global) is
wrapped so that kernel NAME becomes a ``SwitchedKernel``: every version is compiled from
Inductor's own source with the version's ``@triton.jit`` function(s) and launch config swapped
in (``engine.swap_kernel_source``; ``None`` keeps Inductor's source and its own autotuning), and
``run`` forwards to the version selected. Nothing else of the model is compiled twice.
Only calls from a graph's wrapper module are switched or renamed (``wrapper_graph``).

Which kernel is "kernel NAME" is decided by its code, not its name, where the capture's source
is given (``captured``): Inductor numbers kernels per compile (``..._view_7``), and a name can
move to other code between processes or settings (a kernel deduplicated in one compile and
not in another shifts every later number). A kernel of this compile whose ``@triton.jit``
function, its name taken out, is the captured kernel's is that kernel, whatever it is called
here; one that only shares the name is not switched, and ``missing`` says why.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelopt_triton.inductor_template import tile_programs


class VersionFailed(Exception):
    """One version of a kernel did not compile (or its swap did not apply)."""

    def __init__(self, label: str, name: str, why: str) -> None:
        super().__init__(f"{label} version of {name}: {why}")
        self.label = label


class SwitchedKernel:
    """The object the compiled model calls for one kernel: forwards to the selected version."""

    def __init__(self, name: str, compiled: dict[str, Any], failed: dict[str, str],
                 grid_x: dict[str, int] | None = None) -> None:
        self._name = name
        self._compiled = compiled  # label -> CachingAutotuner or a future of one
        self._failed = failed
        # label -> the x size of a template version's tile grid: the wrapper passes the grid
        # of the captured tiles as run's last three arguments (FixedGrid), a candidate with
        # other BLOCK_M/BLOCK_N needs its own
        self._grid_x = grid_x or {}
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
        x = self._grid_x.get(self.active)
        if x is not None:
            args = (*args[:-3], x, *args[-2:])
        return self.kernel().run(*args, **kwargs)

    def __getattr__(self, item: str) -> Any:
        if item.startswith("_"):
            raise AttributeError(item)
        return getattr(self.kernel(), item)


def jit_body(source: str, name: str) -> str | None:
    """Kernel ``name``'s ``@triton.jit`` function in ``source`` (decorators left out, the name
    replaced by KERNEL): what the kernel computes, at its shapes. None if it is not there."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        return None
    text = "\n".join(source.splitlines()[fn.lineno - 1:fn.end_lineno])
    return re.sub(rf"\b{re.escape(name)}\b", "KERNEL", text)


class CapturedCode:
    """The capture's code of the kernels a switch wants (``wanted``: name -> its
    ``@triton.jit`` function, jit_body) and of every kernel captured beside them (``known``,
    the files' folders, the capture's kernels/): a kernel with a captured kernel's name and
    code is that kernel, never a same-code twin wanted under another name (the same code in
    two graphs: NAME and NAME_g1). Read once a process, shared by its switches."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.wanted = {name: jit_body(file.read_text(errors="replace"), name)
                       for name, file in files.items()}
        self.known: dict[str, str | None] = {}
        for folder in sorted({file.parent for file in files.values()}):
            for file in sorted(folder.glob("*.py")):
                self.known.setdefault(file.stem, jit_body(file.read_text(errors="replace"),
                                                          file.stem))
        self.known.update(self.wanted)


class KernelSwitch:
    """``versions``: kernel name -> {label: candidate file text, or None for Inductor's own}.
    ``captured``: the capture's code of those kernels: each is then found by its code (module
    doc); None: by name."""

    def __init__(self, versions: dict[str, dict[str, str | None]],
                 swap: Callable[[str, str, str], str],
                 captured: CapturedCode | None = None) -> None:
        self.versions = versions
        self.swap = swap
        self.kernels: dict[str, SwitchedKernel] = {}
        self.bodies = captured.wanted if captured else {}
        self.known = captured.known if captured else {}
        self.found_as: dict[str, str] = {}  # captured name -> this compile's name, where other
        self.unlike: list[str] = []  # kernels that share a wanted name but not its code

    def identify(self, kernel_name: str, source_code: str) -> str | None:
        """The name of the wanted kernel this one is (None: not wanted). By code where the
        capture's source is known, preferring the same name; else by name."""
        if not self.bodies:
            return kernel_name if kernel_name in self.versions else None
        body = jit_body(source_code, kernel_name)
        if body is not None and self.known.get(kernel_name) == body:  # the captured kernel
            return kernel_name if kernel_name in self.bodies else None
        if kernel_name in self.bodies:
            self.unlike.append(kernel_name)
        for name, wanted in self.bodies.items():
            if body is not None and wanted == body and name not in self.kernels:
                self.found_as[name] = kernel_name
                return name
        return None

    def make(self, compile_one: Callable[[str, str], Any], kernel_name: str,
             source_code: str) -> SwitchedKernel:
        """Every version of ``kernel_name`` compiled (``compile_one(name, source)``: Inductor's
        own AsyncCompile.triton), behind one switched kernel."""
        compiled: dict[str, Any] = {}
        failed: dict[str, str] = {}
        grid_x: dict[str, int] = {}
        for label, text in self.versions[kernel_name].items():
            try:
                source = source_code if text is None else self.swap(source_code, text, kernel_name)
                if text is not None and (x := tile_programs(source, kernel_name)) is not None:
                    grid_x[label] = x
                compiled[label] = compile_one(kernel_name, source)
            except Exception as exc:  # this version fails, the others still run
                failed[label] = f"{type(exc).__name__}: {exc}"
        if kernel_name in self.kernels:  # two of this compile's kernels taken for one
            raise RuntimeError(f"two kernels of this compile are {kernel_name}: the capture's "
                               "kernel is ambiguous here (capture again?)")
        self.kernels[kernel_name] = SwitchedKernel(kernel_name, compiled, failed, grid_x)
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

    def missing_reason(self) -> str:
        """Why the missing kernels were not found, for the engine's error."""
        names = self.missing()
        why = (f"kernel {', '.join(names)} was not compiled for this model"
               if not self.bodies else
               f"no kernel of this compile has the code of {', '.join(names)}")
        if clash := sorted(set(self.unlike) & set(names)):
            why += (f" (this compile's {', '.join(clash)} computes something else: Inductor "
                    "numbered its kernels differently)")
        return why + " (capture again?)"

    def identity(self) -> str:
        """How the switched kernels were found: for the engine's line."""
        if not self.bodies:
            return "by name"
        moved = [f"{k} (named {v} here)" for k, v in sorted(self.found_as.items())]
        return "by code" + (f": {', '.join(moved)}" if moved else ", same names")


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
    file, Inductor's name) -> the name given. A process that compiles the model several times
    gives each compile its own (``Compiling``).
    """

    def __init__(self) -> None:
        self.graphs: dict[str, list[str]] = {}  # Inductor's name -> wrapper modules, in order
        self.renamed: dict[tuple[str, str], str] = {}
        self.order: list[str] = []  # the wrapper modules with Triton kernels, as they loaded

    def name(self, graph: str, kernel_name: str, source_code: str) -> tuple[str, str]:
        """The kernel's name in this graph, and its source under that name."""
        if graph not in self.order:
            self.order.append(graph)
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


class Compiling:
    """What the wrapped AsyncCompile.triton applies to the compile under way: its names and its
    switch. A process that compiles the model twice (one compile per version under CUDA
    graphs) gives each compile fresh ones."""

    def __init__(self, names: UniqueKernelNames, switch: KernelSwitch | None = None) -> None:
        self.names = names
        self.switch = switch
        self.seen = 0  # kernels this compile's wrapper modules asked for
        self.enabled = True  # off: every compile as Inductor makes it (a user's later ones)


def install(names: UniqueKernelNames, switch: KernelSwitch | None = None) -> Compiling:
    """Wrap AsyncCompile.triton once: a call from a graph's wrapper module gets the graph's
    unique kernel name, then, if the switch wants that kernel (by its code where the capture's
    is known), every version of it under the capture's name."""
    from torch._inductor.async_compile import AsyncCompile

    original = AsyncCompile.triton
    now = Compiling(names, switch)

    def triton(self: Any, kernel_name: str, source_code: str, *args: Any, **kwargs: Any) -> Any:
        graph = wrapper_graph(sys._getframe(1)) if now.enabled else None
        if graph is None:
            return original(self, kernel_name, source_code, *args, **kwargs)
        now.seen += 1
        kernel_name, source_code = now.names.name(graph, kernel_name, source_code)
        wanted = now.switch.identify(kernel_name, source_code) if now.switch else None
        if now.switch is not None and wanted is not None:
            if wanted != kernel_name:  # the captured kernel under another name here
                source_code = renamed_source(source_code, kernel_name, wanted)
            return now.switch.make(lambda n, src: original(self, n, src, *args, **kwargs),
                                   wanted, source_code)
        return original(self, kernel_name, source_code, *args, **kwargs)

    AsyncCompile.triton = triton  # type: ignore[method-assign]
    return now
