"""kernelopt backend for Triton kernels: standalone kernel files (docs/triton.md) and
torch.compile models."""

__version__ = "0.1.0"
