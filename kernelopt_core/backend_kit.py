"""What a CUDA backend asks of the machine: nvcc and its CUDA release, the GPUs and their
architecture. One set of probes for every backend (exported by ``kernelopt_core.api``), each
spawning through the core's one process runner, none raising: a machine without CUDA answers
None, an empty list or ``native``, and the backend decides what that means for its tree.
And a bench's pin file: the case every run of a target times, chosen once; and which kernels a
CUDA/HIP source defines (a backend's ``kernel_names``: the profile tells them from the rest).
The GPU slots (``nvidia-smi -L``: ``listed_gpus``, ``visible_gpus``) are the executors'.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import process
from kernelopt_core.target import Command

# where the CUDA toolkit installs itself when its bin/ is not on PATH
NVCC_FALLBACKS = ("/usr/local/cuda/bin/nvcc",)


@attrs.frozen
class Nvcc:
    """An nvcc found here: its path and the CUDA release it reports."""

    path: str
    release: str  # "13.0"
    text: str  # the version line as printed: "Cuda compilation tools, release 13.0, V13.0.88"


@attrs.frozen
class CudaGpu:
    """A GPU ``nvidia-smi`` lists: its name and compute capability."""

    name: str  # "NVIDIA H200"
    compute_cap: str  # "9.0"

    @property
    def arch(self) -> str:
        """The CMAKE_CUDA_ARCHITECTURES spelling: 9.0 → 90."""
        return self.compute_cap.replace(".", "")


def find_nvcc() -> str | None:
    """nvcc's path: on PATH, else the toolkit's default place; None when neither has one."""
    return shutil.which("nvcc") or next((p for p in NVCC_FALLBACKS if os.access(p, os.X_OK)), None)


def nvcc_version(path: str) -> Nvcc | None:
    """The CUDA release the nvcc at ``path`` reports (``nvcc --version``), or None when it does
    not run or prints no release."""
    result = process.run(Command((path, "--version"), Path.cwd(), timeout_s=60))
    found = re.search(r"release\s+([0-9]+\.[0-9]+)[^\n]*", result.stdout)
    if not result.ok or found is None:
        return None
    return Nvcc(path, found.group(1), found.group(0).strip())


def cuda_gpus() -> list[CudaGpu]:
    """The GPUs ``nvidia-smi`` lists with their compute capability, in its order; none when
    it is missing or fails."""
    result = process.run(Command(("nvidia-smi", "--query-gpu=name,compute_cap",
                                  "--format=csv,noheader"), Path.cwd(), timeout_s=60))
    gpus = []
    for line in result.stdout.splitlines() if result.ok else ():
        name, _, cap = line.rpartition(",")
        if re.fullmatch(r"\s*\d+\.\d+\s*", cap):
            gpus.append(CudaGpu(name.strip(), cap.strip()))
    return gpus


def gpu_arch() -> str:
    """The first GPU's architecture for CMAKE_CUDA_ARCHITECTURES (``90``), else ``native``
    (CMake's own probe, at configure time)."""
    gpus = cuda_gpus()
    return gpus[0].arch if gpus else "native"


def read_pin(path: Path, op: str) -> dict[str, Any] | None:
    """The pin file at ``path`` (a JSON object: the case chosen and how) when it is ``op``'s;
    None when it is missing, unreadable or another op's, so the baseline's run pins again.
    Whether a pin still answers this run's question is the backend's rule."""
    try:
        pin = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return pin if isinstance(pin, dict) and pin.get("op") == op else None


def write_pin(path: Path, pin: dict[str, Any]) -> None:
    """Save ``pin`` (with its ``op``) where every later run, baseline's and candidates', reads it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(pin, indent=1))


# CUDA/HIP: __global__ [void] [__launch_bounds__(...)] [void] NAME [<...>] (
CUDA_KERNEL_DEFINITION = re.compile(
    r"__global__(?:\s+(?:void|static|inline|extern|\"C\"|__launch_bounds__\s*\([^)]*\)))*"
    r"\s+(\w+)\s*(?:<[^>(]*>)?\s*\(")


def cuda_kernel_names(files: dict[str, bytes]) -> dict[str, str]:
    """The ``__global__`` functions the CUDA/HIP files define: kernel name -> the file (the
    first, in path order, that defines it)."""
    names: dict[str, str] = {}
    for path, data in sorted(files.items()):
        for name in CUDA_KERNEL_DEFINITION.findall(data.decode("utf-8", errors="replace")):
            names.setdefault(name, path)
    return names
