"""Tuner knobs found in a Triton kernel file by its AST.

Found (docs/triton.md, "Knobs"):

* at a launch site ``kernel[grid](..., BLOCK_SIZE=128, num_warps=1, num_stages=2)`` of a
  ``@triton.jit`` function of the file: an int literal passed to a ``tl.constexpr`` parameter
  whose name speaks of a size (BLOCK, TILE, GROUP, SPLIT...) and is a power of two (values:
  every power of two in 16..8192; 1..64 for values below 16), plus ``num_warps`` (1..32) and
  ``num_stages`` (1..5);
* the same keywords given a variable (``BLOCK_SIZE=BLOCK``) that is bound once, to an int
  literal, in the launching function or at module level: the knob is that assignment, so the
  grid that uses the variable stays consistent;
* a ``tl.constexpr`` parameter's int default (``BLOCK: tl.constexpr = 128``) that no launch
  site passes;
* every literal of every ``triton.Config({...}, num_warps=..., num_stages=...)`` in an
  ``@triton.autotune`` list: the autotuner still picks among the configs at run time, the
  tuner changes what it picks among.

Each knob's pattern matches exactly one place: the plain ``NAME\\s*=\\s*(\\d+)`` when it occurs
once in the file, else the same token anchored at the start of the file and counted
(``\\A(?:[\\s\\S]*?TOKEN){k}[\\s\\S]*?TOKEN``). Tuning only rewrites digits, so the count of
every token, and therefore every pattern, survives each other knob's edits.
"""

from __future__ import annotations

import ast
import re

import attrs

from kernelopt_core.api import Knob, powers_around
from kernelopt_triton.convention import jit_functions, parse

SIZE_WORDS = re.compile(
    r"BLOCK|TILE|GROUP|SPLIT|CHUNK|UNROLL|VEC|WARP|ROWS_PER|COLS_PER|STAGES|NUM_SM|ITEMS|XBLOCK|"
    r"YBLOCK|RBLOCK|R0_BLOCK|SIZE_[MNK]\b|_[MNK]$")
# a block size in elements along one axis of a program (BLOCK, BLOCK_SIZE, BLOCK_M, XBLOCK,
# R0_BLOCK), not a count of blocks (NUM_BLOCKS, BLOCKS_PER_SM): Knob.geometry "elements"
ELEMENTS = re.compile(r"(?:[XYZ]|R\d?_?)?BLOCK(?:_SIZE)?(?:_[A-Z])?")
NUM_WARPS = ("1", "2", "4", "8", "16", "32")
NUM_STAGES = ("1", "2", "3", "4", "5")


def geometry(key: str) -> str:
    """What a launch parameter is in the launch's geometry (Knob.geometry)."""
    if key == "num_warps":
        return "warps"
    return "elements" if ELEMENTS.fullmatch(key.upper()) else ""


def _is_pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _int_literal(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _is_constexpr(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    text = ast.unparse(annotation)
    return text.endswith("constexpr")


def values_for(name: str, value: int) -> tuple[str, ...] | None:
    """Candidate values (source text) for a knob, or None when it is not tunable."""
    if name == "num_warps":
        return tuple(sorted({*NUM_WARPS, str(value)}, key=int))
    if name == "num_stages":
        return tuple(sorted({*NUM_STAGES, str(value)}, key=int))
    if not _is_pow2(value):
        return None  # a problem size or a flag, not a tile size
    if value >= 16:
        # the whole range: a row-wise kernel's best block is often the row (8192 from 128)
        return tuple(sorted({str(1 << k) for k in range(4, 14)} | {str(value)}, key=int))
    return powers_around(value, 1, 64)


class _Offsets:
    """Line/column of the AST → offset in the text."""

    def __init__(self, text: str) -> None:
        self.starts = [0]
        for line in text.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self.text = text

    def of(self, node: ast.expr | ast.stmt) -> int:
        # col_offset counts UTF-8 bytes; convert through the line's bytes
        line = self.text[self.starts[node.lineno - 1]:self.starts[node.lineno]]
        col = len(line.encode("utf-8")[: node.col_offset].decode("utf-8", errors="replace"))
        return self.starts[node.lineno - 1] + col


def unique_pattern(text: str, token: str, offset: int) -> str | None:
    """A pattern whose first group is the value that starts at ``offset``, matching once.

    ``token`` is a regex with exactly one group (the value)."""
    matches = list(re.finditer(token, text, re.M))
    index = next((i for i, m in enumerate(matches) if m.start(1) == offset), None)
    if index is None:
        return None
    if len(matches) == 1:
        return token
    skip = token.replace("(", "(?:", 1)  # the value group, made non-capturing
    prefix = rf"\A(?:[\s\S]*?{skip}){{{index}}}" if index else r"\A"
    return prefix + r"[\s\S]*?" + token


def _keyword_token(name: str) -> str:
    return rf"\b{re.escape(name)}\s*=\s*(\d+)\b"


def _default_token(name: str) -> str:
    return rf"\b{re.escape(name)}\s*:\s*[\w.]*constexpr\s*=\s*(\d+)\b"


def _dict_token(key: str) -> str:
    return rf"""['"]{re.escape(key)}['"]\s*:\s*(\d+)\b"""


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _enclosing_function(node: ast.AST, parents: dict[ast.AST, ast.AST]
                        ) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return node
    return None


def _int_assignments(scope: ast.AST, name: str, top_only: bool) -> list[ast.Assign]:
    nodes = scope.body if top_only else ast.walk(scope)  # type: ignore[attr-defined]
    found = []
    rebinds = 0
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                if isinstance(node, ast.Assign) and len(targets) == 1 \
                        and _int_literal(node.value) is not None:
                    found.append(node)
                else:
                    rebinds += 1
    return found if rebinds == 0 else []


def _resolve(name: str, call: ast.Call, tree: ast.Module,
             parents: dict[ast.AST, ast.AST]) -> ast.Assign | None:
    """The one int-literal assignment a launch keyword's variable refers to, if any."""
    function = _enclosing_function(call, parents)
    if function is not None and not isinstance(function, ast.Lambda):
        local = _int_assignments(function, name, top_only=False)
        if len(local) == 1:
            return local[0]
        if local or any(isinstance(a, ast.arg) and a.arg == name for a in ast.walk(function.args)):
            return None  # bound several times, or a parameter: not a constant
    module = _int_assignments(tree, name, top_only=True)
    return module[0] if len(module) == 1 else None


def _launched_kernel(call: ast.Call, kernels: set[str]) -> str | None:
    func = call.func
    if not isinstance(func, ast.Subscript):
        return None
    base = func.value
    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
    return name if name in kernels else None


def _constexprs(fn: ast.FunctionDef) -> dict[str, ast.arg]:
    return {a.arg: a for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)
            if _is_constexpr(a.annotation)}


def _defaults(fn: ast.FunctionDef) -> dict[str, ast.expr]:
    positional = [*fn.args.posonlyargs, *fn.args.args]
    out = dict(zip([a.arg for a in positional[len(positional) - len(fn.args.defaults):]],
                   fn.args.defaults, strict=True))
    for arg, default in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
        if default is not None:
            out[arg.arg] = default
    return out


def _is_config_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Attribute) and node.func.attr == "Config")
        or (isinstance(node.func, ast.Name) and node.func.id == "Config"))


def detect(path: str, text: str) -> list[Knob]:
    """The knobs of one kernel file (``path`` is the name recorded in each Knob)."""
    tree = parse(text)
    if tree is None:
        return []
    kernels = jit_functions(tree)
    parents = _parents(tree)
    offsets = _Offsets(text)
    knobs: list[Knob] = []
    taken: set[int] = set()
    names: dict[str, int] = {}

    def add(base: str, value_node: ast.expr, token: str, values: tuple[str, ...] | None,
            key: str = "", launch: str = "") -> None:
        if values is None:
            return
        offset = offsets.of(value_node)
        if offset in taken:
            return
        pattern = unique_pattern(text, token, offset)
        if pattern is None:
            return
        taken.add(offset)
        names[base] = names.get(base, 0) + 1
        name = base if names[base] == 1 else f"{base}#{names[base]}"
        knobs.append(Knob(name, path, values, pattern, geometry(key), launch))
        if geometry(key) == "elements":
            sized.setdefault(launch, set()).add(key)

    passed: dict[str, set[str]] = {k: set() for k in kernels}
    sized: dict[str, set[str]] = {}  # launch -> its block-size parameters that are knobs
    sites: dict[str, int] = {}
    calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)),
                   key=lambda n: (n.lineno, n.col_offset))
    for call in calls:
        kernel = _launched_kernel(call, set(kernels))
        if kernel is None:
            continue
        sites[kernel] = sites.get(kernel, 0) + 1
        site = kernel if sites[kernel] == 1 else f"{kernel}#{sites[kernel]}"
        constexprs = _constexprs(kernels[kernel])
        for kw in call.keywords:
            if kw.arg is None:
                continue
            passed[kernel].add(kw.arg)
            tunable = kw.arg in ("num_warps", "num_stages") or (
                kw.arg in constexprs and SIZE_WORDS.search(kw.arg.upper()))
            if not tunable:
                continue
            literal = _int_literal(kw.value)
            if literal is not None:
                add(f"{kw.arg}@{kernel}", kw.value, _keyword_token(kw.arg),
                    values_for(kw.arg, literal), kw.arg, site)
            elif isinstance(kw.value, ast.Name):
                assign = _resolve(kw.value.id, call, tree, parents)
                if assign is not None:
                    value = _int_literal(assign.value)
                    assert value is not None
                    add(kw.value.id, assign.value, _keyword_token(kw.value.id),
                        values_for(kw.arg, value), kw.arg, site)
    for kernel, fn in kernels.items():
        defaults = _defaults(fn)
        for name in _constexprs(fn):
            value = _int_literal(defaults.get(name))
            if value is not None and name not in passed[kernel] and SIZE_WORDS.search(name.upper()):
                add(f"{name}@{kernel}", defaults[name], _default_token(name),
                    values_for(name, value), name, kernel)
        for decorator in fn.decorator_list:
            configs = [n for n in ast.walk(decorator) if isinstance(n, ast.Call) and _is_config_call(n)]
            for i, config in enumerate(configs):
                where = f"{kernel}.configs[{i}]"
                if config.args and isinstance(config.args[0], ast.Dict):
                    for key, value_node in zip(config.args[0].keys, config.args[0].values,
                                               strict=True):
                        value = _int_literal(value_node)
                        if isinstance(key, ast.Constant) and isinstance(key.value, str) \
                                and value is not None:
                            add(f"{key.value}@{where}", value_node, _dict_token(key.value),
                                values_for(key.value, value), key.value, where)
                for kw in config.keywords:
                    value = _int_literal(kw.value)
                    if kw.arg in ("num_warps", "num_stages") and value is not None:
                        add(f"{kw.arg}@{where}", kw.value, _keyword_token(kw.arg),
                            values_for(kw.arg, value), kw.arg, where)
    return _whole_geometry(knobs, kernels, sized)


def _whole_geometry(knobs: list[Knob], kernels: dict[str, ast.FunctionDef],
                    sized: dict[str, set[str]]) -> list[Knob]:
    """Geometry only for launches where every block size of the kernel is a knob: a block fixed
    by the code (``BLOCK_N=triton.next_power_of_2(n)``) is elements the rule cannot count."""
    def complete(launch: str) -> bool:
        kernel = kernels.get(launch.split("#")[0].split(".configs[")[0])
        if kernel is None:
            return False
        blocks = {name for name in _constexprs(kernel) if geometry(name) == "elements"}
        return blocks <= sized.get(launch, set())

    return [k if not k.geometry or complete(k.launch) else attrs.evolve(k, geometry="")
            for k in knobs]
