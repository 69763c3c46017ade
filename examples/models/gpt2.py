"""GPT-2 small (transformers' GPT2Model with its default config: 12 layers, 768 wide, 12
heads), random weights, batch 8 x 512 tokens in fp16 through SDPA. Nothing is downloaded.

LayerNorm, GELU (tanh), bias adds and residuals become Inductor Triton kernels; the Conv1D
projections are cuBLAS GEMMs and attention is SDPA (library rows in the ranking). A model file
for kernelopt-triton (docs/triton-models.md).
"""

from __future__ import annotations

import torch
from torch import nn

BATCH, SEQ = 8, 512
DTYPE = torch.float16
# fp16 (eps 9.8e-4) through twelve layers: fixed before any run.
TOLERANCE = {"atol": 3e-2, "rtol": 3e-2}


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        from transformers import GPT2Config, GPT2Model

        config = GPT2Config(use_cache=False)
        config._attn_implementation = "sdpa"
        self.gpt2 = GPT2Model(config)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.gpt2(input_ids=input_ids, use_cache=False).last_hidden_state


def model() -> nn.Module:
    torch.manual_seed(0)
    return Encoder().to(DTYPE)


def inputs(seed: int, device: str) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    return (torch.randint(1, 50257, (BATCH, SEQ), generator=gen).to(device),)
