"""A depthwise 2-d convolution as one Triton kernel, and the op ``kernelopt::depthwise_conv2d``
that launches it (``torch.library.triton_op``). Reached through Inductor's decomposition table
(lowerings.lowered) the op stays an opaque call in the compiled code on every device — the
triton_op is inlined only where FunctionalTensorMode dispatches it, which a decomposition runs
below — so each call is a Python dispatch, the weights' copy and a Triton launch, which CUDA
graphs (reduce-overhead) capture like any other.

Why a kernel of its own: cuDNN's channels-last depthwise call ran ConvNeXt-T's 7×7 convolutions
at 231–383 GB/s on an H100 (8–13 % of its copy rate), and Inductor's own pointwise form of the
same sum (the taps as shifted slices, fused into one kernel) at 62.5–140.2 GB/s: each output element
then does its 49 masked loads with its own index arithmetic (bench/results/
2026-12-07-h100-depthwise-probe). Here a program owns a tile of ``BLOCK_H`` output rows by
``BLOCK_W`` output columns by ``BLOCK_C`` channels: each input row those output rows read is
loaded once per horizontal tap as one 2-d tile (the channels contiguous in channels-last:
vector loads) and used by every output row it is a tap of, the bounds checks once per row and
column, the sums in fp32.

The module imports torch and triton: only the processes that compile a model load it.
"""

from __future__ import annotations

from typing import Any

import attrs
import torch
import triton
import triton.language as tl


@attrs.frozen
class Config:
    """One launch of the kernel: the tile and the warps that run it."""

    block_w: int = 16  # output columns per program
    block_c: int = 64  # channels per program
    num_warps: int = 2  # (16 outputs a thread: one of search_space()'s launches)
    block_h: int = 1  # output rows per program (each input row loaded once for all of them)


def output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


@triton.jit
def _tap(acc, xv, w_ptr, c, c_ok, swc, swh, sww, r: tl.constexpr, b: tl.constexpr,
         j: tl.constexpr, KH: tl.constexpr, SH: tl.constexpr, DH: tl.constexpr):
    """``acc`` (output row b of the block) plus input row r's tile ``xv`` times its tap, where
    row r is a tap of row b: r = b·SH + i·DH for a whole i below KH (all known at compile
    time: no mask, no multiply where it is not)."""
    if r >= b * SH:
        if (r - b * SH) % DH == 0:
            if (r - b * SH) // DH < KH:
                wv = tl.load(w_ptr + c * swc + ((r - b * SH) // DH) * swh + j * sww, mask=c_ok,
                             other=0.0)
                acc += xv * wv.to(tl.float32)[None, :]
    return acc


@triton.jit
def _store(y_ptr, acc, n, oh, ow, c, c_ok, HO, WO, syn, syc, syh, syw):
    out = y_ptr + n.to(tl.int64) * syn + oh * syh + ow[:, None] * syw + c[None, :] * syc
    tl.store(out, acc.to(y_ptr.dtype.element_ty),
             mask=(oh < HO) & (ow < WO)[:, None] & c_ok[None, :])


@triton.jit
def depthwise_conv2d_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, H, W, HO, WO,
                            sxn, sxc, sxh, sxw, swc, swh, sww, syn, syc, syh, syw,
                            KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr,
                            SW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
                            DH: tl.constexpr, DW: tl.constexpr, HAS_BIAS: tl.constexpr,
                            BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr,
                            BLOCK_C: tl.constexpr):
    tl.static_assert((BLOCK_H == 1) | (BLOCK_H == 2) | (BLOCK_H == 4))
    pid = tl.program_id(0)  # (image, row block, column block), column blocks fastest
    column_blocks = tl.cdiv(WO, BLOCK_W)
    row_blocks = tl.cdiv(HO, BLOCK_H)
    rest = pid // column_blocks
    n = rest // row_blocks
    oh0 = (rest % row_blocks) * BLOCK_H
    ow = (pid % column_blocks) * BLOCK_W + tl.arange(0, BLOCK_W)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = c < C
    x_image = x_ptr + n.to(tl.int64) * sxn + c[None, :] * sxc
    # one accumulator per output row of the block (BLOCK_H of them live; the rest unused)
    acc0 = tl.zeros((BLOCK_W, BLOCK_C), dtype=tl.float32)
    acc1 = tl.zeros((BLOCK_W, BLOCK_C), dtype=tl.float32)
    acc2 = tl.zeros((BLOCK_W, BLOCK_C), dtype=tl.float32)
    acc3 = tl.zeros((BLOCK_W, BLOCK_C), dtype=tl.float32)
    # each input row the block's output rows read is loaded once per horizontal tap and used
    # by every output row it is a tap of
    for r in tl.static_range((BLOCK_H - 1) * SH + (KH - 1) * DH + 1):
        ih = oh0 * SH - PH + r
        row_ok = (ih >= 0) & (ih < H)
        for j in tl.static_range(KW):
            iw = ow * SW - PW + j * DW
            ok = (row_ok & (iw >= 0) & (iw < W))[:, None] & c_ok[None, :]
            xv = tl.load(x_image + ih * sxh + iw[:, None] * sxw, mask=ok,
                         other=0.0).to(tl.float32)
            acc0 = _tap(acc0, xv, w_ptr, c, c_ok, swc, swh, sww, r, 0, j, KH, SH, DH)
            if BLOCK_H > 1:
                acc1 = _tap(acc1, xv, w_ptr, c, c_ok, swc, swh, sww, r, 1, j, KH, SH, DH)
            if BLOCK_H > 2:
                acc2 = _tap(acc2, xv, w_ptr, c, c_ok, swc, swh, sww, r, 2, j, KH, SH, DH)
                acc3 = _tap(acc3, xv, w_ptr, c, c_ok, swc, swh, sww, r, 3, j, KH, SH, DH)
    if HAS_BIAS:
        bias = tl.load(b_ptr + c, mask=c_ok, other=0.0).to(tl.float32)[None, :]
        acc0 += bias
        acc1 += bias
        acc2 += bias
        acc3 += bias
    _store(y_ptr, acc0, n, oh0, ow, c, c_ok, HO, WO, syn, syc, syh, syw)
    if BLOCK_H > 1:
        _store(y_ptr, acc1, n, oh0 + 1, ow, c, c_ok, HO, WO, syn, syc, syh, syw)
    if BLOCK_H > 2:
        _store(y_ptr, acc2, n, oh0 + 2, ow, c, c_ok, HO, WO, syn, syc, syh, syw)
        _store(y_ptr, acc3, n, oh0 + 3, ow, c, c_ok, HO, WO, syn, syc, syh, syw)


@torch.library.triton_op("kernelopt::depthwise_conv2d", mutates_args=())
def depthwise_conv2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                     stride: list[int], padding: list[int], dilation: list[int],
                     block_w: int, block_c: int, num_warps: int,
                     block_h: int) -> torch.Tensor:
    """``F.conv2d(x, weight, bias, stride, padding, dilation, groups=channels)``, its output
    in x's memory format (channels-last in, channels-last out)."""
    return run_kernel(x, weight, bias, stride, padding, dilation,
                      Config(block_w, block_c, num_warps, block_h))


def run_kernel(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any,
               config: Config) -> Any:
    """The op's body: the output allocated, the kernel launched with ``config``."""
    args, constants, grid = kernel_call(x, weight, bias, stride, padding, dilation, config)
    torch.library.wrap_triton(depthwise_conv2d_kernel)[grid](*args, **constants)
    return args[3]


def kernel_call(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any,
                config: Config) -> tuple[tuple[Any, ...], dict[str, Any], tuple[int, int]]:
    """One call's arguments (its output allocated in x's memory format, the taps copied),
    keywords (the constants and warps) and grid: the launch, and on tensors of the meta
    device the compile alone (depthwise_compile.py)."""
    n, c, h, w = x.shape
    kh, kw = weight.shape[-2:]
    ho = output_size(h, kh, stride[0], padding[0], dilation[0])
    wo = output_size(w, kw, stride[1], padding[1], dilation[1])
    channels_last = x.is_contiguous(memory_format=torch.channels_last)
    y = torch.empty((n, c, ho, wo), device=x.device, dtype=x.dtype, memory_format=(
        torch.channels_last if channels_last else torch.contiguous_format))
    grid = (n * triton.cdiv(ho, config.block_h) * triton.cdiv(wo, config.block_w),
            triton.cdiv(c, config.block_c))
    # the taps channels-last too ([KH, KW, C], a copy of KH·KW·C values): a tap's weights are
    # then one vector load beside the input tile's, in its layout
    taps = weight.permute(1, 2, 3, 0).reshape(kh, kw, c).contiguous()
    args = (x, taps, taps if bias is None else bias.contiguous(), y, c, h, w, ho, wo,
            *x.stride(), taps.stride(2), taps.stride(0), taps.stride(1), *y.stride())
    constants = dict(KH=kh, KW=kw, SH=stride[0], SW=stride[1], PH=padding[0], PW=padding[1],
                     DH=dilation[0], DW=dilation[1], HAS_BIAS=bias is not None,
                     BLOCK_H=config.block_h, BLOCK_W=config.block_w, BLOCK_C=config.block_c,
                     num_warps=config.num_warps)
    return args, constants, grid


@depthwise_conv2d.register_kernel("cpu")
def _on_the_cpu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                stride: list[int], padding: list[int], dilation: list[int],
                block_w: int, block_c: int, num_warps: int, block_h: int) -> torch.Tensor:
    # no Triton driver on a CPU: the library's (run_kernel under TRITON_INTERPRET=1 runs the
    # kernel itself there: the tests)
    return torch.nn.functional.conv2d(x, weight, bias, stride, padding, dilation, x.shape[1])


def takes(x: Any) -> bool:
    """An input the kernel is for: channels-last, fp16/bf16/fp32 (its sums are fp32: an fp64
    convolution keeps the library's), each image's offsets within int32."""
    return (bool(x.is_contiguous(memory_format=torch.channels_last))
            and x.dtype in (torch.float16, torch.bfloat16, torch.float32)
            and x.shape[1] * x.shape[2] * x.shape[3] < 2**31)


def interpreted() -> bool:
    """Triton's interpreter (CPU runs): the op's traced (fake) run would execute the
    interpreted kernel on tensors that have no data, and the compile fails."""
    import os

    return os.environ.get("TRITON_INTERPRET") == "1"


class DepthwiseConv2d(torch.nn.Conv2d):
    """A depthwise ``nn.Conv2d`` whose calls run the op (lowerings.swap_depthwise sets a
    module's class to it): for inputs ``takes`` on ``device_types``, outside autocast, with no
    gradient to keep, whose shape has a launch (``launches[shape_key(...)]``: a shape the
    kernel was chosen for); any other input as nn.Conv2d (the library's call). Called from a
    module's forward, a compile inlines the op (the kernel in its own code). A class,
    not a patched forward: a copy or a pickle of the model keeps it."""

    launches: dict[str, Config]
    device_types: tuple[str, ...]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (x.device.type not in self.device_types or not takes(x) or interpreted()
                or torch.is_autocast_enabled(x.device.type)  # the library's casts: not timed
                or (torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad))):
            return self._conv_forward(x, self.weight, self.bias)  # the op has no backward
        config = self.launches.get(shape_key(x.shape, self.weight.shape, self.stride,
                                             self.padding, self.dilation))
        if config is None:  # a shape the library keeps (the kernel lost there, or untried)
            return self._conv_forward(x, self.weight, self.bias)
        return launch(x, self.weight, self.bias, self.stride, self.padding, self.dilation, config)


def launch(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any,
           config: Config) -> Any:
    """The op with ``config``'s launch."""
    return depthwise_conv2d(x, weight, bias, list(stride), list(padding), list(dilation),
                            config.block_w, config.block_c, config.num_warps, config.block_h)


def search_space() -> list[Config]:
    """The launches the probe tries per shape: 16 outputs a thread (19)."""
    return [Config(bw, bc, nw, bh) for bh in (1, 2, 4) for bw in (8, 16, 32)
            for bc in (32, 64, 128) for nw in (2, 4, 8) if bh * bw * bc // (32 * nw) == 16]


def shape_key(x_shape: Any, weight_shape: Any, stride: Any, padding: Any,
              dilation: Any) -> str:
    """One convolution's name for its config: ``64x96x56x56/7x7/s1x1/p3x3/d1x1``."""
    def dims(v: Any) -> str:
        return "x".join(str(int(d)) for d in v)

    return (f"{dims(x_shape)}/{dims(weight_shape[-2:])}/s{dims(stride)}/p{dims(padding)}"
            f"/d{dims(dilation)}")
