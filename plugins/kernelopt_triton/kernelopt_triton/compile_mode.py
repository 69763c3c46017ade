"""The compile a model's user already has: torch.compile's keyword arguments for a model file.

A model file may say how it is compiled with ``COMPILE = {...}``: torch.compile's own keywords
(``mode``, ``options``, ``dynamic``, ``fullgraph``), e.g. ``COMPILE = {"mode": "max-autotune"}``.
``--compile-mode`` (``[triton] compile_mode``) overrides the file's mode. The capture, the
engine and the model check all compile with these keywords, so the kernels kernelopt ranks,
tunes and checks are that compile's (its Triton GEMM/conv templates too, where max-autotune
chose them) and the whole model is timed as the user runs it, CUDA graphs included.

Pure (no torch import): the child processes call ``torch.compile(model, **kwargs)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
KEYWORDS = ("mode", "options", "dynamic", "fullgraph")
CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")
CUDAGRAPH_OPTION = "triton.cudagraphs"


class CompileError(ValueError):
    """A model file's COMPILE (or --compile-mode) that torch.compile would not take."""


def compile_kwargs(module: Any, mode: str | None = None) -> dict[str, Any]:
    """torch.compile's keywords for a model file's module: its ``COMPILE``, with ``mode``
    (``--compile-mode``) in place of the file's mode and options when given."""
    given = getattr(module, "COMPILE", None)
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise CompileError(f"COMPILE must be a dict of torch.compile keywords "
                           f"({', '.join(KEYWORDS)}), not {type(given).__name__}")
    if unknown := sorted(set(given) - set(KEYWORDS)):
        raise CompileError(f"COMPILE has {', '.join(map(repr, unknown))}: kernelopt compiles "
                           f"with Inductor and takes only {', '.join(KEYWORDS)}")
    options = given.get("options")
    if options is not None and not (isinstance(options, dict)
                                    and all(isinstance(k, str) for k in options)):
        raise CompileError("COMPILE's options must be a dict of Inductor settings by name, e.g. "
                           '{"triton.cudagraphs": True}')
    for key in ("dynamic", "fullgraph"):
        if given.get(key) is not None and not isinstance(given[key], bool):
            raise CompileError(f"COMPILE's {key} must be True, False or None")
    kwargs = {k: v for k, v in given.items() if not (k == "mode" and v is None)}
    if mode is not None:
        kwargs.pop("options", None)  # torch.compile takes a mode or options, not both
        kwargs["mode"] = mode
    if kwargs.get("mode", "default") not in MODES:
        raise CompileError(f"compile mode {kwargs['mode']!r} is not one of {', '.join(MODES)}")
    if "mode" in kwargs and "options" in kwargs:
        raise CompileError("COMPILE gives both mode and options: torch.compile takes one of them")
    if kwargs.get("mode") == "default":
        del kwargs["mode"]
    return kwargs


def uses_cudagraphs(kwargs: dict[str, Any]) -> bool:
    """Whether this compile replays CUDA graphs (a kernel swapped after the first calls would
    never run: each version needs its own compile, see engine.py)."""
    if kwargs.get("mode") in CUDAGRAPH_MODES:
        return True
    return bool((kwargs.get("options") or {}).get(CUDAGRAPH_OPTION, False))


def without_cudagraphs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The same compile without CUDA graphs: the same kernels and configs, launched one by one,
    so a profiler sees each kernel (the capture's ranking)."""
    out = dict(kwargs)
    if out.get("mode") == "max-autotune":
        out["mode"] = "max-autotune-no-cudagraphs"
    elif out.get("mode") == "reduce-overhead":
        del out["mode"]
    elif "options" in out:
        out["options"] = {**out["options"], CUDAGRAPH_OPTION: False}
    return out


def describe(kwargs: dict[str, Any]) -> str:
    """One phrase for reports: ``mode="max-autotune"`` or ``the default compile``."""
    if not kwargs:
        return "the default compile"
    return ", ".join(f"{k}={v!r}" for k, v in sorted(kwargs.items()))


def label(kwargs: dict[str, Any]) -> str:
    """A short name for this compile (a folder or a mode column): its mode, else ``custom``."""
    if not kwargs:
        return "default"
    return str(kwargs["mode"]) if set(kwargs) == {"mode"} else "custom"


def parse_setting(text: str) -> dict[str, Any]:
    """``KEY=VALUE[,KEY=VALUE]`` → Inductor settings by name; a value is a Python literal
    (True, 2, "EXHAUSTIVE") or else a bare string (``max_autotune_gemm_search_space=EXHAUSTIVE``)."""
    import ast

    settings: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, raw = item.partition("=")
        if not sep or not key.strip() or not raw.strip():
            raise CompileError(f"setting {item!r}: give KEY=VALUE, e.g. "
                               "triton.persistent_reductions=False")
        try:
            value = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError, TypeError):
            value = raw.strip()
        if not isinstance(value, (bool, int, float, str, type(None))):
            raise CompileError(f"setting {item!r}: a value is True/False, a number, a string or "
                               "None")
        settings[key.strip()] = value
    if not settings:
        raise CompileError(f"setting {text!r}: give KEY=VALUE, e.g. coordinate_descent_search_radius=2")
    return settings


def with_settings(kwargs: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """The same compile with these Inductor settings on top (the mode's own settings stay:
    Inductor applies a mode, then the options)."""
    return {**kwargs, "options": {**(kwargs.get("options") or {}), **settings}}


def setting_label(settings: dict[str, Any]) -> str:
    """``+key=value`` per setting: the name a compile with settings on top carries."""
    return "".join(f"+{k}={v}" for k, v in settings.items())


@contextmanager
def caches_off() -> Iterator[None]:
    """Inductor's FX graph cache and AOTAutograd's cache, local and remote, off for the compiles
    inside: a compile that changes what no cache key holds (the reduction forms' choices
    handler, the lowerings' decomposition table) must not get a graph an earlier compile
    cached. Inductor's autotune cache stays (a kernel of the same code keeps its config)."""
    import torch

    def off(config: Any, *keys: str) -> dict[str, Any]:
        return {key: False for key in keys if hasattr(config, key)}

    with torch._inductor.config.patch(off(torch._inductor.config, "fx_graph_cache",
                                          "fx_graph_remote_cache")), \
            torch._functorch.config.patch(off(torch._functorch.config, "enable_autograd_cache",
                                              "enable_remote_autograd_cache")):
        yield
