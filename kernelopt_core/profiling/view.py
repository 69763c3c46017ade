"""What a profile says, as data and as tables (pure: the report and ``kernelopt profile``
render with it; kernelopt_core.profiling.bench runs the profiler).

A profiler's ``parse`` gives kernels (parsers.KernelProfile as JSON). The target's
kernels are those its backend says its editable files define (``kernel_names``, the
``DefinesKernels`` capability: CUDA's ``__global__`` functions, Triton's ``@triton.jit`` ones);
every other kernel the bench launched (input fills, cache flushes, the library's
and the harness's own) is shown apart, so a metric is never summed across kernels.
The table's columns are ncu's, or any other profiler's time and share then the metric columns
its ``parse`` declared (parsers.MetricColumn); a metric a kernel lacks shows as
missing, never as 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, TypeGuard

from kernelopt_core.profiling.parsers import DURATION, MetricColumn

SOURCE_SUFFIXES = (".cu", ".cuh", ".hip", ".cpp", ".cc", ".h", ".hpp", ".py")


def sources(files: dict[str, bytes]) -> dict[str, bytes]:
    """The files that can define a kernel (by suffix)."""
    return {path: data for path, data in files.items() if path.endswith(SOURCE_SUFFIXES)}


def is_target(kernel: str, names: Iterable[str]) -> bool:
    """A profiler's kernel name (demangled: ``void ns::k<4>(float *, int)``, or bare) names one
    of ``names``."""
    return any(re.search(rf"(?<![\w]){re.escape(n)}\s*(?:<|\(|$)", kernel) for n in names)


def annotate(parsed: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """The profiler's kernels marked target or not (``file``: where the target's is defined),
    with their share of the profiled device time. A metric stays the kernel's own: none is
    summed across kernels. The columns ``parse`` declared, as JSON (they are journaled with
    the kernels); ValueError naming a malformed one."""
    columns = [c.to_json() for c in declared(parsed)]
    kernels = [dict(k) for k in parsed.get("kernels", [])]
    total = sum(float(k.get("total_us", 0.0)) for k in kernels) or 1.0
    for k in kernels:
        defined = [n for n in names if is_target(str(k.get("name", "")), [n])]
        k["target"] = bool(defined)
        if defined:
            k["file"] = names[defined[0]]
        k["share_pct"] = round(100.0 * float(k.get("total_us", 0.0)) / total, 2)
    return {**parsed, "kernels": kernels, "target_kernels": sorted(names),
            **({"columns": columns} if columns else {})}


SHARED_MEM = "launch__shared_mem_per_block"  # ncu reads it as _static and _dynamic
# ncu's table (its default: ncu declares no columns, and profiles recorded before profilers
# could declare any have none)
NCU_COLUMNS = (
    MetricColumn("µs/launch", DURATION, 1.0, "{:.2f}"),
    MetricColumn("DRAM read MB", "dram__bytes_read.sum", 1e-6, "{:.1f}"),
    MetricColumn("DRAM write MB", "dram__bytes_write.sum", 1e-6, "{:.1f}"),
    MetricColumn("DRAM % peak", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
    MetricColumn("SM % peak", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    MetricColumn("occupancy %", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    MetricColumn("regs/thread", "launch__registers_per_thread", 1.0, "{:.0f}"),
    MetricColumn("smem/block B", SHARED_MEM, 1.0, "{:.0f}"),
)
# any other profiler's, before the columns it declares: what every KernelProfile has
BASE_COLUMNS = (MetricColumn("µs/launch", "mean_us", 1.0, "{:.2f}"),
                MetricColumn("share %", "share_pct", 1.0, "{:.1f}"))
# a column's metric the kernel's metrics lack, read from the record itself
_RECORD = {"mean_us": "mean_us", "total_us": "total_us", "share_pct": "share_pct",
           DURATION: "mean_us"}
MISSING = "—"  # a metric the kernel lacks: never shown as 0
_STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio")


def declared(parsed: dict[str, Any]) -> list[MetricColumn]:
    """The columns ``parse`` declared (``"columns"``: MetricColumns, their JSON or tuples);
    ValueError naming a malformed one."""
    raw = parsed.get("columns") or []
    if not isinstance(raw, (list, tuple)):
        raise ValueError(f"columns: a list of columns, not {type(raw).__name__}")
    return [MetricColumn.of(c) for c in raw]


def layout(profile: dict[str, Any]) -> tuple[list[MetricColumn], bool]:
    """The profile's columns after profile, kernel and launches: ncu's, or µs/launch and share
    of device time; then those its profiler declared. And whether ncu's top stalls follow."""
    ncu = profile.get("tool") == "ncu"
    columns = list(NCU_COLUMNS if ncu else BASE_COLUMNS)
    raw = profile.get("columns")
    for entry in raw if isinstance(raw, list) else []:
        try:  # checked when recorded (annotate); a journal edited since costs a column, not the report
            column = MetricColumn.of(entry)
        except ValueError:
            continue
        if column.header not in {c.header for c in columns}:  # one column per header
            columns.append(column)
    return columns, ncu


def stalls(metrics: dict[str, float], top: int = 3) -> list[tuple[str, float]]:
    """The largest warp-stall reasons (cycles stalled per issued instruction), 'selected'
    (issuing) left out."""
    found = [(m.group(1), v) for k, v in metrics.items() if (m := _STALL.fullmatch(k))]
    return sorted(((r, v) for r, v in found if r != "selected" and v > 0),
                  key=lambda rv: -rv[1])[:top]


def value(kernel: dict[str, Any], metric: str) -> float | None:
    """The kernel's ``metric`` (per launch), None when the profiler did not measure it: never
    0 in its place. ncu's shared memory is the static and the dynamic, whichever were read."""
    metrics = kernel.get("metrics") or {}
    if metric == SHARED_MEM and metric not in metrics:
        parts = [metrics.get(f"{SHARED_MEM}_{kind}") for kind in ("static", "dynamic")]
        found = [v for v in parts if _number(v)]
        return float(sum(found)) if found else None
    got = metrics.get(metric)
    if not _number(got) and metric in _RECORD:
        got = kernel.get(_RECORD[metric])
    return float(got) if _number(got) else None


def _number(v: object) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _cells(kernel: dict[str, Any], columns: list[MetricColumn], with_stalls: bool) -> list[str]:
    cells = []
    for column in columns:
        v = value(kernel, column.metric)
        cells.append(MISSING if v is None else column.fmt.format(v * column.scale))
    if with_stalls:
        top = stalls(dict(kernel.get("metrics") or {}))
        cells.append(", ".join(f"{r} {v:.1f}" for r, v in top) or MISSING)
    return cells


def kernel_table(profiles: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Markdown: each labelled profile's target kernels (every kernel when none is the
    target's), then one line for the kernels shown apart. The columns: each profile's
    (``layout``), the first of a header kept."""
    columns: list[MetricColumn] = []
    with_stalls = False
    for _label, profile in profiles:
        its, ncu = layout(profile)
        columns += [c for c in its if c.header not in {k.header for k in columns}]
        with_stalls = with_stalls or ncu
    header = ["profile", "kernel", "launches", *(c.header.replace("|", "\\|") for c in columns),
              *(["top stalls"] if with_stalls else [])]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    apart = []
    for label, profile in profiles:
        kernels = profile.get("kernels", [])
        mine = [k for k in kernels if k.get("target")] or kernels
        for k in mine:
            name = str(k.get("name", "?"))
            lines.append("| " + " | ".join([label, f"`{name[:60]}`", str(k.get("launches", "?")),
                                            *_cells(k, columns, with_stalls)]) + " |")
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
