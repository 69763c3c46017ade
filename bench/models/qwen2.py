"""A Qwen2-style decoder (transformers' Qwen2Model, random weights from a config): four layers,
hidden 1024, 16 heads of 64 with 2 KV heads (grouped-query attention), SwiGLU MLP of 2816,
RMSNorm, rotary embeddings, QKV biases; batch 8 x 512 tokens in bf16 through SDPA. Nothing is
downloaded. Not one of examples/models: a bench model for the model-level comparison (issue
53), a family the product was not written against.
"""

from __future__ import annotations

import torch
from torch import nn

BATCH, SEQ, VOCAB = 8, 512, 32000
DTYPE = torch.bfloat16
# bf16 through four layers: as examples/models/llama_prefill.py, fixed before any run.
TOLERANCE = {"atol": 1.5e-1, "rtol": 5e-2}


class Decoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        from transformers import Qwen2Config, Qwen2Model

        config = Qwen2Config(vocab_size=VOCAB, hidden_size=1024, intermediate_size=2816,
                             num_hidden_layers=4, num_attention_heads=16, num_key_value_heads=2,
                             max_position_embeddings=2048, use_cache=False)
        config._attn_implementation = "sdpa"
        self.decoder = Qwen2Model(config)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.decoder(input_ids=input_ids, use_cache=False).last_hidden_state


def model() -> nn.Module:
    torch.manual_seed(0)
    return Decoder().to(DTYPE)


def inputs(seed: int, device: str) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    return (torch.randint(1, VOCAB, (BATCH, SEQ), generator=gen).to(device),)
