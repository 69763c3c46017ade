"""timm's MobileNetV3-Large (``mobilenetv3_large_100``, random weights: pretrained=False,
nothing downloaded), a batch of 128 images at 224 px in bf16, channels_last. Its depthwise
convolutions are 3×3 and 5×5, stride 1 and 2 (ConvNeXt's are all 7×7, stride 1), between
1×1 convolutions, batch norms, hard-swish and squeeze-excite. Not one of examples/models: a
bench model for the depthwise kernel's probe (issue 53), a second architecture the kernel was
not written against.
"""

from __future__ import annotations

import torch
from torch import nn

BATCH = 128
DTYPE = torch.bfloat16
# bf16 through 15 blocks to 1000 logits, batch norm in eval: as bench/models/convnext.py,
# fixed before any run.
TOLERANCE = {"atol": 8e-2, "rtol": 5e-2}


def model() -> nn.Module:
    import timm

    torch.manual_seed(0)
    return timm.create_model("mobilenetv3_large_100", pretrained=False).to(
        dtype=DTYPE, memory_format=torch.channels_last)


def inputs(seed: int, device: str) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    images = torch.randn(BATCH, 3, 224, 224, generator=gen)
    return (images.to(device=device, dtype=DTYPE).contiguous(memory_format=torch.channels_last),)
