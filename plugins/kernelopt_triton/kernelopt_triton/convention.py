"""The standalone Triton kernel-file convention (docs/triton.md), read without importing.

A kernel file is a Python module with at least one ``@triton.jit`` function and the functions
``make_args(seed, device)``, ``launch(*args)`` and ``reference(*args)`` plus the names
``SHAPE``, ``TOLERANCE`` and ``OUTPUTS``. The parent process never imports it (that would
import torch and triton); it reads the AST and folds simple module-level constants, so
``SHAPE``/``BYTES`` written as ``f"f32[{ROWS},{COLS}]"`` with ``ROWS = 64 if SMALL else 8192``
still reach the report.
"""

from __future__ import annotations

import ast
import operator
import os
import re
from pathlib import Path
from typing import Any

REQUIRED_FUNCTIONS = ("make_args", "launch", "reference")
REQUIRED_NAMES = ("SHAPE", "TOLERANCE", "OUTPUTS")
# Textual fallback for files that do not parse (a syntax error is the build's to report).
_JIT_TEXT = re.compile(r"^[ \t]*@(?:triton\.)?jit\b", re.M)
_DEF_TEXT = {name: re.compile(rf"^def[ \t]+{name}[ \t]*\(", re.M) for name in REQUIRED_FUNCTIONS}


def is_jit_decorator(node: ast.expr) -> bool:
    """``@triton.jit``, ``@jit``, ``@triton.jit(...)`` (any alias ending in ``jit``)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr == "jit"
    return isinstance(node, ast.Name) and node.id == "jit"


def jit_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(is_jit_decorator(d) for d in node.decorator_list):
            out[node.name] = node
    return out


def parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def is_kernel_text(text: str) -> bool:
    """True when ``text`` follows the convention (by its AST; by text if it does not parse)."""
    tree = parse(text)
    if tree is None:
        return bool(_JIT_TEXT.search(text)) and all(p.search(text) for p in _DEF_TEXT.values())
    top = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    return bool(jit_functions(tree)) and all(name in top for name in REQUIRED_FUNCTIONS)


def is_kernel_file(path: Path) -> bool:
    if path.suffix != ".py" or not path.is_file():
        return False
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if "jit" not in text or "def launch" not in text:  # cheap pre-filter before parsing
        return False
    return is_kernel_text(text)


def kernel_files(directory: Path) -> list[Path]:
    """Kernel files directly in ``directory`` (not recursive), sorted by name."""
    try:
        entries = sorted(directory.iterdir())
    except OSError:
        return []
    return [p for p in entries if not p.name.startswith((".", "_")) and is_kernel_file(p)]


def missing_names(tree: ast.Module) -> list[str]:
    """Convention names the module does not define at top level."""
    defined: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        defined.add(sub.id)
    return [n for n in (*REQUIRED_FUNCTIONS, *REQUIRED_NAMES) if n not in defined]


# --------------------------------------------------------------------------- constant folding

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.Div: operator.truediv}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b}


class _Unknown(Exception):
    pass


def _fold(node: ast.AST, env: dict[str, Any], environ: dict[str, str]) -> Any:
    """Evaluate a small, side-effect-free expression; anything else raises _Unknown."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise _Unknown(node.id)
    if isinstance(node, (ast.Tuple, ast.List)):
        values = [_fold(e, env, environ) for e in node.elts]
        return tuple(values) if isinstance(node, ast.Tuple) else values
    if isinstance(node, ast.Dict):
        return {_fold(k, env, environ): _fold(v, env, environ)
                for k, v in zip(node.keys, node.values, strict=True) if k is not None}
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _fold(node.left, env, environ), _fold(node.right, env, environ)
        if isinstance(node.op, ast.Pow) and isinstance(right, int) and right > 64:
            raise _Unknown("huge power")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        value = _fold(node.operand, env, environ)
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.Not):
            return not value
        if isinstance(node.op, ast.UAdd):
            return +value
    if isinstance(node, ast.IfExp):
        test = _fold(node.test, env, environ)
        return _fold(node.body if test else node.orelse, env, environ)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPOPS:
        return _CMPOPS[type(node.ops[0])](_fold(node.left, env, environ),
                                          _fold(node.comparators[0], env, environ))
    if isinstance(node, ast.BoolOp):
        values = [_fold(v, env, environ) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.format_spec is not None or value.conversion not in (-1, None):
                    raise _Unknown("formatted value")
                parts.append(str(_fold(value.value, env, environ)))
            else:
                parts.append(str(_fold(value, env, environ)))
        return "".join(parts)
    if isinstance(node, ast.Call) and not node.keywords:
        name = ast.unparse(node.func)
        args = [_fold(a, env, environ) for a in node.args]
        if name in ("os.environ.get", "os.getenv") and args and isinstance(args[0], str):
            return environ.get(args[0], args[1] if len(args) > 1 else None)
        if name in ("int", "str", "len", "max", "min", "abs", "bool") and args:
            builtin: Any = {"int": int, "str": str, "len": len, "max": max, "min": min,
                            "abs": abs, "bool": bool}[name]
            return builtin(*args)
    raise _Unknown(type(node).__name__)


def module_constants(tree: ast.Module, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Top-level names bound by foldable expressions, in order (environment variables read
    through ``os.environ.get``/``os.getenv`` take their values from ``environ``)."""
    environ = dict(os.environ) if environ is None else environ
    env: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        try:
            result = _fold(value, env, environ)
        except (_Unknown, TypeError, ValueError, ZeroDivisionError, KeyError, OverflowError):
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        env.pop(sub.id, None)  # a later unknown rebinding hides an earlier value
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                env[target.id] = result
            elif isinstance(target, ast.Tuple) and isinstance(result, (tuple, list)) \
                    and len(result) == len(target.elts):
                for elt, item in zip(target.elts, result, strict=True):
                    if isinstance(elt, ast.Name):
                        env[elt.id] = item
    return env


def declared(tree: ast.Module, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """SHAPE (str), BYTES and FLOPS (int) when the AST can tell; absent otherwise."""
    env = module_constants(tree, environ)
    out: dict[str, Any] = {}
    if isinstance(env.get("SHAPE"), str):
        out["SHAPE"] = env["SHAPE"]
    for name in ("BYTES", "FLOPS"):
        value = env.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            out[name] = value
    return out
