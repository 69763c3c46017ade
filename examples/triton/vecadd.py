"""Elementwise sum of two f32 vectors: out = x + y.

A kernel file for kernelopt's triton backend (docs/triton.md). The default block is tiny (64
elements, one warp), so the GPU runs a million tiny programs; the tuner's BLOCK_SIZE and
num_warps knobs find 1024-4096 elements with 4-8 warps. The grid is computed from the block
size the launch passes (meta["BLOCK_SIZE"]), and the tail is masked, so every block is correct.

KERNELOPT_SMALL=1 shrinks the problem so Triton's interpreter runs it on a CPU in seconds.
"""

import os

import torch
import triton
import triton.language as tl

SMALL = os.environ.get("KERNELOPT_SMALL") == "1"
N = 1000 if SMALL else 1 << 26
SHAPE = f"f32[{N}]"
BYTES = 3 * N * 4  # read x and y, write out
TOLERANCE = {"atol": 0.0, "rtol": 1e-6}
OUTPUTS = (2,)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def make_args(seed: int, device: str) -> list:
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(N, generator=gen).to(device)
    y = torch.randn(N, generator=gen).to(device)
    return [x, y, torch.empty(N, device=device)]


def launch(x, y, out) -> None:
    n = out.numel()
    add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n, BLOCK_SIZE=64,
                                                                   num_warps=1)


def reference(x, y, out) -> list:
    return [x.double() + y.double()]
