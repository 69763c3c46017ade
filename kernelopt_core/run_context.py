"""One run's state, made once by the loop (kernelopt_core.loop) and shared by its phases: the
evaluator (kernelopt_core.evaluate) and the final phase (kernelopt_core.final) read it here
instead of each taking it argument by argument."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import events
from kernelopt_core.gates.base import GateContext, GateResult
from kernelopt_core.journal import Journal
from kernelopt_core.runner import Runner
from kernelopt_core.settings import Settings
from kernelopt_core.target import Target
from kernelopt_core.workspace import Workspace


@attrs.define
class RunContext:
    run_id: str
    run_dir: Path
    settings: Settings
    target: Target
    journal: Journal
    runner: Runner
    workspace: Workspace
    stage: Callable[..., None]  # the loop's stage callback: journaled, shown as progress
    profile: dict[str, Any] = attrs.field(factory=dict)  # the baseline's, once profiled

    def record_gate(self, cid: str, result: GateResult, final: bool = False) -> None:
        """A gate's result on candidate ``cid``, journaled (``final``: a final gate's, with the
        verdict a failure sends the run to)."""
        self.journal.record(events.Gate(
            candidate=cid, gate=result.gate, passed=result.passed, final=final or None,
            skipped=result.skipped, reason=result.reason, metrics=result.metrics,
            failed_verdict=None if result.passed or not final else result.failed_verdict,
        ))

    def gate_context(self, cid: str, edits: dict[str, bytes], log_dir: Path,
                     baseline_ms: float | None) -> GateContext:
        """What a gate sees of candidate ``cid`` (its edits in the candidate tree)."""
        return GateContext(
            self.runner, self.settings, self.target, cid, self.workspace.candidate_tree,
            self.workspace.baseline_tree, log_dir, baseline_ms, edits=dict(edits),
            baseline_files=self.workspace.files, profile=self.profile,
        )
