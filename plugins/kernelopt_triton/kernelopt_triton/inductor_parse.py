"""Pure parsers of torch.compile (Inductor) artifacts: output code, kernel sources, profiler tables.

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


# --------------------------------------------------------------------------- profiler tables

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
