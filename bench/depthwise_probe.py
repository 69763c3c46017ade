"""Depthwise convolutions as kernelopt's own Triton kernel (kernelopt_triton/depthwise.py,
routed by lowerings.lowered()) against the library call the default compile and reduce-overhead
make, before the product races it: each shape alone, then the whole model, one process,
outputs checked.

    python3 bench/depthwise_probe.py [MODEL] [--rounds 10] [--modes reduce-overhead,default]
        [--search-seconds 200] [--device cuda] [--out FILE]

MODEL (default bench/models/convnext.py) is a model file (model(), inputs(seed, device),
TOLERANCE). First every depthwise convolution the model holds, by shape (a hook on each
nn.Conv2d swap_depthwise takes), the heaviest first, through the product's per-shape choice
(kernelopt_triton.depthwise_timing.choose: GPU time, CUDA graphs of L2 flush and call with the
flushes' graph subtracted): each launch of ``depthwise.search_space()`` (3 readings) while
``--search-seconds`` last (every launch compiled first on the host's cores until half the
budget is spent, as the product's choice does; a shape past the budget takes ``Config()``), then the library's
F.conv2d and the fastest launch in turn for ``--rounds`` readings, both against an fp64
reference of the convolution; the kernel takes the shapes it won by the rounds. Then, for each
mode, the model compiled as usual, compiled under ``lowered(configs)`` (the op an opaque call)
and a copy with ``swap_depthwise(copy, configs)`` (the op inlined into the compile), configs
holding the chosen shapes only — separate compiles, same weights — timed as the engine gate
times a model (kernelopt_triton.engine.interleaved: ``--rounds`` rounds of 3 windows, all in
turn, the order reversed every round), each against eager on the model's TOLERANCE (no shape
chosen: the library alone). One JSON document: per shape every launch's time, the chosen one,
the decision and why, the medians and their spread (IQR over the median), the paired ratio over
rounds with its band (half the ratios' IQR, rounds.paired), rounds the kernel won, max
errors; per mode the same for the whole model.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import attrs


def ratios(base: list[float], other: list[float]) -> dict[str, Any]:
    """The library's time over the other side's, round by round: model_compare's paired
    ratio (its band half the ratios' IQR over the median, as the engine gate reads rounds)."""
    from kernelopt_triton.rounds import paired

    r = paired(base, other, 1)
    return {"ratio": r["vs_baseline"], "band_pct": r["vs_baseline_band_pct"], "won": r["won"],
            "rounds": r["pairs"]}


def probe_shapes(torch: Any, shapes: list[dict[str, Any]], rounds: int, device: str,
                 search_seconds: float) -> list[dict[str, Any]]:

    import torch.nn.functional as F
    from kernelopt_triton.depthwise import launch, shape_key, takes
    from kernelopt_triton.depthwise_timing import (
        budgeted_launches,
        choose,
        heaviest_first,
        precompile_launches,
    )
    from kernelopt_triton.rounds import spread as _spread

    # the heaviest first: the search shares one budget, and a shape it does not reach races
    # Config(); every launch compiled first on the host's cores, at most half the budget (the
    # product's choice: depthwise_timing.choose_for_model)
    shapes = heaviest_first(shapes)
    searched_from = time.monotonic()
    inputs = []
    for entry in shapes:
        gen = torch.Generator(device="cpu").manual_seed(7)
        x = torch.randn(entry["x_shape"], generator=gen).to(device, entry["conv"].weight.dtype)
        inputs.append(x.contiguous(memory_format=torch.channels_last)
                      if entry["channels_last"] else x)
    if device.startswith("cuda"):  # (main runs this on the model's device: Triton's current)
        precompiled = precompile_launches(
            [({}, e["conv"], x, e["conv"].weight, e["conv"].bias)
             for e, x in zip(shapes, inputs, strict=True) if takes(x)],
            searched_from + search_seconds / 2)
        print(json.dumps({"precompile": precompiled}), file=sys.stderr, flush=True)
    results = []
    for entry, x in zip(shapes, inputs, strict=True):
        conv = entry["conv"]
        settings = (conv.stride, conv.padding, conv.dilation)
        key = shape_key(x.shape, conv.weight.shape, *settings)

        def library(x: Any = x, conv: Any = conv, settings: Any = settings) -> Any:
            return F.conv2d(x, conv.weight, conv.bias, *settings, conv.groups)

        def kernel(config: Any, x: Any = x, conv: Any = conv, settings: Any = settings) -> Any:
            return launch(x, conv.weight, conv.bias, *settings, config)

        with torch.no_grad():
            reference = F.conv2d(x.double(), conv.weight.double(), None if conv.bias is None
                                 else conv.bias.double(), *settings,
                                 conv.groups)  # fp64: no TF32 in the reference
            # GPU time: CUDA graphs of (L2 flush, call), the flushes' graph subtracted
            choice = choose(key, library, kernel, budgeted_launches(searched_from, search_seconds),
                            rounds, device.startswith("cuda"))
            out = kernel(choice.launch)
            errors = {"library": (library().double() - reference).abs().max().item(),
                      "kernel": (out.double() - reference).abs().max().item()}
        times = {"library": choice.library_ms, "kernel": choice.kernel_ms}
        nbytes = x.numel() * x.element_size() + out.numel() * out.element_size()
        results.append({
            "x": entry["x_shape"], "weight": list(conv.weight.shape), "stride": conv.stride,
            "padding": conv.padding, "channels_last": entry["channels_last"],
            "calls_per_step": entry["calls"], "bytes": nbytes, "key": key,
            "config": attrs.asdict(choice.launch), "launches_tried": len(choice.tried),
            "configs_ms": sorted([round(ms, 5), attrs.astuple(c)] for c, ms in choice.tried.items()),
            "chosen": choice.chosen, "why": choice.why,
            "ms": {k: round(statistics.median(v), 5) for k, v in times.items()},
            "spread_pct": {k: _spread(v) for k, v in times.items()},
            "gbps": {k: round(nbytes / statistics.median(v) / 1e6, 1) for k, v in times.items()},
            **ratios(times["library"], times["kernel"]),
            "max_abs_err_vs_fp64": {k: float(f"{v:.3g}") for k, v in errors.items()}})
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    return results


def probe_model(torch: Any, module: Any, device: str, modes: list[str], rounds: int,
                configs: dict[str, Any]) -> dict[str, Any]:
    """Per mode the model three ways: as compiled (library), under ``lowered(configs)`` (the
    op an opaque call) and a copy with ``swap_depthwise(copy, configs)`` (the op inlined); a
    side whose compile or run fails is reported and left out of the timing."""
    import copy
    from contextlib import nullcontext

    from kernelopt_triton.engine import compile_apart, interleaved
    from kernelopt_triton.inductor import build_model, model_tolerance
    from kernelopt_triton.lowerings import lowered, swap_depthwise
    from kernelopt_triton.outputs import flatten_outputs
    from kernelopt_triton.rounds import spread as _spread

    args = module.inputs(1, device)
    tol = model_tolerance(module)
    result: dict[str, Any] = {"tolerance": tol}
    with torch.no_grad():
        eager = build_model(module, device)
        expected = flatten_outputs(eager(*args))
        inlined = copy.deepcopy(eager)
        result["swapped_convolutions"] = swap_depthwise(inlined, configs)
        models = ({"library": eager, "kernel": eager, "inlined": inlined} if configs
                  else {"library": eager})  # no shape chosen: the other sides are the library
        for mode in modes:
            kwargs = {} if mode == "default" else {"mode": mode}
            calls: dict[str, Any] = {}
            row: dict[str, Any] = {}
            for side, model in models.items():
                t0 = time.perf_counter()
                try:
                    with lowered(configs) if side == "kernel" else nullcontext():  # 1st call
                        compiled = compile_apart(torch, model, kwargs, f"{mode}-{side}")
                        for _ in range(3):  # CUDA graph trees record on a later call
                            got = flatten_outputs(compiled(*args))
                except Exception as exc:  # the other sides still measure
                    row[f"{side}_error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
                    continue
                row[f"{side}_compile_s"] = round(time.perf_counter() - t0, 1)
                row[f"{side}_max_abs_err"] = max(
                    (g.float() - e.float()).abs().max().item()
                    for g, e in zip(got, expected, strict=True))
                row[f"{side}_match"] = all(torch.allclose(g.float(), e.float(), **tol)
                                           for g, e in zip(got, expected, strict=True))
                calls[side] = lambda compiled=compiled: compiled(*args)
            # the engine gate's protocol: clocks settled, each round every side in turn (the
            # order reversed every round), a round's time the median of its windows
            times = interleaved(torch, calls, lambda label: None, device.startswith("cuda"),
                                rounds, 3)
            row.update({"ms": {k: round(statistics.median(v), 4) for k, v in times.items()},
                        "spread_pct": {k: _spread(v) for k, v in times.items()}})
            for side in ("kernel", "inlined"):
                if "library" in times and side in times:
                    row[f"{side}_vs_library"] = ratios(times["library"], times[side])
            result[mode] = row
            print(json.dumps({mode: row}), file=sys.stderr, flush=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="bench/models/convnext.py")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--modes", default="reduce-overhead,default")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--search-seconds", type=float, default=200.0,
                        help="the launch search's budget, all shapes together (the heaviest "
                             "first; a shape past it races Config())")
    ns = parser.parse_args()
    if ns.rounds < 1:
        parser.error("--rounds: at least 1")
    import torch
    from kernelopt_triton.depthwise_timing import convolutions
    from kernelopt_triton.inductor import build_model, load_model_file

    module = load_model_file(Path(ns.model).resolve())
    model = build_model(module, ns.device)
    shapes = convolutions(model, module.inputs(1, ns.device))
    from kernelopt_triton.depthwise import Config

    cuda = ns.device.startswith("cuda")
    with torch.cuda.device(ns.device) if cuda else contextlib.nullcontext():
        alone = probe_shapes(torch, shapes, ns.rounds, ns.device, ns.search_seconds)
    # the shapes the kernel won alone, each with its fastest launch; the rest keep the library
    configs = {s["key"]: Config(**s["config"]) for s in alone if s["chosen"]}
    if ns.out:  # kept should the model's part run out of time
        ns.out.write_text(json.dumps({"model": ns.model, "shapes": alone,
                                      "model_steps": "not reached"}, indent=1) + "\n")
    report = {"model": ns.model, "device": torch.cuda.get_device_name() if
              ns.device.startswith("cuda") else ns.device, "torch": torch.__version__,
              "triton": __import__("triton").__version__, "shapes": alone,
              "model_steps": probe_model(torch, module, ns.device,
                                         [m for m in ns.modes.split(",") if m], ns.rounds,
                                         configs)}
    text = json.dumps(report, indent=1)
    if ns.out:
        ns.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
