"""Where do slow bench readings come from? (issue 10: readings 5-17 % slow in some sessions)

One process, one kernel file, the harness's own Session and Timer: N readings taken back to
back (or with a host gap between them), each with its per-window times, the cushion, the
synchronize's fixed cost and wall timestamps, so a slow reading can be lined up with an
nvidia-smi clock/power log taken at the same time.

    python3 bench/level_probe.py KERNEL.py --readings 300 --gap-ms 0 > probe.jsonl

Also times the phases of a worker's ``load`` and ``check`` (make_args, the reference, the
candidate's first launch) — where the GPU-lock seconds of a candidate go.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def probe(path: Path, readings: int, gap_ms: float) -> None:
    from kernelopt_triton import harness

    session = harness.Session(path, None, (), (11, 12))
    timer = session.timer
    original_time = timer.time
    captured: dict[str, Any] = {}

    def timed(prepare: Any, launch: Any, iters: int) -> tuple[list[float], dict[str, Any]]:
        times, info = original_time(prepare, launch, iters)
        captured["windows"] = [round(t, 5) for t in times]
        return times, info

    timer.time = timed  # type: ignore[method-assign]
    for n in range(readings):
        t0 = time.time()
        reading = session.bench()
        t1 = time.time()
        print(json.dumps({"n": n, "t0": t0, "t1": t1, "ms": reading["time_ms"],
                          "on_stream": reading.get("on_stream_ms"),
                          "synced": reading.get("synced_ms"),
                          "fixed": reading.get("sync_fixed_ms"),
                          "cushion": reading.get("cushion_ms"), "iters": reading["iters"],
                          "cycles_per_ms": getattr(timer, "cycles_per_ms", None),
                          "windows": captured.get("windows")}), flush=True)
        if gap_ms:
            time.sleep(gap_ms / 1e3)


def load_profile(path: Path, seeds: tuple[int, ...]) -> None:
    """The pieces of Session(...) and check() on their own clocks (synchronized)."""
    from kernelopt_triton import harness
    from kernelopt_triton.contract import contract
    from kernelopt_triton.harness_device import setup_device
    from kernelopt_triton.harness_inputs import make_args
    from kernelopt_triton.loading import load

    torch, device, _ = setup_device()

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    phases: dict[str, float] = {}

    def clock(name: str, fn: Any) -> Any:
        sync()
        t0 = time.perf_counter()
        value = fn()
        sync()
        phases[name] = phases.get(name, 0.0) + time.perf_counter() - t0
        return value

    module = clock("import kernel file", lambda: load(path, "oracle"))
    spec = contract(module, path)
    for seed in seeds:
        args = clock("make_args", lambda s=seed: make_args(torch, spec, s, device))
        clock("reference", lambda a=args: spec["reference"](*a))
    session = clock("Session(load) total", lambda: harness.Session(path, None, seeds, (11, 12)))
    clock("check (first: compiles)", session.check)
    clock("check (again)", session.check)
    clock("bench (first)", session.bench)
    clock("bench (again)", session.bench)
    print(json.dumps({"load_profile": str(path), "seeds": list(seeds),
                      "make_args_calls_in_load": 2 * len(seeds) + 2 + 1,
                      "seconds": {k: round(v, 3) for k, v in phases.items()}}), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kernel", type=Path)
    parser.add_argument("--readings", type=int, default=0)
    parser.add_argument("--gap-ms", type=float, default=0.0)
    parser.add_argument("--load-profile", action="store_true")
    args = parser.parse_args()
    if args.load_profile:
        load_profile(args.kernel.resolve(), (1, 2, 3))
    if args.readings:
        probe(args.kernel.resolve(), args.readings, args.gap_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
