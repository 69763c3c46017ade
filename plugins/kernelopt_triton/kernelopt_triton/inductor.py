"""torch.compile (Inductor) models: recognise a model file, capture its Triton kernels, rank them.

Entry point (run in a child process, so the compile's state and caches never leak into kernelopt)::

    python -m kernelopt_triton.inductor capture MODEL_FILE --out DIR [--steps N] [--device cuda]
    python -m kernelopt_triton.inductor generate DIR [--top K | --kernel NAME] [--targets DIR/targets]

``capture`` compiles the model with an isolated ``TORCHINDUCTOR_CACHE_DIR`` (``DIR/cache``) and
``config.benchmark_kernel`` on (so every kernel source carries Inductor's own ``get_args()``),
profiles compiled steps with torch.profiler, and writes ``DIR/kernels.json``,
``DIR/ranking.txt``, ``DIR/profile.txt``, ``DIR/output_code/*.py`` (wrapper modules) and
``DIR/kernels/NAME.py`` (each kernel source as emitted). ``generate`` writes standalone kernel
files (docs/triton-models.md) for the top kernels. The parsing is in inductor_parse.py and
profile_table.py (pure, tested on fixtures), the file generation in inductor_gen.py, reading
kernels.json back capture_record.py, the CPU's interpreter set-up interpreter.py.

``--device cpu`` is for machines without a GPU: Inductor's ``cpu_backend = "triton"`` emits
the same kind of Triton kernels for the CPU, run by Triton's interpreter; no profile then.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from kernelopt_triton.capture_depthwise import (
    DEPTHWISE_FILE,
    DEPTHWISE_KERNEL,
    choose_depthwise,
    depthwise_line,
)
from kernelopt_triton.capture_kernels import chosen_configs, kernels_of, wrapper_modules
from kernelopt_triton.capture_record import RACE_FILE, load_record, select_kernels
from kernelopt_triton.compile_mode import (
    CompileError,
    compile_kwargs,
    describe,
    label,
    uses_cudagraphs,
    without_cudagraphs,
)
from kernelopt_triton.engine_switch import UniqueKernelNames, install
from kernelopt_triton.inductor_forms import PENDING, compile_other_forms, other_name, pair_forms
from kernelopt_triton.interpreter import prepare_cpu_triton
from kernelopt_triton.lowerings import as_chosen, form_for
from kernelopt_triton.profile_table import (
    ProfileRow,
    Ranked,
    is_annotation,
    rank_kernels,
    ranking_table,
)

NO_GPU_MESSAGE = (
    "needs a CUDA GPU: torch.compile's Triton kernels are compiled and timed for the GPU the model "
    "runs on, and none is visible here ({why}); on a CPU-only machine use standalone kernel files "
    "under the interpreter (TRITON_INTERPRET=1)"
)
SCHEMA = 1
SKIPPED_FILE = "skipped.json"  # kernels `generate` could not turn into standalone files, with why


# --------------------------------------------------------------------------- model files


def is_model_file(path: Path) -> bool:
    """A model file defines ``model()`` (or ``MODEL``) and ``inputs()`` and has no @triton.jit."""
    if path.suffix != ".py" or not path.is_file():
        return False
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return False
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    for walked in ast.walk(tree):
        if isinstance(walked, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any("jit" in ast.unparse(d) for d in walked.decorator_list):
                return False
    return ("model" in names or "MODEL" in names) and "inputs" in names


def load_model_file(path: Path) -> Any:
    """Import a model file as a module (its own name, so its classes pickle by reference)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"kernelopt_model_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def build_model(module: Any, device: str) -> Any:
    model = module.model() if hasattr(module, "model") else module.MODEL
    return model.to(device).eval()


def model_tolerance(module: Any) -> dict[str, float]:
    tol = dict(getattr(module, "TOLERANCE", {}) or {})
    return {"atol": float(tol.get("atol", 1e-2)), "rtol": float(tol.get("rtol", 1e-2))}


def model_prerequisite_error() -> str | None:
    """None when torch.compile can make and time Triton kernels here; else the message to exit 3 with.

    Imports torch (a second or two): call it when a model file was found, not in ``detect``.
    """
    try:
        import torch
    except ImportError:
        return NO_GPU_MESSAGE.format(why="torch is not installed")
    try:
        import triton  # noqa: F401
    except ImportError:
        return NO_GPU_MESSAGE.format(why="triton is not installed")
    if not torch.cuda.is_available():
        build = ("a CPU-only torch build" if torch.version.cuda is None
                 else "torch.cuda.is_available() is False")
        return NO_GPU_MESSAGE.format(why=build)
    return None


# --------------------------------------------------------------------------- capture (child)


def _configure_env(out: Path, device: str) -> None:
    # Before torch is imported: Inductor reads these at import.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(out / "cache")
    os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
    os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
    os.environ["TORCHINDUCTOR_BENCHMARK_KERNEL"] = "1"
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"


def _device_events(prof: Any) -> list[ProfileRow]:
    """Device-side kernel time per name from the profiler's raw events (exact, no table cut);
    user annotations (the GPU-side twins of ProfilerStep#N and record_function ranges) left
    out: they span kernels already counted."""
    totals: dict[str, list[float]] = {}
    for evt in prof.events():
        dev_type = str(getattr(evt, "device_type", ""))
        if "CUDA" not in dev_type and "XPU" not in dev_type and "PrivateUse1" not in dev_type:
            continue
        if getattr(evt, "is_user_annotation", False) or is_annotation(evt.name):
            continue
        t = float(getattr(evt, "self_device_time_total", 0) or getattr(evt, "device_time", 0) or 0)
        entry = totals.setdefault(evt.name, [0.0, 0])
        entry[0] += t
        entry[1] += 1
    return [ProfileRow(name, t, int(n)) for name, (t, n) in totals.items()]


def capture(model_file: Path, out: Path, steps: int = 5, device: str = "cuda",
            mode: str | None = None, forms: bool = True,
            depthwise: bool = True) -> dict[str, Any]:
    """Compile (as the user does: compile_mode.py), run and profile the model; write
    kernels.json and friends under ``out``. A CUDA-graph compile is captured without its
    graphs: the same kernels and configs, each launch seen by the profiler. ``forms``: each
    reduction kernel's other form too (inductor_forms.py: one more compile). ``depthwise``:
    first the depthwise convolutions' choice (choose_depthwise)."""
    out = out.resolve()  # Inductor's module paths are absolute; the rename lookup compares them
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("kernels.json", DEPTHWISE_FILE, RACE_FILE):  # an earlier capture's
        (out / stale).unlink(missing_ok=True)
    # the wrappers found below are this compile's alone (the engine and the model check later
    # compile into the same cache, for its configs)
    shutil.rmtree(out / "cache", ignore_errors=True)
    _configure_env(out, device)
    import torch

    if device == "cpu":
        prepare_cpu_triton()
    names = UniqueKernelNames()  # one name per kernel across graph breaks
    compiling = install(names)
    module = load_model_file(model_file)
    kwargs = compile_kwargs(module, mode)
    model = build_model(module, device)
    args = module.inputs(0, device)
    named = mode is not None or getattr(module, "COMPILE", None) is not None
    # the runs' compile: CUDA graphs where named so, or where the race may choose them
    form = form_for(uses_cudagraphs(kwargs) or not named)
    lowering = choose_depthwise(model, args, device, out, form) if depthwise else {"skipped": "off"}
    chosen = out / DEPTHWISE_FILE if lowering.get("chosen") else None
    compiled = torch.compile(model, **without_cudagraphs(kwargs))
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    t0 = time.perf_counter()
    with torch.no_grad(), as_chosen(model, chosen):  # the compile: at the first call
        compiled(*args)
        sync()
        compile_s = time.perf_counter() - t0
        for _ in range(3 if device != "cpu" else 0):
            compiled(*args)
        sync()
        rows: list[ProfileRow] = []
        table = ""
        if device.startswith("cuda"):
            from torch.profiler import ProfilerActivity, profile, schedule

            # one profiled warm-up step is discarded: CUPTI before CUDA 13.1 can drop kernel
            # events at the start of a session (pytorch/pytorch#192021), which would skew shares.
            # The cycle's events are cleared when it ends: read them in on_trace_ready.
            seen: dict[str, Any] = {}

            def ready(prof: Any) -> None:
                seen["rows"] = _device_events(prof)
                seen["table"] = prof.key_averages().table(sort_by="self_cuda_time_total",
                                                          row_limit=60)

            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                         schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
                         on_trace_ready=ready) as prof:
                for _ in range(steps + 1):
                    compiled(*args)
                    sync()
                    prof.step()
            rows, table = seen.get("rows", []), seen.get("table", "")
    cache = out / "cache"
    configs = chosen_configs()
    wrappers = wrapper_modules(cache)
    (out / "output_code").mkdir(exist_ok=True)
    (out / "kernels").mkdir(exist_ok=True)
    for gi, wrapper in enumerate(wrappers):
        shutil.copyfile(wrapper, out / "output_code" / f"graph_{gi}.py")
    # kernelopt's own depthwise kernel (inlined: in Inductor's code) is no target, a library's
    found = [f for f in kernels_of(wrappers, names, configs)
             if not f.inductor_name.startswith(DEPTHWISE_KERNEL)]
    for f in found:
        (out / "kernels" / f"{f.name}.py").write_text(f.source)
    kernels = [f.entry for f in found]
    reductions = [f for f in found if other_name(f.inductor_name)]
    # the other reduction forms come from a second compile, after kernels.json is written
    # (said pending there): a second compile that hangs or kills the process loses no capture
    other: dict[str, Any] = {"compile_s": 0.0, "paired": 0, "unpaired": len(reductions)}
    if forms and reductions:
        other["error"] = PENDING
    ranked, total = rank_kernels([k["name"] for k in kernels], rows)
    by_name = {r.name: r for r in ranked}
    for k in kernels:
        r = by_name[k["name"]]
        k.update(share=r.share, time_us=r.time_us / steps, calls=r.calls // steps)
    order = {k["name"]: i for i, k in enumerate(kernels)}
    kernels.sort(key=lambda k: (-k["time_us"], order[k["name"]]))
    record = {
        "schema": SCHEMA, "model": str(model_file.resolve()), "device": device,
        "torch": torch.__version__, "triton": _triton_version(), "steps": steps,
        "compile_s": round(compile_s, 3), "device_us_per_step": total / steps, "kernels": kernels,
        "forms": other, "depthwise": lowering,
        "compile": {"kwargs": kwargs, "label": label(kwargs), "cuda_graphs": uses_cudagraphs(kwargs),
                    "profiled": without_cudagraphs(kwargs),
                    # the user said how (COMPILE or --compile-mode): no race of modes (models.py)
                    "named": named},
        "others": sorted(({"name": r.name, "time_us": r.device_us / steps} for r in rows
                          if r.name not in by_name),  # rows hold no annotations (_device_events)
                         key=lambda o: -o["time_us"])[:20],  # type: ignore[operator]
    }
    (out / "kernels.json").write_text(json.dumps(record, indent=1) + "\n")
    (out / "profile.txt").write_text(table)
    (out / "device_events.json").write_text(json.dumps(
        [{"name": r.name, "device_us": r.device_us, "calls": r.calls} for r in rows], indent=0))
    head = f"model {model_file} on {device} (torch {torch.__version__}), per step of {steps} profiled\n"
    if not rows:
        head += "no device profile on this device: kernels in order of definition, times unknown\n"
    libraries = [Ranked(r.name, r.device_us, r.calls, r.device_us / total if total > 0 else 0.0)
                 for r in rows if r.name not in by_name and r.device_us > 0]
    (out / "ranking.txt").write_text(head + ranking_table(ranked, total, steps, libraries,
                                                          name_width=90))
    if forms and reductions:
        other.pop("error")
        try:
            with as_chosen(model, chosen):
                other["compile_s"] = round(compile_other_forms(
                    model, args, without_cudagraphs(kwargs), sync, compiling), 3)
            later = [w for w in wrapper_modules(cache) if w not in set(wrappers)]
            other["paired"], other["unpaired"] = pair_forms(
                reductions, names.order, kernels_of(later, compiling.names, chosen_configs()),
                compiling.names.order, out)
        except Exception as exc:  # the other forms are an extra: the capture stands without
            other["error"] = f"{type(exc).__name__}: {exc}"[:500]
        (out / "kernels.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def _triton_version() -> str:
    try:
        import triton

        return str(triton.__version__)
    except ImportError:
        return ""


def raised_in(exc: BaseException, file: Path) -> bool:
    """Whether ``exc`` passed through ``file`` (the user's model file) on its way up."""
    target = file.resolve()
    frames = traceback.extract_tb(exc.__traceback__)
    return any(Path(frame.filename).resolve() == target for frame in frames if frame.filename)


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_triton.inductor")
    sub = parser.add_subparsers(dest="cmd", required=True)
    cap = sub.add_parser("capture", help="compile, profile and record a model's Triton kernels")
    cap.add_argument("model_file", type=Path)
    cap.add_argument("--out", type=Path, required=True)
    cap.add_argument("--steps", type=int, default=5)
    cap.add_argument("--device", default="cuda", help="cuda (default) or cpu (interpreter, no profile)")
    cap.add_argument("--compile-mode", default=None, help="torch.compile's mode, in place of the "
                     "model file's COMPILE mode (compile_mode.py)")
    cap.add_argument("--no-forms", dest="forms", action="store_false",
                     help="no second compile for each reduction's other form (inductor_forms.py)")
    cap.add_argument("--no-depthwise", dest="depthwise", action="store_false",
                     help="every depthwise convolution stays the library's (no per-shape choice)")
    gen = sub.add_parser("generate", help="write standalone kernel files from a capture")
    gen.add_argument("capture_dir", type=Path)
    gen.add_argument("--top", type=int, default=None)
    gen.add_argument("--kernel", default=None)
    gen.add_argument("--targets", type=Path, default=None, help="default: CAPTURE_DIR/targets")
    ns = parser.parse_args(argv)
    if ns.cmd == "capture":
        if ns.device.startswith("cuda"):
            err = model_prerequisite_error()
            if err:
                print(f"kernelopt-triton: {err}", file=sys.stderr)
                return 3
        try:
            record = capture(ns.model_file, ns.out, ns.steps, ns.device, ns.compile_mode, ns.forms,
                             ns.depthwise)
        except CompileError as exc:
            print(f"kernelopt-triton: {ns.model_file}: {exc} (docs/triton-models.md, COMPILE)",
                  file=sys.stderr)
            return 2
        except Exception as exc:
            if not raised_in(exc, ns.model_file):
                raise  # ours (or torch's): a traceback and exit 1
            traceback.print_exc()
            print(f"kernelopt-triton: the model file raised {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            return 2
        print((ns.out / "ranking.txt").read_text(), end="")
        print(f"captured {len(record['kernels'])} Triton kernels in {record['compile_s']} s of compile "
              f"({describe(record['compile']['kwargs'])}) -> {ns.out / 'kernels.json'}")
        if line := depthwise_line(record.get("depthwise")):
            print(line)
        forms = record["forms"]
        if forms.get("paired") or forms.get("error"):
            print(f"the other form of {forms['paired']} reduction kernels in {forms['compile_s']} s "
                  "of a second compile" + (f" (failed: {forms['error']})" if forms.get("error") else ""))
        return 0
    from kernelopt_triton.inductor_gen import generate_files

    record = load_record(ns.capture_dir)
    targets = ns.targets or ns.capture_dir / "targets"
    try:
        # --top K: the K largest kernels that stand alone; one that does not (a GEMM template
        # of max-autotune's, FixedGrid) is skipped, said so, and the next one taken
        chosen = select_kernels(record, len(record["kernels"]) if ns.top else None, ns.kernel)
    except KeyError as exc:
        print(f"kernelopt-triton: {exc.args[0]}", file=sys.stderr)
        return 2
    skipped: dict[str, str] = {}
    made = 0
    for k in chosen:
        if ns.top and made >= ns.top:
            break
        try:
            files = generate_files(ns.capture_dir, record, k, targets)
        except ValueError as exc:  # one kernel we cannot stand alone must not lose the others
            skipped[k["name"]] = str(exc)
            print(f"kernelopt-triton: skipped {k['name']}: {exc}", file=sys.stderr)
            continue
        made += 1
        print(f"{k['name']}: {100 * k.get('share', 0):.1f}% -> {', '.join(str(f) for f in files)}")
    targets.mkdir(parents=True, exist_ok=True)
    (targets / SKIPPED_FILE).write_text(json.dumps(skipped, indent=1))
    return 2 if skipped and not made else 0


if __name__ == "__main__":
    sys.exit(main())
