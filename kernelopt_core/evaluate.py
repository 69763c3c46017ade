"""One candidate through the candidate gates: the loop's inner step (kernelopt_core.loop).

A resumed run (kernelopt_core.resume) is served the recorded outcome of a candidate the killed
attempt completed with the same proposal: nothing is built or timed again and nothing is
journaled again (the journal already holds it).
"""

from __future__ import annotations

import time
from pathlib import Path

import attrs

from kernelopt_core import events, outside
from kernelopt_core.gates.base import GateResult
from kernelopt_core.hookspecs import Gate
from kernelopt_core.planners.base import Outcome, Proposal
from kernelopt_core.resume import Resumed
from kernelopt_core.run_context import RunContext
from kernelopt_core.search import Node, content_key
from kernelopt_core.session import record_failed_proposal
from kernelopt_core.workspace import text_diff


@attrs.define
class Evaluator:
    context: RunContext
    replay: Resumed | None = None
    rejections: dict[str, str] = attrs.field(factory=dict)  # candidate -> the gate it failed

    def evaluate(self, proposal: Proposal, parent: Node, gates: list[Gate],
                 baseline_ms: float | None, number: int) -> tuple[Node | None, Outcome]:
        """Put the proposal in the candidate tree and run the candidate gates on it; the
        accepted node (None if rejected) and the outcome the planner observes (``replayed``:
        served from the journal of a resumed run)."""
        cid = f"c{number}"
        log_dir = self.context.run_dir / "candidates" / cid
        if self.replay is not None and not self.replay.diverged:
            recorded = self.replay.take(cid, proposal)
            if recorded is not None:
                return self._outcome(cid, proposal, parent, recorded, log_dir, replayed=True)
            self._diverge(cid)
        started, child_before = time.time(), self.context.runner.child_seconds
        cpu_before = time.process_time()  # the loop's own work, whatever the machine's load
        log_dir.mkdir(parents=True, exist_ok=True)
        files = self.context.workspace.files
        bad = [p for p in proposal.edits if p not in self.context.target.editable]
        self.context.journal.record(events.Candidate(
            candidate=cid, parent=parent.id, planner=proposal.planner,
            description=proposal.description, knobs=proposal.knobs,
            files=sorted(proposal.edits), digest=content_key(proposal.edits),
        ))
        (log_dir / "edit.diff").write_text(text_diff(files, proposal.edits), encoding="utf-8")
        results: list[GateResult] = []
        if bad:
            results.append(GateResult("editable", False, f"edits non-editable files: {bad}"))
        else:
            self.context.workspace.use_candidate(proposal.edits)
            ctx = self.context.gate_context(cid, proposal.edits, log_dir, baseline_ms)
            watch = self._watched()
            before = watch.stamp()
            for gate in gates:
                self.context.stage(gate.name, candidate=cid)
                result = gate.evaluate(ctx)
                results.append(result)
                self.context.record_gate(cid, result)
                if not result.passed:
                    break
            wrote = watch.changes(before, watch.stamp())
            if wrote:  # the worst of its faults, whatever else failed: named first
                results.insert(0, GateResult("workspace", False,
                                             outside.describe(wrote, self.context.target.root),
                                             {"paths": wrote[:50]}))
                self.context.record_gate(cid, results[0])
        accepted = all(r.passed for r in results)
        speedup = next((r.metrics["speedup"] for r in results if "speedup" in r.metrics), None)
        tag = None
        if accepted:
            _commit, tag = self.context.workspace.commit_candidate(
                self.context.run_id, cid, proposal.edits, f"{cid}: {proposal.description}"
            )
        failed = next((r for r in results if not r.passed), None)
        event = events.CandidateResult(
            candidate=cid, accepted=accepted, speedup=speedup,
            failed_gate=failed.gate if failed else None,
            reason=failed.reason if failed else "passed every candidate gate",
            log_tail=str(failed.metrics.get("log_tail") or "") if failed else "",
            gates_passed=[r.gate for r in results if r.passed],
            tag=tag, wall_s=round(time.time() - started, 4),
            child_s=round(self.context.runner.child_seconds - child_before, 4),
            self_cpu_s=round(time.process_time() - cpu_before, 4),
            gpu_seconds=round(self.context.runner.gpu_seconds, 3),  # the run's total so far
        )
        self.context.journal.record(event)
        return self._outcome(cid, proposal, parent, event, log_dir, replayed=False)

    def _watched(self) -> outside.Watched:
        """Where this candidate must not write (kernelopt_core.outside)."""
        context = self.context
        return outside.watched(context.target.root, context.settings.state_root,
                               context.workspace.dir, context.workspace.baseline_tree.src,
                               context.workspace.files)

    def planner_failed(self, cid: str, parent: str, planner: str, message: str) -> None:
        """The planner gave no proposal for ``cid``: a row of its own, unless a resumed run's
        journal records that same failure there (served like any recorded outcome: written
        once); a recorded candidate there instead ends the replay."""
        if self.replay is not None and not self.replay.diverged:
            recorded = self.replay.completed.get(cid)
            if recorded is not None and recorded[1].failed_gate == "planner":
                return
            self._diverge(cid)
        record_failed_proposal(self.context.journal, cid, parent, planner, message)

    def _diverge(self, cid: str) -> None:
        assert self.replay is not None
        dropped = self.replay.diverge(cid)
        if dropped:
            self.context.journal.record(events.ResumeDiverged(candidate_from=cid, discarded=dropped))

    def _outcome(self, cid: str, proposal: Proposal, parent: Node,
                 result: events.CandidateResult, log_dir: Path,
                 replayed: bool) -> tuple[Node | None, Outcome]:
        diff = log_dir / "edit.diff"
        outcome = Outcome(result.candidate, result.accepted, result.speedup, result.failed_gate,
                          result.reason, result.log_tail or "",
                          diff.read_text(encoding="utf-8") if diff.is_file() else "", replayed)
        if not result.accepted:
            self.rejections[cid] = str(result.failed_gate)
            return None, outcome
        speedup = result.speedup
        return Node(cid, dict(proposal.edits), dict(proposal.knobs), proposal.description,
                    parent.id, 1.0 if speedup is None else speedup), outcome
