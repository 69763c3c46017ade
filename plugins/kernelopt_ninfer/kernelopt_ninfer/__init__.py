"""kernelopt backend for NInfer ops: contract → wrapper → launcher → kernel (docs/ninfer.md)."""
