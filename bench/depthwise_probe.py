"""Depthwise convolutions as kernelopt's own Triton kernel (kernelopt_triton/depthwise.py,
routed by lowerings.lowered()) against the library call the default compile and reduce-overhead
make, before the product races it: each shape alone, then the whole model, one process,
outputs checked.

    python3 bench/depthwise_probe.py [MODEL] [--rounds 10] [--modes reduce-overhead,default]
        [--search-seconds 200] [--device cuda] [--out FILE]

MODEL (default bench/models/convnext.py) is a model file (model(), inputs(seed, device),
TOLERANCE). First every depthwise convolution the model holds, by shape, through the
product's per-shape choice itself (kernelopt_triton.depthwise_timing.search_shapes: the
heaviest first, every launch of ``depthwise.search_space()`` compiled first on the host's
cores, each timed on the GPU — CUDA graphs of L2 flush and call, the flushes' graph subtracted
— while ``--search-seconds`` last, a shape past the budget racing ``Config()``; then the
library's F.conv2d and the fastest launch in turn for ``--rounds`` readings; a shape the
kernel does not take, NCHW or fp64, untimed), both sides then checked against an fp64
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


def probe_shapes(torch: Any, model: Any, args: tuple[Any, ...], rounds: int, device: str,
                 search_seconds: float) -> list[dict[str, Any]]:
    """The product's per-shape search (depthwise_timing.search_shapes: every launch compiled
    first, one budget, GPU times), then for each shape it timed: both sides' outputs against
    an fp64 convolution, bytes, GB/s, spreads, the paired ratio; a shape it did not time as
    the product records it."""
    import torch.nn.functional as F
    from kernelopt_triton.depthwise import launch
    from kernelopt_triton.depthwise_timing import search_shapes
    from kernelopt_triton.rounds import spread as _spread

    shapes, timed, precompiled = search_shapes(model, args, device, search_seconds, rounds)
    print(json.dumps({"precompile": precompiled}), file=sys.stderr, flush=True)
    probed = {}
    for shape in timed:
        if shape.choice is None:
            continue
        choice, conv, x = shape.choice, shape.conv, shape.x
        settings = (conv.stride, conv.padding, conv.dilation)
        with torch.no_grad():
            reference = F.conv2d(x.double(), shape.weight.double(), None if shape.bias is None
                                 else shape.bias.double(), *settings,
                                 conv.groups)  # fp64: no TF32 in the reference
            out = launch(x, shape.weight, shape.bias, *settings, choice.launch)
            library = F.conv2d(x, shape.weight, shape.bias, *settings, conv.groups)
            errors = {"library": (library.double() - reference).abs().max().item(),
                      "kernel": (out.double() - reference).abs().max().item()}
        times = {"library": choice.library_ms, "kernel": choice.kernel_ms}
        nbytes = x.numel() * x.element_size() + out.numel() * out.element_size()
        probed[shape.row["key"]] = {
            "x": list(x.shape), "weight": list(conv.weight.shape), "stride": conv.stride,
            "padding": conv.padding, "channels_last": True, "bytes": nbytes,
            "config": attrs.asdict(choice.launch),
            "configs_ms": sorted([round(ms, 5), attrs.astuple(c)] for c, ms in choice.tried.items()),
            "ms": {k: round(statistics.median(v), 5) for k, v in times.items()},
            "spread_pct": {k: _spread(v) for k, v in times.items()},
            "gbps": {k: round(nbytes / statistics.median(v) / 1e6, 1) for k, v in times.items()},
            **ratios(times["library"], times["kernel"]),
            "max_abs_err_vs_fp64": {k: float(f"{v:.3g}") for k, v in errors.items()}}
    results = []
    for row in shapes:
        results.append({**row, "calls_per_step": row["calls"], **probed.get(row["key"], {})})
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
    from kernelopt_triton.inductor import build_model, load_model_file

    module = load_model_file(Path(ns.model).resolve())
    model = build_model(module, ns.device)
    from kernelopt_triton.depthwise import Config

    alone = probe_shapes(torch, model, module.inputs(1, ns.device), ns.rounds, ns.device,
                         ns.search_seconds)
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
