"""Time bulk screening (Runner.sweep) on a GPU: one worker of one source variant compiles,
checks and times N knob configurations in one process (issue 10, item 4).

    python3 bench/sweep_probe.py examples/triton/softmax.py BLOCK_SIZE=1024,2048,4096,8192 \
        num_warps=1,4,8,16

Prints one JSON object: every configuration's result, the GPU-lock seconds of the load, the
check and the sweep (from the journal), and seconds per configuration.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from kernelopt_triton.plugin import TritonBackend

from kernelopt_core.journal import Journal
from kernelopt_core.runner import Runner
from kernelopt_core.settings import Settings
from kernelopt_core.target import Tree


def sweep_grid(kernel: Path, scratch: Path, axes: list[tuple[str, list[str]]] | None = None,
               batch: int | None = None, configs: list[dict[str, str]] | None = None
               ) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Every combination of ``axes`` (knob prefix, values; default: all the kernel's detected
    knobs and values), or exactly ``configs`` (full knob names, in their order, repeats
    allowed) screened by Runner.sweep in one bench worker, ``batch`` configurations
    per request (default: one request). Returns (results, GPU-lock seconds: "sweep" for the
    sweep requests, "total" with the check, both the runner's own count, as a run's
    gpu_seconds). Raises SystemExit if the kernel's own check fails."""
    tree = Tree("baseline", scratch / "tree", scratch / "build")
    tree.src.mkdir(parents=True)
    shutil.copy(kernel, tree.src / kernel.name)
    settings = Settings(state_root=scratch / "state")
    target = TritonBackend().discover(kernel, settings)[0]
    journal_path = scratch / "sweep-journal.jsonl"
    runner = Runner(TritonBackend(), target, settings, Journal(journal_path))
    if axes is None:
        axes = [(k.name, list(k.values)) for k in target.knobs]
    names = [next(k.name for k in target.knobs if k.name == axis or k.name.startswith(axis + "@"))
             for axis, _ in axes]
    if configs is None:
        configs = [dict(zip(names, combo, strict=True))
                   for combo in itertools.product(*(values for _, values in axes))]
    step = batch or len(configs)
    results: list[dict[str, Any]] = []
    try:
        failed = runner.check_all(tree, scratch / "log")
        if failed is not None:
            raise SystemExit(f"the kernel's own check failed: {failed[1].stderr[-2000:]}")
        # the runner's count, not a sum over the journal (a sweep's lock time is in both its
        # worker_request and its sweep event: summing both counted it twice)
        before = runner.gpu_seconds
        for i in range(0, len(configs), step):
            results += runner.sweep(tree, configs[i:i + step], scratch / "log") or []
        held = {"sweep": runner.gpu_seconds - before, "total": runner.gpu_seconds}
    finally:
        runner.close_workers()
    return results, held


def main() -> int:
    kernel = Path(sys.argv[1]).resolve()
    axes = [(name, values.split(",")) for name, values in (a.split("=", 1) for a in sys.argv[2:])]
    scratch = Path(tempfile.mkdtemp(prefix="kernelopt-sweep-probe-"))
    results, held = sweep_grid(kernel, scratch, axes)
    print(json.dumps({
        "kernel": kernel.name, "configs": len(results),
        "ok": sum(bool(r.get("ok")) for r in results),
        "lock_seconds": {k: round(v, 3) for k, v in held.items()},
        "sweep_seconds_per_config": round(held.get("sweep", 0.0) / max(1, len(results)), 3),
        "results": results,
    }, indent=1))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
