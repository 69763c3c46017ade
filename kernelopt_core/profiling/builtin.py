"""Built-in profilers: ncu, nsys, rocprof and Graphsignal. Each wraps a bench command; the
recorded output (Graphsignal's: its /signals payload, saved) is parsed by
kernelopt_core.profiling.parsers into one record per kernel.

ncu always runs with ``--clock-control none`` (never change the GPU's clocks): the bench then
runs at the clocks every other measurement sees.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.profiling import parsers
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
# a whole program (``kernelopt profile --engine``): every launch, one pass each (duration and
# launch shape only: the shares need every kernel, and the stall metrics cost dozens of
# replays per launch), up to this many
NCU_PROGRAM_METRICS = ("gpu__time_duration.sum,launch__grid_size,launch__block_size,"
                       "launch__registers_per_thread")
NCU_PROGRAM_LAUNCHES = 100_000


def _kernels(records: list[parsers.KernelProfile], tool: str) -> dict[str, Any]:
    return {"tool": tool, "kernels": [k.to_json() for k in records]}


class Ncu:
    name = "ncu"

    def unavailable_reason(self) -> str | None:
        return None if shutil.which("ncu") else "ncu is not on PATH (install Nsight Compute)"

    def wrap(self, command: Command, out_dir: Path, whole_program: bool = False) -> Command:
        metrics, launches = ((NCU_PROGRAM_METRICS, NCU_PROGRAM_LAUNCHES) if whole_program
                             else (NCU_METRICS, NCU_LAUNCHES))
        (out_dir / "ncu-launch-limit.txt").write_text(str(launches))  # what parse reports
        argv = ("ncu", "--clock-control", "none", "--csv", "--print-units", "base",
                "--metrics", metrics, "--launch-count", str(launches),
                "--log-file", str(out_dir / "ncu.csv"), *command.argv)
        return attrs.evolve(command, argv=argv)

    def parse(self, out_dir: Path) -> dict[str, Any]:
        path = out_dir / "ncu.csv"
        if not path.exists():
            return {"error": "ncu wrote no CSV"}
        out = _kernels(parsers.ncu_kernels(path.read_text(errors="replace")), "ncu")
        profiled = sum(int(k["launches"]) for k in out["kernels"])
        limit = out_dir / "ncu-launch-limit.txt"
        launch_limit = int(limit.read_text()) if limit.is_file() else NCU_LAUNCHES
        return {**out, "launches_profiled": profiled, "launch_limit": launch_limit}


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


GRAPHSIGNAL_PAYLOAD = "graphsignal-signals.json"  # the last /signals payload, under out_dir
GRAPHSIGNAL_DONE = "graphsignal.done"  # written once graphsignal-run (the bench) has exited
# The wrapped command: the poller in the background, graphsignal-run in front, its status
# kept. Per-kernel times also inside CUDA graphs (node) and on ROCm (all): a profiled bench
# is never timed, so their cost is no concern.
_GRAPHSIGNAL_SH = (
    'out=$1 port=$2 py=$3; shift 3; '
    'rm -f "$out/' + GRAPHSIGNAL_DONE + '" "$out/' + GRAPHSIGNAL_PAYLOAD + '"; '
    '"$py" -c "import sys; from kernelopt_core.profiling.builtin import poll_signals; '
    'sys.exit(poll_signals(sys.argv[1:]))" "$port" "$out" & poller=$!; '
    'graphsignal-run --listen-port "$port" --cuda-graph-trace node --rocm-kernel-trace all "$@"; '
    'rc=$?; : > "$out/' + GRAPHSIGNAL_DONE + '"; wait "$poller"; exit $rc')


class Graphsignal:
    """Graphsignal 1.x (``graphsignal-run``), locally: no API key, no service. The key only
    turns on uploads; without it the watcher that ``graphsignal-run`` starts beside the bench
    still collects CUPTI's per-kernel times (injected through CUDA_INJECTION64_PATH) and
    serves them as JSON at ``GET http://127.0.0.1:PORT/signals``, until the bench has exited
    and it has read the profiler's last write. Graphsignal writes no profile file, so the
    wrapped command is ``sh`` running graphsignal-run on a free port and, beside it, a poller
    (``poll_signals``) that saves the last payload under the profile's directory; ``parse``
    reads that file (``parsers.graphsignal_signals``).

    What the payload holds: the bench's kernels as of the watcher's last read (once a
    second), so the last second or so of a bench can be missing, and a bench that ends within
    about a second of starting CUDA may show no kernel at all. The watcher's version check
    (its one request without a key) is turned off.
    """

    name = "graphsignal"

    def unavailable_reason(self) -> str | None:
        if not shutil.which("graphsignal-run"):
            return "graphsignal-run is not on PATH (pip install graphsignal)"
        return None

    def wrap(self, command: Command, out_dir: Path) -> Command:
        with socket.socket() as probe:  # a free port for the watcher's /signals
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        argv = ("sh", "-c", _GRAPHSIGNAL_SH, "graphsignal", str(out_dir.absolute()), str(port),
                sys.executable, *command.argv)
        env = {**command.env, "GRAPHSIGNAL_DISABLE_VERSION_CHECK": "1"}
        return attrs.evolve(command, argv=argv, env=env)

    def parse(self, out_dir: Path) -> dict[str, Any]:
        path = out_dir / GRAPHSIGNAL_PAYLOAD
        if not path.exists():
            return {"error": "graphsignal-run's watcher served no /signals payload"}
        text = path.read_text(errors="replace")
        kernels, activity = parsers.graphsignal_signals(text), parsers.graphsignal_activity(text)
        if not kernels:
            return {"error": "Graphsignal recorded no kernel: CUPTI was not injected "
                    "(GRAPHSIGNAL_DEBUG=1 says why: no CUDA or libcupti found), or the bench "
                    "ended before the profiler's first write (about 1 s)",
                    "activity_us": activity}
        return {**_kernels(kernels, "graphsignal"), "activity_us": activity}


def poll_signals(argv: list[str], never_up_s: float = 3.0, at_most_s: float = 15.0) -> int:
    """``PORT OUT_DIR``: the watcher's ``/signals`` every 0.1 s, the last payload that has
    metrics written to OUT_DIR/graphsignal-signals.json, until the watcher has gone after
    graphsignal-run exited (OUT_DIR/graphsignal.done; ``never_up_s`` after it when the watcher
    never answered, ``at_most_s`` in any case), or its parent (the wrapped command's ``sh``)
    has gone. The wrapped command's poller: it spawns nothing."""
    port, out = int(argv[0]), Path(argv[1])
    parent, served, kept = os.getppid(), 0, 0
    done_at: float | None = None
    while os.getppid() == parent:
        now = time.monotonic()
        if done_at is None and (out / GRAPHSIGNAL_DONE).exists():
            done_at = now
        try:
            body = _get_signals(port)
            payload = json.loads(body)
            if not isinstance(payload, dict):
                raise ValueError("not a /signals payload")
            served += 1
            if payload.get("metrics") or not kept:
                (out / (GRAPHSIGNAL_PAYLOAD + ".tmp")).write_bytes(body)
                os.replace(out / (GRAPHSIGNAL_PAYLOAD + ".tmp"), out / GRAPHSIGNAL_PAYLOAD)
                kept += 1
        except (OSError, ValueError, http.client.HTTPException):
            # not up yet, or gone; after the bench, gone (or never up) ends it
            if done_at is not None and (served or now - done_at > never_up_s):
                break
        if done_at is not None and now - done_at > at_most_s:
            break
        time.sleep(0.1)
    # this process is the wrapped command's poller, not the UI: its one line goes to the log
    os.write(2, f"graphsignal: {served} /signals payload(s) served, {kept} kept\n".encode())
    return 0


def _get_signals(port: int) -> bytes:
    """GET /signals from 127.0.0.1 (http.client: never through a proxy the environment names)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", "/signals")
        response = connection.getresponse()
        body = response.read()
    finally:
        connection.close()
    if response.status != 200:
        raise ValueError(f"/signals answered {response.status}")
    return body


@hookimpl
def kernelopt_register_profilers() -> list[object]:
    return [Ncu(), Nsys(), Rocprof(), Graphsignal()]
