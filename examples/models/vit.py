"""A ViT-Base/16 at 224 px (timm's ``vit_base_patch16_224``, random weights: pretrained=False,
nothing downloaded), a batch of 64 images in bf16.

The patch embedding is a cuDNN convolution, the projections cuBLAS GEMMs and attention SDPA
(library rows in the ranking); LayerNorm, GELU, bias adds, residuals and the layer-scale-free
residual stream become Inductor Triton kernels. A model file for kernelopt-triton
(docs/triton-models.md).
"""

from __future__ import annotations

import torch
from torch import nn

BATCH = 64
DTYPE = torch.bfloat16
# bf16 (eps 7.8e-3) through twelve blocks to the 1000 logits: fixed before any run.
TOLERANCE = {"atol": 8e-2, "rtol": 5e-2}


def model() -> nn.Module:
    import timm

    torch.manual_seed(0)
    return timm.create_model("vit_base_patch16_224", pretrained=False).to(DTYPE)


def inputs(seed: int, device: str) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(BATCH, 3, 224, 224, generator=gen).to(device=device, dtype=DTYPE),)
