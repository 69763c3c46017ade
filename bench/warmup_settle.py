"""After-idle warm-up on the GPU: the clock ramp launch by launch, and readings taken after the
settle warm-up (kernelopt_triton.timing.settled, 20..200 ms) against readings after the fixed
200 ms warm-up it replaced, interleaved A-B-B-A (three times) with 1.5 s of idle before each.

    python3 bench/warmup_settle.py examples/triton/softmax.py ... > warmup.jsonl

One JSON line per kernel: the ramp (per-launch device ms for 300 ms after 2 s idle, and when
it came within 1 % of its final median), each reading's time and warm-up length per policy,
and the medians' ratio."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from kernelopt_triton import harness, harness_session

SETTLE, FIXED = (20.0, 200.0), (200.0, 200.0)


def ramp(session: harness.Session) -> dict[str, object]:
    torch, launch = session.torch, session.candidate.launch
    time.sleep(2.0)
    times, started = [], time.perf_counter()
    while time.perf_counter() - started < 0.3:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch(*session.args)
        end.record()
        end.synchronize()
        times.append((time.perf_counter() - started, start.elapsed_time(end)))
    steady = statistics.median(t for _, t in times[len(times) // 2:])
    settled_at = next((wall for wall, t in times if abs(t - steady) <= 0.01 * steady), None)
    return {"launches": len(times), "steady_ms": steady, "first_ms": [t for _, t in times[:12]],
            "within_1pct_after_s": settled_at}


def reading(session: harness.Session, policy: tuple[float, float]) -> dict[str, float]:
    harness_session.IDLE_WARM_UP_MS = policy  # read by Session.bench
    timer = session.timer
    original = timer.warm_up
    spent: list[float] = []

    def timed_warm_up(*args, **kwargs):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - t0)

    timer.warm_up = timed_warm_up  # type: ignore[method-assign]
    time.sleep(1.5)  # idle (over the harness's 1 s): the clocks drop
    try:
        line = session.bench()
    finally:
        timer.warm_up = original  # type: ignore[method-assign]
    return {"time_ms": line["time_ms"], "warm_up_s": spent[0]}


def main() -> None:
    for name in sys.argv[1:]:
        session = harness.Session(Path(name), None, (0,))
        session.bench()  # the process's first reading: compiles, calibrates
        out: dict[str, object] = {"kernel": name, "ramp": ramp(session)}
        rows: dict[str, list[dict[str, float]]] = {"settle": [], "fixed": []}
        for _ in range(3):
            for label in ("settle", "fixed", "fixed", "settle"):
                rows[label].append(reading(session, SETTLE if label == "settle" else FIXED))
        for label, got in rows.items():
            out[label] = {"times_ms": [r["time_ms"] for r in got],
                          "warm_up_s": [round(r["warm_up_s"], 4) for r in got],
                          "median_ms": statistics.median(r["time_ms"] for r in got),
                          "median_warm_up_s": statistics.median(r["warm_up_s"] for r in got)}
        out["settle_vs_fixed"] = out["settle"]["median_ms"] / out["fixed"]["median_ms"]  # type: ignore[index]
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
