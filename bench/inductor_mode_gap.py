"""A kernel as Inductor's default chose it, as max-autotune chose it and as kernelopt tuned it,
timed alike: kernelopt's harness and triton.testing.do_bench, side by side, one process.

    python3 bench/inductor_mode_gap.py TARGETS_DIR MAX_AUTOTUNE_JSON [--winner KERNEL=FILE ...]
        [--winners-json FILE] [--rounds 8]

For each standalone kernel file TARGETS_DIR/<kernel>.py (``kernelopt_triton.inductor
generate``: the launch config the capture's compile chose) whose kernel max-autotune tuned
(MAX_AUTOTUNE_JSON from bench/inductor_kernel_times.py, with ``configs``), a copy with
max-autotune's XBLOCK/YBLOCK/R0_BLOCK/num_warps/num_stages written into its launch is made
(<kernel>_ma_config.py, in a temporary folder: TARGETS_DIR may be kernelopt's own capture);
kernelopt's winner is a file (``--winner``) or, from an earlier run
whose capture may have chosen another starting config, its config written the same way
(``--winners-json``: {kernel: {"config": {knob: value}}}). Each file is loaded once as a harness
Session (the code a bench worker runs); ``--rounds`` times, in turn, each file gets one
harness reading and one do_bench (median, its own L2 clearing) on the same buffers. One JSON
line per kernel: per file its config, both medians and spreads. A claim "kernelopt's kernel is
no slower than max-autotune's" compares two rows of one timer, never across timers.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

CONFIG_ITEM = re.compile(r"(\w+): (\d+)")
LAUNCH_KNOBS = {"XBLOCK", "YBLOCK", "ZBLOCK", "R0_BLOCK", "RBLOCK", "num_warps", "num_stages"}


def ma_config(text: str) -> dict[str, str]:
    """'XBLOCK: 1024, num_warps: 4, num_ctas: 1, num_stages: 1, ...' -> the launch's knobs."""
    return {k: v for k, v in CONFIG_ITEM.findall(text) if k in LAUNCH_KNOBS}


def launch_config(source: str) -> dict[str, str]:
    return {k: v for k, v in re.findall(r"\b(\w+)=(\d+)\b", source) if k in LAUNCH_KNOBS}


def with_config(source: str, config: dict[str, str]) -> str:
    for key, value in config.items():
        source = re.sub(rf"\b{key}=\d+\b", f"{key}={value}", source)
    return source


def spread(xs: list[float]) -> float:
    return round((max(xs) / min(xs) - 1) * 100, 2)


def compare(files: dict[str, Path], rounds: int) -> dict[str, Any]:
    import triton.testing
    from kernelopt_triton.harness import Session

    sessions = {role: Session(path.resolve(), None, ()) for role, path in files.items()}
    harness: dict[str, list[float]] = {role: [] for role in files}
    do_bench: dict[str, list[float]] = {role: [] for role in files}
    for _ in range(rounds):
        for role, session in sessions.items():
            harness[role].append(session.bench()["time_ms"] * 1e3)
            launch, args = session.candidate.launch, session.args
            do_bench[role].append(triton.testing.do_bench(
                lambda f=launch, a=args: f(*a), return_mode="median") * 1e3)
    return {role: {"config": launch_config(files[role].read_text()),
                   "harness_us": round(statistics.median(harness[role]), 2),
                   "harness_spread_pct": spread(harness[role]),
                   "do_bench_us": round(statistics.median(do_bench[role]), 2),
                   "do_bench_spread_pct": spread(do_bench[role])} for role in files}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("targets", type=Path)
    ap.add_argument("max_autotune", type=Path)
    ap.add_argument("--winner", action="append", default=[], help="KERNEL=FILE")
    ap.add_argument("--winners-json", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=8)
    ns = ap.parse_args()
    winners = dict(w.split("=", 1) for w in ns.winner)
    configs = json.loads(ns.winners_json.read_text()) if ns.winners_json else {}
    tuned = json.loads(ns.max_autotune.read_text())
    work = Path(tempfile.mkdtemp(prefix="mode-gap-"))
    for name, cfg_text in sorted(tuned.get("configs", {}).items()):
        captured = ns.targets / f"{name}.py"
        if not captured.exists():
            continue
        variant = work / f"{name}_ma_config.py"
        variant.write_text(with_config(captured.read_text(), ma_config(cfg_text)))
        files = {"captured": captured, "max_autotune": variant}
        if name in winners:
            files["kernelopt"] = Path(winners[name])
        elif name in configs:
            files["kernelopt"] = work / f"{name}_kernelopt_config.py"
            files["kernelopt"].write_text(with_config(captured.read_text(), configs[name]["config"]))
        print(json.dumps({"kernel": name, "rounds": ns.rounds, **compare(files, ns.rounds),
                          "inductor_do_bench_max_autotune_us": round(tuned["ms"][name] * 1e3, 2)}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
