"""Which ggml op a profiled kernel belongs to, and the model's ranking by share of device time.

A kernel's name, as a profiler prints it (``void rms_norm_f32<1024, true, false>(const float
*, …)``), is reduced to its function name; the ``.cu``/``.cuh`` of ``ggml/src/ggml-cuda`` that
defines that ``__global__`` is its source file. Its ops are those whose route (ops.py) holds
that file, narrowed to those whose dispatch function passes the kernel's template op argument
(``k_bin_bcast<&op_add>``: ``ggml_cuda_op_add``), then to those whose dispatch function reaches
the kernel through the calls it makes in its file (``ggml_cuda_op_rms_norm`` →
``rms_norm_f32_cuda`` → ``rms_norm_f32``: RMS_NORM, not NORM, though norm.cu serves both;
``unary_gated_op_kernel<&op_silu>`` is SWIGLU's, not SILU's), then to those the kernel's name
spells. A kernel defined nowhere in ggml-cuda is
a library's (cuBLAS's GEMMs: not edited). A ggml-cuda kernel whose file no op's route names
(convert.cu's casts around cuBLAS, quantize.cu's ``quantize_q8_1``) is shown with its file and
no op.

``python -m kernelopt_llamacpp.dispatch REPO NCU_CSV [NCU_CSV ...]`` prints the ranking of
each recording (``ncu --csv --metrics gpu__time_duration.sum …`` of a whole program: every
launch, so the shares add up to the device time of the kernels it ran).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import attrs

from kernelopt_llamacpp.ops import CUDA_DIR, function_body, op_table
from kernelopt_llamacpp.reach import GLOBAL, LAUNCH_BOUNDS

# name stems of the CUDA libraries' kernels (cuBLAS/cuBLASLt GEMMs and their helpers)
_LIBRARY = re.compile(r"^(nvjet|sm\d+_xmma|cutlass|gemv|gemm|dot_kernel|splitKreduce|"
                      r"cublas|ampere_|sm80_|sm90_|Kernel2?$)", re.I)


@attrs.frozen
class Attribution:
    kernel: str  # the function name
    kind: str  # editable | library
    file: str = ""  # its ggml-cuda source, relative to the tree
    ops: tuple[str, ...] = ()
    library: str = ""


_CALLED = re.compile(r"\b(\w+)\s*[(<]")
_TEMPLATE_OP = re.compile(r"\bop_\w+")
REACH_DEPTH = 5  # calls followed from an op's function to the kernels it launches


class Sources:
    """A tree's ggml-cuda sources, read once: where each kernel is defined, the op table, and
    which ops' dispatch functions reach a kernel (launch it through the calls they make)."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.table = op_table(repo)
        self.texts: dict[str, str] = {}
        self.kernels: dict[str, str] = {}  # __global__ name → the file defining it
        cuda = repo / CUDA_DIR
        for path in sorted([*cuda.glob("*.cu"), *cuda.glob("*.cuh")]):
            rel = path.relative_to(repo).as_posix()
            self.texts[rel] = path.read_text(encoding="utf-8", errors="replace")
            for name in GLOBAL.findall(LAUNCH_BOUNDS.sub("", self.texts[rel])):
                self.kernels.setdefault(name, rel)
        self._reached: dict[str, set[str]] = {}

    def reached(self, op: str) -> set[str]:
        """Names the op's dispatch function calls or instantiates, directly or through the
        functions of its own file (kernels among them: ``rms_norm_f32_cuda`` → ``rms_norm_f32``)."""
        if op not in self._reached:
            route, text = self.table[op], self._source(op)
            seen: set[str] = set()
            frontier = [route.function] if route.function else []
            for _ in range(REACH_DEPTH):
                bodies = [function_body(text, name) for name in frontier]
                called = {c for body in bodies if body for c in _CALLED.findall(body)} - seen
                seen |= called
                frontier = sorted(called)
            self._reached[op] = seen
        return self._reached[op]

    def _source(self, op: str) -> str:
        """The op's .cu text (its dispatch function is defined there)."""
        return next((self.texts[f] for f in self.table[op].files if f.endswith(".cu")), "")

    def body(self, op: str) -> str:
        function = self.table[op].function
        return (function_body(self._source(op), function) or "") if function else ""


def function_name(kernel: str) -> str:
    """``void ns::k<1, 2>(float *, int)`` → ``k``; a bare or mangled-free name as it is."""
    name = kernel.strip()
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):  # the parameter list: the first "(" outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    head = name[:cut]
    depth, plain = 0, ""
    for ch in head:  # drop template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            plain += ch
    return plain.split()[-1].split("::")[-1] if plain.split() else name


def attribute(kernel: str, sources: Sources) -> Attribution:
    name = function_name(kernel)
    file = sources.kernels.get(name)
    if file is None:
        library = "cuBLAS" if _LIBRARY.match(name) else "not ggml-cuda"
        return Attribution(name, "library", library=library)
    ops = sorted(op for op, route in sources.table.items() if file in route.files)
    # a template kernel several ops instantiate (k_bin_bcast<&op_add>, unary_gated_op_kernel<
    # &op_silu>): the ops whose dispatch function passes that op argument
    arguments = set(_TEMPLATE_OP.findall(kernel[kernel.find("<"):])) if "<" in kernel else set()
    argued = [op for op in ops if arguments & set(_TEMPLATE_OP.findall(sources.body(op)))]
    ops = argued or ops
    # a file serves several ops (norm.cu: NORM, RMS_NORM, …): those whose dispatch function
    # reaches the kernel (ggml_cuda_op_rms_norm → rms_norm_f32_cuda → rms_norm_f32)
    reaching = [op for op in ops if name in sources.reached(op)]
    ops = reaching or ops
    # else where the kernel's name spells some, the longest of them
    named = [op for op in ops if op.lower() in name.lower()]
    if len(ops) > 1 and named:
        longest = max(len(op) for op in named)
        ops = [op for op in named if len(op) == longest]
    return Attribution(name, "editable", file, tuple(ops))


@attrs.frozen
class Row:
    kernel: str
    launches: int
    total_us: float
    share: float
    attribution: Attribution

    def to_json(self) -> dict[str, object]:
        a = self.attribution
        return {"kernel": self.kernel, "function": a.kernel, "launches": self.launches,
                "total_us": round(self.total_us, 3), "share": round(self.share, 5),
                "kind": a.kind, "file": a.file, "ops": list(a.ops), "library": a.library}


def ranking(kernels: list[tuple[str, int, float]], sources: Sources) -> list[Row]:
    """(kernel name, launches, total µs) per kernel → rows heaviest first, each kernel with its
    share of the summed kernel time and what it belongs to."""
    total = sum(us for _, _, us in kernels) or 1.0
    rows = [Row(name, launches, us, us / total, attribute(name, sources))
            for name, launches, us in kernels]
    return sorted(rows, key=lambda r: -r.total_us)


def by_op(rows: list[Row]) -> list[tuple[str, float, float]]:
    """(op or library, total µs, share) heaviest first: a kernel of several ops (norm.cu's
    kernels serve NORM, RMS_NORM, …) counts for the first listed with the rest named."""
    sums: dict[str, float] = {}
    for row in rows:
        a = row.attribution
        key = ("/".join(a.ops) or f"({Path(a.file).name})") if a.kind == "editable" else a.library
        sums[key] = sums.get(key, 0.0) + row.total_us
    total = sum(sums.values()) or 1.0
    return sorted(((k, us, us / total) for k, us in sums.items()), key=lambda x: -x[1])


def main(argv: list[str] | None = None) -> int:
    from kernelopt_core.api import ncu_kernels

    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print("usage: python -m kernelopt_llamacpp.dispatch LLAMA_CPP_TREE NCU_CSV [NCU_CSV ...]",
              file=sys.stderr)
        return 2
    repo = Path(args[0])
    sources = Sources(repo)
    for csv in args[1:]:
        profiled = ncu_kernels(Path(csv).read_text(errors="replace"))
        rows = ranking([(k.name, k.launches, k.total_us) for k in profiled], sources)
        print(json.dumps({"recording": csv, "kernels": [r.to_json() for r in rows],
                          "ops": [{"op": op, "total_us": round(us, 3), "share": round(share, 5)}
                                  for op, us, share in by_op(rows)]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
