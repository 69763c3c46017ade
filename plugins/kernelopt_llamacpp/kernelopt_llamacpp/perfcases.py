"""Perf cases generated from test-backend-ops' own test structs: any op whose test struct the
tool's source has can be timed, at a shape a model dispatches, with no hand-written entry.

Whether an op can be timed is read from the source before anything is built:

* the op's **perf cases**: a ``new test_X(...)`` in ``make_test_cases_perf()`` whose struct
  tests the op (``timed_by_perf_set``);
* else its **test struct** (``struct_for``): ``test_unary``/``test_glu`` for a unary/GLU op
  (the op is the constructor's enum argument), ``test_<op>`` by name, else the struct whose
  ``build_graph`` computes its ``out`` with ``ggml_<op>(``. Its constructor's parameters are
  read with their defaults, and a case is written (``write``) with the op's enum or function
  where a parameter takes one, the shape in the first ``std::array<int64_t, 4>`` whose name
  starts with ``ne`` (``ne``, ``ne_a``, ``ne_src``), no broadcast in ``nr`` (a model's second
  source's broadcast, when given), sizes that are not a shape by ggml's layout (``_by_layout``:
  test_mul_mat's m/n/k, test_get_rows' n/m/r, test_set_rows' result shape and r), the
  ``ggml_type`` parameters from the node's types (``_types``), ROPE's ``n_dims`` the shape's
  first dimension (a whole head rotated), and every other parameter at its default. A
  parameter without a default that none of these fills means the case cannot be written: the
  op cannot be timed, and discover says so before any build. A written case compiles where the
  struct's defaults do; whether it runs (a default that does not fit the shape) the first
  bench shows. ``Written.match`` is what the tool prints of the values taken from the node:
  the pin picks the perf case printing all of them.

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


def split_top(text: str) -> list[str]:
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
    for part in split_top(_COMMENT.sub(" ", body[match.end():i - 1])):
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


def _is_array(kind: str, element: str, size: int = 4) -> bool:
    return re.fullmatch(rf"(?:const\s+)?std::array<{element},\s*{size}>", kind.strip()) is not None


def _braces(values: tuple[int, ...]) -> str:
    return "{" + ", ".join(str(n) for n in values) + "}"


def _printed(value: str) -> str:
    """How the tool prints a value kernelopt wrote (var_to_str): ``{4096, 512}`` → ``[4096,512]``,
    ``GGML_TYPE_F16`` → ``f16`` (ggml_type_name)."""
    if value.startswith("{"):
        return "[" + value.strip("{}").replace(" ", "") + "]"
    if not value.startswith("GGML_TYPE_"):
        return value
    name = value.removeprefix("GGML_TYPE_").lower()  # ggml_type_name: q4_0, bf16, iq4_xs...
    return name[:-2] + "_K" if name.endswith("_k") else name  # ...but q4_K, q6_K


@attrs.frozen
class Shapes:
    """A model node's tensors, what a case at its shape is written from: its sources' shapes
    (and types, where known: a model's weights, read from its GGUF), its result's shape and
    type."""

    src0: tuple[int, ...]
    type: str = DEFAULT_TYPE  # the result's: GGML_TYPE_F32
    src1: tuple[int, ...] | None = None
    dst: tuple[int, ...] | None = None
    src_types: tuple[str | None, str | None] = (None, None)
    # src0 made by ggml_permute (nodes.Node): the tensor before it and the axes, for a struct
    # that permutes its source itself (test_cont's ``permute``)
    unpermuted: tuple[int, ...] | None = None
    permute: tuple[int, ...] | None = None


def _by_layout(struct: TestStruct, node: Shapes) -> dict[str, str]:
    """Parameters that are not a shape array, filled by ggml's layout of the op they name
    (the tool's structs share these names):

    * ``m``, ``n``, ``k``, ``bs`` where the struct builds its first source as ``{k, m, bs[0],
      …}`` (a matrix product, ``(k, m) × (k, n) → (m, n)``: test_mul_mat): k and m from the
      first source, n from the second, ``bs`` its batch (dims 2-3), ``nr`` the second
      source's repeats of it;
    * ``n``, ``m``, ``r`` without ``k`` (rows taken from a table, ``(n, m, be1, be2)`` by ``r``
      indices: test_get_rows): n and m from the first source, r from the second, ``be1``/``be2``
      the batch;
    * ``r`` and a shape array without a default (rows written into a result, test_set_rows):
      the array is the result's shape, r the first source's rows.
    """
    names = {p.name for p in struct.params}
    s0, s1, out = node.src0, node.src1, node.dst
    filled: dict[str, str] = {}
    # (k, m, bs…) × (k, n, bs·nr…): the struct builds its first source so (test_mul_mat);
    # test_out_prod's (m, k) × (n, k) and test_mul_mat_id's experts are other layouts
    mul_mat = re.search(r"\{\s*k,\s*m,\s*bs\[0\]", struct.body) is not None
    if {"m", "n", "k", "bs"} <= names and mul_mat and s1 is not None and len(s0) == len(s1) == 4:
        filled.update(k=str(s0[0]), m=str(s0[1]), n=str(s1[1]), bs=_braces(s0[2:]))
        if all(b and a % b == 0 for a, b in zip(s1[2:], s0[2:], strict=True)):
            filled["nr"] = _braces(tuple(a // b for a, b in zip(s1[2:], s0[2:], strict=True)))
    elif {"n", "m", "r"} <= names and s1 is not None and len(s0) == 4:
        filled.update(n=str(s0[0]), m=str(s0[1]), r=str(s1[0]), be1=str(s0[2]), be2=str(s0[3]))
    elif "r" in names and out is not None and len(s0) == 4:
        filled["r"] = str(s0[1])
        for p in struct.params:
            if _is_array(p.type, "int64_t") and p.name.startswith("ne") and p.default is None:
                filled[p.name] = _braces(out)
                break
    return filled


def _types(struct: TestStruct, node: Shapes) -> dict[str, str]:
    """The struct's ``ggml_type`` parameters: ``type_dst`` the result's type, ``type_idx`` its
    default or I64 (llama.cpp's row indices), the others in order the sources' types where
    known; an unknown source is the result's type where the struct has no ``type_dst`` (an
    op that keeps its type: NORM, SOFT_MAX), else f32 (ggml's activations)."""
    kinds = [p for p in struct.params if p.type.replace("const ", "").strip() == "ggml_type"]
    filled: dict[str, str] = {}
    has_dst = any(p.name == "type_dst" for p in kinds)
    sources = iter(node.src_types)
    for i, p in enumerate(p for p in kinds if p.name not in ("type_dst", "type_idx")):
        known = next(sources, None)
        filled[p.name] = known or (node.type if i == 0 and not has_dst else
                                   DEFAULT_TYPE if has_dst or p.default is None else p.default)
    for p in kinds:
        if p.name == "type_dst":
            filled[p.name] = node.type
        elif p.name == "type_idx":
            filled[p.name] = p.default or "GGML_TYPE_I64"
    return filled


def _printed_names(struct: TestStruct) -> list[str] | None:
    """The names the struct's ``vars()`` prints, in its order (``VARS_TO_STR5(type, ne, v,
    eps, ...)``), or None where it prints them another way."""
    found = re.search(r"VARS_TO_STR\d+\(([^)]*)\)", struct.body)
    return [n.strip() for n in found.group(1).split(",")] if found else None


@attrs.frozen
class Written:
    """A case written from a struct: its C++ expression, and what the tool prints of the
    values taken from the model's node (``ne=[4096,512,1,1]``, ``m=32000``): the pin looks
    for a perf case printing all of them."""

    expr: str
    match: tuple[str, ...]


def write(source: str, op: str, node: Shapes, struct: TestStruct | None = None,
          enum: str = "") -> Written:
    """A perf case of ``op`` at ``node``'s shapes, e.g.
    ``new test_norm(GGML_TYPE_F32, {4096, 512, 1, 1}, false, 1e-6f, false)``; a binary op's
    second source broadcast over its first where the struct takes repeats (``nr``)."""
    struct = struct or struct_for(source, op, enum)
    if struct is None:
        raise CannotGenerate(f"test-backend-ops.cpp has no test struct that computes {op} "
                             f"(no test_{op.lower()}, no struct whose out is ggml_{op.lower()}(...))")
    ne, repeats = node.src0, (1,) * len(node.src0)
    # the struct permutes its source like the model's graph did: the case starts from the
    # tensor before the permute (test_cont without one transposes: another kernel)
    axes = node.permute if node.unpermuted is not None and any(
        p.name == "permute" and _is_array(p.type, "int64_t") for p in struct.params) else None
    if axes is not None and node.unpermuted is not None:
        ne = node.unpermuted
    if any(p.name == "nr" and _is_array(p.type, "int") for p in struct.params):
        ne, repeats = _broadcast(ne, node.src1)
    layout, types = _by_layout(struct, node), _types(struct, node)
    args: list[str] = []
    match: list[str] = []
    filled_ne = bool(layout)
    for param in struct.params:
        kind = param.type.replace("const ", "").strip()
        value: str | None
        taken = True  # from the node: the pin matches it
        if kind in ("ggml_unary_op", "ggml_glu_op"):
            value, taken = enum or f"GGML_{'UNARY' if kind == 'ggml_unary_op' else 'GLU'}_OP_{op}", False
        elif kind == "op_t":
            value, taken = f"ggml_{op.lower()}", False
        elif param.name in layout:
            value = layout[param.name]
        elif kind == "ggml_type":
            value = types[param.name]
        elif _is_array(kind, "int64_t") and param.name.startswith("ne") and not filled_ne:
            value, filled_ne = _braces(ne), True
        elif param.name == "n_dims" and kind == "int":
            value = str(ne[0])  # ROPE: the whole head rotated (a partial rotary's is not known)
        elif param.name == "permute" and axes is not None:
            value = _braces(axes)
        elif param.name == "nr" and _is_array(kind, "int"):
            value = _braces(repeats)
        elif param.name.startswith("nr") and param.default is None and _is_array(kind, "int", 2):
            value = "{1, 1}"  # no broadcast
        else:
            value, taken = param.default, False
        if value is None:
            raise CannotGenerate(f"{struct.name}'s parameter `{param.type} {param.name}` has no "
                                 f"default and is not one kernelopt fills (type, shape, op)")
        args.append(value)
        if taken:
            match.append(f"{param.name}={_printed(value)}")
    if not filled_ne:
        raise CannotGenerate(f"{struct.name} takes no 4-d shape (a `std::array<int64_t, 4> ne…` "
                             "parameter) and no sizes kernelopt reads by ggml's layout (m/n/k, "
                             "n/m/r): a case at the model's shape cannot be written")
    printed = _printed_names(struct)
    if printed is not None:  # a value the tool does not print cannot pick its case; the
        # printed order is the order tbo.params_filter's regex needs
        match = sorted((m for m in match if m.partition("=")[0] in printed),
                       key=lambda m: printed.index(m.partition("=")[0]))
    return Written(f"new {struct.name}({', '.join(args)})", tuple(match))


def generate(source: str, op: str, ne: tuple[int, ...] = DEFAULT_NE, type_: str = DEFAULT_TYPE,
             struct: TestStruct | None = None, enum: str = "",
             ne_b: tuple[int, ...] | None = None) -> str:
    """The C++ expression of a perf case of ``op`` at ``ne``/``type_`` (write)."""
    return write(source, op, Shapes(ne, type_, ne_b), struct, enum).expr


@attrs.frozen
class Timing:
    """How ``op`` is timed: by the tool's own perf cases, or by ``generated`` (C++), or not
    at all (``why``)."""

    op: str
    perf_set: bool
    generated: str | None = None
    why: str = ""
    match: tuple[str, ...] = ()  # what the tool prints of the generated case's model values

    @property
    def timable(self) -> bool:
        return self.perf_set or self.generated is not None


def timing(source: str, op: str, enum: str = "", node: Shapes | None = None) -> Timing:
    """How ``op`` can be timed in this test-backend-ops.cpp. ``node`` (a model's) adds a
    generated case at its shape even where the perf set has cases of the op."""
    struct = struct_for(source, op, enum)
    in_perf_set = timed_by_perf_set(source, op, struct)
    if in_perf_set and node is None:
        return Timing(op, True)
    try:
        written = write(source, op, node or Shapes(DEFAULT_NE), struct, enum)
    except CannotGenerate as exc:
        return Timing(op, in_perf_set, why=str(exc))
    return Timing(op, in_perf_set, written.expr, match=written.match)
