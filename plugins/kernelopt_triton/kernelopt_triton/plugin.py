"""The kernelopt-triton plugin's hooks, what the ``kernelopt`` entry point registers: the
``triton`` backend (backend.py), the ``inductor`` backend (models.py), the ``[triton]`` option
table (options.py) and the planner's strategies. Imports only the core and the standard library:
torch and triton are imported by the child processes, never here, so ``kernelopt --help`` stays
fast."""

from __future__ import annotations

from kernelopt_core.api import hookimpl
from kernelopt_triton.backend import TritonBackend
from kernelopt_triton.options import TritonOptions


@hookimpl
def kernelopt_register_backends() -> list[object]:
    # models (and the Inductor parser it imports) only when backends are asked for, not on
    # every kernelopt start
    from kernelopt_triton.models import backends

    return [TritonBackend(), *backends()]


@hookimpl
def kernelopt_option_tables() -> list[type]:
    return [TritonOptions]


STRATEGIES = """Strategies that often pay off in Triton kernels:
- BLOCK sizes that cover a whole row (triton.next_power_of_2) for row-wise reductions, so the
  row is read once; masks keep any block size correct;
- num_warps matched to the block (4-16 for blocks of thousands of elements), num_stages 2-4
  for loops that stream tiles;
- fuse passes: one read of the input where the original reads it two or three times;
- accumulate in float32 even for fp16/bf16 inputs; keep loads coalesced along the last dim;
- for matmul-like kernels: grouped program ordering (GROUP_SIZE_M) for L2 reuse, tl.dot
  tiles of 64-256, and @triton.autotune over a few configs."""


@hookimpl
def kernelopt_prompt_fragments(backend: str, role: str) -> list[str]:
    return [STRATEGIES] if backend == "triton" and role == "planner" else []
