"""Where a kernel's default-vs-max-autotune gap comes from: the launch config, or the timer.

    python3 bench/inductor_mode_gap.py TARGETS_DIR MAX_AUTOTUNE_JSON [--rounds 5]

For each standalone kernel file TARGETS_DIR/<kernel>.py (``kernelopt_triton.inductor generate``)
whose kernel max-autotune tuned (MAX_AUTOTUNE_JSON from bench/inductor_kernel_times.py, with
``configs``), a copy with max-autotune's XBLOCK/YBLOCK/R0_BLOCK/num_warps/num_stages written
into its launch is made, and both files are timed by kernelopt's harness (``python -m
kernelopt_triton.harness bench``, each a fresh process), interleaved, ``--rounds`` times. Prints
one JSON line per kernel: the harness medians of both, do_bench's max-autotune time, and whether
the source was otherwise the same (the config is the only difference when the copy reaches
max-autotune's time).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

CONFIG_ITEM = re.compile(r"(\w+): (\d+)")


def ma_config(text: str) -> dict[str, str]:
    """'XBLOCK: 1024, num_warps: 4, num_ctas: 1, num_stages: 1, ...' -> the launch's knobs."""
    wanted = {"XBLOCK", "YBLOCK", "ZBLOCK", "R0_BLOCK", "RBLOCK", "num_warps", "num_stages"}
    return {k: v for k, v in CONFIG_ITEM.findall(text) if k in wanted}


def with_config(source: str, config: dict[str, str]) -> str:
    for key, value in config.items():
        source = re.sub(rf"\b{key}=\d+\b", f"{key}={value}", source)
    return source


def harness_us(path: Path) -> float:
    out = subprocess.run([sys.executable, "-m", "kernelopt_triton.harness", "bench", str(path)],
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"{path.name}: exit {out.returncode}: {out.stderr[-800:]}")
    reading = json.loads(out.stdout.strip().splitlines()[-1])
    return float(reading["time_ms"]) * 1e3


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("targets", type=Path)
    ap.add_argument("max_autotune", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ns = ap.parse_args()
    tuned = json.loads(ns.max_autotune.read_text())
    for name, cfg_text in sorted(tuned.get("configs", {}).items()):
        original = ns.targets / f"{name}.py"
        if not original.exists():
            continue
        config = ma_config(cfg_text)
        variant = ns.targets / f"{name}_ma_config.py"
        variant.write_text(with_config(original.read_text(), config))
        ours, theirs = [], []
        for _ in range(ns.rounds):
            ours.append(harness_us(original))
            theirs.append(harness_us(variant))
        print(json.dumps({"kernel": name, "ma_config": config,
                          "harness_default_us": round(statistics.median(ours), 2),
                          "harness_ma_config_us": round(statistics.median(theirs), 2),
                          "do_bench_ma_us": round(tuned["ms"][name] * 1e3, 2),
                          "rounds": ns.rounds}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
