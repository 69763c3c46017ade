"""Built-in profilers: ncu, nsys, rocprof and Graphsignal. Each wraps a bench command; the
recorded output is parsed by kernelopt_core.profile_parsers into one record per kernel.

ncu always runs with ``--clock-control none`` (never change the GPU's clocks): the bench then
runs at the clocks every other measurement sees.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import profile_parsers as parsers
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.target import Command

# per launch: duration, DRAM traffic and throughput, SM throughput, achieved occupancy, the
# launch's registers and shared memory, and every warp-stall reason (cycles per issue)
NCU_METRICS = ",".join((
    "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread",
    "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic",
    "launch__block_size", "launch__grid_size",
    r"regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio",
))
NCU_LAUNCHES = 200  # launches profiled: a bench's warm-up and timed calls, not unbounded replay


def _kernels(records: list[parsers.KernelProfile], tool: str) -> dict[str, Any]:
    return {"tool": tool, "kernels": [k.to_json() for k in records]}


class Ncu:
    name = "ncu"

    def unavailable_reason(self) -> str | None:
        return None if shutil.which("ncu") else "ncu is not on PATH (install Nsight Compute)"

    def wrap(self, command: Command, out_dir: Path) -> Command:
        argv = ("ncu", "--clock-control", "none", "--csv", "--print-units", "base",
                "--metrics", NCU_METRICS, "--launch-count", str(NCU_LAUNCHES),
                "--log-file", str(out_dir / "ncu.csv"), *command.argv)
        return attrs.evolve(command, argv=argv)

    def parse(self, out_dir: Path) -> dict[str, Any]:
        path = out_dir / "ncu.csv"
        if not path.exists():
            return {"error": "ncu wrote no CSV"}
        out = _kernels(parsers.ncu_kernels(path.read_text(errors="replace")), "ncu")
        profiled = sum(int(k["launches"]) for k in out["kernels"])
        return {**out, "launches_profiled": profiled, "launch_limit": NCU_LAUNCHES}


class Nsys:
    """``nsys profile``, then ``nsys stats`` for the per-kernel summary (CSV)."""

    name = "nsys"

    def unavailable_reason(self) -> str | None:
        return None if shutil.which("nsys") else "nsys is not on PATH (install Nsight Systems)"

    def wrap(self, command: Command, out_dir: Path) -> Command:
        report = str(out_dir / "nsys")
        script = ('nsys profile --force-overwrite true -o "$0" "$@" && '
                  'nsys stats --force-export true --report cuda_gpu_kern_sum --format csv '
                  '--output "$0" "$0.nsys-rep"')
        return attrs.evolve(command, argv=("sh", "-c", script, report, *command.argv))

    def parse(self, out_dir: Path) -> dict[str, Any]:
        found = sorted(out_dir.glob("*cuda_gpu_kern_sum*.csv"))
        if not found:
            return {"error": "nsys wrote no cuda_gpu_kern_sum CSV"}
        return _kernels(parsers.nsys_kernel_sum(found[0].read_text(errors="replace")), "nsys")


class Rocprof:
    """rocprofv3 (``--kernel-trace --stats``, CSV) or the older rocprof (``--stats``)."""

    name = "rocprof"

    def _tool(self) -> str | None:
        return shutil.which("rocprofv3") or shutil.which("rocprof")

    def unavailable_reason(self) -> str | None:
        return None if self._tool() else "neither rocprofv3 nor rocprof is on PATH (ROCm)"

    def wrap(self, command: Command, out_dir: Path) -> Command:
        tool = self._tool() or "rocprof"
        if tool.endswith("rocprofv3"):
            argv = (tool, "--kernel-trace", "--stats", "--output-format", "csv",
                    "-d", str(out_dir), "--", *command.argv)
        else:
            argv = (tool, "--stats", "-o", str(out_dir / "rocprof.csv"), *command.argv)
        return attrs.evolve(command, argv=argv)

    def parse(self, out_dir: Path) -> dict[str, Any]:
        found = sorted(out_dir.rglob("*kernel_stats.csv")) or sorted(out_dir.rglob("*.stats.csv"))
        if not found:
            return {"error": "rocprof wrote no kernel statistics CSV"}
        return _kernels(parsers.rocprof_kernel_stats(found[0].read_text(errors="replace")),
                        "rocprof")


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
