"""One run's session, opened once (``RunContext.open``: its journal, runner, workspace and
budget) and shared by its phases: the baseline's steps (kernelopt_core.baseline, knob_probe,
profiling), the evaluator (kernelopt_core.evaluate) and the final phase (kernelopt_core.final)
read it here instead of each taking it argument by argument. The loop, ``kernelopt profile``
and ``kernelopt gate-selftest`` open theirs the same way. The run's settings and target are
held here, and read from here."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import events, session
from kernelopt_core.budget import Budget, Earlier
from kernelopt_core.gates.base import GateContext, GateResult
from kernelopt_core.hookspecs import Backend
from kernelopt_core.journal import Journal
from kernelopt_core.planners.base import PlanContext, Profile, Screened
from kernelopt_core.runner import Runner
from kernelopt_core.settings import Settings
from kernelopt_core.target import Knob, Target
from kernelopt_core.workspace import Workspace


@attrs.define
class Baseline:
    """The unmodified target as the run learns it before the search, step by step."""

    ms: float | None = None  # its screen time (the median), None without a bench
    knobs: tuple[Knob, ...] = ()  # the knobs to search: declared, else detected; probed
    knob_values: dict[str, str] = attrs.field(factory=dict)  # each knob's value in it
    profile: dict[str, Any] = attrs.field(factory=dict)  # under the profiler, when there is one


@attrs.define(eq=False)
class RunContext:
    run_id: str
    run_dir: Path  # where its journal and logs go (runs/, profiles/ or selftest/ <id>)
    backend: Backend
    target: Target
    settings: Settings
    journal: Journal
    runner: Runner
    workspace: Workspace
    budget: Budget
    baseline: Baseline = attrs.field(factory=Baseline)
    stage_now: str = ""  # the stage running, named when the run ends early

    @classmethod
    def open(cls, run_id: str, run_dir: Path, backend: Backend, target: Target,
             settings: Settings, listeners: Iterable[Any] = (), earlier: Earlier | None = None,
             replaying: Callable[[], bool] | None = None) -> RunContext:
        """The session of run ``run_id``: its journal (``listeners`` hear every event), the
        runner of ``target`` through ``backend``, the target's workspace (not yet acquired)
        and one budget account (``earlier``: a resumed run's attempts; ``replaying``: whether
        the next candidate is one the journal serves). ``close`` ends it."""
        journal = Journal(run_dir / "journal.jsonl")
        journal.listeners.extend(listeners)
        runner = Runner(backend, target, settings, journal)
        # one account: the search's wall budget, the runner's GPU seconds, the earlier attempts'
        budget = Budget(settings.search, runner.spent, earlier, replaying or (lambda: False))
        return cls(run_id, run_dir, backend, target, settings, journal, runner,
                   Workspace(settings.state_root, target), budget)

    def close(self) -> None:
        """The bench workers stopped, the journal closed, the workspace released."""
        self.runner.close_workers()
        self.journal.close()
        self.workspace.release()

    def stage(self, stage: str, **data: Any) -> None:
        """The run enters ``stage``: journaled (and so shown as progress)."""
        self.stage_now = stage
        self.journal.record(events.Stage(stage=stage, **data))

    def write_header(self, argv: list[str]) -> None:
        session.write_header(self.journal, self.run_id, self.target, self.settings, argv)

    def record_failure(self, exc: BaseException, stage: str | None = None,
                       host: Any = None) -> int:
        """How the run ended early, journaled (session.record_failure); its exit code."""
        return session.record_failure(self.journal, self.run_dir, exc,
                                      self.stage_now if stage is None else stage, host)

    def record_gate(self, cid: str, result: GateResult, final: bool = False) -> None:
        """A gate's result on candidate ``cid``, journaled (``final``: a final gate's, with the
        verdict a failure sends the run to)."""
        self.journal.record(events.Gate(
            candidate=cid, gate=result.gate, passed=result.passed, final=final or None,
            skipped=result.skipped, reason=result.reason, metrics=result.metrics,
            failed_verdict=None if result.passed or not final else result.failed_verdict,
        ))

    def plan_context(self, screen: Callable[[list[dict[str, str]]], list[Screened]] | None
                     ) -> PlanContext:
        """What a planner sees: a view of this session once its baseline is learned (the
        snapshot, the probed knobs and their values, the profile and the screen time, the
        journal and the budget), with ``screen``, the bulk screening of knob configurations,
        where the backend has a worker. The baseline's own configuration counts as tried."""
        ctx = PlanContext(self.target, self.settings, self.workspace.files, self.baseline.knobs,
                          dict(self.baseline.knob_values), self.journal, self.run_id,
                          Profile(self.baseline.profile), baseline_ms=self.baseline.ms,
                          screen=screen, budget=self.budget)
        ctx.tried.add(tuple(sorted(self.baseline.knob_values.items())))
        return ctx

    def gate_context(self, cid: str, edits: dict[str, bytes], log_dir: Path,
                     baseline_ms: float | None) -> GateContext:
        """What a gate sees of candidate ``cid`` (its edits in the candidate tree)."""
        return GateContext(
            self.runner, self.settings, self.target, cid, self.workspace.candidate_tree,
            self.workspace.baseline_tree, log_dir, baseline_ms, edits=dict(edits),
            baseline_files=self.workspace.files, profile=self.baseline.profile,
        )
