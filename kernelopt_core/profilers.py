"""Built-in profilers: ncu, nsys, rocprof and Graphsignal. Each wraps a bench command.

ncu always runs with ``--clock-control none`` (never change the GPU's clocks): the bench then
runs at the clocks every other measurement sees.
"""

from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.target import Command

NCU_METRICS = "dram__bytes.sum,gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed"


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


class Ncu:
    name = "ncu"

    def unavailable_reason(self) -> str | None:
        return None if shutil.which("ncu") else "ncu is not on PATH (install Nsight Compute)"

    def wrap(self, command: Command, out_dir: Path) -> Command:
        argv = ("ncu", "--clock-control", "none", "--csv", "--metrics", NCU_METRICS,
                "--log-file", str(out_dir / "ncu.csv"), *command.argv)
        return attrs.evolve(command, argv=argv, timeout_s=command.timeout_s * 20)

    def parse(self, out_dir: Path) -> dict[str, Any]:
        path = out_dir / "ncu.csv"
        if not path.exists():
            return {"error": "ncu wrote no CSV"}
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.startswith('"')]
        kernels: dict[str, dict[str, float]] = {}
        for row in csv.DictReader(lines):
            name, metric = row.get("Kernel Name", "?"), row.get("Metric Name", "")
            value = _number(row.get("Metric Value", ""))
            if value is None:
                continue
            entry = kernels.setdefault(name, {})
            entry[metric] = entry.get(metric, 0.0) + value
        dram = sum(k.get("dram__bytes.sum", 0.0) for k in kernels.values())
        return {"dram_bytes": dram, "kernels": kernels}


class Nsys:
    name = "nsys"

    def unavailable_reason(self) -> str | None:
        return None if shutil.which("nsys") else "nsys is not on PATH (install Nsight Systems)"

    def wrap(self, command: Command, out_dir: Path) -> Command:
        argv = ("nsys", "profile", "--force-overwrite", "true", "--stats", "true",
                "-o", str(out_dir / "nsys"), *command.argv)
        return attrs.evolve(command, argv=argv, timeout_s=command.timeout_s * 5)

    def parse(self, out_dir: Path) -> dict[str, Any]:
        reports = sorted(str(p) for p in out_dir.glob("nsys*"))
        return {"reports": reports}


class Rocprof:
    name = "rocprof"

    def _tool(self) -> str | None:
        return shutil.which("rocprofv3") or shutil.which("rocprof")

    def unavailable_reason(self) -> str | None:
        return None if self._tool() else "neither rocprofv3 nor rocprof is on PATH (ROCm)"

    def wrap(self, command: Command, out_dir: Path) -> Command:
        tool = self._tool() or "rocprof"
        if tool.endswith("rocprofv3"):
            argv = (tool, "--kernel-trace", "--stats", "-d", str(out_dir), "--", *command.argv)
        else:
            argv = (tool, "--stats", "-o", str(out_dir / "rocprof.csv"), *command.argv)
        return attrs.evolve(command, argv=argv, timeout_s=command.timeout_s * 5)

    def parse(self, out_dir: Path) -> dict[str, Any]:
        stats = sorted(out_dir.rglob("*stats*.csv"))
        kernels: dict[str, float] = {}
        for path in stats:
            with open(path, newline="") as fh:
                for row in csv.DictReader(fh):
                    name = row.get("Name") or row.get("KernelName") or "?"
                    total = _number(row.get("TotalDurationNs", "") or "")
                    if total is not None:
                        kernels[name] = kernels.get(name, 0.0) + total
        return {"kernel_total_ns": kernels, "files": [str(p) for p in stats]}


class Graphsignal:
    """Graphsignal's sidecar (``graphsignal-run``); results go to the Graphsignal service."""

    name = "graphsignal"

    def unavailable_reason(self) -> str | None:
        if not shutil.which("graphsignal-run"):
            return "graphsignal-run is not on PATH (pip install graphsignal)"
        if not os.environ.get("GRAPHSIGNAL_API_KEY"):
            return "GRAPHSIGNAL_API_KEY is not set"
        return None

    def wrap(self, command: Command, out_dir: Path) -> Command:
        return attrs.evolve(command, argv=("graphsignal-run", *command.argv))

    def parse(self, out_dir: Path) -> dict[str, Any]:
        return {"note": "profile uploaded to Graphsignal; see its dashboard"}


@hookimpl
def kernelopt_register_profilers() -> list[object]:
    return [Ncu(), Nsys(), Rocprof(), Graphsignal()]
