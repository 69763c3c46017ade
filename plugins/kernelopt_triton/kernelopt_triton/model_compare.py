"""The model-level answer: is the model faster with kernelopt's kernels than with what I have?

    python -m kernelopt_triton.model_compare MODEL_FILE [--swap NAME=FILE ...] [--out result.json]
        [--modes eager,default,reduce-overhead,max-autotune-no-cudagraphs,max-autotune,kernelopt]
        [--compile-mode MODE] [--capture-source NAME=FILE ...] [--rounds 10] [--windows 3]
        [--setting KEY=VALUE[,KEY=VALUE] ...] [--cache-dir DIR]

In ONE process, the same model and inputs in every mode asked: eager; torch.compile default,
mode="reduce-overhead" (the default's kernels under CUDA graphs),
mode="max-autotune-no-cudagraphs" and mode="max-autotune" (GEMM/conv template autotuning, CUDA
graphs on); the model's own compile (its ``COMPILE`` or ``--compile-mode``: compile_mode.py)
when it is none of those; and ``kernelopt``: the model's own compile with every ``--swap``
kernel (a kernelopt winner, a standalone kernel file) in place at once. Each mode is its own
compile (CUDA graphs replay what they recorded, so a winner is compiled in, not switched in);
one Inductor cache (``--cache-dir``, the capture's) makes the kernelopt compile's other kernels
and GEMM choices those of its baseline. ``--capture-source``: the winners' kernels are found by
their code (engine_switch.py). Every mode's outputs are compared with eager's in float64 under
the model's TOLERANCE. Times: ``--rounds`` rounds, the modes taking turns in an order that
reverses every round, each turn ``--windows`` windows of back-to-back calls (engine.time_calls);
a mode's time is the median of its rounds × windows windows, with its interquartile spread.
Prints one JSON object (also written to ``--out``), marked ``"kernelopt_model": 1`` with
``baseline`` (the model's own compile) and ``kernelopt``: what kernelopt returns, the model's own
compile with the winners (the baseline when there is none), or another compile of the table
that ran faster than it by their paired rounds (beyond their band, or won by the sign test),
with outputs that matched
(``choice`` says which and why: fastest()); every compile's ``vs_baseline`` is its paired ratio
to the model's own. The model check's line (kernelopt_core.model_check).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kernelopt_core.api import sign_test_p
from kernelopt_triton.compile_mode import MODES as COMPILE_MODES
from kernelopt_triton.compile_mode import (
    CompileError,
    compile_kwargs,
    describe,
    label,
    parse_setting,
    setting_label,
    uses_cudagraphs,
    with_settings,
)
from kernelopt_triton.engine import (
    ENGINE_SEED,
    NOT_COMPILED_AGAIN,
    compare,
    compile_apart,
    flatten_outputs,
    inductor_backend,
    interleaved,
    prepare_process,
    swap_kernel_source,
)
from kernelopt_triton.inductor import build_model, load_model_file, model_tolerance
from kernelopt_triton.lowerings import INLINED, as_chosen, read_chosen
from kernelopt_triton.rounds import MIN_PAIRS, faster_by_rounds, paired, spread, undecided_rival

MODES = ("eager", "default", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune",
         "kernelopt")
DEFAULT_MODES = "eager,default,reduce-overhead,max-autotune-no-cudagraphs,max-autotune"


def parse_swaps(items: list[str], what: str = "--swap") -> dict[str, Path]:
    swaps: dict[str, Path] = {}
    for item in items:
        name, sep, file = item.partition("=")
        if not sep or not name or not Path(file).is_file():
            raise SystemExit(f"{what} {item!r}: give NAME=FILE with an existing kernel file")
        swaps[name] = Path(file).resolve()  # model_compare.json's: read from anywhere
    return swaps


def compare_modes(model_file: Path, swaps: dict[str, Path], modes: tuple[str, ...], device: str,
                  rounds: int, windows: int, cache_dir: str, compile_mode: str | None = None,
                  captured: dict[str, Path] | None = None,
                  settings: tuple[dict[str, Any], ...] = (),
                  depthwise: Path | None = None,
                  depthwise_everywhere: bool = False) -> dict[str, Any]:
    from kernelopt_triton.engine_switch import (
        CapturedCode,
        KernelSwitch,
        UniqueKernelNames,
        install,
    )

    torch = prepare_process(device, cache_dir)
    compiling = install(UniqueKernelNames())  # no switch but for the kernelopt compile
    module = load_model_file(model_file)
    own = compile_kwargs(module, compile_mode)
    baseline = label(own) if label(own) != "custom" else "own compile"
    args = module.inputs(ENGINE_SEED, device)
    tol = model_tolerance(module)
    cuda = device.startswith("cuda")
    calls: dict[str, Any] = {}
    compile_s: dict[str, float] = {}
    outputs: dict[str, list[Any]] = {}
    failed: dict[str, str] = {}  # a setting's compile that failed: said, not timed
    compiles: dict[str, dict[str, Any]] = {
        m: ({} if m == "default" else {"mode": m}) for m in modes if m in COMPILE_MODES}
    compiles.setdefault(baseline, own)  # the model's own compile is always timed
    variants = {baseline + setting_label(extra): extra for extra in settings}
    for name, extra in variants.items():  # the own compile with Inductor settings on top
        compiles[name] = with_settings(own, extra)
        refused = inductor_refuses(torch, compiles[name])  # before any compile is paid for
        if refused:
            raise CompileError(f"--setting {setting_label(extra)[1:]}: {refused}")
    # the capture's depthwise choice (its depthwise.json): the kernelopt side's model has the
    # chosen convolutions swapped to kernelopt's kernel (the user's compiles keep the library);
    # ``depthwise_everywhere``: every compile's (the capture's race, whose modes are each a
    # candidate for the model kernelopt returns)
    chosen, form = read_chosen(depthwise if "kernelopt" in modes or depthwise_everywhere
                               else None)
    lowering = bool(chosen)

    def swapped(mode: str) -> bool:  # a compile of the model with the chosen convolutions
        return lowering and (mode == "kernelopt" or depthwise_everywhere)

    winners = "kernelopt" in modes and (bool(swaps) or lowering)
    # without CUDA graphs the winners are switched into the baseline's own compile (the rest
    # of the model the same code); under CUDA graphs, or with convolutions swapped (another
    # graph), they are compiled in, a compile apart
    shared = winners and not uses_cudagraphs(own) and not lowering
    if winners and not shared:
        compiles["kernelopt"] = own

    code = CapturedCode(captured) if captured else None  # read once, for either switch

    def switch(labels: tuple[str, ...]) -> Any:
        return KernelSwitch({name: {label: (None if label == "inductor" else file.read_text())
                                    for label in labels} for name, file in swaps.items()},
                            swap_kernel_source, code)

    switched = None
    selects: dict[str, Any] = {}
    lowered_as = ""
    lowered_ops: dict[str, int] = {}
    with torch.no_grad():
        eager = build_model(module, device)
        outputs["eager"] = flatten_outputs(eager(*args))
        calls["eager"] = lambda: eager(*args)
        # the inlined form swaps the swapped sides' convolutions: their own model then (the
        # same weights), the user's compiles keep the library's
        ours = copy.deepcopy(eager) if lowering and form == INLINED else eager
        for mode, kwargs in compiles.items():
            compiling.names = UniqueKernelNames()  # each compile its own names
            compiling.switch, compiling.seen = None, 0
            if mode == "kernelopt":
                compiling.switch = switched = switch(("kernelopt",))
            elif shared and mode == baseline:
                compiling.switch = switched = switch(("inductor", "kernelopt"))
                switched.select("inductor")
            t0 = time.perf_counter()
            try:
                compiled = compile_apart(torch, ours if swapped(mode) else eager, kwargs,
                                         mode)  # own backend, same weights
                # the kernelopt side compiled as the capture was: its chosen depthwise
                # convolutions kernelopt's kernel (lowerings.as_chosen; compiled at these
                # first calls: a recompile later, none expected, would get the library)
                with (as_chosen(ours, depthwise) if swapped(mode)
                      else contextlib.nullcontext()) as how:
                    for _ in range(3):  # CUDA graph trees record on a later call than the first
                        outputs[mode] = flatten_outputs(compiled(*args))
                if how:
                    lowered_as = str(how)
                    if how.lowered is not None:  # the opaque form: the op calls compiled in
                        lowered_ops[mode] = how.lowered.ops
            except Exception as exc:  # a setting Inductor fails to compile the model with
                if mode not in variants:
                    raise
                cause = getattr(exc, "inner_exception", None) or exc  # Dynamo wraps the error
                failed[mode] = f"{type(cause).__name__}: {' '.join(str(cause).split())[:500]}"
                print(f"model_compare: {mode} failed: {failed[mode]}", file=sys.stderr, flush=True)
                outputs.pop(mode, None)
                continue
            compile_s[mode] = time.perf_counter() - t0
            print(f"model_compare: {mode} compiled and ran in {compile_s[mode]:.1f} s",
                  file=sys.stderr, flush=True)  # a cut run still says how far it came
            if mode == "kernelopt" and not compiling.seen:
                raise RuntimeError(f"the winners' compile: {NOT_COMPILED_AGAIN}")
            if compiling.switch is not None and compiling.switch.missing():
                raise RuntimeError(compiling.switch.missing_reason())
            calls[mode] = (lambda c: lambda: c(*args))(compiled)
            if shared and mode == baseline and switched is not None:
                switched.select("kernelopt")
                outputs["kernelopt"] = flatten_outputs(compiled(*args))
                calls["kernelopt"] = calls[mode]
                selects = {mode: functools.partial(switched.select, "inductor"),
                           "kernelopt": functools.partial(switched.select, "kernelopt")}
        identity = switched.identity() if switched is not None else None
        labels = ["eager", *(m for m in compiles if m not in failed)] + (
            ["kernelopt"] if shared else [])
        times = interleaved(torch, {m: calls[m] for m in labels},
                            lambda m: selects.get(m, lambda: None)(), cuda, rounds, windows,
                            each_window=True)
        tuned = "kernelopt" if "kernelopt" in labels else baseline
        matched = {m for m in labels if compare(outputs[m], outputs["eager"], tol["atol"],
                                                 tol["rtol"])[0]}
        # timed again only where the rounds could then decide (MIN_PAIRS) and the own
        # compile's outputs matched (else fastest() takes the fastest matching one anyway)
        undecided = [m for m in labels if m not in ("eager", tuned) and m in matched
                     and tuned in matched and 2 * rounds >= MIN_PAIRS
                     and undecided_rival(paired(times[tuned], times[m], windows))]
        if undecided:  # once: as many rounds again, the own compile and those rivals only
            more = interleaved(torch, {m: calls[m] for m in (tuned, *undecided)},
                               lambda m: selects.get(m, lambda: None)(), cuda, rounds, windows,
                               each_window=True)
            for mode, readings in more.items():
                times[mode] += readings
    result: dict[str, Any] = {"model": str(model_file), "device": device,
                              "torch": torch.__version__, "rounds": rounds,
                              "windows_per_round": windows, "tolerance": tol,
                              "compile": describe(own), "swaps": {k: str(v) for k, v in swaps.items()},
                              "modes": {}}
    if identity:
        result["identity"] = identity
    if lowering:
        result["depthwise"] = {"file": str(depthwise), "as": lowered_as,
                               "sides": "every compile" if depthwise_everywhere else "kernelopt",
                               **({"ops": lowered_ops} if lowered_ops else {})}
    if undecided:
        result["extended"] = {"modes": [tuned, *undecided], "rounds": rounds}
    if failed:  # not modes: every mode has a time (the model check's line, model_check.py)
        result["failed_settings"] = {mode: {"settings": variants[mode], "failed": why}
                                     for mode, why in failed.items()}
    for mode in labels:
        ok, detail = compare(outputs[mode], outputs["eager"], tol["atol"], tol["rtol"])
        result["modes"][mode] = {
            "ms": statistics.median(times[mode]), "windows": len(times[mode]),
            "spread_pct": spread(times[mode]), "match_eager": ok, "match": ok, "detail": detail,
            **({"compile_s": round(compile_s[mode], 2)} if mode in compile_s else {})}
        if mode in variants:
            result["modes"][mode]["settings"] = variants[mode]
        if mode != baseline:  # every other compile against the model's own, round by round
            result["modes"][mode].update(paired(times[baseline], times[mode], windows))
    result["kernelopt_model"] = 1
    result["baseline"] = baseline
    # how to compile each mode again (optimized_model.py: the user's own process): its keywords,
    # and the captured code the winners are found by
    result["compiles"] = {m: (own if m == "kernelopt" else compiles[m])
                          for m in labels if m != "eager"}
    if captured:
        result["captured"] = {k: str(v) for k, v in captured.items()}
    rivals = [m for m in labels if m not in ("eager", tuned)]  # the baseline too: no winners
    result["kernelopt"], result["choice"] = fastest(
        tuned, {m: paired(times[tuned], times[m], windows) for m in rivals}, result["modes"])
    ours = result["modes"][result["kernelopt"]]["ms"]
    for versus in ("default", "max-autotune", "max-autotune-no-cudagraphs"):
        if versus in result["modes"]:  # against what kernelopt returns (fastest())
            key = "kernelopt_vs_" + versus.replace("-", "_")
            result[key] = result["modes"][versus]["ms"] / ours
    return result


def fastest(tuned: str, rivals: dict[str, dict[str, Any]],
            modes: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """What kernelopt returns: the model's own compile with its winners (``tuned``), unless
    another compile measured in the same process ran faster by its rounds (faster_by_rounds())
    with outputs that matched eager; then the fastest such compile. If ``tuned``'s own outputs
    did not match, the fastest compile whose outputs did. ``rivals``: each other compile's
    paired ratio to ``tuned`` (paired(): > 1, the rival is faster). The choice's ``over`` is set
    only when another compile is returned; ``why`` always."""
    matched = {m: r for m, r in rivals.items() if modes[m]["match"]}
    if not modes[tuned]["match"] and matched:
        best = max(matched, key=lambda m: matched[m]["vs_baseline"])
        return best, {"over": tuned, **_ratio(matched[best]),
                      "why": f"{tuned}'s outputs did not match eager; {best}'s did (the fastest "
                             f"such compile, {matched[best]['vs_baseline']:.3f}x as fast)"}
    beyond = {m: r for m, r in matched.items() if faster_by_rounds(r)}
    if not beyond:
        closest = max(rivals, key=lambda m: rivals[m]["vs_baseline"], default=None)
        why = f"no other compile measured faster than {tuned} by its rounds"
        if closest is not None:
            why += (f" (closest: {closest} {rivals[closest]['vs_baseline']:.3f}x, band "
                    f"±{rivals[closest]['vs_baseline_band_pct']} %, " + _rounds(rivals[closest])
                    + ("; its outputs did not match eager" if closest not in matched else "")
                    + ")")
        return tuned, {"why": why}
    best = max(beyond, key=lambda m: beyond[m]["vs_baseline"])
    ratio = beyond[best]
    return best, {"over": tuned, **_ratio(ratio),
                  "why": f"{best} ran {ratio['vs_baseline']:.3f}x as fast as {tuned} "
                         f"(±{ratio['vs_baseline_band_pct']} %, {_rounds(ratio)}, "
                         "outputs matched eager)"}


def _rounds(paired_ratio: dict[str, Any]) -> str:
    won = paired_ratio.get("won")
    if won is None:
        return f"{paired_ratio['pairs']} paired rounds"
    p = sign_test_p(won, paired_ratio["pairs"])
    return f"won {won} of {paired_ratio['pairs']} paired rounds, sign test p={p:.2g}"


def _ratio(paired_ratio: dict[str, Any]) -> dict[str, Any]:
    """A paired ratio as the choice carries it: to the compile it replaced, not the baseline."""
    return {"ratio": paired_ratio["vs_baseline"], "band_pct": paired_ratio["vs_baseline_band_pct"],
            "pairs": paired_ratio["pairs"], **({"won": paired_ratio["won"]}
                                               if "won" in paired_ratio else {})}


def inductor_refuses(torch: Any, kwargs: dict[str, Any]) -> str | None:
    """Why Inductor refuses these keywords (an unknown setting, a value of the wrong type),
    from the backend torch.compile would make of them; None when it takes them."""
    try:
        inductor_backend(torch, kwargs)
    except (RuntimeError, TypeError, ValueError) as exc:
        return str(exc).split(", known options are")[0]
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_triton.model_compare")
    parser.add_argument("model_file", type=Path)
    parser.add_argument("--swap", action="append", default=[], help="NAME=FILE (repeatable)")
    parser.add_argument("--modes", default=DEFAULT_MODES + ",kernelopt")
    parser.add_argument("--compile-mode", choices=COMPILE_MODES, default=None,
                        help="the model's own compile mode, in place of its file's COMPILE")
    parser.add_argument("--capture-source", action="append", default=[],
                        help="NAME=FILE: the capture's source of a swapped kernel (repeatable)")
    parser.add_argument("--setting", action="append", default=[],
                        help="KEY=VALUE[,KEY=VALUE]: the model's own compile with these Inductor "
                        "settings on top, timed as a mode of its own (repeatable)")
    parser.add_argument("--depthwise", type=Path,
                        help="the capture's depthwise.json: the kernelopt side's model with its "
                        "chosen depthwise convolutions swapped to kernelopt's kernel")
    parser.add_argument("--depthwise-everywhere", action="store_true",
                        help="--depthwise's convolutions in every compiled mode, not only the "
                        "kernelopt side's (the capture's race of modes for kernelopt's model)")
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
    try:
        settings = tuple(parse_setting(text) for text in ns.setting)
        with tempfile.TemporaryDirectory(prefix="kernelopt-compare-") as fresh:
            result = compare_modes(
                ns.model_file, parse_swaps(ns.swap), modes, ns.device, ns.rounds, ns.windows,
                str(ns.cache_dir) if ns.cache_dir else fresh, ns.compile_mode,
                parse_swaps(ns.capture_source, "--capture-source"), settings,
                ns.depthwise.resolve() if ns.depthwise else None,
                ns.depthwise_everywhere)
    except CompileError as exc:  # the model file's COMPILE, a --setting
        print(f"kernelopt-triton model_compare: {ns.model_file}: {exc}", file=sys.stderr)
        return 2
    if ns.out and "kernelopt" in modes:  # report.md's words on the check (model_view)
        result["detail"] = ("the model it returns, in your own process: kernelopt_triton."
                            f"optimized(model, {str(ns.out.resolve().parent)!r})")
    text = json.dumps(result, indent=1)
    if ns.out:
        ns.out.write_text(text + "\n")
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
