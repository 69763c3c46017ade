"""torch.profiler's tables, read: the device time of each kernel (``parse_profiler_table``),
the model's Triton kernels ranked by their share (``rank_kernels``, annotations left out) and
ranking.txt, libraries in rows of their own. Pure, like inductor_parse.py: CI reads recorded
tables without a GPU."""

from __future__ import annotations

import re

import attrs

_UNITS_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def _time_us(text: str) -> float | None:
    m = re.fullmatch(r"([0-9.]+)\s*(ns|us|ms|s)", text.strip())
    return float(m.group(1)) * _UNITS_US[m.group(2)] if m else None


@attrs.frozen
class ProfileRow:
    name: str
    device_us: float  # self device (GPU) time, summed over calls
    calls: int


def parse_profiler_table(text: str) -> list[ProfileRow]:
    """Rows of ``prof.key_averages().table()`` with their self device time and call count.

    The table's columns are found by header name ("Self CUDA" or "Self XPU"/"Self Device" on
    other builds, and "# of Calls"), so the parser survives column changes between versions.
    Long names are cut by the table; the cut name is kept as printed (ranking matches prefixes).
    A row with self CPU time is a CPU op (``aten::addmm``, a Triton kernel's launching op):
    its self device time is that of the kernels it launched, which have rows of their own
    (self CPU 0), so it is left out (seen on the H200: ``aten::addmm`` repeating its two cuBLAS
    kernels' 14.0 ms doubled the total).
    """
    lines = text.splitlines()
    header_i = next((i for i, line in enumerate(lines)
                     if "Name" in line and "# of Calls" in line), None)
    if header_i is None:
        raise ValueError("not a torch.profiler key_averages table (no 'Name ... # of Calls' header)")
    dash = next((line for line in lines[header_i + 1:header_i + 2] if set(line.strip()) <= {"-", " "}), None)
    if dash is None:
        dash = next(line for line in lines[:header_i] if set(line.strip()) <= {"-", " "} and line.strip())
    # Column extents come from the dash rule under the header ("------  ------  ...").
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", dash)]
    header = lines[header_i]
    titles = [header[a:b + 2].strip() for a, b in spans]
    self_dev = next((i for i, t in enumerate(titles)
                     if re.fullmatch(r"Self (CUDA|XPU|Device|MTIA)", t)), None)
    calls_i = next((i for i, t in enumerate(titles) if t == "# of Calls"), None)
    self_cpu = next((i for i, t in enumerate(titles) if t == "Self CPU"), None)
    if self_dev is None or calls_i is None:
        raise ValueError(f"profiler table has no self device time or call count column: {titles}")
    rows: list[ProfileRow] = []
    for line in lines[header_i + 2:]:
        if not line.strip() or set(line.strip()) <= {"-"} or line.startswith("Self CPU time total"):
            continue
        cells = [line[a:b + 2].strip() for a, b in spans]
        if len(cells) <= max(self_dev, calls_i):
            continue
        t = _time_us(cells[self_dev])
        if t is None or not cells[calls_i].isdigit():
            continue
        if self_cpu is not None and (_time_us(cells[self_cpu]) or 0.0) > 0.0:
            continue  # a CPU op: its kernels are rows of their own
        rows.append(ProfileRow(cells[0], t, int(cells[calls_i])))
    return rows


@attrs.frozen
class Ranked:
    name: str
    time_us: float
    calls: int
    share: float  # of all device time in the profiled steps


# Rows that are ranges, not GPU work: the profiler's step marker and record_function ranges
# (Inductor's own among them) get a GPU-side twin spanning the kernels they enclose, so counting
# them would count those kernels twice (a model with one kernel showed a 50 % share).
ANNOTATION = re.compile(r"ProfilerStep(#\d+|\*)|## .* ##|Torch-Compiled Region.*|CompiledFunction.*")


def is_annotation(name: str) -> bool:
    return ANNOTATION.fullmatch(name.strip()) is not None


def rank_kernels(kernel_names: list[str], rows: list[ProfileRow]) -> tuple[list[Ranked], float]:
    """Inductor's Triton kernels ranked by their share of device time: every GPU kernel,
    memcpy and memset counted, annotation ranges (ProfilerStep#N, record_function) not.

    Returns (ranked Triton kernels, total device time in µs). A table row whose name was cut
    ("triton_poi_fused_add_..." ending in "...") matches the kernel it is a prefix of.
    """
    # a profiler table lists a Triton kernel twice: the launching CPU op (the kernel's time as
    # its self device time) and the kernel itself, same name, time and calls: one kernel. Rows
    # that only share a name (the table cuts long names) are different kernels.
    rows = list({(r.name, r.device_us, r.calls): r for r in rows
                 if not is_annotation(r.name)}.values())
    total = sum(r.device_us for r in rows)
    ranked: list[Ranked] = []
    for name in kernel_names:
        hits = [r for r in rows if r.device_us > 0 and (
            r.name == name or (r.name.endswith("...") and name.startswith(r.name[:-3])))]
        t = sum(r.device_us for r in hits)
        calls = max((r.calls for r in hits), default=0)
        ranked.append(Ranked(name, t, calls, t / total if total > 0 else 0.0))
    ranked.sort(key=lambda r: (-r.time_us, r.name))
    return ranked, total


# What a non-Triton device kernel is, by its name: the libraries a model's time also goes to.
LIBRARY_KINDS = (
    (("Memcpy", "Memset", "memcpy", "memset"), "copy/set"),
    (("flash", "fmha", "attention", "attn", "sdpa", "cudnn_generated_fort_native_sdpa"),
     "attention library (cuDNN/flash)"),
    (("convolve", "conv2d", "conv3d", "fprop", "dgrad", "wgrad", "implicit_gemm", "cudnn"),
     "convolution (cuDNN)"),
    (("gemm", "cutlass", "xmma", "nvjet", "cublas", "Kernel2", "splitKreduce", "sm90_", "sm80_"),
     "GEMM (cuBLAS/CUTLASS)"),
    (("at::native", "elementwise", "reduce_kernel", "vectorized", "index"), "ATen kernel"),
)
LIBRARY_ROW_MIN_SHARE = 0.005  # smaller library kernels are summed in one row


def library_kind(name: str) -> str:
    """The kind of a device kernel that is not one of the captured Triton kernels."""
    if name.startswith("triton_"):  # a Triton kernel of Inductor's not in the wrappers (a template)
        return "Triton, not captured"
    for words, kind in LIBRARY_KINDS:
        if any(w in name for w in words):
            return kind
    return "library"


def ranking_table(ranked: list[Ranked], total_us: float, steps: int = 1,
                  others: list[Ranked] | None = None, name_width: int = 0) -> str:
    """A readable table: rank, share, time per step, calls per step, kernel. ``others`` (device
    kernels that are not Inductor's Triton kernels) follow as library rows, each named with its
    kind, so that the shares add up to the device time; the small ones are summed in one row."""
    def cut(name: str) -> str:
        return name if not name_width or len(name) <= name_width else name[:name_width - 1] + "…"

    out = [f"{'#':>3}  {'share':>6}  {'us/step':>9}  {'calls':>5}  kernel"]
    for i, r in enumerate(ranked, 1):
        out.append(f"{i:>3}  {100 * r.share:5.1f}%  {r.time_us / steps:9.1f}  "
                   f"{r.calls // max(steps, 1):>5}  {r.name}")
    triton_share = sum(r.share for r in ranked)
    libraries = sorted(others or [], key=lambda r: -r.time_us)
    shown = [r for r in libraries if r.share >= LIBRARY_ROW_MIN_SHARE]
    rest = libraries[len(shown):]
    for r in shown:
        out.append(f"{'lib':>3}  {100 * r.share:5.1f}%  {r.time_us / steps:9.1f}  "
                   f"{r.calls // max(steps, 1):>5}  [{library_kind(r.name)}] {cut(r.name)}")
    if rest:
        out.append(f"{'lib':>3}  {100 * sum(r.share for r in rest):5.1f}%  "
                   f"{sum(r.time_us for r in rest) / steps:9.1f}  "
                   f"{sum(r.calls for r in rest) // max(steps, 1):>5}  "
                   f"[library] {len(rest)} more kernels under {100 * LIBRARY_ROW_MIN_SHARE:g}% each")
    line = f"Triton kernels: {100 * triton_share:.1f}% of {total_us / steps:.1f} us device time per step"
    if libraries:
        line += (f"; libraries and copies: {100 * sum(r.share for r in libraries):.1f}% "
                 "(not editable here)")
    out.append(line)
    return "\n".join(out) + "\n"
