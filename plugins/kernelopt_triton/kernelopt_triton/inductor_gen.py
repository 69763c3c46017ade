"""Standalone kernel files from a capture (the convention of docs/triton-models.md).

For kernel NAME two files are written into the targets directory:

- ``NAME.py`` (editable): the kernel's ``@triton.jit`` function as Inductor emitted it, without
  the autotuning heuristics decorator, launched with the config Inductor picked as literal
  ``XBLOCK=…, num_warps=…`` keywords (so the tuner finds the knobs); ``make_args`` from
  Inductor's own ``get_args()`` shapes and strides, seeded and never zeros; ``reference`` runs
  the original.
- ``NAME_orig.py`` (context, never edited): the same kernel text and launch, kept as the
  reference, plus the full source Inductor emitted (decorator and metadata) for the record.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from pathlib import Path
from typing import Any

from kernelopt_triton.inductor_parse import ArgSpec, KernelSource, parse_kernel_source, shape_string
from kernelopt_triton.inductor_template import standalone_form

# Tolerances fixed per output dtype before any test: (atol, rtol). Candidate vs original Triton.
TOLERANCES = {"float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-5),
              "float64": (1e-9, 1e-9)}
FORM_WORDS = {"persistent_reduction": "persistent (a program holds a whole row)",
              "reduction": "looped (a loop over the row in R0_BLOCK steps)"}
SUPPORTED_GRIDS = ("Grid1D", "Grid2D", "Grid3D", "Grid2DWithYZOverflow")
MAX_Y_GRID = 65535  # CUDA's grid y limit, as Inductor's get_max_y_grid()

_COMPAT = '''
if os.environ.get("TRITON_INTERPRET") == "1":  # CPU runs (tests): see docs/triton-models.md
    import numpy as _np
    import triton.runtime.interpreter as _interp

    class _Libdevice:  # the interpreter runs tl.math, not libdevice's extern functions
        def __getattr__(self, name):
            return getattr(tl.math, name, None) or getattr(tl, name)

    libdevice = _Libdevice()
    if not getattr(_interp._patch_lang_tensor, "_kernelopt", False):
        _orig_patch = _interp._patch_lang_tensor

        def _patch(tensor, scope):  # NumPy 2: int() of a 1-element array raises
            _orig_patch(tensor, scope)
            scope.set_attr(tensor, "__index__", lambda s: int(_np.asarray(s.handle.data).reshape(-1)[0]))

        _patch._kernelopt = True
        _interp._patch_lang_tensor = _patch
'''


def default_launch(ks: KernelSource) -> dict[str, int]:
    """A config when the capture recorded none (CPU captures): Inductor-like defaults."""
    cfg: dict[str, int] = {}
    for p in ks.constexprs:
        if p.endswith("BLOCK"):
            hint = max(ks.size_hints.values(), default=1024)
            cfg[p] = 1 if p.startswith("X") and ks.heuristic != "pointwise" else min(1024, hint)
            if p.startswith("R"):
                cfg[p] = min(1024, ks.size_hints.get("r0_", 1024))
    return {**cfg, "num_warps": 4, "num_stages": 1}


def grid_expr(ks: KernelSource, numels: dict[str, int]) -> str:
    """The launch grid as a lambda of the launch's meta-parameters (follows XBLOCK edits)."""
    def cdiv(axis: str) -> str:
        block = f"{axis.upper()}BLOCK"
        n = numels.get(f"{axis}numel", 1)
        return f"triton.cdiv({n}, meta['{block}'])" if block in ks.constexprs else str(n)

    gt = ks.grid_type
    if gt not in SUPPORTED_GRIDS:
        supported = ", ".join(SUPPORTED_GRIDS)
        raise ValueError(f"grid type {gt} is not supported for standalone files ({supported})")
    if gt == "Grid1D":
        return f"lambda meta: ({cdiv('x')},)"
    if gt == "Grid2D":
        return f"lambda meta: ({cdiv('x')}, {cdiv('y')})"
    if gt == "Grid3D":
        return f"lambda meta: ({cdiv('x')}, {cdiv('y')}, {cdiv('z')})"
    # Grid2DWithYZOverflow: y blocks beyond the y limit spill into z (max(1, ...): no y blocks
    # must not divide by zero)
    return (f"lambda meta: ({cdiv('x')}, triton.cdiv({cdiv('y')}, max(1, triton.cdiv({cdiv('y')}, "
            f"{MAX_Y_GRID}))), triton.cdiv({cdiv('y')}, {MAX_Y_GRID}))")


def _launch_call(ks: KernelSource, launch: dict[str, int], tensor_params: list[str],
                 grid: str | None = None, indent: str = "    ") -> str:
    ints = {a.name: a.value for a in ks.args if a.kind == "int"}
    runtime = [p for p in ks.params if p not in ks.constexprs]
    call_args = [p if p in tensor_params else str(ints.get(p, 0)) for p in runtime]
    meta = [f"{k}={v}" for k, v in launch.items() if k in ks.constexprs]
    meta += [f"{k}={launch[k]}" for k in ("num_warps", "num_stages") if k in launch]
    grid = grid or grid_expr(ks, {k: v for k, v in ints.items() if k.endswith("numel")})
    return (f"{indent}{ks.name}[{grid}](\n{indent}    {', '.join(call_args)},\n"
            f"{indent}    {', '.join(meta)},\n{indent})")


def _launch_def(ks: KernelSource, launch: dict[str, int], tensor_params: list[str],
                grid: str | None = None) -> str:
    return f"def launch({', '.join(tensor_params)}):\n{_launch_call(ks, launch, tensor_params, grid)}\n"


def _form_parts(ks: KernelSource, form: KernelSource, launch: dict[str, int], form_launch: dict[str, int],
                tensor_params: list[str], form_source: str) -> tuple[str, str, str]:
    """(the form's switch and metadata, its jit function, the launch of either form) for a
    reduction kernel with Inductor's other form (inductor_forms.py)."""
    same = ([a.name for a in form.args] == [a.name for a in ks.args]
            and [p for p in form.params if p not in form.constexprs]
            == [p for p in ks.params if p not in ks.constexprs])
    if not same:
        raise ValueError(f"{form.name} does not take {ks.name}'s arguments")
    tree = ast.parse(form_source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == form.name)
    heur = next(d for d in fn.decorator_list if isinstance(d, ast.Call)
                and ast.unparse(d.func).startswith("triton_heuristics."))
    kws = {k.arg: ast.get_source_segment(form_source, k.value) or "{}" for k in heur.keywords}
    meta = {key: re.sub(rf"\b{re.escape(form.name)}\b", ks.name, kws.get(key, "{}"))
            for key in ("triton_meta", "inductor_meta")}
    head = "\n".join([
        f"# {ks.name} is Inductor's {FORM_WORDS.get(ks.heuristic, ks.heuristic)} reduction; "
        f"{form.name} the same kernel",
        f"# {FORM_WORDS.get(form.heuristic, form.heuristic)}, as Inductor writes it with its choice "
        "reversed (REDUCTION_FORM = 1 runs it).",
        "# FORM_KERNEL and FORM_META (that form's Inductor metadata) are for the engine's swap.",
        "REDUCTION_FORM = 0",
        f"FORM_KERNEL = {form.name!r}",
        f"FORM_META = {meta!r}",
    ])
    grid = grid_expr(ks, {a.name: a.value for a in ks.args if a.kind == "int" and a.name.endswith("numel")})
    form_grid = grid_expr(form, {a.name: a.value for a in form.args
                                 if a.kind == "int" and a.name.endswith("numel")})
    body = (f"def launch({', '.join(tensor_params)}):\n    if REDUCTION_FORM == 0:\n"
            f"{_launch_call(ks, launch, tensor_params, grid, '        ')}\n    else:\n"
            f"{_launch_call(form, form_launch, tensor_params, form_grid, '        ')}\n")
    return head, form.jit_source, body


def _make_args_def(args: tuple[ArgSpec, ...]) -> str:
    lines = ["def make_args(seed, device):",
             "    # Inductor's get_args() shapes and strides; seeded random values, never zeros.",
             "    # drawn on the device: a CPU generator takes seconds for the large inputs of a",
             "    # model's kernel, and every check and bench worker draws several input sets",
             "    gen = torch.Generator(device=device).manual_seed(seed)",
             "    args = []"]
    for a in args:
        if a.kind == "int":
            continue
        dtype = f"torch.{a.dtype}"
        if a.kind == "workspace":  # scratch that the kernel expects zeroed (semaphores, partials)
            lines.append(f"    args.append(torch.zeros({a.size[0]}, dtype={dtype}, device=device))")
        elif a.dtype in ("bool",):
            lines.append(f"    flat = torch.rand({a.numel_storage}, generator=gen, device=device) < 0.5")
            lines.append(f"    args.append(flat.as_strided({a.size}, {a.stride}))")
        elif a.dtype.startswith(("int", "uint")):  # 0/1: valid as indices into any axis >= 2
            lines.append(f"    flat = torch.randint(0, 2, ({a.numel_storage},), generator=gen, "
                         f"dtype={dtype}, device=device)")
            lines.append(f"    args.append(flat.as_strided({a.size}, {a.stride}))")
        else:
            lines.append(f"    flat = torch.randn({a.numel_storage}, generator=gen, "
                         f"device=device).to({dtype})")
            lines.append(f"    args.append(flat.as_strided({a.size}, {a.stride}))")
    lines.append("    return args")
    return "\n".join(lines) + "\n"


def _header_imports(ks: KernelSource) -> str:
    base = ["import importlib.util", "import os", "from pathlib import Path", "", "import torch",
            "import triton", "import triton.language as tl"]
    # The kernel module's own imports (triton_helpers, libdevice...), minus what is above and
    # the benchmark harness's (rand_strided, get_raw_stream).
    extra = [line for line in ks.imports.splitlines()
             if line.startswith(("import ", "from ")) and line not in base
             and "rand_strided" not in line and "get_raw_stream" not in line]
    return "\n".join(base + extra) + "\n"


def _bytes_moved(ks: KernelSource, tensors: list[ArgSpec]) -> int:
    if ks.num_gb:
        return int(round(ks.num_gb * 1e9))
    itemsize = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int64": 8, "int32": 4,
                "int8": 1, "uint8": 1, "bool": 1, "int16": 2}
    return sum(a.numel_storage * itemsize.get(a.dtype, 4) for a in tensors)


def render(ks: KernelSource, kernel: dict[str, Any], model: str, original_source: str,
           form_source: str | None = None) -> tuple[str, str]:
    """(text of NAME.py, text of NAME_orig.py). ``form_source``: Inductor's source of the
    kernel in its other reduction form (the capture's ``form``), a second form to run."""
    if not ks.args:
        raise ValueError(f"{ks.name}: the kernel source has no get_args() (capture with benchmark_kernel on)")
    launch = dict(kernel.get("launch") or default_launch(ks))
    jit_source, grid = ks.jit_source, None
    if ks.heuristic == "template":  # max-autotune's GEMM templates (inductor_template.py)
        jit_source, grid = standalone_form(ks.jit_source, ks.name, ks.fixed_grid)
        launch = {k: ks.decorator_ints[k] for k in ("num_warps", "num_stages")
                  if k in ks.decorator_ints}
    tensors = [a for a in ks.args if a.kind != "int"]
    params = [a.name for a in tensors]
    outputs = tuple(i for i, p in enumerate(params) if p in ks.output_params())
    if not outputs:
        raise ValueError(f"{ks.name}: no output pointer among {params}")
    # in_out_ptr* and declared mutated args are read before they are written: the harness
    # restores them before each launch instead of poisoning them
    inplace = tuple(i for i in outputs
                    if params[i].startswith("in_out_ptr") or params[i] in ks.mutated)
    out_dtypes = {tensors[i].dtype for i in outputs}
    # integer and bool outputs (indices, masks) compare exactly; floats by their loosest dtype
    floats = {d for d in out_dtypes if d in TOLERANCES}
    atol = max((TOLERANCES[d][0] for d in floats), default=0.0)
    rtol = max((TOLERANCES[d][1] for d in floats), default=0.0)
    share = kernel.get("share") or 0.0
    common = "\n".join([
        f"SHAPE = {shape_string(ks.args)!r}",
        f"TOLERANCE = {{'atol': {atol}, 'rtol': {rtol}}}",
        f"OUTPUTS = {outputs!r}",
        f"INPLACE = {inplace!r}",
        f"BYTES = {_bytes_moved(ks, tensors)}",
        *([f"FLOPS = {ks.flops}"] if ks.flops else []),
        f"KERNEL = {ks.name!r}",
    ])
    doc = (f'"""Standalone kernel file generated by kernelopt-triton from torch.compile output.\n\n'
           f"model: {model}\nkernel: {ks.name} ({ks.heuristic}; {100 * share:.1f}% of the model's "
           f"GPU time, {kernel.get('time_us', 0.0):.1f} us per step)\n")
    knobs = ("the launch keywords (XBLOCK, num_warps...)" if grid is None else
             "its constexpr defaults (BLOCK_M, BLOCK_N...) and the launch keywords")
    main_doc = doc + (f"\nEdit the @triton.jit kernel and {knobs}.\n"
                      f"`reference` runs the kernel as Inductor emitted it ({ks.name}_orig.py).\n"
                      '"""\n')
    orig_doc = doc + ("\nThe REFERENCE: the kernel exactly as Inductor emitted it (minus the autotuning\n"
                      "decorator), launched with the config Inductor picked. Never edited.\n"
                      '"""\n')
    launch_src = _launch_def(ks, launch, params, grid)
    form_head, form_jit, main_launch = "", "", launch_src
    form = kernel.get("form") or {}
    if form_source and form.get("name"):
        other = parse_kernel_source(form_source, form["name"])
        form_head, form_jit, main_launch = _form_parts(
            ks, other, launch, dict(form.get("launch") or default_launch(other)), params, form_source)
    reference = textwrap.dedent(f'''
        def _original():
            path = Path(__file__).with_name("{ks.name}_orig.py")
            spec = importlib.util.spec_from_file_location("{ks.name}_orig", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module


        def reference(*args):
            # The original kernel on copies of the inputs (same sizes and strides).
            work = []
            for a in args:
                copy = torch.empty_strided(a.size(), a.stride(), dtype=a.dtype, device=a.device)
                work.append(copy.copy_(a))
            _original().launch(*work)
            return [work[i] for i in OUTPUTS]
        ''')
    main = "\n".join([main_doc, _header_imports(ks), _COMPAT, common,
                      *(["", form_head] if form_head else []), "", "", jit_source, "",
                      *([form_jit, ""] if form_jit else []),
                      main_launch, "", _make_args_def(ks.args), reference])
    orig = "\n".join([orig_doc, _header_imports(ks), _COMPAT, f"KERNEL = {ks.name!r}", "", "",
                      jit_source, "", launch_src, "",
                      f"INDUCTOR_SOURCE = {original_source!r}\n"])
    return main, orig


def generate_files(capture_dir: Path, record: dict[str, Any], kernel: dict[str, Any],
                   targets: Path) -> list[Path]:
    """Write NAME.py and NAME_orig.py for one captured kernel; return their paths."""
    source = (capture_dir / kernel["file"]).read_text()
    ks = parse_kernel_source(source, kernel["name"])
    form = capture_dir / str((kernel.get("form") or {}).get("file", ""))
    form_source = form.read_text() if kernel.get("form") and form.is_file() else None
    try:
        main, orig = render(ks, kernel, record.get("model", ""), source, form_source)
    except ValueError:
        if form_source is None:
            raise
        main, orig = render(ks, kernel, record.get("model", ""), source)  # Inductor's form alone
    targets.mkdir(parents=True, exist_ok=True)
    paths = [targets / f"{ks.name}.py", targets / f"{ks.name}_orig.py"]
    for path, text in zip(paths, (main, orig), strict=True):
        path.write_text(text)
    meta = {"model": record.get("model"), "kernel": ks.name, "share": kernel.get("share"),
            "time_us": kernel.get("time_us"), "editable": paths[0].name, "context": [paths[1].name]}
    (targets / f"{ks.name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    return paths
