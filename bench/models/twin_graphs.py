"""Two graphs with the same kernel in each: a graph break between two identical gates
(sigmoid(x) * 2 + 1 over bf16 [8192, 4096]), so Inductor emits one kernel per graph with the
same @triton.jit code. A bench model for the engine under CUDA-graph modes (issue 53): each
version's compile must compile both graphs again, and the kernel swapped must be the one
wanted (the second graph's), never its twin.
"""

from __future__ import annotations

import torch
from torch import nn

ROWS, COLS = 8192, 4096
DTYPE = torch.bfloat16
TOLERANCE = {"atol": 2e-2, "rtol": 2e-2}  # bf16 pointwise, fixed before any run


class TwinGates(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.sigmoid(x) * 2.0 + 1.0
        torch._dynamo.graph_break()
        return torch.sigmoid(y) * 2.0 + 1.0


def model() -> nn.Module:
    return TwinGates()


def inputs(seed: int, device: str) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator(device=device).manual_seed(seed)
    return (torch.randn(ROWS, COLS, generator=gen, device=device).to(DTYPE),)
