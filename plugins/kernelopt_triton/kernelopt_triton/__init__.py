"""kernelopt backend for Triton kernels: standalone kernel files (docs/triton.md) and
torch.compile models; ``optimized(model, check)`` hands back the model a model check chose
(docs/triton-models.md)."""

from kernelopt_triton.optimized_model import CheckError, NotApplied, OptimizedModel, optimized

__all__ = ["CheckError", "NotApplied", "OptimizedModel", "optimized"]
__version__ = "0.1.0"
