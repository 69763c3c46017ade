"""A kernel file whose launch() keeps device memory on every call (docs/faults.md, "a leak per
call").

In a persistent bench worker a leak is not freed by a process ending: it accumulates over the
requests until the device runs out, and meanwhile every reading is taken on a device with less
memory. So each reading probes it, outside the timed window: two runs of PROBE_CALLS calls on
the same arguments, torch's count of live device bytes (``memory_allocated``, exact: it counts
tensors, not the allocator's cache) taken before, between and after. A leak is growth in
BOTH runs: a one-time allocation (a workspace made once, on whichever call) grows one run at
most, and an honest launch() grows neither, so the probe does not depend on timing.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from kernelopt_triton.loading import ConventionError

PROBE_CALLS = 3


def leaked_per_call(counts: tuple[int, int, int], calls: int = PROBE_CALLS) -> int | None:
    """Bytes kept per call when both runs of ``calls`` calls grew, else None."""
    start, middle, end = counts
    if middle > start and end > middle:
        return (end - start) // (2 * calls)
    return None


def probe(torch: Any, call: Callable[[], None]) -> None:
    """Raise ConventionError when ``call`` (one launch on the bench's arguments) leaks device
    memory; nothing on a CPU (no device count to read)."""
    if not torch.cuda.is_available():
        return
    counts = []
    for run in range(3):
        if run:
            for _ in range(PROBE_CALLS):
                call()
        torch.cuda.synchronize()
        gc.collect()  # tensors held only by a reference cycle are garbage, not a leak
        counts.append(int(torch.cuda.memory_allocated()))
    per_call = leaked_per_call((counts[0], counts[1], counts[2]))
    if per_call is not None:
        raise ConventionError(
            f"launch() leaks {per_call} bytes of device memory per call (live device memory "
            f"{counts[0]} -> {counts[1]} -> {counts[2]} bytes over two runs of {PROBE_CALLS} "
            f"calls): a persistent worker would run out of memory")
