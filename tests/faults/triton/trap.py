# kind: trap
# expect: correctness
# reason: CUDA error
# A trap instruction in device code (inline PTX `trap;`, what a failed device assert
# compiles to): the launch fails (`unspecified launch failure`), sticky for the context.
"""Fault: trap (a replacement for examples/triton/softmax.py).

Row softmax of an f32 matrix: y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)).

A kernel file for kernelopt's triton backend (docs/triton.md). The defaults are poor on
purpose: one warp walks each row 128 columns at a time, twice (an online max/sum pass, then a
normalizing pass). The tuner's knobs (BLOCK_SIZE, num_warps) find the fast configuration: a
block covering the whole row with 8-16 warps. Every block size is correct: all loads are masked.

KERNELOPT_SMALL=1 shrinks the problem so Triton's interpreter runs it on a CPU in seconds.
"""

import os

import torch
import triton
import triton.language as tl

SMALL = os.environ.get("KERNELOPT_SMALL") == "1"
ROWS, COLS = (4, 300) if SMALL else (8192, 8192)
SHAPE = f"f32[{ROWS},{COLS}]"
BYTES = 2 * ROWS * COLS * 4  # read x once, write y once
TOLERANCE = {"atol": 1e-9, "rtol": 1e-4}
OUTPUTS = (1,)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    # pass 1: running max and running sum of exp, one block at a time
    m = tl.max(tl.full([BLOCK_SIZE], float("-inf"), tl.float32), axis=0)
    s = tl.sum(tl.zeros([BLOCK_SIZE], tl.float32), axis=0)
    for start in tl.range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        cols = tl.inline_asm_elementwise("trap;\n\tmov.b32 $0, $1;", "=r,r", [cols],
                                         dtype=tl.int32, is_pure=False, pack=1)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    # pass 2: normalize
    for start in tl.range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf"))
        tl.store(y_row + cols, tl.exp(x - m) / s, mask=mask)


def make_args(seed: int, device: str) -> list:
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = (torch.randn(ROWS, COLS, generator=gen) * 4.0).to(device)
    y = torch.empty(ROWS, COLS, device=device)
    return [x, y]


def launch(x, y) -> None:
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0),
                                  BLOCK_SIZE=4096, num_warps=1)


def reference(x, y) -> list:
    return [torch.softmax(x.double(), dim=1)]
