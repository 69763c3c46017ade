"""A model's outputs compared: the engine's and the model check's (float64, every output)."""

from __future__ import annotations

from typing import Any


def flatten_outputs(out: Any) -> list[Any]:
    """Tensors of a model's output (tensor, tuple/list, dict), in a fixed order, on the CPU."""
    import torch

    if isinstance(out, torch.Tensor):
        return [out.detach().cpu()]
    if isinstance(out, dict):
        return [t for k in sorted(out) for t in flatten_outputs(out[k])]
    if isinstance(out, (list, tuple)):
        return [t for item in out for t in flatten_outputs(item)]
    return []


def compare(outputs: list[Any], reference: list[Any], atol: float, rtol: float) -> tuple[bool, str]:
    """Element-wise |a - b| <= atol + rtol |b| in float64, every output; NaN never matches."""
    if len(outputs) != len(reference):
        return False, f"{len(outputs)} outputs, reference has {len(reference)}"
    worst_abs = worst_rel = 0.0
    ok = True
    for got, want in zip(outputs, reference, strict=True):
        if got.shape != want.shape:
            return False, f"shape {tuple(got.shape)} != reference {tuple(want.shape)}"
        a, b = got.double(), want.double()
        diff = (a - b).abs()
        if diff.numel():
            worst_abs = max(worst_abs, float(diff.max()))
            worst_rel = max(worst_rel, float((diff / b.abs().clamp_min(1e-12)).max()))
            ok = ok and bool((diff <= atol + rtol * b.abs()).all()) and not bool(a.isnan().any())
    return ok, f"max abs err {worst_abs:.3g}, max rel err {worst_rel:.3g} (atol {atol:g}, rtol {rtol:g})"
