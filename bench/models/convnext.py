"""timm's ConvNeXt-Tiny (``convnext_tiny``, random weights: pretrained=False, nothing
downloaded), a batch of 64 images at 224 px in bf16, channels_last. Depthwise 7x7 convolutions
(cuDNN), LayerNorm over channels, GELU MLPs and layer scale: Inductor fuses the norms, GELU,
layer scale and residuals into Triton kernels. Not one of examples/models: a bench model for
the model-level comparison (issue 53), a CNN the product was not written against.
"""

from __future__ import annotations

import torch
from torch import nn

BATCH = 64
DTYPE = torch.bfloat16
# bf16 through four stages to 1000 logits: as examples/models/vit.py, fixed before any run.
TOLERANCE = {"atol": 8e-2, "rtol": 5e-2}


def model() -> nn.Module:
    import timm

    torch.manual_seed(0)
    return timm.create_model("convnext_tiny", pretrained=False).to(
        dtype=DTYPE, memory_format=torch.channels_last)


def inputs(seed: int, device: str) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    images = torch.randn(BATCH, 3, 224, 224, generator=gen)
    return (images.to(device=device, dtype=DTYPE).contiguous(memory_format=torch.channels_last),)
