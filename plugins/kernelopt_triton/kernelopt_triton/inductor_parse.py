"""Pure parsers of torch.compile (Inductor) artifacts: output code and kernel sources (the
profiler's tables: profile_table.py).

Nothing here imports torch or triton: these functions read text that Inductor or the profiler
wrote, so CI tests them on recorded fixtures without a GPU. Formats follow torch's own codegen
(``torch/_inductor/codegen/triton.py`` and ``codegen/wrapper.py``):

- the wrapper module assigns ``NAME = async_compile.triton('NAME', '''SOURCE''', device_str=...)``
  for every Triton kernel and calls it in ``call(args)`` as ``NAME.run(arg, ..., stream=...)``;
- a kernel source is a module whose ``@triton.jit`` function is wrapped by a heuristics
  decorator ``@triton_heuristics.<pointwise|reduction|persistent_reduction|...>(size_hints=...,
  triton_meta=..., inductor_meta=...)``; with ``config.benchmark_kernel`` Inductor appends
  ``get_args()`` (``rand_strided(size, stride, device=..., dtype=...)`` per argument, then the
  numel ints) and ``num_gb = ...``.
"""

from __future__ import annotations

import ast
import re
from typing import Any

import attrs

# Short dtype names for SHAPE strings ("f16[8192,4096]").
DTYPE_SHORT = {
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "int64": "i64",
    "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "b8",
    "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
}


@attrs.frozen
class KernelDef:
    """One ``async_compile.triton(...)`` block of a wrapper module."""

    name: str
    source: str
    device_str: str
    lineno: int


@attrs.frozen
class ArgSpec:
    """One argument of a kernel as Inductor's benchmark harness builds it (``get_args``)."""

    name: str  # the @triton.jit parameter name (in_ptr0, out_ptr1, xnumel...)
    kind: str  # "tensor" | "int" | "workspace"
    size: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    dtype: str = ""  # torch dtype name without "torch.", e.g. "float16"
    value: int = 0  # for "int"

    @property
    def numel_storage(self) -> int:
        """Elements of storage the strided view spans."""
        if any(s == 0 for s in self.size):
            return 0
        return 1 + sum((s - 1) * st for s, st in zip(self.size, self.stride, strict=True))

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class KernelSource:
    """What a kernel source tells: its heuristic, metadata, jit function and benchmark args."""

    name: str
    heuristic: str  # pointwise | reduction | persistent_reduction | ... (decorator's attribute)
    size_hints: dict[str, int]
    signature: dict[str, str]  # triton_meta["signature"]: param -> "*fp16" | "i32" | "constexpr"
    inductor_meta: dict[str, Any]  # the literal entries (non-literal values are skipped)
    params: tuple[str, ...]  # all parameters of the jit function, in order
    constexprs: tuple[str, ...]  # the ``: tl.constexpr`` parameters
    imports: str  # the module's import lines (and other top-level statements before the kernel)
    jit_source: str  # "@triton.jit\ndef NAME(...):\n    ..." with the heuristics decorator removed
    args: tuple[ArgSpec, ...]  # from get_args(), empty when benchmark_kernel was off
    num_gb: float | None
    # get_args()'s values beyond the parameters: a template's FixedGrid (x, y, z), else ()
    fixed_grid: tuple[int, ...] = ()
    flops: int | None = None  # inductor_meta's kernel_flop (templates, benchmark_kernel on)
    # int keywords of the heuristics decorator (a template's num_warps and num_stages)
    decorator_ints: dict[str, int] = attrs.field(factory=dict)

    @property
    def grid_type(self) -> str:
        return str(self.inductor_meta.get("grid_type", "Grid1D"))

    @property
    def mutated(self) -> tuple[str, ...]:
        return tuple(self.inductor_meta.get("mutated_arg_names", ()))

    def output_params(self) -> tuple[str, ...]:
        """Parameters the kernel writes: out_ptr*, in_out_ptr* and declared mutated args."""
        runtime = [p for p in self.params if p not in self.constexprs]
        return tuple(p for p in runtime
                     if p.startswith(("out_ptr", "in_out_ptr")) or p in self.mutated)


def _const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def parse_output_code(text: str) -> list[KernelDef]:
    """Every Triton kernel a wrapper module defines, in order of definition."""
    tree = ast.parse(text)
    found: list[KernelDef] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "triton"
                and isinstance(func.value, ast.Name) and func.value.id == "async_compile"):
            continue
        if len(call.args) < 2:
            continue
        name, source = _const_str(call.args[0]), _const_str(call.args[1])
        if name is None or source is None:
            continue
        device = "cuda"
        if len(call.args) > 2 and _const_str(call.args[2]):
            device = _const_str(call.args[2]) or device
        for kw in call.keywords:
            if kw.arg == "device_str" and _const_str(kw.value):
                device = _const_str(kw.value) or device
        found.append(KernelDef(name, source, device, node.lineno))
    found.sort(key=lambda k: k.lineno)
    return found


def parse_call_sites(text: str) -> dict[str, list[tuple[str, ...]]]:
    """``NAME.run(a, b, 64, stream=s)`` calls in the wrapper: kernel name -> positional args."""
    known = {k.name for k in parse_output_code(text)}
    sites: dict[str, list[tuple[str, ...]]] = {}
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        func = node.func
        if func.attr == "run" and isinstance(func.value, ast.Name) and func.value.id in known:
            sites.setdefault(func.value.id, []).append(tuple(ast.unparse(a) for a in node.args))
    return sites


def is_wrapper_module(text: str) -> bool:
    """A wrapper (output code) module, as opposed to a kernel source or another cache file."""
    return "AsyncCompile()" in text and "def call(" in text


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


def _dict_entries(node: ast.AST) -> dict[str, ast.AST]:
    if not isinstance(node, ast.Dict):
        return {}
    return {k.value: v for k, v in zip(node.keys, node.values, strict=True)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def _get_args_returns(tree: ast.Module) -> tuple[dict[str, ast.AST], list[str]] | None:
    """get_args()'s assignments and the names (or literals) it returns, in order."""
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_args"), None)
    if fn is None:
        return None
    values: dict[str, ast.AST] = {}
    order: list[str] = []
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            values[stmt.targets[0].id] = stmt.value
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            elts = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value]
            order = [ast.unparse(e) for e in elts]
    return values, order


def _get_args_tail(tree: ast.Module, runtime_params: list[str]) -> tuple[int, ...]:
    """The int values get_args() returns beyond the kernel's parameters (a FixedGrid)."""
    found = _get_args_returns(tree)
    if found is None:
        return ()
    values, order = found
    tail = []
    for expr in order[len(runtime_params):]:
        node = values.get(expr, ast.parse(expr, mode="eval").body)
        lit = _literal(node)
        if not isinstance(lit, int):
            return ()
        tail.append(lit)
    return tuple(tail)


def _parse_get_args(tree: ast.Module, runtime_params: list[str]) -> tuple[ArgSpec, ...]:
    found = _get_args_returns(tree)
    if found is None:
        return ()
    values, order = found
    specs: list[ArgSpec] = []
    for param, expr in zip(runtime_params, order, strict=False):
        node = values.get(expr)
        if node is None:  # extra numel args are returned as literals
            lit = _literal(ast.parse(expr, mode="eval").body)
            specs.append(ArgSpec(param, "int", value=int(lit) if isinstance(lit, int) else 0))
            continue
        if isinstance(node, ast.Call):
            fname = ast.unparse(node.func)
            kws = {k.arg: k.value for k in node.keywords}
            dtype = ast.unparse(kws["dtype"]).removeprefix("torch.") if "dtype" in kws else "float32"
            if fname.endswith("rand_strided"):
                size, stride = _literal(node.args[0]), _literal(node.args[1])
                specs.append(ArgSpec(param, "tensor", tuple(size), tuple(stride), dtype))
                continue
            if fname.endswith("zeros"):  # workspace: must start zeroed (semaphores, partials)
                count = _literal(node.args[0])
                specs.append(ArgSpec(param, "workspace", (int(count),), (1,), dtype))
                continue
        lit = _literal(node)
        specs.append(ArgSpec(param, "int", value=int(lit) if isinstance(lit, int) else 0))
    return tuple(specs)


def parse_kernel_source(source: str, name: str | None = None) -> KernelSource:
    """Split one Inductor kernel source into what a standalone file needs."""
    tree = ast.parse(source)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef)
               and (name is None or n.name == name)
               and any("jit" in ast.unparse(d) for d in n.decorator_list)), None)
    if fn is None:
        raise ValueError(f"no @triton.jit function {name or ''} in the kernel source")
    heuristic = ""
    size_hints: dict[str, Any] = {}
    signature: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    decorator_ints: dict[str, int] = {}
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)):
            continue
        if ast.unparse(dec.func.value) != "triton_heuristics":
            continue
        heuristic = dec.func.attr
        kws = {k.arg: k.value for k in dec.keywords}
        decorator_ints = {k: v.value for k, v in kws.items()
                          if k and isinstance(v, ast.Constant) and type(v.value) is int}
        size_hints = _literal(kws["size_hints"]) or {} if "size_hints" in kws else {}
        sig_node = _dict_entries(kws.get("triton_meta", ast.Dict([], []))).get("signature")
        signature = _literal(sig_node) or {} if sig_node is not None else {}
        for key, value in _dict_entries(kws.get("inductor_meta", ast.Dict([], []))).items():
            lit = _literal(value)
            if lit is not None or (isinstance(value, ast.Constant) and value.value is None):
                meta[key] = lit
    lines = source.splitlines()
    # The jit function's own text: from its @triton.jit line to its last line, verbatim.
    jit_dec = next(d for d in fn.decorator_list if "jit" in ast.unparse(d))
    start = jit_dec.lineno - 1
    end = fn.end_lineno or len(lines)
    jit_source = "\n".join(lines[start:end]) + "\n"
    first_dec = min(d.lineno for d in fn.decorator_list) - 1
    imports = "\n".join(
        line for line in lines[:first_dec]
        if line.strip() and "set_driver_to_cpu" not in line
        and not line.startswith("@")
    )
    params = tuple(a.arg for a in fn.args.args)
    constexprs = tuple(a.arg for a in fn.args.args
                       if a.annotation is not None and "constexpr" in ast.unparse(a.annotation))
    runtime = [p for p in params if p not in constexprs]
    num_gb = meta.get("kernel_num_gb")
    match = re.search(r"^\s*num_gb\s*=\s*([0-9.eE+-]+)\s*$", source, re.M)
    if num_gb is None and match:
        num_gb = float(match.group(1))
    return KernelSource(
        name=fn.name, heuristic=heuristic, size_hints=dict(size_hints), signature=dict(signature),
        inductor_meta=meta, params=params, constexprs=constexprs, imports=imports,
        jit_source=jit_source, args=_parse_get_args(tree, runtime),
        num_gb=float(num_gb) if num_gb is not None else None,
        fixed_grid=_get_args_tail(tree, runtime) if meta.get("grid_type") == "FixedGrid" else (),
        decorator_ints=decorator_ints,
        flops=int(meta["kernel_flop"]) if isinstance(meta.get("kernel_flop"), (int, float)) else None,
    )


def shape_string(args: tuple[ArgSpec, ...]) -> str:
    """The largest tensor argument as ``f16[8192,4096]``: the pinned shape shown in reports."""
    tensors = [a for a in args if a.kind == "tensor"]
    if not tensors:
        return ""
    big = max(tensors, key=lambda a: (a.numel_storage, -tensors.index(a)))
    return f"{DTYPE_SHORT.get(big.dtype, big.dtype)}[{','.join(str(s) for s in big.size)}]"
