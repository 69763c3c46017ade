"""The harness's verdict on one seed: three launches on the seed's buffers, each output
compared in float64 with the original's ``reference``, inputs unchanged, and no torch call the
original does not make (a vendor library or an eager fallback). Exit 1 is a Mismatch."""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from kernelopt_triton.harness_device import sync_device
from kernelopt_triton.harness_inputs import prepare_outputs

EXIT_WRONG, EXIT_CONVENTION = 1, 2
# Torch functions and tensor methods a launch may call besides its Triton kernels without
# computing anything itself (shapes, pointers, allocation, views, zeroed buffers).
ALLOWED_CALLS = {
    "__get__", "data_ptr", "numel", "size", "stride", "storage_offset", "untyped_storage", "dim",
    "element_size", "is_contiguous", "nelement", "get_device", "__len__", "__index__", "__hash__",
    "__eq__", "__ne__", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
    "view", "reshape", "as_strided", "t", "transpose", "permute", "expand", "detach", "unsqueeze",
    "squeeze", "flatten", "unflatten", "contiguous", "__getitem__", "select", "narrow", "split",
    "chunk", "unbind", "zero_", "fill_", "zeros", "zeros_like", "full", "full_like", "new_zeros",
    "new_full", "ones", "ones_like", "new_ones",
}


class Mismatch(Exception):
    """The kernel's output is wrong (exit 1)."""


def compare(torch: Any, got: Any, want: Any, atol: float, rtol: float, what: str) -> None:
    """|got - want| <= atol + rtol * |want| in float64, NaN/Inf where and only where expected."""
    if tuple(got.shape) != tuple(want.shape):
        raise Mismatch(f"{what}: shape {tuple(got.shape)} but the reference has {tuple(want.shape)}")
    a = got.detach().to(torch.float64)
    b = want.detach().to(device=a.device, dtype=torch.float64)
    both_nan = a.isnan() & b.isnan()
    same_inf = a.isinf() & b.isinf() & (a == b)
    close = (a - b).abs() <= atol + rtol * b.abs()
    bad = ~(close | both_nan | same_inf)
    count = int(bad.sum())
    if count:
        index = tuple(int(i) for i in bad.nonzero()[0])
        err = (a - b).abs()[bad]
        raise Mismatch(
            f"{what}: {count} of {a.numel()} elements differ; first at {list(index)}: got "
            f"{float(a[index])!r}, want {float(b[index])!r} (atol {atol:g}, rtol {rtol:g}; "
            f"max abs error {float(err.nan_to_num(nan=math.inf).max()):.3g})")


def _same(torch: Any, a: Any, b: Any) -> bool:
    if a.dtype.is_floating_point:
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return bool(torch.equal(a, b))


class CallRecorder:
    """Records the torch functions and tensor methods a launch calls from Python (a Triton
    kernel launch itself calls none but pointer and shape queries)."""

    def __init__(self) -> None:
        from torch.overrides import TorchFunctionMode

        calls: set[str] = set()

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                calls.add(getattr(func, "__name__", None) or str(func))
                return func(*args, **(kwargs or {}))

        self.calls = calls
        self.mode = Mode()

    def __enter__(self) -> CallRecorder:
        self.mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.mode.__exit__(*exc)


def check_seed(torch: Any, device: str, spec: dict[str, Any], candidate: ModuleType,
               case: tuple[Any, ...], base_calls: set[str] | None, name: str) -> str:
    """Three launches on one seed's buffers (see Session), each compared in float64."""
    seed, args, first, want_first, fresh, want_fresh = case
    outputs, atol, rtol = spec["outputs"], spec["atol"], spec["rtol"]
    with torch.no_grad():  # the seed's own values: a case is checked again for each sweep config
        for arg, original in zip(args, first, strict=True):
            if isinstance(arg, torch.Tensor):
                arg.copy_(original)

    def launch_and_compare(originals: list[Any], want: list[Any], label: str) -> set[str]:
        prepare_outputs(torch, args, originals, spec, want)
        with CallRecorder() as recorder:
            candidate.launch(*args)
        sync_device(torch, device)
        for n, (i, expected) in enumerate(zip(outputs, want, strict=True)):
            compare(torch, args[i], expected, atol, rtol, f"{label}: output {n} (arg {i})")
        for i, (arg, original) in enumerate(zip(args, originals, strict=True)):
            if i not in outputs and isinstance(arg, torch.Tensor) and not _same(torch, arg, original):
                raise Mismatch(f"{label}: launch modified input arg {i} (inputs are read-only)")
        return recorder.calls

    ops = launch_and_compare(first, want_first, f"seed {seed}, first launch")
    # Same buffers, same values, outputs poisoned again: catches "already done" shortcuts.
    ops |= launch_and_compare(first, want_first, f"seed {seed}, second launch on the same args")
    # Same buffers (same pointers), new values: catches results cached by pointer.
    for arg, new in zip(args, fresh, strict=True):
        if isinstance(arg, torch.Tensor) and isinstance(new, torch.Tensor) and new.shape == arg.shape:
            with torch.no_grad():
                arg.copy_(new)
    ops |= launch_and_compare(fresh, want_fresh, f"seed {seed}, third launch with new inputs in "
                              "the same buffers")
    if base_calls is not None:
        # A launch that computes with torch ops the original does not use swapped in a vendor
        # library or fell back to eager: not a Triton optimization.
        extra = sorted(ops - base_calls - ALLOWED_CALLS)
        if extra:
            raise Mismatch(f"launch() computes with torch calls the original does not make: "
                           f"{', '.join(extra)} (a vendor library or an eager fallback is not a "
                           "Triton optimization)")
    return (f"ok: {name} seed {seed} on {device}, {len(outputs)} output(s) within atol "
            f"{atol:g} rtol {rtol:g}, three launches")


def output_checksum(torch: Any, args: list[Any], outputs: tuple[int, ...]) -> float:
    total = 0.0
    for i in outputs:
        total += float(args[i].detach().to(torch.float64).abs().sum())
    return total
