"""`kernelopt gate-selftest`: the confirm gate's own false-accept and detection rates.

A/A: the baseline is confirmed against an identical copy of itself through the full protocol
(fresh processes, candidate bracketed by baselines, noise floor, sign test, margin) N times;
each "optimized" decision is a false accept. Planted: the same, against a candidate that is
truly faster because its bench does a fraction of the real work (the bench's ``{work}``
placeholder), calibrated by measurement so that the candidate really is about X× faster; each
"optimized" decision is a detection. The naive decision of the same rounds
— one invocation each, accept if candidate < baseline/1.03 — is reported beside it.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from typing import Any, Protocol, runtime_checkable

from kernelopt_core import events
from kernelopt_core.errors import BenchFailed, PluginError, UsageError
from kernelopt_core.gates.base import GateContext
from kernelopt_core.gates.options import ConfirmOptions, RooflineOptions
from kernelopt_core.hookspecs import Backend
from kernelopt_core.measure.device import device_info
from kernelopt_core.measure.stats import confirm_stats, median
from kernelopt_core.run_context import RunContext
from kernelopt_core.session import new_run_id, prepare_state_root
from kernelopt_core.settings import Settings
from kernelopt_core.target import Target, Tree


class RoundsTaken(Protocol):
    """A confirm decision's rounds as the gate took them (gates.perf.Rounds)."""

    base: list[float]  # per round: the geometric mean of the two baseline readings
    cand: list[float]
    aa: list[float]  # per round: first / last baseline reading
    retakes: int  # rounds taken again after a transient reading
    first_take: tuple[float, float]  # round 1 as first taken: baseline, candidate (ms)


@runtime_checkable
class TakesRounds(Protocol):
    """A final gate whose decision rests on bracketed rounds, offering them to the self-test
    (the built-in ``confirm``: gates.perf.ConfirmGate), found through the plugin host."""

    def take_rounds(self, ctx: GateContext, candidate: Tree, rounds: int, purpose: str,
                    work: float = 1.0) -> RoundsTaken: ...


NAIVE_GAMMA = 1.03
CALIBRATION_PAIRS = 5
CALIBRATION_ROUNDS = 4


def calibrate_work(ctx: GateContext, candidate: Tree, target_ratio: float) -> tuple[float, float]:
    """The {work} fraction that makes the candidate truly ``target_ratio`` faster.

    A kernel's time is rarely proportional to its work (fixed costs, waves), so assuming
    work = 1/X would plant a smaller speedup than claimed. Model time(w) = a + b·w from
    measured pairs and solve for the ratio wanted; up to three refinements. Returns (work, ratio).
    """
    log = ctx.log_dir / "calibration.log"
    work = 1.0 / target_ratio
    measured: list[tuple[float, float]] = []  # (work, ratio measured at that work)
    for attempt in range(CALIBRATION_ROUNDS):
        base, cand = [], []
        for _ in range(CALIBRATION_PAIRS):
            base.append(ctx.runner.bench(ctx.baseline_tree, log, "calibrate").time_ms)
            cand.append(ctx.runner.bench(candidate, log, "calibrate", work=work).time_ms)
        ratio = median(base) / median(cand)
        measured.append((work, ratio))
        if abs(ratio / target_ratio - 1.0) < 0.002 or attempt == CALIBRATION_ROUNDS - 1:
            break
        fraction = 1.0 / ratio  # time(work) / time(1)
        fixed = (fraction - work) / (1.0 - work)  # a / (a + b) in the linear model
        if fixed >= 1.0 / target_ratio:  # unreachable by this model, or a noisy measurement:
            work = max(work / 2, 1e-6)  # try with much less work before judging
        else:
            work = min(1.0, max(1e-6, (1.0 / target_ratio - fixed) / (1.0 - fixed)))
    # A noisy machine can spoil one refinement: return the measured point nearest the target
    # (a pair measured together, never an extrapolation), not merely the last one.
    work, ratio = min(measured, key=lambda point: abs(math.log(point[1] / target_ratio)))
    if ratio - 1.0 < (target_ratio - 1.0) / 2:
        raise UsageError(
            f"the bench's time does not shrink enough with {{work}}: at work={work:.4f} the "
            f"candidate is only {ratio:.4f}× faster, so a {target_ratio:g}× candidate cannot be "
            "planted", hint="make {work} scale the timed work, or plant a smaller speedup")
    return work, ratio


def confirm_gate(host: Any) -> TakesRounds:
    """The ``confirm`` gate the plugin host registered, which the self-test measures."""
    gate = host.registry("gates").get("confirm")
    if not isinstance(gate, TakesRounds):
        raise PluginError("the confirm gate offers no rounds to self-test (take_rounds)",
                          hint="`kernelopt plugins` shows which plugin registered `confirm`")
    return gate


def run_selftest(
    host: Any, backend: Backend, target: Target, settings: Settings, trials: int,
    planted_speedup: float | None, listeners: list[Any], include_aa: bool = True,
) -> dict[str, Any]:
    if trials < 1:
        raise UsageError("--trials must be at least 1")
    if not include_aa and planted_speedup is None:
        raise UsageError("--no-aa leaves nothing to decide without --planted-speedup")
    if planted_speedup is not None and planted_speedup <= 1.0:
        raise UsageError("--planted-speedup must be above 1 (e.g. 1.03)")
    confirm = confirm_gate(host)
    prepare_state_root(settings.state_root)
    run_id = new_run_id()
    out_dir = settings.state_root / "selftest" / run_id
    context = RunContext.open(run_id, out_dir, backend, target, settings, listeners)
    journal, runner, workspace = context.journal, context.runner, context.workspace
    workspace.acquire()
    try:
        workspace.start(run_id)
        workspace.use_candidate({})  # the "candidate" is the baseline itself
        for tree in (workspace.baseline_tree, workspace.candidate_tree):
            built = runner.build(tree, out_dir / f"{tree.role}-build.log")
            if built is not None and not built.ok:
                raise UsageError(f"the target does not build: {built.describe()}")
        if not runner.has_bench(workspace.baseline_tree):
            raise UsageError(f"target {target.name!r} has no bench: nothing to self-test")
        ctx = GateContext(runner, settings, target, "selftest", workspace.candidate_tree,
                          workspace.baseline_tree, out_dir, None)
        kinds = [("aa", 1.0)] if include_aa else []
        calibration = None
        if planted_speedup:
            work, ratio = calibrate_work(ctx, workspace.candidate_tree, planted_speedup)
            calibration = {"work": work, "measured_ratio": ratio}
            journal.record(events.SelftestCalibration(planted_speedup=planted_speedup,
                                                      work=work, measured_ratio=ratio))
            kinds.append(("planted", work))
        results: dict[str, Any] = {}
        rounds = runner.confirm_rounds(workspace.candidate_tree)
        confirm_options = settings.section(ConfirmOptions)
        for kind, work in kinds:
            decisions, naive, ratios, seconds, noise = [], [], [], [], []
            retakes: list[int] = []
            for i in range(trials):
                start = time.perf_counter()
                taken = confirm.take_rounds(ctx, workspace.candidate_tree, rounds,
                                            f"{kind}{i + 1}", work)
                stats = confirm_stats(taken.base, taken.cand, taken.aa, confirm_options.gamma,
                                      confirm_options.min_noise_pct)
                seconds.append(time.perf_counter() - start)
                decisions.append(stats.faster)
                base_once, cand_once = taken.first_take  # one reading each, as first taken
                naive.append(cand_once < base_once / NAIVE_GAMMA)
                retakes.append(taken.retakes)
                ratios.append(stats.median_ratio)
                noise.append(stats.noise_pct)
                journal.record(events.SelftestDecision(
                    kind=kind, trial=i + 1, accept=stats.faster, naive_accept=naive[-1],
                    median_ratio=stats.median_ratio, noise_pct=stats.noise_pct,
                    threshold=stats.threshold, retakes=taken.retakes))
            results[kind] = {
                "trials": trials, "accepts": sum(decisions), "naive_accepts": sum(naive),
                "median_ratio": median(ratios), "seconds_per_decision": median(seconds),
                "median_noise_pct": median(noise), "retakes": sum(retakes),
            }
    except BenchFailed as exc:  # the self-test's "candidate" is the baseline: the bench's fault
        raise UsageError(f"the bench fails during the self-test: {exc}",
                         hint=f"run the bench by hand; the log is in {out_dir}") from exc
    finally:
        context.close()
    device = device_info(settings.state_root, target.device, settings.section(RooflineOptions).peak_gbps)
    summary: dict[str, Any] = {
        "schema": 1,
        "selftest_id": run_id,
        "target": {"backend": target.backend, "name": target.name, "shape": target.shape},
        "trials": trials,
        "false_accepts": results["aa"]["accepts"] if include_aa else None,
        "false_accept_rate": results["aa"]["accepts"] / trials if include_aa else None,
        "detections": results["planted"]["accepts"] if "planted" in results else None,
        "detection_rate": results["planted"]["accepts"] / trials if "planted" in results else None,
        "planted_speedup": planted_speedup,
        "planted_calibration": calibration,
        "measured_planted_ratio": results["planted"]["median_ratio"] if "planted" in results
        else None,
        "seconds_per_decision": results["aa" if include_aa else "planted"]["seconds_per_decision"],
        "naive": {
            "gamma": NAIVE_GAMMA,
            "false_accepts": results["aa"]["naive_accepts"] if include_aa else None,
            "detections": results["planted"]["naive_accepts"] if "planted" in results else None,
        },
        "protocol": {"gamma": settings.section(ConfirmOptions).gamma, "rounds": rounds,
                     "workers": runner.served(workspace.candidate_tree),
                     "min_noise_pct": settings.section(ConfirmOptions).min_noise_pct},
        "machine": {"host": platform.node(), "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        "device": {"kind": target.device, "name": device.name, "peak_gbps": device.peak_gbps},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "results": results,
        "dir": str(out_dir),
    }
    (out_dir / "selftest.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
