"""The perf gates (docs/gates.md): screen, confirm, measured shape, roofline plausibility."""

from __future__ import annotations

import math
import time
from typing import Any

import attrs

from kernelopt_core import events
from kernelopt_core.errors import BenchFailed
from kernelopt_core.gates.base import FALLBACK, MATCHED, Confirmed, GateContext, GateResult
from kernelopt_core.gates.options import ConfirmOptions, RooflineOptions, ScreenOptions, ShapeOptions
from kernelopt_core.measure.device import device_info
from kernelopt_core.measure.parsers import BenchReading
from kernelopt_core.measure.stats import (
    RETAKE_TRIES,
    ROBUST_FROM,
    SIGN_ALPHA,
    confirm_stats,
    median,
    rounds_to_retake,
    transient_limit,
    transient_rounds,
)
from kernelopt_core.target import Tree


class ScreenGate:
    """Interleaved baseline/candidate invocations; advance if clearly faster (γ margin)."""

    name = "screen"
    phase = "candidate"

    def evaluate(self, ctx: GateContext) -> GateResult:
        if not ctx.runner.has_bench(ctx.candidate_tree):
            return GateResult(self.name, True, "no bench: not screened", skipped=True)
        log = ctx.log_dir / "bench.log"
        base: list[float] = []
        cand: list[float] = []
        try:
            for i in range(ctx.settings.section(ScreenOptions).screen_runs):
                order = [("b", ctx.baseline_tree), ("c", ctx.candidate_tree)]
                for role, tree in order if i % 2 == 0 else reversed(order):
                    ms = ctx.runner.bench(tree, log, f"screen:{ctx.candidate}").time_ms
                    (base if role == "b" else cand).append(ms)
        except BenchFailed as exc:
            return GateResult(self.name, False, str(exc), failed_verdict=FALLBACK)
        b, c = median(base), median(cand)
        speedup = b / c
        metrics = {"baseline_ms": base, "candidate_ms": cand, "speedup": speedup}
        gamma = ctx.settings.section(ConfirmOptions).gamma
        if c < b / gamma:
            return GateResult(self.name, True, f"{speedup:.3f}× (> γ={gamma:g})", metrics)
        return GateResult(self.name, False, f"{speedup:.3f}× is not above γ={gamma:g}", metrics)


@attrs.frozen
class Rounds:
    base: list[float]  # per round: the geometric mean of the two baseline readings
    cand: list[float]
    aa: list[float]  # per round: first / last baseline reading
    base_readings: list[BenchReading]
    cand_readings: list[BenchReading]
    retakes: int  # rounds taken again after a transient reading
    first_take: tuple[float, float]  # round 1 as first taken: baseline, candidate (ms)


def bracketed_rounds(
    ctx: GateContext, candidate: Tree, rounds: int, purpose: str, work: float = 1.0
) -> Rounds:
    """``rounds`` rounds of readings, each baseline → candidate → baseline (separate processes:
    fresh ones, or the two trees' workers).

    Bracketing the candidate between two baseline invocations cancels linear drift, and the
    two baselines of a round give an A/A sample in the same session for the noise floor.
    From ROBUST_FROM rounds on, a round with a transient reading (above its tree's
    ``transient_limit``, set by the first ``rounds`` rounds) is taken again (``rounds_to_retake``:
    a candidate-only transient no more often than baseline ones), at most RETAKE_TRIES times
    per round and ``rounds // 2`` takes in all; the last take counts.
    """
    log = ctx.log_dir / f"{purpose}.log"
    label = f"{purpose}:{ctx.candidate}"

    def take() -> tuple[BenchReading, BenchReading, BenchReading]:
        first = ctx.runner.bench(ctx.baseline_tree, log, label)
        middle = ctx.runner.bench(candidate, log, label, work=work)
        return first, middle, ctx.runner.bench(ctx.baseline_tree, log, label)

    def record(i: int, taken: tuple[BenchReading, BenchReading, BenchReading],
               **extra: Any) -> None:
        first, middle, last = (r.time_ms for r in taken)
        ctx.runner.journal.record(events.ConfirmRound(
            candidate=ctx.candidate, purpose=purpose, round=i + 1,
            baseline_ms=math.sqrt(first * last), candidate_ms=middle, aa_ratio=first / last,
            **extra))

    taken = []
    budget = rounds // 2
    retaken: set[int] = set()
    for i in range(rounds):
        taken.append(take())
        record(i, taken[-1])
    first_take = (taken[0][0].time_ms, taken[0][1].time_ms)
    if rounds >= ROBUST_FROM:
        first = [a.time_ms for a, _, _ in taken]
        middle = [c.time_ms for _, c, _ in taken]
        last = [b.time_ms for _, _, b in taken]
        base_limit, cand_limit = transient_limit(first + last), transient_limit(middle)
        for i in rounds_to_retake(first, middle, last, base_limit, cand_limit):
            for _ in range(RETAKE_TRIES):
                if budget == 0:
                    break
                budget -= 1
                retaken.add(i)
                taken[i] = take()
                a, c, b = (r.time_ms for r in taken[i])
                steady = not transient_rounds([a], [c], [b], base_limit, cand_limit)
                record(i, taken[i], retake=True, limits_ms=[base_limit, cand_limit])
                if steady:
                    break
    return Rounds(
        base=[math.sqrt(a.time_ms * b.time_ms) for a, _, b in taken],
        cand=[c.time_ms for _, c, _ in taken],
        aa=[a.time_ms / b.time_ms for a, _, b in taken],
        base_readings=[r for a, _, b in taken for r in (a, b)],
        cand_readings=[c for _, c, _ in taken],
        retakes=len(retaken),
        first_take=first_take,
    )


class ConfirmGate:
    """Final rounds in separate processes (fresh ones, or the two trees' workers), the candidate
    bracketed by baselines; every round must be won (from 10 rounds on: the sign test at
    p ≤ 0.01) and the median ratio must clear 1 + max(noise, γ−1)."""

    name = "confirm"
    phase = "final"
    claims_speedup = True  # the one gate whose pass backs `optimized`

    def take_rounds(self, ctx: GateContext, candidate: Tree, rounds: int, purpose: str,
                    work: float = 1.0) -> Rounds:
        """Its rounds alone, for `kernelopt gate-selftest` (selftest.TakesRounds)."""
        return bracketed_rounds(ctx, candidate, rounds, purpose, work)

    def evaluate(self, ctx: GateContext) -> GateResult:
        if not ctx.runner.has_bench(ctx.candidate_tree):
            return GateResult(self.name, True, "no bench: cannot confirm", skipped=True)
        try:
            rounds = ctx.runner.confirm_rounds(ctx.candidate_tree)
            taken = bracketed_rounds(ctx, ctx.candidate_tree, rounds, "confirm")
        except BenchFailed as exc:
            return GateResult(self.name, False, str(exc), failed_verdict=FALLBACK)
        options = ctx.settings.section(ConfirmOptions)
        stats = confirm_stats(taken.base, taken.cand, taken.aa, options.gamma, options.min_noise_pct)
        metrics = {
            "baseline_ms": taken.base, "candidate_ms": taken.cand, "aa_ratios": taken.aa,
            "ratios": list(stats.ratios), "wins": stats.wins, "rounds": stats.rounds,
            "median_ratio": stats.median_ratio, "noise_pct": stats.noise_pct,
            "threshold": stats.threshold, "sign_p": stats.sign_p, "retakes": taken.retakes,
        }
        ctx.confirmed = Confirmed(taken.base_readings, taken.cand_readings, taken.base,
                                  taken.cand, stats.median_ratio, stats.noise_pct)
        summary = (
            f"median ratio {stats.median_ratio:.3f}× over {stats.rounds} rounds, "
            f"{stats.wins}/{stats.rounds} won (sign test p={stats.sign_p:.3f}), noise "
            f"±{stats.noise_pct:.1f} %; needs > {stats.threshold:.3f}× and "
            + ("every round won" if stats.rounds < ROBUST_FROM else f"sign test p ≤ {SIGN_ALPHA:g}")
            + (f"; {taken.retakes} round(s) taken again after a transient reading"
               if taken.retakes else "")
        )
        return GateResult(self.name, stats.faster, summary, metrics)


def _checksum(reading: BenchReading) -> float | None:
    value = reading.checksum
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


class ShapeGate:
    """The exact shape and launch path the bench timed is correct too.

    Uses the backend's ``shape_check`` command when it has one; otherwise the ``checksum`` the
    bench reports after a verification call on poisoned outputs, compared with the baseline's.
    Without either, the measured shape cannot be verified and the verdict stays ``matched``.
    """

    name = "shape"
    phase = "final"

    def evaluate(self, ctx: GateContext) -> GateResult:
        log = ctx.log_dir / "shape.log"
        for seed in ctx.settings.seeds:
            result = ctx.runner.shape_check(ctx.candidate_tree, seed, log)
            if result is None:
                break
            if not result.ok:
                return GateResult(self.name, False, f"measured shape, seed {seed}: "
                                  f"{result.describe()}", {"log_tail": result.tail(2000)},
                                  failed_verdict=FALLBACK)
        else:
            detail = f"shape check passed on seeds {list(ctx.settings.seeds)}"
            timed = ctx.confirmed.candidate_readings if ctx.confirmed else []
            if timed and all(r.checksum is None for r in timed):
                # the shape check runs the kernel in its own process; the bench's repeated timed
                # calls on its own buffers are another path no gate has looked at
                note = ("the timed path is not verified by any gate: the bench reports no "
                        "checksum of what its timed calls computed (a result cached by pointer "
                        "across those calls would pass); print a checksum (docs/descriptor.md)")
                ctx.runner.journal.record(events.GateWarning(gate=self.name, message=note))
                detail += f"; {note}"
            return GateResult(self.name, True, detail)
        if not ctx.runner.has_bench(ctx.candidate_tree):
            return GateResult(self.name, True, "no bench: nothing timed", skipped=True)
        if ctx.confirmed is not None:
            base_read, cand_read = (ctx.confirmed.baseline_readings,
                                    ctx.confirmed.candidate_readings)
        else:
            try:
                base_read = [ctx.runner.bench(ctx.baseline_tree, log, "shape")]
                cand_read = [ctx.runner.bench(ctx.candidate_tree, log, "shape")]
            except BenchFailed as exc:
                return GateResult(self.name, False, str(exc), failed_verdict=FALLBACK)
        sums = [_checksum(r) for r in base_read]
        cand_sums = [_checksum(r) for r in cand_read]
        base = [c for c in sums if c is not None]
        cand = [c for c in cand_sums if c is not None]
        if len(base) < len(sums) or len(cand) < len(cand_sums):
            return GateResult(self.name, False, "cannot verify the measured shape: the bench "
                              "reports no checksum and the backend has no shape check",
                              failed_verdict=MATCHED)
        reference = median(base)
        rtol = ctx.settings.section(ShapeOptions).checksum_rtol
        scale = max(abs(reference), 1e-30)
        if not math.isfinite(reference) or any(abs(b - reference) > rtol * scale for b in base):
            return GateResult(self.name, False, f"the baseline's own checksums disagree "
                              f"({base}); the bench is not deterministic enough to verify the "
                              "measured shape", {"baseline": base}, failed_verdict=MATCHED)
        bad = [c for c in cand if not math.isfinite(c) or abs(c - reference) > rtol * scale]
        metrics = {"baseline_checksum": reference, "candidate_checksums": cand, "rtol": rtol}
        if bad:
            return GateResult(self.name, False, f"wrong output on the measured shape: checksum "
                              f"{bad[0]!r} vs baseline {reference!r} (rtol {rtol:g})", metrics,
                              failed_verdict=FALLBACK)
        return GateResult(self.name, True, f"measured-shape checksum matches the baseline "
                          f"(rtol {rtol:g})", metrics)


class RooflineGate:
    """Minimum bytes over candidate time may not exceed κ × the measured peak bandwidth."""

    name = "roofline"
    phase = "final"
    requires = ("confirm",)  # it bounds the confirmed time

    def _bytes(self, ctx: GateContext) -> tuple[int | None, str, str]:
        """(bytes, their source, a note when the declaration and the bench disagree)."""
        counted = self._counted(ctx)
        declared = ctx.target.bytes_moved
        if declared and counted and abs(int(counted) - declared) > 0.01 * declared:
            # one of the two is wrong and nothing here says which: bound with the smaller, so
            # an honest kernel is never called implausible on a wrong declaration
            smaller = min(int(counted), declared)
            note = (f"the declared bytes ({declared}) disagree with the {int(counted)} the "
                    f"bench reports; the bound uses the smaller — fix the declaration")
            return smaller, "declared" if smaller == declared else "counted by the bench", note
        if declared:
            return declared, "declared", ""
        if counted:
            return int(counted), "counted by the bench", ""
        # not a profiler's DRAM bytes of the baseline: the baseline's traffic is no lower
        # bound on a candidate's (softmax.py's baseline reads its input twice, its winner once)
        return None, "", ""

    @staticmethod
    def _counted(ctx: GateContext) -> int | float | None:
        """The bytes the bench itself reported, if any."""
        readings = ctx.confirmed.baseline_readings if ctx.confirmed else []
        return next((r.bytes for r in readings if r.bytes), None)

    @staticmethod
    def _evidence(ctx: GateContext, device: Any, nbytes: int, source: str) -> str:
        """What the accusation compared, and how to check each number."""
        counted = RooflineGate._counted(ctx)
        when = (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(device.measured_at))
                if device.measured_at else "given by --peak-gbps or the descriptor's peak_gbps")
        spread = f", spread {device.spread_pct:.1f} %" if device.spread_pct is not None else ""
        return (f"bytes {nbytes} ({source}; declared {ctx.target.bytes_moved or 'none'}, "
                f"bench-reported {counted or 'none'}), peak {device.peak_gbps:.1f} GB/s "
                f"({device.method}, {when}{spread}); measure the peak again with `kernelopt "
                f"setup --measure-peak` (or give --peak-gbps) and check the declared bytes")

    def evaluate(self, ctx: GateContext) -> GateResult:
        confirm = ctx.confirmed
        if confirm is None:
            return GateResult(self.name, True, "no confirmed time to bound", skipped=True)
        nbytes, source, note = self._bytes(ctx)
        if note:
            ctx.runner.journal.record(events.GateWarning(gate=self.name, message=note))
        if not nbytes:
            return GateResult(self.name, True, "skipped: no byte count (declare `bytes`)",
                              skipped=True)
        options = ctx.settings.section(RooflineOptions)
        kappa = options.kappa
        override = options.peak_gbps or ctx.target.peak_gbps
        device = device_info(ctx.settings.state_root, ctx.target.device, override)
        candidate_ms = median(confirm.candidate_ms)
        achieved = nbytes / (candidate_ms / 1e3) / 1e9
        metrics = {"bytes": nbytes, "bytes_source": source, "achieved_gbps": achieved,
                   "peak_gbps": device.peak_gbps, "peak_method": device.method,
                   "device": device.name, "cache_bytes": device.cache_bytes,
                   "kappa": kappa, "peak_spread_pct": device.spread_pct,
                   **({"bytes_note": note} if note else {})}
        if device.peak_gbps is None:
            return GateResult(self.name, True, f"skipped: peak bandwidth unknown "
                              f"({device.method}); give --peak-gbps", metrics, skipped=True)
        metrics["fraction"] = achieved / device.peak_gbps
        readings = confirm.candidate_readings
        flushed = bool(readings) and all(r.cache_flushed for r in readings)
        metrics["cache_flushed"] = flushed
        # A bench that flushes the cache between iterations re-reads its inputs from DRAM every
        # time, so the DRAM bound holds even for a working set that would fit in the cache.
        metrics["cache_resident"] = nbytes < device.cache_bytes and not flushed
        if metrics["cache_resident"]:
            return GateResult(
                self.name, True, f"skipped: the working set ({nbytes / 2**20:.1f} MiB) fits in "
                f"the {device.cache_bytes / 2**20:.0f} MiB cache, so DRAM bandwidth does not "
                "bound it; no other bound applied", metrics, skipped=True)
        peak: float = device.peak_gbps
        bound = kappa * peak
        if achieved > bound and not override and not ctx.shared.get("peak_remeasured"):
            # before calling a candidate implausible, the peak itself is measured again (once
            # per candidate's final gates): one taken on a busy machine can be low. Never
            # under the GPU lock (final gates run outside it; device_info takes it, and it is
            # not re-entrant)
            ctx.shared["peak_remeasured"] = True
            again = device_info(ctx.settings.state_root, ctx.target.device, remeasure=True,
                                only_higher=True)
            higher = again.peak_gbps
            if higher is not None and higher > peak:
                ctx.runner.journal.record(events.GateWarning(gate=self.name, message=(
                    f"the peak bandwidth, measured again before a rejection, is "
                    f"{higher:.1f} GB/s, not {peak:.1f}")))
                device, peak = again, higher
                bound = kappa * higher
                metrics.update(peak_gbps=higher, fraction=achieved / higher,
                               peak_spread_pct=device.spread_pct, peak_remeasured=True)
        spread = f" (spread ±{device.spread_pct / 2:.1f} %)" if device.spread_pct is not None else ""
        text = (f"{achieved:.1f} GB/s = {achieved / peak:.0%} of the measured "
                f"{peak:.1f} GB/s peak{spread} ({nbytes} bytes {source})"
                + (f"; {note}" if note else ""))
        baseline_gbps = nbytes / (median(confirm.baseline_ms) / 1e3) / 1e9
        if baseline_gbps > bound:
            # the unmodified baseline cannot move that much that fast: the byte count is wrong
            # (llama.cpp's kB/run for some ROPE cases implies ~7 TB/s), so it bounds nothing
            why = (f"the byte count is wrong: the unmodified baseline would move {nbytes} bytes "
                   f"({source}) at {baseline_gbps:.1f} GB/s, above κ={kappa:g} × "
                   f"the {device.peak_gbps:.1f} GB/s peak; fix the declared bytes")
            ctx.runner.journal.record(events.GateWarning(gate=self.name, message=why))
            return GateResult(self.name, True, f"skipped: {why}; no bound applied",
                              {**metrics, "baseline_gbps": baseline_gbps}, skipped=True)
        if achieved > bound:
            return GateResult(self.name, False, f"physically implausible: {text} exceeds "
                              f"κ={kappa:g} × peak; the candidate must be doing "
                              "less work or fooling the timer — unless a number compared here "
                              f"is wrong: {self._evidence(ctx, device, nbytes, source)}",
                              metrics, failed_verdict=FALLBACK)
        return GateResult(self.name, True, text, metrics)
