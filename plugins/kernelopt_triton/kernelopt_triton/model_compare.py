"""The model-level answer: is the model faster with kernelopt's kernels than with what I have?

    python -m kernelopt_triton.model_compare MODEL_FILE [--swap NAME=FILE ...] [--out result.json]
        [--modes eager,default,max-autotune,kernelopt] [--rounds 10] [--windows 3]
        [--cache-dir DIR]

In ONE process, the same model and inputs four ways: eager; torch.compile default;
torch.compile mode="max-autotune" (GEMM autotuning, coordinate descent off as shipped, CUDA
graphs on); and torch.compile default with every ``--swap`` kernel (a kernelopt winner, a
standalone kernel file) in place at once. Default and kernelopt share one compile
(engine_switch.py: each swapped kernel has Inductor's own version and the winner's, so the rest
of the model is the same code); max-autotune is a second compile with the switch off. Every
mode's outputs are compared with eager's in float64 under the model's TOLERANCE. Times:
``--rounds`` rounds, the modes taking turns in an order that reverses every round, each turn
``--windows`` windows of back-to-back calls (engine.time_calls); a mode's time is the median of
its rounds × windows windows. Prints one JSON object (also written to ``--out``), marked
``"kernelopt_model": 1`` with ``baseline`` (default) and ``kernelopt`` (the mode with the
winners; default when there is none): the model check's line (kernelopt_core.model_check).
``--cache-dir``: Inductor's cache kept between runs (the capture's: max-autotune's GEMM
choices and the Triton binaries are reused; the FX graph cache stays off, see engine.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kernelopt_triton.engine import (
    ENGINE_SEED,
    compare,
    flatten_outputs,
    interleaved,
    prepare_process,
    swap_kernel_source,
)
from kernelopt_triton.inductor import build_model, load_model_file, model_tolerance

MODES = ("eager", "default", "max-autotune", "kernelopt")


def parse_swaps(items: list[str]) -> dict[str, Path]:
    swaps: dict[str, Path] = {}
    for item in items:
        name, sep, file = item.partition("=")
        if not sep or not name or not Path(file).is_file():
            raise SystemExit(f"--swap {item!r}: give NAME=FILE with an existing kernel file")
        swaps[name] = Path(file)
    return swaps


def compare_modes(model_file: Path, swaps: dict[str, Path], modes: tuple[str, ...], device: str,
                  rounds: int, windows: int, cache_dir: str) -> dict[str, Any]:
    from kernelopt_triton.engine_switch import KernelSwitch, UniqueKernelNames, install

    torch = prepare_process(device, cache_dir)
    switch = KernelSwitch({name: {"inductor": None, "kernelopt": file.read_text()}
                           for name, file in swaps.items()}, swap_kernel_source)
    names = UniqueKernelNames()
    install(names, switch)  # the capture's names, then Inductor's and the winners' versions
    module = load_model_file(model_file)
    model = build_model(module, device)
    args = module.inputs(ENGINE_SEED, device)
    tol = model_tolerance(module)
    cuda = device.startswith("cuda")
    calls: dict[str, Any] = {}
    selects: dict[str, Any] = {}  # what a mode's turn does first (untimed)
    compile_s: dict[str, float] = {}
    outputs: dict[str, list[Any]] = {}
    with torch.no_grad():
        outputs["eager"] = flatten_outputs(model(*args))
        calls["eager"] = lambda: model(*args)
        if "max-autotune" in modes:  # its own model instance (same weights) and kernels
            # neither switched nor named: its kernels must not take the names the capture
            # gave the default compile's
            switch.enabled = names.enabled = False
            t0 = time.perf_counter()
            tuned = torch.compile(build_model(module, device), mode="max-autotune")
            outputs["max-autotune"] = flatten_outputs(tuned(*args))
            compile_s["max-autotune"] = time.perf_counter() - t0
            calls["max-autotune"] = lambda: tuned(*args)
            switch.enabled = names.enabled = True
        if {"default", "kernelopt"} & set(modes):
            t0 = time.perf_counter()
            default = torch.compile(model)
            outputs["default"] = flatten_outputs(default(*args))  # Inductor's own versions first
            compile_s["default"] = time.perf_counter() - t0
            calls["default"] = calls["kernelopt"] = lambda: default(*args)
            selects["default"] = lambda: switch.select("inductor")
            selects["kernelopt"] = lambda: switch.select("kernelopt")
            if "kernelopt" in modes and swaps:
                if missing := switch.missing():
                    raise RuntimeError(f"kernels {missing} were not compiled for this model")
                switch.select("kernelopt")
                outputs["kernelopt"] = flatten_outputs(default(*args))
        result: dict[str, Any] = {"model": str(model_file), "device": device,
                                  "torch": torch.__version__, "rounds": rounds,
                                  "windows_per_round": windows, "tolerance": tol,
                                  "swaps": {k: str(v) for k, v in swaps.items()}, "modes": {}}
        labels = [m for m in MODES if m in outputs and m in modes]
        times = interleaved(torch, {m: calls[m] for m in labels},
                            lambda m: selects.get(m, lambda: None)(), cuda, rounds, windows,
                            each_window=True)
    for label in labels:
        ok, detail = compare(outputs[label], outputs["eager"], tol["atol"], tol["rtol"])
        result["modes"][label] = {
            "ms": statistics.median(times[label]), "windows": len(times[label]),
            "spread_pct": _spread(times[label]), "match_eager": ok, "match": ok, "detail": detail,
            **({"compile_s": round(compile_s[label], 2)} if label in compile_s else {})}
    result["kernelopt_model"] = 1
    result["baseline"] = "default"
    result["kernelopt"] = "kernelopt" if "kernelopt" in result["modes"] else "default"
    if "default" in result["modes"] and "kernelopt" in result["modes"]:
        result["kernelopt_vs_default"] = (result["modes"]["default"]["ms"]
                                          / result["modes"]["kernelopt"]["ms"])
    if "max-autotune" in result["modes"] and "kernelopt" in result["modes"]:
        result["kernelopt_vs_max_autotune"] = (result["modes"]["max-autotune"]["ms"]
                                               / result["modes"]["kernelopt"]["ms"])
    return result


def _spread(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(values, n=4)
    return round(100.0 * (q[2] - q[0]) / statistics.median(values), 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_triton.model_compare")
    parser.add_argument("model_file", type=Path)
    parser.add_argument("--swap", action="append", default=[], help="NAME=FILE (repeatable)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--windows", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cache-dir", type=Path, help="Inductor's cache, kept between runs "
                        "(default: a fresh one)")
    ns = parser.parse_args(argv)
    modes = tuple(m.strip() for m in ns.modes.split(",") if m.strip())
    if unknown := set(modes) - set(MODES):
        raise SystemExit(f"--modes: unknown {sorted(unknown)}; choose from {', '.join(MODES)}")
    with tempfile.TemporaryDirectory(prefix="kernelopt-compare-") as fresh:
        result = compare_modes(ns.model_file, parse_swaps(ns.swap), modes, ns.device, ns.rounds,
                               ns.windows, str(ns.cache_dir) if ns.cache_dir else fresh)
    text = json.dumps(result, indent=1)
    if ns.out:
        ns.out.write_text(text + "\n")
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
