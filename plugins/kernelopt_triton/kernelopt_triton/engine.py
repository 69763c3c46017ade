"""The engine command: the whole model under torch.compile with one kernel swapped for a candidate.

    python -m kernelopt_triton.engine MODEL_FILE --kernel NAME --source CANDIDATE_FILE

CANDIDATE_FILE is a standalone kernel file (inductor_gen.py) for kernel NAME of the model. The
model is compiled in this fresh process (fresh TORCHINDUCTOR_CACHE_DIR, FX graph and autograd
caches off); when Inductor hands kernel NAME to ``AsyncCompile.triton``, its ``@triton.jit``
function is replaced by the candidate's and its autotuning decorator by
``triton_heuristics.fixed_config`` with the candidate's launch keywords (XBLOCK, num_warps...),
so the model runs exactly the candidate. The baseline runs through the same swap (with the
unedited file), so both sides use one mechanism.

Outputs are saved to ``$KERNELOPT_ENGINE_OUT`` (torch.save of a list of CPU tensors); with
``$KERNELOPT_ENGINE_REFERENCE`` they are compared with that file in float64 under the model's
TOLERANCE. Then the model is timed (time_calls: warm-up, then the median of N windows of
back-to-back calls) and ONE JSON line is printed: {"time_ms": float, "match": true|false|null,
"detail": "...", "windows", "calls_per_window", "spread_pct"}. Exit 0 unless the
engine itself failed (3: no GPU; 4: the swap or the model failed).

    python -m kernelopt_triton.engine MODEL_FILE --kernel NAME --source CANDIDATE_FILE \
        --baseline-source BASELINE_FILE

The pair mode the engine gate uses (``InductorBackend.engine_pair``): ONE process compiles the
model once with both versions of kernel NAME side by side (engine_switch.py), runs the
baseline's version on two fixed input sets, the candidate's on the same, compares them in
float64 under TOLERANCE, then times ROUNDS interleaved rounds (baseline, candidate, candidate,
baseline, ...), each the median of a few windows. It prints ONE JSON line
``{"kernelopt_engine": 1, "baseline_ms": [...], "candidate_ms": [...], "match": bool, "detail":
str, "compile_s", "engine_s", ...}``; when one side cannot run, ``{"kernelopt_engine": 1,
"engine_error": why, "side": "baseline" | "candidate"}`` and exit 4. Compiling once instead of
six times is what keeps the gate within a minute on real models (docs/triton-models.md).

The model is compiled as its user compiles it (compile_mode.py: the file's ``COMPILE``,
``--compile-mode``). Under CUDA graphs (max-autotune, reduce-overhead) a graph replays the
kernels it recorded, so switching a version between calls would change nothing: there each
version gets its own compile of the model (the second reuses the first's autotuning through
the shared Inductor cache) and the rounds take turns between the two compiled models, each
replaying its own graphs. ``--capture-source`` (the capture's kernels/NAME.py): the kernel is
found by its code, not by Inductor's number (engine_switch.py), and the compile has the
capture's codegen (benchmark_kernel on), so with the capture's cache (``--cache-dir``) it
runs the configs the capture timed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kernelopt_triton.compile_mode import (
    MODES,
    CompileError,
    compile_kwargs,
    describe,
    uses_cudagraphs,
)
from kernelopt_triton.engine_swap import candidate_parts, swap_kernel_source  # noqa: F401 (tests, callers)
from kernelopt_triton.inductor import (
    build_model,
    load_model_file,
    model_prerequisite_error,
    model_tolerance,
)
from kernelopt_triton.lowerings import as_chosen
from kernelopt_triton.outputs import compare, flatten_outputs

ENGINE_SEED = 20240917  # fixed inputs: baseline and candidate see the same data
# after a compile or idle the H200's clocks ramp for ~0.2 s (FACTS.md); a window of ~20 ms of
# work makes one event pair's resolution and one synchronization negligible
WARMUP_S, WINDOW_MS = 0.5, 20.0
# pair mode: rounds of interleaved baseline/candidate timing, windows per round, and the
# warm-up after each switch (the first launches of a version pay its first-call costs)
PAIR_ROUNDS, PAIR_WINDOWS, SWITCH_WARMUP_S = 12, 5, 0.05
PAIR_SEEDS = (ENGINE_SEED, ENGINE_SEED + 1)


# --------------------------------------------------------------------------- the run


def prepare_process(device: str, cache_dir: str) -> Any:
    """Inductor's caches for this process (FX graph and autograd caches off: every kernel goes
    through AsyncCompile.triton, where the swap happens); torch, imported."""
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
    os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
    # the capture's codegen (inductor.py): its kernel modules carry a benchmark harness, and
    # without it Inductor dedups kernels differently and numbers them differently (seen on
    # ConvNeXt: 22 kernels captured, 21 here, every name after the third moved by one); the
    # same source also finds the capture's autotuning results in a shared cache
    os.environ["TORCHINDUCTOR_BENCHMARK_KERNEL"] = "1"
    import torch

    if device == "cpu":  # tests and demos without a GPU: Triton's interpreter
        from kernelopt_triton.interpreter import prepare_cpu_triton

        os.environ["TRITON_INTERPRET"] = "1"
        prepare_cpu_triton()
    return torch


def captured_code(name: str, capture_source: Path | None) -> Any:
    """The capture's code of kernel ``name`` and its neighbours (engine_switch.CapturedCode),
    or None: the kernel found by name."""
    from kernelopt_triton.engine_switch import CapturedCode

    return CapturedCode({name: capture_source}) if capture_source is not None else None


def run_engine(model_file: Path, name: str, source: Path, device: str, iters: int, warmup: int,
               cache_dir: str, mode: str | None = None, capture_source: Path | None = None,
               depthwise: Path | None = None) -> dict:
    torch = prepare_process(device, cache_dir)
    from kernelopt_triton.engine_switch import KernelSwitch, UniqueKernelNames, install

    switch = KernelSwitch({name: {"candidate": source.read_text()}}, swap_kernel_source,
                          captured_code(name, capture_source))
    install(UniqueKernelNames(), switch)  # the capture's names, then the swap
    module = load_model_file(model_file)
    model = build_model(module, device)
    args = module.inputs(ENGINE_SEED, device)
    compiled = torch.compile(model, **compile_kwargs(module, mode))
    cuda = device.startswith("cuda")
    # the model as the capture compiled it: its chosen depthwise convolutions kernelopt's
    with torch.no_grad(), as_chosen(model, depthwise):
        out = flatten_outputs(compiled(*args))
        if switch.missing():
            raise RuntimeError(switch.missing_reason())
        if path := os.environ.get("KERNELOPT_ENGINE_OUT"):
            torch.save(out, path)
        match: bool | None = None
        detail = "no reference"
        if ref := os.environ.get("KERNELOPT_ENGINE_REFERENCE"):
            tol = model_tolerance(module)
            match, detail = compare(out, torch.load(ref), tol["atol"], tol["rtol"])
        timing = time_calls(torch, lambda: compiled(*args), cuda, iters, warmup)
    timing.pop("window_ms")
    return {**timing, "match": match, "detail": detail, "identity": switch.identity()}


def time_calls(torch: Any, call: Any, cuda: bool, windows: int, warmup: int,
               warmup_s: float = WARMUP_S) -> dict[str, Any]:
    """The model's time per call: warm-up until the clocks settle (at least ``warmup`` calls
    and ``warmup_s``), then the median of ``windows`` windows of back-to-back calls (about
    WINDOW_MS of work each, one synchronization per window, so the CPU's dispatch overlaps the
    GPU's work as it does in a serving loop)."""
    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    start, calls = time.perf_counter(), 0
    while calls < warmup or time.perf_counter() - start < warmup_s:
        call()
        calls += 1
        if calls % 8 == 0:
            sync()
    sync()
    estimate_ms = (time.perf_counter() - start) * 1e3 / calls
    per_window = max(1, min(100, round(WINDOW_MS / max(estimate_ms, 1e-3))))
    times: list[float] = []
    for _ in range(windows):
        if cuda:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            for _ in range(per_window):
                call()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end) / per_window)
        else:
            t0 = time.perf_counter()
            for _ in range(per_window):
                call()
            times.append((time.perf_counter() - t0) * 1e3 / per_window)
    middle = statistics.median(times)
    quartiles = statistics.quantiles(times, n=4) if len(times) > 1 else [middle] * 3
    return {"time_ms": middle, "windows": windows, "calls_per_window": per_window,
            "spread_pct": round(100.0 * (quartiles[2] - quartiles[0]) / middle, 2),
            "window_ms": times}


_COMPILES = itertools.count()
NOT_COMPILED_AGAIN = (
    "under CUDA graphs each version needs its own compile, and the candidate's compile "
    "reused the first one's graphs (seen with a graph break in the model: Dynamo keeps the "
    "resumed frame's graph); the engine cannot time the two versions apart for this model "
    "in this mode: the default or max-autotune-no-cudagraphs mode times them in one compile")


def inductor_backend(torch: Any, kwargs: dict[str, Any]) -> Any:
    """The Inductor backend torch.compile makes of these keywords (it checks their settings)."""
    return torch._TorchCompileInductorWrapper(kwargs.get("mode"), kwargs.get("options"),
                                              kwargs.get("dynamic"))


def compile_apart(torch: Any, model: Any, kwargs: dict[str, Any], tag: str) -> Any:
    """torch.compile of ``model`` as a compile of its own. Dynamo caches compiled graphs on the
    code objects it traces (the model's forward, and each frame after a graph break) and takes
    two Inductor backends with equal settings for one, so a second compile of the same model
    with the same keywords would reuse the first's graphs and kernels. Here each compile's
    Inductor backend (the one torch.compile makes from these keywords) carries one setting
    that differs and changes nothing (``trace.debug_dir``, read only when tracing is on), and
    Dynamo compiles every graph again for it. Inductor also keeps the wrapper modules it loaded
    by path, and a graph compiled again writes the same wrapper (the kernel swap happens when
    the wrapper runs, not in its text): forgetting the loaded ones makes this compile's
    wrappers run again, so their kernels reach the switch. Earlier compiles keep theirs."""
    import torch._dynamo.config as dynamo_config
    from torch._inductor.codecache import PyCodeCache

    PyCodeCache.cache_clear()
    # one compile per mode and version, each a cache entry on the same code objects
    limit = "recompile_limit" if hasattr(dynamo_config, "recompile_limit") else "cache_size_limit"
    setattr(dynamo_config, limit, max(int(getattr(dynamo_config, limit)), 64))
    backend = inductor_backend(torch, kwargs)
    backend.apply_options({"trace.debug_dir": os.path.join(
        tempfile.gettempdir(), f"kernelopt-{tag}-{os.getpid()}-{next(_COMPILES)}")})
    return torch.compile(model, backend=backend, dynamic=kwargs.get("dynamic"),
                         fullgraph=bool(kwargs.get("fullgraph", False)))


class SideFailed(Exception):
    """The baseline's or the candidate's side of a pair run could not run."""

    def __init__(self, side: str, why: str) -> None:
        super().__init__(why)
        self.side = side


def interleaved(torch: Any, calls: dict[str, Any], select: Any, cuda: bool, rounds: int,
                windows: int, each_window: bool = False) -> dict[str, list[float]]:
    """Per label, the median time of each round (``each_window``: every window's time); the
    labels take turns within a round and the order reverses every round (A B, B A, ...) so
    that drift favours neither."""
    labels = list(calls)
    for label in labels:  # the clocks settle once, each version's first calls are paid
        select(label)
        time_calls(torch, calls[label], cuda, 1, 3)
    times: dict[str, list[float]] = {label: [] for label in labels}
    for r in range(rounds):
        for label in (labels if r % 2 == 0 else labels[::-1]):
            select(label)
            reading = time_calls(torch, calls[label], cuda, windows, 2, SWITCH_WARMUP_S)
            times[label] += reading["window_ms"] if each_window else [reading["time_ms"]]
    return times


def run_pair(model_file: Path, name: str, baseline: Path, candidate: Path, device: str,
             rounds: int, cache_dir: str, mode: str | None = None,
             capture_source: Path | None = None, depthwise: Path | None = None) -> dict[str, Any]:
    """Both versions of kernel ``name`` in one process; compare, then interleave (module doc):
    one compile switched between calls, or under CUDA graphs one compile per version."""
    from kernelopt_triton.engine_switch import (
        KernelSwitch,
        UniqueKernelNames,
        VersionFailed,
        install,
    )

    begin = time.perf_counter()
    torch = prepare_process(device, cache_dir)
    captured = captured_code(name, capture_source)
    texts = {"baseline": baseline.read_text(), "candidate": candidate.read_text()}
    module = load_model_file(model_file)
    kwargs = compile_kwargs(module, mode)
    graphs = uses_cudagraphs(kwargs)
    inputs = [module.inputs(seed, device) for seed in PAIR_SEEDS]
    cuda = device.startswith("cuda")
    if graphs:  # each version its own switch and compile (its own recorded graphs)
        switches = {label: KernelSwitch({name: {label: text}}, swap_kernel_source, captured)
                    for label, text in texts.items()}
    else:
        one = KernelSwitch({name: dict(texts)}, swap_kernel_source, captured)
        switches = {"baseline": one, "candidate": one}
    compiling = install(UniqueKernelNames(), switches["baseline"])
    model = build_model(module, device)  # one instance: each compile has its own backend
    models = {"baseline": compile_apart(torch, model, kwargs, "baseline")}

    def outputs(label: str) -> list[list[Any]]:
        switches[label].select(label)
        try:
            # under CUDA graphs the first calls warm up and record: the outputs compared are
            # a later pass's, the graphs replayed
            for _ in range(2 if graphs else 0):
                for args in inputs:
                    models[label](*args)
            return [flatten_outputs(models[label](*args)) for args in inputs]
        except VersionFailed as exc:
            raise SideFailed(exc.label, str(exc)) from exc
        except Exception as exc:  # the model raised with this side's kernel in it
            raise SideFailed(label, f"the model raised: {type(exc).__name__}: {exc}") from exc

    # both sides the model as the capture compiled it: its chosen depthwise convolutions
    # kernelopt's (lowerings.as_chosen)
    with torch.no_grad(), as_chosen(model, depthwise):
        reference = outputs("baseline")  # compiles the model (and, switched, both versions)
        if switches["baseline"].missing():
            raise SideFailed("baseline", switches["baseline"].missing_reason())
        if graphs:
            compiling.names, compiling.switch = UniqueKernelNames(), switches["candidate"]
            compiling.seen = 0
            models["candidate"] = compile_apart(torch, model, kwargs, "candidate")
        else:
            models["candidate"] = models["baseline"]
        compile_s = time.perf_counter() - begin
        got = outputs("candidate")
        if graphs and not compiling.seen:  # not the candidate's doing: leaves matched
            raise SideFailed("baseline", NOT_COMPILED_AGAIN)
        if switches["candidate"].missing():
            raise SideFailed("candidate", switches["candidate"].missing_reason())
        tol = model_tolerance(module)
        verdicts = [compare(g, r, tol["atol"], tol["rtol"]) for g, r in zip(got, reference, strict=True)]
        match = all(ok for ok, _ in verdicts)
        detail = "; ".join(f"seed {seed}: {why}" for seed, (_, why) in zip(PAIR_SEEDS, verdicts, strict=True))
        if path := os.environ.get("KERNELOPT_ENGINE_OUT"):
            torch.save(got[0], path)
        result: dict[str, Any] = {
            "kernelopt_engine": 1, "match": match, "detail": detail,
            "compile_s": round(compile_s, 2), "compile": describe(kwargs),
            "cuda_graphs": graphs and cuda, "identity": switches["baseline"].identity()}
        if match:  # a wrong candidate is not timed
            times = interleaved(torch, {label: (lambda m: lambda: m(*inputs[0]))(models[label])
                                        for label in ("baseline", "candidate")},
                                lambda label: switches[label].select(label), cuda, rounds,
                                PAIR_WINDOWS)
            result.update(baseline_ms=times["baseline"], candidate_ms=times["candidate"],
                          time_ms=statistics.median(times["candidate"]), rounds=rounds,
                          windows_per_round=PAIR_WINDOWS)
    result["engine_s"] = round(time.perf_counter() - begin, 2)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_triton.engine")
    parser.add_argument("model_file", type=Path)
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--source", type=Path, required=True, help="the candidate standalone kernel file")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--iters", type=int, default=int(os.environ.get("KERNELOPT_ENGINE_ITERS", "30")))
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--baseline-source", type=Path,
                        help="pair mode: the baseline's kernel file, compiled beside the candidate's")
    parser.add_argument("--rounds", type=int, default=PAIR_ROUNDS, help="pair mode: timed rounds")
    parser.add_argument("--cache-dir", type=Path,
                        help="Inductor's cache (kept between runs: Triton binaries and autotune "
                        "results of unchanged kernels are reused); default: a fresh one")
    parser.add_argument("--compile-mode", choices=MODES, default=None,
                        help="torch.compile's mode, in place of the model file's COMPILE mode")
    parser.add_argument("--capture-source", type=Path,
                        help="the capture's source of the kernel (kernels/NAME.py): the kernel "
                        "is found by its code, whatever this compile numbers it")
    parser.add_argument("--depthwise", type=Path,
                        help="the capture's depthwise.json: both sides compiled with its "
                        "chosen depthwise convolutions as kernelopt's kernel (lowerings.as_chosen)")
    ns = parser.parse_args(argv)
    if ns.device.startswith("cuda") and (err := model_prerequisite_error()):
        print(f"kernelopt-triton engine: {err}", file=sys.stderr)
        return 3
    try:
        with tempfile.TemporaryDirectory(prefix="kernelopt-engine-") as fresh:
            cache_dir = str(ns.cache_dir) if ns.cache_dir else fresh
            if ns.baseline_source is not None:
                result = run_pair(ns.model_file, ns.kernel, ns.baseline_source, ns.source,
                                  ns.device, ns.rounds, cache_dir, ns.compile_mode,
                                  ns.capture_source, ns.depthwise)
            else:
                result = run_engine(ns.model_file, ns.kernel, ns.source, ns.device, ns.iters,
                                    ns.warmup, cache_dir, ns.compile_mode, ns.capture_source,
                                    ns.depthwise)
    except CompileError as exc:  # the model file's COMPILE: neither side's doing
        print(f"kernelopt-triton engine: {ns.model_file}: {exc}", file=sys.stderr)
        print(json.dumps({"kernelopt_engine": 1, "engine_error": f"COMPILE: {exc}",
                          "side": "baseline"}), flush=True)
        return 2
    except SideFailed as exc:
        print(f"kernelopt-triton engine: the {exc.side}'s side failed: {exc}", file=sys.stderr)
        print(json.dumps({"kernelopt_engine": 1, "engine_error": str(exc)[-2000:],
                          "side": exc.side}), flush=True)
        return 4
    except Exception as exc:  # the engine itself failed: say why on stderr, exit 4
        import traceback

        traceback.print_exc()
        print(f"kernelopt-triton engine failed: {exc}", file=sys.stderr)
        return 4
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
