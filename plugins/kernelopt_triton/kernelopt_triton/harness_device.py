"""The harness's device: torch imported, the GPU or (without one) Triton's interpreter on the
CPU, and exit 3 when torch or triton is missing (harness.py's child process)."""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

EXIT_PREREQUISITE = 3


def _fail_prerequisite(missing: str) -> None:
    print(f"kernelopt-triton: {missing} is not installed in {sys.executable}; install it with "
          f"`{sys.executable} -m pip install torch triton` (a CPU torch is enough: kernels then "
          "run under Triton's interpreter)", file=sys.stderr)
    raise SystemExit(EXIT_PREREQUISITE)


def setup_device() -> tuple[Any, str, bool]:
    """Import torch, pick the device and, without a GPU, switch triton to its interpreter."""
    if importlib.util.find_spec("torch") is None:
        _fail_prerequisite("torch")
    import torch

    interpreted = os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available()
    if interpreted:
        os.environ["TRITON_INTERPRET"] = "1"  # must precede `import triton`
    if importlib.util.find_spec("triton") is None:
        _fail_prerequisite("triton")
    if interpreted:
        from kernelopt_triton.interpreter import patch_interpreter  # one patch, one marker

        patch_interpreter()
    return torch, ("cpu" if interpreted else "cuda"), interpreted


def sync_device(torch: Any, device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()
