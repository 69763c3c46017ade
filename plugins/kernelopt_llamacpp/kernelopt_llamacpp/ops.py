"""The op table: which ggml-cuda source files compute a GGML op, derived from the tree itself.

``ggml_cuda_compute_forward`` in ``ggml/src/ggml-cuda/ggml-cuda.cu`` is one ``switch`` over
``dst->op`` (with nested switches for the unary and GLU ops) whose cases call one function
each. We read that switch, find the ``.cu`` file that *defines* each function, and add the
``.cuh`` of the same stem (the ``CUDA_*_BLOCK_SIZE`` defines live there). Nothing is
hard-coded per op except what the dispatch cannot say by itself (``ROUTED``): MUL_MAT and
MUL_MAT_ID are decided at run time inside ggml-cuda.cu between custom kernels and cuBLAS.
An op whose function hands the work to cuBLAS is reported as a library op, not edited.

Op names are the ones ``test-backend-ops -o`` takes (``ggml_op_desc``): ``GGML_OP_SOFT_MAX`` →
``SOFT_MAX``, ``GGML_UNARY_OP_SILU`` → ``SILU``, ``GGML_GLU_OP_SWIGLU`` → ``SWIGLU``.

``python -m kernelopt_llamacpp.ops REPO`` prints the table (markdown).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import attrs

CUDA_DIR = "ggml/src/ggml-cuda"
DISPATCH = f"{CUDA_DIR}/ggml-cuda.cu"
DISPATCH_FUNCTION = "ggml_cuda_compute_forward"

CASE = re.compile(r"\bcase\s+(GGML_(?:UNARY_OP|GLU_OP|OP)_[A-Z0-9_]+)\s*:")
CALL = re.compile(r"\b(ggml_cuda_\w+)\s*\(")
KERNEL = re.compile(r"__global__\s+(?:\w+\s+)*?(\w+)\s*\(")
LIBRARY_CALL = re.compile(r"\b(cublas|cublasLt|cufft|cusparse)\w*\s*\(", re.I)


@attrs.frozen
class Route:
    """Where one op is computed. ``kind``: kernel (editable files), library (not edited),
    mixed (custom kernels for some cases, a library for others), none (no kernel: views)."""

    op: str
    enum: str
    function: str
    kind: str
    files: tuple[str, ...] = ()
    library: str = ""
    note: str = ""


# What the dispatch alone cannot tell: these functions are defined in ggml-cuda.cu and choose
# at run time (by type, batch size and compute capability) between custom kernels and cuBLAS.
# Read from ggml_cuda_mul_mat / ggml_cuda_mul_mat_id of llama.cpp as vendored in
# llama_cpp_python 0.3.36 (docs/llamacpp.md).
ROUTED: dict[str, tuple[tuple[str, ...], str, str]] = {
    "ggml_cuda_mul_mat": (
        ("mmq", "mmvq", "mmf", "mmvf"), "cuBLAS",
        "quantized types go to mmq/mmvq; small-batch f16/f32/bf16 to mmf/mmvf; everything "
        "else (large f16/f32 GEMMs) to cuBLAS, which is not edited"),
    "ggml_cuda_mul_mat_id": (
        ("mmid", "mmq", "mmvq", "mmf", "mmvf"), "cuBLAS",
        "expert routing in mmid; the per-expert products as for MUL_MAT (cuBLAS not edited)"),
}


def op_name(enum: str) -> str:
    for prefix in ("GGML_UNARY_OP_", "GGML_GLU_OP_", "GGML_OP_"):
        if enum.startswith(prefix):
            return enum[len(prefix):]
    return enum


def function_body(text: str, name: str) -> str | None:
    """Body of the *definition* of ``name`` in C/C++ ``text`` (brace-matched), or None."""
    for match in re.finditer(rf"^[^\n;#]*?\b{re.escape(name)}\s*\(", text, re.M):
        i = match.end()
        depth = 1
        while i < len(text) and depth:  # skip the parameter list
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        rest = text[i:i + 200].lstrip()
        if not rest.startswith("{"):
            continue  # a declaration or a call
        start = text.index("{", i)
        depth, j = 0, start
        while j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
            if depth == 0:
                return text[start:j]
        return text[start:]
    return None


def dispatch_cases(source: str) -> list[tuple[str, str | None]]:
    """(case enum, called function or None) for every case of the compute-forward switch."""
    body = function_body(source, DISPATCH_FUNCTION)
    if body is None:
        raise ValueError(f"no definition of {DISPATCH_FUNCTION} found")
    out: list[tuple[str, str | None]] = []
    pending: list[str] = []
    for line in body.splitlines():
        code = line.split("//", 1)[0]
        if re.search(r"\bswitch\s*\(", code):
            pending = []  # GGML_OP_UNARY / GGML_OP_GLU: the nested cases name the real ops
            continue
        pending += CASE.findall(code)
        call = CALL.search(code)
        if call and pending:
            out += [(enum, call.group(1)) for enum in pending]
            pending = []
        elif re.search(r"\b(break|return)\b", code) and pending:
            out += [(enum, None) for enum in pending]  # views and no-ops: no kernel
            pending = []
    return out


def _definitions(repo: Path) -> dict[str, tuple[str, str]]:
    """function name → (file relative to the repo, its body) for ggml_cuda_* definitions."""
    found: dict[str, tuple[str, str]] = {}
    cuda = repo / CUDA_DIR
    for path in sorted(cuda.glob("*.cu")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for name in set(re.findall(r"^[^\n;#(]*?\b(ggml_cuda_\w+)\s*\(", text, re.M)):
            if name in found:
                continue
            body = function_body(text, name)
            if body is not None:
                found[name] = (path.relative_to(repo).as_posix(), body)
    return found


def _with_headers(repo: Path, stems: tuple[str, ...]) -> tuple[str, ...]:
    files = []
    for stem in stems:
        for ext in (".cu", ".cuh"):
            rel = f"{CUDA_DIR}/{stem}{ext}"
            if (repo / rel).is_file():
                files.append(rel)
    return tuple(files)


def op_table(repo: Path) -> dict[str, Route]:
    """Every op the CUDA backend dispatches, by test-backend-ops name."""
    dispatch = repo / DISPATCH
    source = dispatch.read_text(encoding="utf-8", errors="replace")
    definitions = _definitions(repo)
    table: dict[str, Route] = {}
    for enum, function in dispatch_cases(source):
        name = op_name(enum)
        if name in table:
            continue
        if function is None:
            table[name] = Route(name, enum, "", "none", note="no kernel (a view or a no-op)")
            continue
        if function in ROUTED:
            stems, library, note = ROUTED[function]
            table[name] = Route(name, enum, function, "mixed", _with_headers(repo, stems),
                                library, note)
            continue
        if function not in definitions:  # e.g. defined in a header: not guessed at
            table[name] = Route(name, enum, function, "none",
                                note=f"{function}'s definition was not found in a .cu file: not edited")
            continue
        file, body = definitions[function]
        stem = Path(file).name.rsplit(".", 1)[0]
        files = _with_headers(repo, (stem,))
        library_call = LIBRARY_CALL.search(body)
        if library_call:
            lib = "cuBLAS" if library_call.group(1).lower().startswith("cublas") else library_call.group(1)
            # one __global__ at most is the batched-GEMM idiom (a kernel that fills pointer
            # arrays for the library): the op is the library's. More: custom kernels too.
            kernels = set(KERNEL.findall((repo / file).read_text(encoding="utf-8", errors="replace")))
            if len(kernels) >= 2:
                table[name] = Route(name, enum, function, "mixed", files, lib,
                                    f"custom kernels for some cases, {lib} for others (not edited)")
            else:
                table[name] = Route(name, enum, function, "library", (), lib,
                                    f"{function} ({file}) hands the work to {lib}: not edited")
        elif file == DISPATCH:  # the dispatch file also decides routing: never a candidate's
            table[name] = Route(name, enum, function, "none",
                                note=f"{function} is defined in ggml-cuda.cu itself: not edited")
        else:
            table[name] = Route(name, enum, function, "kernel", files)
    return table


def editable_ops(table: dict[str, Route]) -> list[str]:
    return sorted(name for name, route in table.items() if route.kind in ("kernel", "mixed"))


def markdown(table: dict[str, Route]) -> str:
    rows = ["| op (`-o`) | dispatch case | function | files | library / note |", "|---|---|---|---|---|"]
    for name in sorted(table):
        r = table[name]
        files = ", ".join(Path(f).name for f in r.files) or "-"
        extra = f"library: {r.library}, not editable" if r.kind == "library" else r.note
        if r.kind == "mixed":
            extra = f"partly library: {r.library} ({r.note})"
        rows.append(f"| {name} | `{r.enum}` | `{r.function or '-'}` | {files} | {extra or ''} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m kernelopt_llamacpp.ops LLAMA_CPP_TREE  (prints the op table)",
              file=sys.stderr)
        return 2
    try:
        print(markdown(op_table(Path(args[0]))))
    except (OSError, ValueError) as exc:
        print(f"kernelopt-llamacpp: {args[0]}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
