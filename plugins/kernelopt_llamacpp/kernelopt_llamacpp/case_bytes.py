"""The least bytes a test-backend-ops case moves where the tool prints FLOPs, not kB/run
(``MUL_MAT``: ``262.14 MFLOP/run``): its operands read once and its output written once, from the
case's parameters (test-backend-ops.cpp's test_mul_mat: a is k×m×bs, b k×n×bs·nr, the output
f32 m×n×bs·nr) and ggml's type sizes (gguf's table for the quantized types; without the gguf
package, the float types alone). A lower bound, as the roofline gate needs."""

from __future__ import annotations

import re

FLOAT_BYTES = {"f32": 4, "f16": 2, "bf16": 2}
PARAM = re.compile(r"(\w+)=(\[[^\]]*\]|[^,]*)")


def params_of(params: str) -> dict[str, str]:
    """``type_a=f16,m=32000,bs=[1,1],...`` -> {"type_a": "f16", "m": "32000", "bs": "[1,1]"}."""
    return {key: value for key, value in PARAM.findall(params)}


def row_bytes(type_name: str, elements: int) -> int | None:
    """Bytes of one row of ``elements`` values of a ggml type; None: unknown type or a row that
    is no whole number of its blocks."""
    if type_name in FLOAT_BYTES:
        return elements * FLOAT_BYTES[type_name]
    try:
        from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType  # kernelopt-llamacpp[gguf]
    except ImportError:
        return None
    try:
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType[type_name.upper()]]
    except KeyError:
        return None
    return elements // block * size if elements % block == 0 else None


def _pair(text: str) -> tuple[int, int]:
    first, second = (int(v) for v in text.strip("[]").split(","))
    return first, second


def _mul_mat(op: str, p: dict[str, str]) -> tuple[int, int, int, int, int] | None:
    """A MUL_MAT case's m, n, k and its matrices, a's (bs) and b's and the output's (bs·nr);
    None for another op or params that do not read."""
    if op != "MUL_MAT":
        return None
    try:
        m, n, k = int(p["m"]), int(p["n"]), int(p["k"])
        bs, nr = _pair(p.get("bs", "[1,1]")), _pair(p.get("nr", "[1,1]"))
    except (KeyError, ValueError):
        return None
    return m, n, k, bs[0] * bs[1], bs[0] * nr[0] * bs[1] * nr[1]


def case_flops(op: str, params: str) -> int | None:
    """A MUL_MAT case's FLOPs as test-backend-ops counts them (test_mul_mat::op_flops:
    2·m·n·k per matrix, bs·nr matrices)."""
    shape = _mul_mat(op, params_of(params))
    if shape is None:
        return None
    m, n, k, _, batch_b = shape
    return 2 * m * n * k * batch_b


def case_bytes(op: str, params: str) -> int | None:
    """The least bytes the case moves; None where not known (another op, an unknown type)."""
    p = params_of(params)
    shape = _mul_mat(op, p)
    if shape is None:
        return None
    m, n, k, batch_a, batch_b = shape
    a_row, b_row = row_bytes(p.get("type_a", ""), k), row_bytes(p.get("type_b", ""), k)
    if a_row is None or b_row is None:
        return None
    return a_row * m * batch_a + b_row * n * batch_b + 4 * m * n * batch_b
