"""Profilers' recorded output → one record per kernel (pure functions, tested on recorded
output in tests/fixtures/profilers/).

Every parser returns ``KernelProfile`` records: the kernel's name as the tool printed it (a
mangled C++ symbol demangled), its launches, its total device time (µs) and, where the tool
measured them, per-launch metrics.
Per-launch means: a rate or a ratio is averaged over the launches, a byte count or a duration
is summed and divided by the launches, a launch attribute (registers, block size) is kept as
one value (the largest seen).
"""

from __future__ import annotations

import csv
import ctypes
import functools
import io
import json
import re
from collections.abc import Iterable
from typing import Any

import attrs


@attrs.frozen
class KernelProfile:
    name: str  # as the tool printed it (demangled is fine)
    launches: int  # how often it ran in the profiled command
    total_us: float  # its device time over all launches
    metrics: dict[str, float] = attrs.field(factory=dict)  # per launch

    @property
    def mean_us(self) -> float:
        return self.total_us / self.launches if self.launches else 0.0

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "launches": self.launches, "total_us": round(self.total_us, 3),
                "mean_us": round(self.mean_us, 3),
                "metrics": {k: round(v, 4) for k, v in sorted(self.metrics.items())}}


def _formats_a_number(_instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{attribute.name} {value!r} is not a format string")
    try:
        value.format(1.5)
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ValueError(f"{attribute.name} {value!r} does not format a number: {exc}") from exc


_TEXT = attrs.validators.and_(attrs.validators.instance_of(str), attrs.validators.min_len(1))


@attrs.frozen
class MetricColumn:
    """A column of the per-kernel table (report.md, ``kernelopt profile``) that a profiler
    declares in ``parse``'s ``"columns"``: each kernel's ``metrics[metric]`` times ``scale``,
    through ``fmt``; a kernel without that metric shows as missing. As JSON (how it is
    journaled): ``{"header", "metric", "scale", "fmt"}``."""

    header: str = attrs.field(validator=_TEXT)
    metric: str = attrs.field(validator=_TEXT)
    scale: float = attrs.field(default=1.0, converter=float)
    fmt: str = attrs.field(default="{:.1f}", validator=_formats_a_number)

    def to_json(self) -> dict[str, object]:
        return {"header": self.header, "metric": self.metric, "scale": self.scale,
                "fmt": self.fmt}

    @classmethod
    def of(cls, value: object) -> MetricColumn:
        """A declared column: a MetricColumn, its JSON, or ``(header, metric[, scale[, fmt]])``;
        ValueError naming what is wrong with anything else."""
        if isinstance(value, MetricColumn):
            return value
        try:
            if isinstance(value, dict):
                return cls(**value)
            if isinstance(value, (list, tuple)) and 2 <= len(value) <= 4:
                return cls(*value)
        except (TypeError, ValueError) as exc:  # attrs' TypeError: (message, attribute, ...)
            raise ValueError(f"column {value!r}: {exc.args[0] if exc.args else exc}") from exc
        raise ValueError(f"column {value!r}: not a MetricColumn, its JSON or "
                         "(header, metric, scale, fmt)")


def number(text: str | None) -> float | None:
    """A tool's printed number ("12,800", "1.5", "n/a" → None)."""
    try:
        return float((text or "").replace(",", "").strip())
    except ValueError:
        return None


def _csv_rows(text: str, first_column: str) -> list[dict[str, str]]:
    """CSV rows from the header whose first column is ``first_column`` on, past any preamble
    the tool printed (ncu's ==PROF== lines, nsys's "Processing [...]")."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if next(csv.reader([line]), [""])[:1] == [first_column]), len(lines))
    return list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))


_ATTRIBUTE = re.compile(r"^launch__")  # registers, block size: one value per kernel


def _per_launch(metric: str, values: list[float]) -> float:
    """A rate's mean, or a count's mean per launch (its sum over the launches / launches)."""
    return max(values) if _ATTRIBUTE.match(metric) else sum(values) / len(values)


# units ncu prints with --print-units base; durations become µs below
_NS = {"ns", "nsecond"}


def ncu_launches(text: str) -> list[tuple[str, str, dict[str, float]]]:
    """``ncu --csv --metrics ...`` (one row per launch and metric): (launch id, kernel name,
    metrics) per launch, in launch order."""
    launches: dict[str, tuple[str, dict[str, float]]] = {}
    for row in _csv_rows(text, "ID"):
        launch, name = row.get("ID", ""), row.get("Kernel Name", "?")
        value = number(row.get("Metric Value"))
        if value is None:
            continue
        metric = row.get("Metric Name", "")
        if row.get("Metric Unit", "") in _NS:
            value /= 1000.0  # ns → µs
            metric = metric + ".us"
        launches.setdefault(launch, (name, {}))[1][metric] = value
    return [(launch, name, metrics) for launch, (name, metrics) in launches.items()]


DURATION = "gpu__time_duration.sum.us"


def ncu_kernels(text: str) -> list[KernelProfile]:
    """Per kernel: its launches' metrics made per launch (see the module doc), heaviest first."""
    grouped: dict[str, list[dict[str, float]]] = {}
    for _launch, name, metrics in ncu_launches(text):
        grouped.setdefault(name, []).append(metrics)
    return _ranked(_aggregate(name, launches) for name, launches in grouped.items())


def _aggregate(name: str, launches: list[dict[str, float]]) -> KernelProfile:
    metrics: dict[str, float] = {}
    for metric in sorted({m for launch in launches for m in launch}):
        values = [launch[metric] for launch in launches if metric in launch]
        metrics[metric] = _per_launch(metric, values)
    total = sum(launch.get(DURATION, 0.0) for launch in launches)
    return KernelProfile(name, len(launches), total, metrics)


def ncu_summary(text: str) -> list[KernelProfile]:
    """``ncu --csv --print-summary per-kernel`` (Invocations, Minimum, Maximum, Average per
    metric): per kernel, the averages, heaviest first."""
    kernels: dict[str, tuple[int, dict[str, float]]] = {}
    for row in _csv_rows(text, "Process ID"):
        name = row.get("Kernel Name", "?")
        calls = int(number(row.get("Invocations")) or 0)
        value = number(row.get("Average"))
        if value is None:
            continue
        metric = row.get("Metric Name", "")
        if row.get("Metric Unit", "") in _NS:
            value, metric = value / 1000.0, metric + ".us"
        kernels.setdefault(name, (calls, {}))[1][metric] = value
    return _ranked(KernelProfile(name, calls, calls * m.get(DURATION, 0.0), m)
                   for name, (calls, m) in kernels.items())


def nsys_kernel_sum(text: str) -> list[KernelProfile]:
    """``nsys stats --report cuda_gpu_kern_sum --format csv``: Total Time (ns), Instances,
    Name per kernel."""
    out = []
    for row in _csv_rows(text, "Time (%)"):
        total, calls = number(row.get("Total Time (ns)")), number(row.get("Instances"))
        if total is None or not calls:
            continue
        out.append(KernelProfile(row.get("Name", "?"), int(calls), total / 1000.0))
    return _ranked(out)


def rocprof_kernel_stats(text: str) -> list[KernelProfile]:
    """rocprofv3's ``kernel_stats.csv`` and rocprof's ``results.stats.csv``: Name, Calls,
    TotalDurationNs per kernel."""
    out = []
    for row in _csv_rows(text, "Name"):
        name = row.get("Name") or row.get("KernelName") or "?"
        total, calls = number(row.get("TotalDurationNs")), number(row.get("Calls"))
        if total is None or not calls:
            continue
        out.append(KernelProfile(name, int(calls), total / 1000.0))
    return _ranked(out)


# Graphsignal 1.x's watcher (``graphsignal-run``) serves ``GET /signals``: every metric record
# {"name", "type", "tags", "stats", "updated_ns"}, cumulative since the watcher started. Its
# profilers' device activity is one "profile" record per family and process (tag
# "process.pid"): stats.frames = [{"name": kernel symbol, "value": ns, "samples": launches}].
GRAPHSIGNAL_ACTIVITY = {
    "kernels": ("cuda_kernels_nanoseconds", "rocm_kernels_nanoseconds"),
    "graphs": ("cuda_graphs_nanoseconds",),  # whole CUDA graph replays (--cuda-graph-trace graph)
    "memcpy": ("cuda_memcpy_nanoseconds", "rocm_memcpy_nanoseconds"),
    "memset": ("cuda_memset_nanoseconds",),
    "sync": ("cuda_sync_nanoseconds", "rocm_sync_nanoseconds"),  # host waits, not device work
}


def _graphsignal_frames(payload: dict[str, Any], metrics: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """Frame name → (ns, samples) of the profile records named ``metrics``, summed over the
    processes."""
    frames: dict[str, tuple[int, int]] = {}
    for record in payload.get("metrics") or []:
        if record.get("type") != "profile" or record.get("name") not in metrics:
            continue
        for frame in (record.get("stats") or {}).get("frames") or []:
            if frame.get("name") is None:
                continue
            ns, samples = frames.get(frame["name"], (0, 0))
            frames[frame["name"]] = (ns + int(frame.get("value") or 0),
                                     samples + int(frame.get("samples") or 0))
    return frames


def graphsignal_signals(text: str) -> list[KernelProfile]:
    """A saved ``GET /signals`` payload of Graphsignal 1.x (``graphsignal-run``): per kernel
    symbol of ``cuda_kernels_nanoseconds`` (``rocm_kernels_nanoseconds`` on ROCm), its launches
    (the frame's samples) and device time (its value, ns), summed over the processes; names
    demangled, heaviest first."""
    frames = _graphsignal_frames(json.loads(text), GRAPHSIGNAL_ACTIVITY["kernels"])
    return _ranked(KernelProfile(demangle(name), samples, ns / 1000.0)
                   for name, (ns, samples) in frames.items() if samples)


def graphsignal_activity(text: str) -> dict[str, float]:
    """The payload's device activity per family (kernels, graphs, memcpy, memset, sync), µs
    summed over frames and processes; a family the payload lacks is left out."""
    payload = json.loads(text)
    names = {r.get("name") for r in payload.get("metrics") or [] if r.get("type") == "profile"}
    return {family: round(sum(ns for ns, _ in _graphsignal_frames(payload, metrics).values())
                          / 1000.0, 3)
            for family, metrics in GRAPHSIGNAL_ACTIVITY.items() if names & set(metrics)}


@functools.lru_cache(maxsize=1)
def _cxa_demangle() -> Any:
    for lib in ("libstdc++.so.6", "libc++abi.dylib", "libc++abi.so.1"):
        try:
            found = ctypes.CDLL(lib).__cxa_demangle
        except (OSError, AttributeError):
            continue
        found.restype = ctypes.c_void_p
        found.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.POINTER(ctypes.c_int)]
        return found
    return None


@functools.lru_cache(maxsize=4096)
def demangle(symbol: str) -> str:
    """A mangled C++ symbol (``_Z9tiny_biasPfi``) as ncu prints it demangled (``tiny_bias(float*,
    int)``), through the C++ runtime's own ``__cxa_demangle``; any other name (a Triton
    kernel's, cuBLAS's ``nvjet_*``) or no C++ runtime: the symbol unchanged."""
    function = _cxa_demangle() if symbol.startswith("_Z") else None
    if function is None:
        return symbol
    status = ctypes.c_int(1)
    pointer = function(symbol.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not pointer:
        return symbol
    try:
        return ctypes.string_at(pointer).decode("utf-8", errors="replace")
    finally:
        ctypes.CDLL(None).free(ctypes.c_void_p(pointer))


def _ranked(kernels: Iterable[KernelProfile]) -> list[KernelProfile]:
    return sorted(kernels, key=lambda k: (-k.total_us, k.name))
