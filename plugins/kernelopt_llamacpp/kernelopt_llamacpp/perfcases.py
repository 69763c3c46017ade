"""Perf cases generated from test-backend-ops' own test structs: any op whose test struct the
tool's source has can be timed, at a shape a model dispatches, with no hand-written entry.

Whether an op can be timed is read from the source before anything is built:

* the op's **perf cases**: a ``new test_X(...)`` in ``make_test_cases_perf()`` whose struct
  tests the op (``timed_by_perf_set``);
* else its **test struct** (``struct_for``): ``test_unary``/``test_glu`` for a unary/GLU op
  (the op is the constructor's enum argument), ``test_<op>`` by name, else the struct whose
  ``build_graph`` computes its ``out`` with ``ggml_<op>(``. Its constructor's parameters are
  read with their defaults, and a case is written with the op's enum or function where a
  parameter takes one, the shape's type in the first ``ggml_type``, the shape in the first
  ``std::array<int64_t, 4>``, no broadcast in ``nr`` (a model's second source's broadcast,
  when given), and every other parameter at its default
  (``generate``; ROPE's ``n_dims`` is the shape's first dimension, a whole head rotated); the
  shape goes only into a 4-d array whose name starts with ``ne`` (``ne``,
  ``ne_a``, ``ne_src``: test_mul_mat's m/n/k and permutation are not a shape). A parameter
  without a default that none of these fills means the case cannot be written: the op cannot
  be timed, and discover says so before any build. A written case compiles where the struct's
  defaults do; whether it runs (a default that does not fit the shape) the first bench shows.

The harness (harness.py) appends the generated cases to the perf set.
"""

from __future__ import annotations

import re

import attrs

from kernelopt_llamacpp.reach import matching_brace

DEFAULT_NE = (4096, 512, 1, 1)  # a 7B-class prompt's hidden state: 4096 wide, 512 tokens
DEFAULT_TYPE = "GGML_TYPE_F32"

_STRUCT = re.compile(r"^struct (test_\w+)\s*:\s*public\s+test_\w+\s*\{", re.M)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_PERF_START = re.compile(r"make_test_cases_perf\(\)\s*\{")


@attrs.frozen
class Param:
    type: str
    name: str
    default: str | None


@attrs.frozen
class TestStruct:
    name: str
    params: tuple[Param, ...]
    body: str


def structs(source: str) -> dict[str, TestStruct]:
    """Every ``struct test_X : public test_case`` with its constructor's parameters."""
    found: dict[str, TestStruct] = {}
    for match in _STRUCT.finditer(source):
        name = match.group(1)
        body = source[match.end() - 1:matching_brace(source, match.end() - 1)]
        params = _constructor(body, name)
        if params is not None:
            found[name] = TestStruct(name, params, body)
    return found


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside (), <>, {} and []."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "(<{[":
            depth += 1
        elif ch in ")>}]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    return [p.strip() for p in parts]


def _constructor(body: str, name: str) -> tuple[Param, ...] | None:
    match = re.search(rf"^\s*{name}\s*\(", body, re.M)
    if match is None:
        return None
    depth, i = 1, match.end()
    while i < len(body) and depth:
        depth += {"(": 1, ")": -1}.get(body[i], 0)
        i += 1
    params = []
    for part in _split_top(_COMMENT.sub(" ", body[match.end():i - 1])):
        part = part.strip()
        if not part:
            continue
        declaration, _, default = part.partition("=")
        words = declaration.strip()
        head = re.match(r"^(.*?)(\w+)\s*$", words, re.S)
        if head is None:
            return None
        params.append(Param(" ".join(head.group(1).split()), head.group(2),
                            default.strip() or None))
    return tuple(params)


def struct_for(source: str, op: str, enum: str = "",
               found: dict[str, TestStruct] | None = None) -> TestStruct | None:
    """The test struct that computes ``op`` (test-backend-ops' name: NORM, SILU, SWIGLU;
    ``enum``: its dispatch case, GGML_UNARY_OP_SILU, which the tool may never spell out)."""
    found = structs(source) if found is None else found
    if enum.startswith("GGML_UNARY_OP_") and "test_unary" in found:
        return found["test_unary"]
    if enum.startswith("GGML_GLU_OP_") and "test_glu" in found:
        return found["test_glu"]
    named = found.get(f"test_{op.lower()}")
    if named is not None:
        return named
    # a binary op: the struct that takes the op's function (test_bin_bcast(ggml_add, ...)),
    # where the tool passes ggml_<op> as a value (`for (auto op : {ggml_add, ggml_mul})`)
    if re.search(rf"\bggml_{op.lower()}\b(?!\s*\()", source):
        for struct in found.values():
            if struct.params and struct.params[0].type == "op_t":
                return struct
    call = re.compile(rf"\bout\s*=\s*ggml_{op.lower()}\s*\(")
    computing = sorted((s for s in found.values() if call.search(s.body)), key=lambda s: len(s.name))
    return computing[0] if computing else None


def _perf_body(source: str) -> str:
    start = _PERF_START.search(source)
    if start is None:
        return ""
    end = source.find("\n}\n", start.end())
    return source[start.end():end if end >= 0 else len(source)]


def timed_by_perf_set(source: str, op: str, struct: TestStruct | None) -> bool:
    """Whether ``make_test_cases_perf()`` already builds a case of ``op``."""
    if struct is None:
        return False
    body = _perf_body(source)
    calls = re.findall(rf"new {struct.name}\s*\(([^;]*)", body)
    if struct.name in ("test_unary", "test_glu"):
        return any(re.search(rf"\bGGML_(?:UNARY|GLU)_OP_{op}\b", c) for c in calls)
    if struct.params and struct.params[0].type == "op_t":
        return any(re.search(rf"^\s*ggml_{op.lower()}\b", c) for c in calls)
    return bool(calls)


class CannotGenerate(ValueError):
    """The op's perf case cannot be written from its struct (the message says why)."""


def _broadcast(ne: tuple[int, ...], ne_b: tuple[int, ...] | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(shape, repeats) of a binary op whose second source ``ne_b`` is broadcast over ``ne``
    (test_bin_bcast's ``ne`` and ``nr``: a = ne × nr, b = ne); no broadcast when it does not
    divide."""
    if ne_b is None or len(ne_b) != len(ne) or any(b <= 0 or a % b for a, b in zip(ne, ne_b, strict=True)):
        return ne, (1,) * len(ne)
    return ne_b, tuple(a // b for a, b in zip(ne, ne_b, strict=True))


def _is_array(kind: str, element: str) -> bool:
    return re.fullmatch(rf"(?:const\s+)?std::array<{element},\s*4>", kind.strip()) is not None


def generate(source: str, op: str, ne: tuple[int, ...] = DEFAULT_NE, type_: str = DEFAULT_TYPE,
             struct: TestStruct | None = None, enum: str = "",
             ne_b: tuple[int, ...] | None = None) -> str:
    """The C++ expression of a perf case of ``op`` at ``ne``/``type_``:
    ``new test_norm(GGML_TYPE_F32, {4096, 512, 1, 1}, false, 1e-6f, false)``. ``ne_b``: a
    binary op's second source, broadcast over ``ne`` where the struct takes repeats (``nr``)."""
    struct = struct or struct_for(source, op, enum)
    if struct is None:
        raise CannotGenerate(f"test-backend-ops.cpp has no test struct that computes {op} "
                             f"(no test_{op.lower()}, no struct whose out is ggml_{op.lower()}(...))")
    repeats = (1,) * len(ne)
    if any(p.name == "nr" and _is_array(p.type, "int") for p in struct.params):
        ne, repeats = _broadcast(ne, ne_b)
    args: list[str] = []
    filled_type = filled_ne = False
    for param in struct.params:
        kind = param.type.replace("const ", "").strip()
        value: str | None
        if kind in ("ggml_unary_op", "ggml_glu_op"):
            value = enum or f"GGML_{'UNARY' if kind == 'ggml_unary_op' else 'GLU'}_OP_{op}"
        elif kind == "op_t":
            value = f"ggml_{op.lower()}"
        elif kind == "ggml_type" and not filled_type:
            value, filled_type = type_, True
        elif _is_array(kind, "int64_t") and param.name.startswith("ne") and not filled_ne:
            value, filled_ne = "{" + ", ".join(str(n) for n in ne) + "}", True
        elif param.name == "n_dims" and kind == "int":
            value = str(ne[0])  # ROPE: the whole head rotated (a partial rotary's is not known)
        elif param.name == "nr" and _is_array(kind, "int"):
            value = "{" + ", ".join(str(n) for n in repeats) + "}"
        else:
            value = param.default
        if value is None:
            raise CannotGenerate(f"{struct.name}'s parameter `{param.type} {param.name}` has no "
                                 f"default and is not one kernelopt fills (type, shape, op)")
        args.append(value)
    if not filled_ne:
        raise CannotGenerate(f"{struct.name} takes no 4-d shape (a `std::array<int64_t, 4> ne…` "
                             "parameter): a case at the model's shape cannot be written")
    return f"new {struct.name}({', '.join(args)})"


@attrs.frozen
class Timing:
    """How ``op`` is timed: by the tool's own perf cases, or by ``generated`` (C++), or not
    at all (``why``)."""

    op: str
    perf_set: bool
    generated: str | None = None
    why: str = ""

    @property
    def timable(self) -> bool:
        return self.perf_set or self.generated is not None


def timing(source: str, op: str, enum: str = "", ne: tuple[int, ...] | None = None,
           type_: str = DEFAULT_TYPE, ne_b: tuple[int, ...] | None = None) -> Timing:
    """How ``op`` can be timed in this test-backend-ops.cpp. ``ne`` (a model's shape; ``ne_b``
    its second source's) adds a generated case even where the perf set has cases of the op."""
    struct = struct_for(source, op, enum)
    in_perf_set = timed_by_perf_set(source, op, struct)
    if in_perf_set and ne is None:
        return Timing(op, True)
    try:
        case = generate(source, op, ne or DEFAULT_NE, type_, struct, enum, ne_b)
    except CannotGenerate as exc:
        return Timing(op, in_perf_set, why=str(exc))
    return Timing(op, in_perf_set, case)


def written_shape(case: str) -> tuple[int, ...] | None:
    """The shape a written case times (its first ``{a, b, c, d}`` of four integers): what the
    pin looks for among the tool's printed cases."""
    m = re.search(r"\{(\d+), (\d+), (\d+), (\d+)\}", case)
    return tuple(int(n) for n in m.groups()) if m else None
