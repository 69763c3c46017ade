"""What a profile says, as data and as tables (pure: the report and ``kernelopt profile``
render with it; kernelopt_core.profiling runs the profiler).

A profiler's ``parse`` gives kernels (profile_parsers.KernelProfile as JSON). The target's
kernels are those defined in its editable files (``__global__`` functions, ``@triton.jit``
functions); every other kernel the bench launched (input fills, cache flushes, the library's
and the harness's own) is shown apart, so a metric is never summed across kernels.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_DEFINITIONS = (
    # CUDA/HIP: __global__ [void] [__launch_bounds__(...)] [void] NAME [<...>] (
    re.compile(r"__global__(?:\s+(?:void|static|inline|extern|\"C\"|__launch_bounds__\s*\([^)]*\)))*"
               r"\s+(\w+)\s*(?:<[^>(]*>)?\s*\("),
    # Triton: @triton.jit[(...)] [more decorators] def NAME(
    re.compile(r"@triton\.jit\b[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)\s*\("),
)


SOURCE_SUFFIXES = (".cu", ".cuh", ".hip", ".cpp", ".cc", ".h", ".hpp", ".py")


def sources(files: dict[str, bytes]) -> dict[str, bytes]:
    """The files that can define a kernel (by suffix)."""
    return {path: data for path, data in files.items() if path.endswith(SOURCE_SUFFIXES)}


def kernel_names(files: dict[str, bytes]) -> dict[str, str]:
    """The kernels the editable files define: name → the file."""
    names: dict[str, str] = {}
    for path, data in sorted(files.items()):
        text = data.decode("utf-8", errors="replace")
        for pattern in _DEFINITIONS:
            names.update((name, path) for name in pattern.findall(text) if name not in names)
    return names


def is_target(kernel: str, names: Iterable[str]) -> bool:
    """A profiler's kernel name (demangled: ``void ns::k<4>(float *, int)``, or bare) names one
    of ``names``."""
    return any(re.search(rf"(?<![\w]){re.escape(n)}\s*(?:<|\(|$)", kernel) for n in names)


def annotate(parsed: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """The profiler's kernels marked target or not (``file``: where the target's is defined),
    with their share of the profiled device time. A metric stays the kernel's own: none is
    summed across kernels."""
    kernels = [dict(k) for k in parsed.get("kernels", [])]
    total = sum(float(k.get("total_us", 0.0)) for k in kernels) or 1.0
    for k in kernels:
        defined = [n for n in names if is_target(str(k.get("name", "")), [n])]
        k["target"] = bool(defined)
        if defined:
            k["file"] = names[defined[0]]
        k["share_pct"] = round(100.0 * float(k.get("total_us", 0.0)) / total, 2)
    return {**parsed, "kernels": kernels, "target_kernels": sorted(names)}


# the table's columns: (header, metric, scale, format)
COLUMNS = (
    ("µs/launch", "gpu__time_duration.sum.us", 1.0, "{:.2f}"),
    ("DRAM read MB", "dram__bytes_read.sum", 1e-6, "{:.1f}"),
    ("DRAM write MB", "dram__bytes_write.sum", 1e-6, "{:.1f}"),
    ("DRAM % peak", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 1.0, "{:.1f}"),
    ("SM % peak", "sm__throughput.avg.pct_of_peak_sustained_elapsed", 1.0, "{:.1f}"),
    ("occupancy %", "sm__warps_active.avg.pct_of_peak_sustained_active", 1.0, "{:.1f}"),
    ("regs/thread", "launch__registers_per_thread", 1.0, "{:.0f}"),
    ("smem/block B", "launch__shared_mem_per_block", 1.0, "{:.0f}"),
)
_STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio")


def stalls(metrics: dict[str, float], top: int = 3) -> list[tuple[str, float]]:
    """The largest warp-stall reasons (cycles stalled per issued instruction), 'selected'
    (issuing) left out."""
    found = [(m.group(1), v) for k, v in metrics.items() if (m := _STALL.fullmatch(k))]
    return sorted(((r, v) for r, v in found if r != "selected" and v > 0),
                  key=lambda rv: -rv[1])[:top]


def _cells(kernel: dict[str, Any]) -> list[str]:
    metrics = dict(kernel.get("metrics", {}))
    metrics["launch__shared_mem_per_block"] = sum(
        metrics.get(f"launch__shared_mem_per_block_{kind}", 0.0) for kind in ("static", "dynamic"))
    cells = []
    for _header, key, scale, fmt in COLUMNS:
        value = metrics.get(key)
        if key == "gpu__time_duration.sum.us" and value is None:
            value = kernel.get("mean_us")
        cells.append(fmt.format(value * scale) if isinstance(value, (int, float)) else "–")
    top = stalls(metrics)
    cells.append(", ".join(f"{r} {v:.1f}" for r, v in top) or "–")
    return cells


def kernel_table(profiles: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Markdown: each labelled profile's target kernels (every kernel when none is the
    target's), then one line for the kernels shown apart."""
    header = ["profile", "kernel", "launches", *(c[0] for c in COLUMNS), "top stalls"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    apart = []
    for label, profile in profiles:
        kernels = profile.get("kernels", [])
        mine = [k for k in kernels if k.get("target")] or kernels
        for k in mine:
            name = str(k.get("name", "?"))
            lines.append("| " + " | ".join([label, f"`{name[:60]}`", str(k.get("launches", "?")),
                                            *_cells(k)]) + " |")
        others = [k for k in kernels if k not in mine]
        if others:
            us = sum(float(k.get("total_us", 0.0)) for k in others)
            apart.append(f"{label}: {len(others)} other kernel(s) (input fills, cache flushes, "
                         f"libraries), {us:.1f} µs in all, not in the table")
    return lines + ([""] + [f"- {a}" for a in apart] if apart else [])


def locate(profile: dict[str, Any], tree_names: dict[str, str]) -> dict[str, Any]:
    """Kernels that are not the target's, given the file of the tree that defines them
    (``elsewhere``): where a target worth more would live."""
    kernels = [dict(k) for k in profile.get("kernels", [])]
    for k in kernels:
        if k.get("target"):
            continue
        found = [n for n in tree_names if is_target(str(k.get("name", "")), [n])]
        if found:
            k["elsewhere"] = tree_names[found[0]]
    return {**profile, "kernels": kernels}


def ranking(profile: dict[str, Any], labels: dict[str, str] | None = None) -> list[list[str]]:
    """Rows of the profiled kernels by share of device time: share, total µs, launches, µs per
    launch, where it is defined (the target's file, or ``FILE (not the target's)``; empty when
    no source of the tree defines it: a library's, the harness's), [the backend's label of
    it (``labels``: name → what it belongs to, e.g. a ggml op),] name."""
    def where(k: dict[str, Any]) -> str:
        if k.get("file"):
            return str(k["file"])
        return f"{k['elsewhere']} (not the target's)" if k.get("elsewhere") else ""

    return [[f"{k.get('share_pct', 0.0):.1f} %", f"{float(k.get('total_us', 0.0)):.1f}",
             str(k.get("launches", "?")), f"{float(k.get('mean_us', 0.0)):.2f}", where(k),
             *([labels.get(str(k.get("name", "")), "")] if labels is not None else []),
             str(k.get("name", "?"))]
            for k in profile.get("kernels", [])]


def suggestion(profile: dict[str, Any]) -> str | None:
    """When the program's largest kernel is defined in the tree outside the target, say so:
    Amdahl bounds a target by its share."""
    kernels = sorted(profile.get("kernels", []), key=lambda k: -float(k.get("share_pct", 0.0)))
    if not kernels or kernels[0].get("target") or not kernels[0].get("elsewhere"):
        return None
    top = kernels[0]
    mine = sum(float(k.get("share_pct", 0.0)) for k in kernels if k.get("target"))
    return (f"the largest kernel, {str(top.get('name', '?'))[:60]} ({top['share_pct']:.1f} % "
            f"of device time), is defined in {top['elsewhere']}, outside this target "
            f"({mine:.1f} %): a target with that file editable can gain more")
