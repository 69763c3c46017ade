"""A kernel file's inputs in the harness: ``make_args`` called and held to the convention, the
outputs poisoned (or, read before written, restored) before each launch, the rows a gate
self-test narrows to. Pure functions of the torch module they are given."""

from __future__ import annotations

import math
from typing import Any

from kernelopt_triton.contract import _shown, call
from kernelopt_triton.loading import ConventionError


def make_args(torch: Any, spec: dict[str, Any], seed: int, device: str) -> list[Any]:
    made = call(spec["make_args"], (seed, device), "make_args(seed, device)", spec["name"])
    if not isinstance(made, (list, tuple)):
        raise ConventionError(f"{spec['name']}: make_args(seed, device) must return a list of "
                              f"launch's args, got {_shown(made)}")
    args = list(made)
    for i in spec["outputs"]:
        if not -len(args) <= i < len(args) or not isinstance(args[i], torch.Tensor):
            raise ConventionError(f"{spec['name']}: OUTPUTS names arg {i}, which is not a tensor "
                                  f"of make_args' {len(args)} args")
    inputs = [a for i, a in enumerate(args) if isinstance(a, torch.Tensor) and i not in spec["outputs"]]
    if inputs and all(a.numel() == 0 or not bool(a.any()) for a in inputs):
        raise ConventionError(f"{spec['name']}: make_args gave all-zero inputs; correctness needs "
                              "fresh random inputs for every seed")
    return args


def poison(torch: Any, tensor: Any, expected: Any = None) -> None:
    """Fill an output with a value no honest kernel leaves behind."""
    if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        if expected is not None and expected.shape == tensor.shape:
            tensor.copy_(~expected.to(device=tensor.device, dtype=torch.bool))
        else:
            tensor.fill_(True)
    else:
        info = torch.iinfo(tensor.dtype)  # e.g. -2147483647 (or 255 unsigned): no plausible result
        tensor.fill_(info.max if info.min == 0 else info.min + 1)


def prepare_outputs(torch: Any, args: list[Any], originals: list[Any], spec: dict[str, Any],
                    expected: list[Any] | None = None) -> None:
    """Before a launch: outputs poisoned, in-place outputs (read before written) restored."""
    for n, i in enumerate(spec["outputs"]):
        if i in spec["inplace"]:
            with torch.no_grad():
                args[i].copy_(originals[i])
        else:
            poison(torch, args[i], expected[n] if expected is not None else None)


def narrow_rows(torch: Any, args: list[Any], work: float) -> list[Any]:
    """Every tensor argument narrowed to the first ⌈work·n⌉ rows of its first dimension."""
    out = []
    for a in args:
        if isinstance(a, torch.Tensor) and a.dim() >= 1 and a.shape[0] > 1:
            a = a.narrow(0, 0, max(1, math.ceil(work * a.shape[0])))
        out.append(a)
    return out
