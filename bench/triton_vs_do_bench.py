"""Issue 10: the Triton harness's reading against triton.testing.do_bench, one GPU.

    python bench/triton_vs_do_bench.py KERNEL_FILE [KERNEL_FILE...]

For each file, in one process: 8 readings of the harness's bench (kernelopt_triton.harness
Session.bench: the code a bench worker runs per request) alternating with 8 calls of
`triton.testing.do_bench(launch, return_mode="median")` on the same buffers; prints one JSON
line per file with both medians, their spreads and the harness's difference in %.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main() -> None:
    import triton.testing
    from kernelopt_triton.harness import Session

    for name in sys.argv[1:]:
        path = Path(name).resolve()
        session = Session(path, None, ())
        harness, do_bench = [], []
        launch, args = session.candidate.launch, session.args
        for _ in range(8):
            harness.append(session.bench()["time_ms"])
            do_bench.append(triton.testing.do_bench(lambda f=launch, a=args: f(*a),
                                                    return_mode="median"))
        reading = session.bench()
        h, d = statistics.median(harness), statistics.median(do_bench)
        print(json.dumps({
            "kernel": path.name, "shape": reading["shape"], "harness_ms": h, "do_bench_ms": d,
            "harness_vs_do_bench_pct": round((h / d - 1) * 100, 2),
            "harness_spread_pct": round((max(harness) / min(harness) - 1) * 100, 2),
            "do_bench_spread_pct": round((max(do_bench) / min(do_bench) - 1) * 100, 2),
            "harness": harness, "do_bench": do_bench,
            "timer": {k: reading.get(k) for k in ("timer", "iters", "sync_fixed_ms",
                                                  "on_stream_ms", "synced_ms", "cushion_ms")},
        }), flush=True)


if __name__ == "__main__":
    main()
