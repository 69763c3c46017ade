"""Library calls a torch.compile'd model makes, written instead as code Inductor generates.

A depthwise convolution (one filter per channel: ``groups`` = channels) goes to cuDNN under
the default compile and reduce-overhead (max-autotune may also try its own convolution
template); on ConvNeXt-T (bf16, batch 64, channels_last, an H100 on 2026-12-07) that
call, ``conv2d_c1_k1_nhwc_specialized``, was 29.4 % of the step's device time: 1240.7 µs for 18 calls moving
about 549 MB, about 0.44 TB/s, 15 % of the 3018 GB/s copy rate the roofline gate measured there
(bench/results/2026-12-07-h100-modes-convnext-llama, the runs' ranking). Written as the sum of
its kernel's taps — each tap a shifted, strided slice of the padded input times that tap's
weight per channel, summed in fp32 — it is pointwise work Inductor fuses into one generated
kernel per convolution (the padding into masked loads), which the built-in tuner can then tune
as any other.

``depthwise_taps`` is that form; ``lowered()`` puts it in Inductor's decomposition table for the
compiles inside it (the AOT cache off there: its key leaves the table out, so a graph cached by
a compile without it would come back; the FX graph cache, keyed after decomposition, too, as
the reduction forms' second compile does). Measured first, not yet raced: the
probe (bench/depthwise_probe.py) times both forms alone and in the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kernelopt_triton.compile_mode import caches_off


def is_depthwise(x: Any, weight: Any, transposed: bool, groups: int) -> bool:
    """A 2-d convolution with one filter of one input channel per channel."""
    return (not transposed and x.dim() == 4 and weight.dim() == 4 and groups > 1
            and x.shape[1] == groups and weight.shape[0] == groups and weight.shape[1] == 1)


def depthwise_taps(x: Any, weight: Any, bias: Any, stride: tuple[int, int],
                   padding: tuple[int, int], dilation: tuple[int, int]) -> Any:
    """``conv2d(x, weight, bias, stride, padding, dilation, groups=channels)`` as the sum of
    its kh×kw taps, accumulated in fp32 (as cuDNN accumulates a bf16 convolution; fp64 in
    fp64)."""
    import torch
    import torch.nn.functional as F

    n, c, h, w = x.shape
    kh, kw = weight.shape[-2:]
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    padded = F.pad(x, (pw, pw, ph, ph))
    wide = torch.promote_types(x.dtype, torch.float32)
    taps = weight.to(wide).reshape(c, kh, kw)
    out: Any = 0 if bias is None else bias.to(wide).reshape(1, c, 1, 1)
    for i in range(kh):
        for j in range(kw):
            window = padded[:, :, i * dh: i * dh + sh * (ho - 1) + 1: sh,
                            j * dw: j * dw + sw * (wo - 1) + 1: sw]
            out = out + window.to(wide) * taps[:, i, j].reshape(1, c, 1, 1)
    return out.to(x.dtype)


def _convolution(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any,
                 transposed: bool, output_padding: Any, groups: int) -> Any:
    """aten.convolution's decomposition: the depthwise ones as taps, the rest as before."""
    if not is_depthwise(x, weight, transposed, groups) or len(stride) != 2:
        return NotImplemented  # Inductor lowers it as it would have
    return depthwise_taps(x, weight, bias, tuple(stride), tuple(padding), tuple(dilation))


@contextmanager
def lowered() -> Iterator[None]:
    """Compiles inside it write depthwise convolutions as taps (module docstring)."""
    import torch
    from torch._inductor import decomposition

    op = torch.ops.aten.convolution.default
    # Inductor reads `decompositions` itself (config.fallback_random) or a copy built once per
    # process (fast_random_decomps, functools.cache; select_decomp_table may filter it anew):
    # both get the entry, and lose it again. Built here first, the copy is built clean.
    tables = {id(t): t for t in (decomposition.decompositions,
                                 decomposition.fast_random_decomps())}.values()
    before = [(table, table.get(op)) for table in tables]
    for table, _ in before:
        table[op] = _convolution
    try:
        with caches_off():
            yield
    finally:
        for table, entry in before:
            if entry is None:
                table.pop(op, None)
            else:
                table[op] = entry
