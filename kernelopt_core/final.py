"""The final phase: the best accepted candidates face the final gates in turn, and the
verdict — a pure function of their results (kernelopt_core.verdict) — is journaled."""

from __future__ import annotations

import attrs

from kernelopt_core import events
from kernelopt_core.capabilities import claims_speedup
from kernelopt_core.gates.base import FALLBACK, GateResult
from kernelopt_core.hookspecs import Gate
from kernelopt_core.profiling.bench import Profiling
from kernelopt_core.run_context import RunContext
from kernelopt_core.search import BeamSearch, Node
from kernelopt_core.verdict import protocol_results, verdict

FINAL_ATTEMPTS = 3  # candidates that may face the final gates when better ones cheat
# what a gate that claims a speedup publishes, per round where a list (docs/plugins.md)
MEASURED_KEYS = ("baseline_ms", "candidate_ms", "median_ratio", "noise_pct", "wins", "rounds")


def measured(results: list[GateResult], gates: list[Gate]) -> dict[str, object] | None:
    """The numbers the verdict rests on, from the gate that can claim a speedup (confirm by
    default): the verdict event carries them and the report renders them as they are."""
    claiming = {g.name for g in gates if claims_speedup(g)}
    for result in results:
        if result.gate in claiming and not result.skipped \
                and all(k in result.metrics for k in MEASURED_KEYS):
            return {"gate": result.gate, **{k: result.metrics[k] for k in MEASURED_KEYS}}
    return None


@attrs.define
class FinalPhase:
    context: RunContext
    profiling: Profiling | None = None  # the winner profiled as the baseline was

    def finish(self, search: BeamSearch, gates: list[Gate], baseline_ms: float | None,
               rejections: dict[str, str]) -> str:
        """The best accepted candidates, in turn, face the final gates; the verdict event and
        report.diff are written; the status returned."""
        benched = baseline_ms is not None
        accepted = [n for n in search.nodes.values() if n.id != "baseline"]
        if not accepted:
            rejected = ", ".join(f"{c} at {g}" for c, g in rejections.items()) or "none"
            self.context.journal.record(events.Verdict(
                status="fallback", candidate=None,
                reason=f"no candidate passed every candidate gate; baseline kept (rejected: "
                f"{rejected})"))
            return "fallback"
        if benched:
            accepted.sort(key=lambda n: n.speedup, reverse=True)
        results: list[GateResult] = []
        status, best = FALLBACK, accepted[0]
        # A candidate caught cheating or wrong on the measured shape gives the next best its
        # turn; one that is merely not proven faster ends the search (the rest are slower).
        for best in accepted[:FINAL_ATTEMPTS]:
            status, results = self._attempt(best, gates, baseline_ms)
            if status != FALLBACK:
                break
        failures = [r for r in results if not r.passed]
        winner = self.context.workspace.tags().get(f"kernelopt/{self.context.run_id}/{best.id}")
        diff = b""
        if status in ("optimized", "unverified") and winner is not None:
            diff = self.context.workspace.diff(self.context.workspace.baseline_commit, winner)
            self.context.workspace.tag(self.context.run_id, "winner", winner)
        (self.context.run_dir / "report.diff").write_bytes(diff)
        self.context.journal.record(events.Verdict(
            status=status,
            candidate=best.id,
            description=best.description,
            knobs=best.knobs,
            screen_speedup=best.speedup,
            winner_tag=f"kernelopt/{self.context.run_id}/winner" if diff else None,
            diff="report.diff" if diff else None,
            caught_by=[f.gate for f in failures],
            measured=measured(results, gates),
            reason="; ".join(f"{f.gate}: {f.reason}" for f in failures) or "every final gate passed",
        ))
        if self.profiling is not None and status in ("optimized", "matched"):
            # after the verdict and every timed window; the candidate tree holds the winner
            try:
                self.profiling.run(self.context.workspace.candidate_tree,
                                   {**self.context.workspace.files, **best.edits},
                                   self.context.run_dir / "profile-winner", "winner", candidate=best.id)
            except Exception as exc:  # a profile is information: it never undoes a verdict
                self.context.journal.record(events.GateWarning(
                    gate="profile", message=f"the winner's profile failed: {exc}"[:2000]))
        return status

    def _attempt(
        self, node: Node, gates: list[Gate], baseline_ms: float | None
    ) -> tuple[str, list[GateResult]]:
        """One candidate through the final gates (rebuilt first): its verdict and every final
        gate's result."""
        self.context.stage("final", candidate=node.id)
        self.context.workspace.use_candidate(node.edits)
        log_dir = self.context.run_dir / "candidates" / node.id
        tree = self.context.workspace.candidate_tree
        rebuilt = self.context.runner.build(tree, log_dir / "final-build.log")
        ctx = self.context.gate_context(node.id, node.edits, log_dir, baseline_ms)
        results: list[GateResult] = []

        def record(result: GateResult) -> None:  # journaled as it happens
            self.context.record_gate(node.id, result, final=True)
            results.append(result)

        if rebuilt is not None and not rebuilt.ok:  # built during the search: flaky, disk full
            record(GateResult("build", False, f"no longer builds: {rebuilt.describe()}",
                              failed_verdict=FALLBACK))
            return FALLBACK, results  # the next best candidate gets its turn
        # a resumed run's replayed winner was checked by the killed process, not this one: its
        # worker times only checked content (the pool's TreeWorkers.checked), so it is checked again here
        if self.context.runner.served(tree, unchecked=True) and (
                failed := self.context.runner.check_all(tree, log_dir / "final-check.log")) is not None:
            record(GateResult("correctness", False, f"fails its check again ({failed[0]})",
                              failed_verdict=FALLBACK))
            return FALLBACK, results
        for gate in gates:
            self.context.stage(gate.name, candidate=node.id)
            record(gate.evaluate(ctx))
        for added in protocol_results(results, benched=baseline_ms is not None,
                                      interpreted=self.context.runner.interpreted,
                                      can_claim=any(claims_speedup(g) for g in gates)):
            record(added)
        return verdict(results, benched=baseline_ms is not None), results

