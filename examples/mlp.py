"""An MLP block for torch.compile: layernorm -> linear -> gelu -> linear -> residual -> layernorm.

Batch 8192 x 4096 fp16 with a 4x hidden layer. The matmuls go to cuBLAS (extern kernels); Inductor
fuses the layernorms, the bias+gelu epilogue and the residual add into Triton kernels
(`triton_poi_*`, `triton_red_*`/`triton_per_*`), each tens of microseconds on an H200. A model
file for kernelopt-triton (docs/triton-models.md): `model()`, `inputs(seed, device)`, `TOLERANCE`.
"""

from __future__ import annotations

import torch
from torch import nn

BATCH, DIM, HIDDEN = 8192, 4096, 4 * 4096
DTYPE = torch.float16
# Two fp16 matmuls over 4096/16384 terms: errors of ~1e-2 relative are normal between kernels.
TOLERANCE = {"atol": 2e-2, "rtol": 2e-2}


class MLP(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.norm_in = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)
        self.norm_out = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.gelu(self.up(self.norm_in(x)))
        return self.norm_out(x + self.down(h))


def model() -> nn.Module:
    torch.manual_seed(0)  # fixed weights: every process builds the same model
    mlp = MLP(DIM, HIDDEN)
    with torch.no_grad():
        for norm in (mlp.norm_in, mlp.norm_out):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.1, 0.1)
    return mlp.to(DTYPE)


def inputs(seed: int, device: str) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(BATCH, DIM, generator=gen).to(device=device, dtype=DTYPE),)
