"""Layer normalization of the rows of an f16 matrix, with f16 weight and bias.

y = (x - mean(x)) / sqrt(var(x) + eps) * w + b, statistics in f32.

A kernel file for kernelopt's triton backend (docs/triton.md). The defaults are poor on
purpose: one warp per row, 256 columns at a time, over three passes (mean, variance,
normalize), each reading the row again. The tuner's knobs (BLOCK_SIZE, num_warps) find a block
covering the whole row with 8-16 warps, so the later passes hit the cache. Every block size is
correct: all loads and stores are masked.

KERNELOPT_SMALL=1 shrinks the problem so Triton's interpreter runs it on a CPU in seconds.
"""

import os

import torch
import triton
import triton.language as tl

SMALL = os.environ.get("KERNELOPT_SMALL") == "1"
ROWS, COLS = (3, 300) if SMALL else (8192, 8192)
EPS = 1e-5
SHAPE = f"f16[{ROWS},{COLS}]"
BYTES = 2 * ROWS * COLS * 2 + 2 * COLS * 2  # x in, y out, weight and bias once
TOLERANCE = {"atol": 4e-3, "rtol": 4e-3}
OUTPUTS = (3,)


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, stride, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in tl.range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in tl.range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        d = tl.where(cols < n_cols, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in tl.range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, ((x - mean) * rstd * w + b).to(tl.float16), mask=mask)


def make_args(seed: int, device: str) -> list:
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = (torch.randn(ROWS, COLS, generator=gen) * 2.0 + 0.5).to(torch.float16).to(device)
    w = (1.0 + 0.1 * torch.randn(COLS, generator=gen)).to(torch.float16).to(device)
    b = (0.1 * torch.randn(COLS, generator=gen)).to(torch.float16).to(device)
    y = torch.empty(ROWS, COLS, dtype=torch.float16, device=device)
    return [x, w, b, y]


def launch(x, w, b, y) -> None:
    layernorm_kernel[(x.shape[0],)](x, w, b, y, x.shape[1], x.stride(0), EPS, BLOCK_SIZE=256,
                                    num_warps=1)


def reference(x, w, b, y) -> list:
    x = x.double()
    mean = x.mean(dim=1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=1, keepdim=True)
    return [(x - mean) / torch.sqrt(var + EPS) * w.double() + b.double()]
