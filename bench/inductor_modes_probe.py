"""What a torch.compile mode does to a model's kernels and time (issue 53's probe).

    python3 bench/inductor_modes_probe.py names MODEL_FILE --out names.json [--mode M]
    python3 bench/inductor_modes_probe.py modes MODEL_FILE --out modes.json [--rounds 10]

``names``: one compile (its own fresh TORCHINDUCTOR_CACHE_DIR, FX graph cache off, benchmark_kernel
as the environment says) and the Triton kernels it hands to AsyncCompile.triton from its wrapper
modules: name, and the sha256 of the @triton.jit function's text with the name taken out (what
the kernel computes, whatever Inductor numbered it). Two runs' files diffed say whether a
kernel's name is stable between processes and settings.
``modes``: in ONE process, eager and torch.compile in default, max-autotune-no-cudagraphs,
max-autotune and reduce-overhead; each mode's compile seconds, its outputs against eager's
(float64, the model's TOLERANCE), then ``--rounds`` interleaved rounds (engine.interleaved, each
window's time kept) and per mode the median and interquartile spread.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODES = ("default", "max-autotune-no-cudagraphs", "max-autotune", "reduce-overhead")


def body_hash(source: str, name: str) -> str:
    match = re.search(rf"@triton\.jit\s*\ndef {re.escape(name)}\(.*", source, re.S)
    text = match.group(0) if match else source
    return hashlib.sha256(re.sub(rf"\b{re.escape(name)}\b", "KERNEL", text).encode()).hexdigest()[:16]


def names(model_file: Path, mode: str, out: Path) -> None:
    cache = tempfile.mkdtemp(prefix="probe-names-")
    os.environ.update(TORCHINDUCTOR_CACHE_DIR=cache, TORCHINDUCTOR_FX_GRAPH_CACHE="0",
                      TORCHINDUCTOR_AUTOGRAD_CACHE="0")
    import torch
    from kernelopt_triton.engine_switch import wrapper_graph
    from kernelopt_triton.inductor import build_model, load_model_file
    from torch._inductor.async_compile import AsyncCompile

    seen: list[dict[str, Any]] = []
    original = AsyncCompile.triton

    def triton(self: Any, kernel_name: str, source_code: str, *args: Any, **kwargs: Any) -> Any:
        graph = wrapper_graph(sys._getframe(1))
        if graph is not None:
            seen.append({"name": kernel_name, "graph": Path(graph).name,
                         "body": body_hash(source_code, kernel_name)})
        return original(self, kernel_name, source_code, *args, **kwargs)

    AsyncCompile.triton = triton  # type: ignore[method-assign]
    module = load_model_file(model_file)
    model = build_model(module, "cuda")
    args = module.inputs(0, "cuda")
    t0 = time.perf_counter()
    compiled = torch.compile(model, mode=None if mode == "default" else mode)
    with torch.no_grad():
        compiled(*args)
        torch.cuda.synchronize()
    out.write_text(json.dumps({"mode": mode, "benchmark_kernel": os.environ.get(
        "TORCHINDUCTOR_BENCHMARK_KERNEL", "0"), "compile_s": round(time.perf_counter() - t0, 2),
        "kernels": seen}, indent=1))


def spread(values: list[float]) -> float:
    q = statistics.quantiles(values, n=4)
    return round(100.0 * (q[2] - q[0]) / statistics.median(values), 2)


def modes(model_file: Path, rounds: int, out: Path) -> None:
    from kernelopt_triton.engine import ENGINE_SEED, compare, flatten_outputs, interleaved, prepare_process
    from kernelopt_triton.inductor import build_model, load_model_file, model_tolerance

    torch = prepare_process("cuda", tempfile.mkdtemp(prefix="probe-modes-"))
    module = load_model_file(model_file)
    args = module.inputs(ENGINE_SEED, "cuda")
    tol = model_tolerance(module)
    calls: dict[str, Any] = {}
    result: dict[str, Any] = {"model": str(model_file), "torch": torch.__version__,
                              "gpu": torch.cuda.get_device_name(), "modes": {}}
    with torch.no_grad():
        eager = build_model(module, "cuda")
        reference = flatten_outputs(eager(*args))
        calls["eager"] = lambda: eager(*args)
        result["modes"]["eager"] = {}
        for mode in MODES:
            model = build_model(module, "cuda")
            t0 = time.perf_counter()
            compiled = torch.compile(model, mode=None if mode == "default" else mode)
            for _ in range(3):  # cudagraph trees record on the second/third call
                got = flatten_outputs(compiled(*args))
            torch.cuda.synchronize()
            ok, detail = compare(got, reference, tol["atol"], tol["rtol"])
            result["modes"][mode] = {"compile_s": round(time.perf_counter() - t0, 2),
                                     "match_eager": ok, "detail": detail}
            calls[mode] = (lambda c: lambda: c(*args))(compiled)
            print(f"== {model_file.name} {mode}: compiled in {result['modes'][mode]['compile_s']} s, "
                  f"{detail}", flush=True)
        times = interleaved(torch, calls, lambda label: None, True, rounds, 3, each_window=True)
    for label, values in times.items():
        result["modes"][label].update(ms=statistics.median(values), spread_pct=spread(values),
                                      windows=len(values))
        print(f"== {model_file.name} {label}: {statistics.median(values):.4f} ms ±{spread(values)} %",
              flush=True)
    out.write_text(json.dumps(result, indent=1))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=("names", "modes"))
    ap.add_argument("model_file", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--mode", default="default", choices=MODES)
    ap.add_argument("--rounds", type=int, default=10)
    ns = ap.parse_args()
    if ns.part == "names":
        names(ns.model_file, ns.mode, ns.out)
    else:
        modes(ns.model_file, ns.rounds, ns.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
