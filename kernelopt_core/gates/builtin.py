"""Built-in gates, registered through the same hook as any third-party gate.

Candidate phase (default order): ``build`` → ``correctness`` → ``screen``.
Final phase (default): ``confirm``. Order and membership come from ``[gates]`` in config.
"""

from __future__ import annotations

from kernelopt_core.gates.base import FALLBACK, GateContext, GateResult
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.measure.stats import confirm_stats, median
from kernelopt_core.runner import BenchFailed


class BuildGate:
    name = "build"
    phase = "candidate"

    def evaluate(self, ctx: GateContext) -> GateResult:
        result = ctx.runner.build(ctx.candidate_tree, ctx.log_dir / "build.log")
        if result is None:
            return GateResult(self.name, True, "nothing to build")
        if not result.ok:
            return GateResult(
                self.name, False, f"{result.describe()}", {"log_tail": result.tail(4000)}
            )
        return GateResult(self.name, True, f"built in {result.seconds:.1f} s")


class CorrectnessGate:
    """Runs the target's test on every configured seed (fresh random inputs per seed)."""

    name = "correctness"
    phase = "candidate"

    def evaluate(self, ctx: GateContext) -> GateResult:
        for seed in ctx.settings.seeds:
            result = ctx.runner.check(ctx.candidate_tree, seed, ctx.log_dir / "test.log")
            if not result.ok:
                return GateResult(
                    self.name,
                    False,
                    f"seed {seed}: {result.describe()}",
                    {"seed": seed, "log_tail": result.tail(4000)},
                    failed_verdict=FALLBACK,
                )
        return GateResult(self.name, True, f"passed on seeds {list(ctx.settings.seeds)}")


class ScreenGate:
    """Interleaved baseline/candidate invocations; advance if clearly faster (γ margin)."""

    name = "screen"
    phase = "candidate"

    def evaluate(self, ctx: GateContext) -> GateResult:
        if not ctx.runner.has_bench(ctx.candidate_tree):
            return GateResult(self.name, True, "no bench: not screened", skipped=True)
        log = ctx.log_dir / "bench.log"
        base, cand = [], []
        try:
            for i in range(ctx.settings.screen_runs):
                order = [("b", ctx.baseline_tree), ("c", ctx.candidate_tree)]
                for role, tree in order if i % 2 == 0 else reversed(order):
                    ms = ctx.runner.bench(tree, log, f"screen:{ctx.candidate}").time_ms
                    (base if role == "b" else cand).append(ms)
        except BenchFailed as exc:
            return GateResult(self.name, False, str(exc), failed_verdict=FALLBACK)
        b, c = median(base), median(cand)
        speedup = b / c
        metrics = {"baseline_ms": base, "candidate_ms": cand, "speedup": speedup}
        ctx.shared["screen_speedup"] = speedup
        gamma = ctx.settings.gamma
        if c < b / gamma:
            return GateResult(self.name, True, f"{speedup:.3f}× (> γ={gamma:g})", metrics)
        return GateResult(self.name, False, f"{speedup:.3f}× is not above γ={gamma:g}", metrics)


class ConfirmGate:
    """Final rounds in fresh processes, interleaved with alternating order; sign test and a
    noise floor from the baseline's own spread in the same session."""

    name = "confirm"
    phase = "final"

    def evaluate(self, ctx: GateContext) -> GateResult:
        if not ctx.runner.has_bench(ctx.candidate_tree):
            return GateResult(self.name, True, "no bench: cannot confirm", skipped=True)
        log = ctx.log_dir / "confirm.log"
        base, cand = [], []
        try:
            for i in range(ctx.settings.final_rounds):
                order = [("b", ctx.baseline_tree), ("c", ctx.candidate_tree)]
                for role, tree in order if i % 2 == 0 else reversed(order):
                    ms = ctx.runner.bench(tree, log, f"confirm:{ctx.candidate}").time_ms
                    (base if role == "b" else cand).append(ms)
                ctx.runner.journal.write(
                    "confirm_round", candidate=ctx.candidate, round=i + 1,
                    baseline_ms=base[-1], candidate_ms=cand[-1],
                )
        except BenchFailed as exc:
            return GateResult(self.name, False, str(exc), failed_verdict=FALLBACK)
        stats = confirm_stats(base, cand, ctx.settings.gamma, ctx.settings.min_noise_pct)
        metrics = {
            "baseline_ms": base,
            "candidate_ms": cand,
            "ratios": list(stats.ratios),
            "wins": stats.wins,
            "rounds": stats.rounds,
            "median_ratio": stats.median_ratio,
            "noise_pct": stats.noise_pct,
            "threshold": stats.threshold,
            "sign_p": stats.sign_p,
        }
        ctx.shared["confirm"] = metrics
        summary = (
            f"median ratio {stats.median_ratio:.3f}× over {stats.rounds} rounds, "
            f"{stats.wins}/{stats.rounds} won, noise ±{stats.noise_pct:.1f} %, "
            f"needs > {stats.threshold:.3f}× and every round won"
        )
        return GateResult(self.name, stats.faster, summary, metrics)


@hookimpl
def kernelopt_register_gates() -> list[object]:
    return [BuildGate(), CorrectnessGate(), ScreenGate(), ConfirmGate()]
