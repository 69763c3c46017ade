"""A kernel file's convention values checked in the child, after import (docs/triton.md):
``contract`` names each wrong value with what it must be, ``takes`` and ``call`` turn a wrong
arity into the file's mistake (exit 2), not a TypeError of the harness. The parent reads the
same convention without importing (convention.py)."""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelopt_triton.convention import REQUIRED_FUNCTIONS, REQUIRED_NAMES
from kernelopt_triton.loading import ConventionError


def contract(module: ModuleType, path: Path) -> dict[str, Any]:
    """The convention's names, validated: each wrong one is named with what it must be."""
    missing = [n for n in (*REQUIRED_FUNCTIONS, *REQUIRED_NAMES) if not hasattr(module, n)]
    if missing:
        raise ConventionError(f"{path.name} does not define {', '.join(missing)} "
                              "(docs/triton.md lists what a kernel file defines)")
    for name in REQUIRED_FUNCTIONS:  # a class is callable, but makes no args nor outputs
        if not callable(getattr(module, name)) or isinstance(getattr(module, name), type):
            raise ConventionError(f"{path.name}: {name} must be a function, got "
                                  f"{_shown(getattr(module, name))}")
    tol = module.TOLERANCE
    if not isinstance(tol, dict) or set(tol) - {"atol", "rtol"} or not tol or not all(
            _tolerance(v) for v in tol.values()):
        raise ConventionError(f"{path.name}: TOLERANCE must be a dict with atol and rtol, "
                              f"non-negative finite numbers, got {_shown(tol)}")
    outputs, inplace = _indices(module.OUTPUTS), _indices(getattr(module, "INPLACE", ()))
    if not outputs:
        raise ConventionError(f"{path.name}: OUTPUTS must be a non-empty tuple of arg indices "
                              f"(ints), got {_shown(module.OUTPUTS)}")
    if inplace is None or not set(inplace) <= set(outputs):
        raise ConventionError(f"{path.name}: INPLACE {_shown(getattr(module, 'INPLACE', ()))} "
                              f"must be a tuple of indices among OUTPUTS {outputs!r}")
    shape, size = module.SHAPE, getattr(module, "BYTES", None)
    if not isinstance(shape, str):
        raise ConventionError(f"{path.name}: SHAPE must be a string such as \"f32[4096]\", "
                              f"got {_shown(shape)}")
    return {"make_args": module.make_args, "reference": module.reference,
            "atol": float(tol.get("atol", 0.0)), "rtol": float(tol.get("rtol", 0.0)),
            "outputs": outputs, "inplace": inplace, "shape": shape,
            "bytes": size if isinstance(size, int) and not isinstance(size, bool) and size > 0
            else None, "name": path.name}


def _shown(value: Any) -> str:
    text = f"{type(value).__name__} {value!r}" if not callable(value) else type(value).__name__
    return text if len(text) <= 120 else text[:120] + "…"


def _tolerance(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and value >= 0


def _indices(value: Any) -> tuple[int, ...] | None:
    """A tuple or list of ints (bools aside), as a tuple; None for anything else."""
    if not isinstance(value, (tuple, list)) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in value):
        return None
    return tuple(value)


def takes(function: Any, args: list[Any] | tuple[Any, ...], what: str, name: str) -> None:
    """ConventionError unless ``function`` accepts ``args`` (its signature, when Python can
    tell): a wrong arity is the file's mistake, said as one, not a TypeError from here."""
    try:
        inspect.signature(function).bind(*args)
    except TypeError as exc:
        raise ConventionError(f"{name}: {what} cannot take {len(args)} args ({exc}); "
                              "docs/triton.md gives its signature") from None
    except ValueError:  # a builtin without a signature: the call says
        pass


def call(function: Any, args: list[Any] | tuple[Any, ...], what: str, name: str) -> Any:
    """``function(*args)``; a TypeError raised by the call itself (a wrong arity, a builtin
    that takes no such args), not by code inside the function, is the file's mistake."""
    takes(function, args, what, name)
    try:
        return function(*args)
    except TypeError as exc:
        if exc.__traceback__ is not None and exc.__traceback__.tb_next is None:
            raise ConventionError(f"{name}: {what} cannot be called with {len(args)} args "
                                  f"({exc}); docs/triton.md gives its signature") from None
        raise
