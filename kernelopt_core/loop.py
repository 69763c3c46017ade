"""The one optimization loop. Every backend feeds it; no plugin owns a loop.

baseline build → test (must pass) → bench; then plan → edit → candidate gates (build,
correctness, screen by default) → accept or reject, until patience, target speedup, an
iteration or time budget, or the planner runs dry; then the best candidate faces the final
gates (confirm by default) against the baseline, and the verdict is journaled. Reports are
rebuilt from the journal.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import baseline as baseline_steps
from kernelopt_core import events, knob_probe, report, resolve
from kernelopt_core.capabilities import is_exhaustive
from kernelopt_core.errors import (
    EXIT_NO_WIN,
    EXIT_OPTIMIZED,
    BudgetExhausted,
    PlannerError,
    UsageError,
)
from kernelopt_core.evaluate import Evaluator
from kernelopt_core.final import FinalPhase
from kernelopt_core.hookspecs import Backend, Gate
from kernelopt_core.planners.base import PlanContext, Proposal
from kernelopt_core.plugins import PluginHost
from kernelopt_core.profiling.bench import Profiling
from kernelopt_core.resume import Resumed, check_run_id, run_lock
from kernelopt_core.run_context import RunContext
from kernelopt_core.search import BeamSearch, Node, SeenContent
from kernelopt_core.session import (
    new_run_id,
    prepare_state_root,
)
from kernelopt_core.settings import Settings
from kernelopt_core.target import Target
from kernelopt_core.workers.screening import screener

__all__ = ["Loop", "RunOutcome"]


@attrs.define
class RunOutcome:
    run_id: str
    run_dir: Path
    status: str
    exit_code: int
    summary: dict[str, Any]




class Loop:
    def __init__(
        self,
        host: PluginHost,
        backend: Backend,
        target: Target,
        settings: Settings,
        listeners: list[Any] | None = None,
        argv: list[str] | None = None,
    ) -> None:
        self.host = host
        # what the run's context opens with (RunContext.open); read from the context after
        self.backend, self.target, self.settings = backend, target, settings
        self.listeners = listeners or []
        self.argv = argv or []
        # a named run whose journal exists is resumed (kernelopt_core.resume); only a flag
        # names one (a KERNELOPT_RUN_ID in the environment would pin every run to one id)
        if settings.run_id and settings.origins.get("run_id") != "flag":
            raise UsageError(f"run_id is set by {settings.origins.get('run_id')}",
                             hint="name a run with --run-id only")
        self.run_id = check_run_id(settings.run_id) if settings.run_id else new_run_id()
        self.run_dir = settings.state_root / "runs" / self.run_id
        # the gate plan is checked before any folder is made: a typo makes no run
        self.gates = (resolve.gates(host, settings, settings.gates.candidate_gates, "candidate"),
                      resolve.gates(host, settings, settings.gates.final_gates, "final"))
        resolve.check_gate_plan(*self.gates)
        self.seen = SeenContent()
        self.evaluated = 0  # candidates the search has numbered so far

    # ------------------------------------------------------------------ the run
    def run(self) -> RunOutcome:
        prepare_state_root(self.settings.state_root)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with run_lock(self.run_dir):  # one process per run: a second attempt is refused
            self.replay = Resumed.load(self.run_dir / "journal.jsonl", self.target)
            if self.replay is not None and self.replay.finished is not None:  # nothing to do
                summary = report.write_all(self.run_dir)
                return RunOutcome(self.run_id, self.run_dir, summary["status"],
                                  self.replay.finished, summary)
            return self._attempt()

    def _attempt(self) -> RunOutcome:
        self.context = context = RunContext.open(
            self.run_id, self.run_dir, self.backend, self.target, self.settings, self.listeners,
            self.replay.earlier() if self.replay else None, self._replaying)
        if context.target.preface:
            (self.run_dir / "preface.txt").write_text(context.target.preface)
        self.evaluator = Evaluator(context, self.replay)
        exit_code = EXIT_NO_WIN
        try:
            if self.replay is None:
                context.write_header(self.argv)
            else:
                context.journal.record(events.Resumed(
                    pid=os.getpid(), host=platform.node(), argv=self.argv, best=self.replay.best,
                    completed=sorted(self.replay.completed, key=lambda c: int(c[1:]))))
            waited = context.workspace.acquire(self.run_id, lambda holder: context.journal.record(
                events.WorkspaceWait(target=context.target.name, **holder)))
            context.journal.record(events.WorkspaceAcquired(waited_s=round(waited, 3)))
            status = self._run()
            exit_code = EXIT_OPTIMIZED if status == "optimized" else EXIT_NO_WIN
        except (KeyboardInterrupt, Exception) as exc:
            exit_code = context.record_failure(exc, host=self.host)
        finally:
            context.journal.record(events.End(
                exit_code=exit_code,
                wall_seconds=round(context.budget.wall_seconds(), 3),
                gpu_seconds=round(context.runner.gpu_seconds, 3),
                child_seconds=round(context.runner.child_seconds, 3),
            ))
            context.close()
        summary = report.write_all(self.run_dir)
        return RunOutcome(self.run_id, self.run_dir, summary["status"], exit_code, summary)

    def _replaying(self) -> bool:
        """The next candidate is one a resumed run serves from its journal (it costs nothing:
        no budget stops it)."""
        return self.replay is not None and self.replay.pending(f"c{self.evaluated + 1}")

    def _run(self) -> str:
        context = self.context
        target, settings, journal, workspace = (context.target, context.settings,
                                                context.journal, context.workspace)
        if not target.editable:  # a whole program to profile (llama.cpp's model), no kernel
            raise UsageError(f"{target.name} has no file to edit: it can be profiled "
                             "(kernelopt profile PATH --engine), not optimized",
                             hint="name a kernel to optimize (--target, or the backend's own "
                                  "flag: --op for llama.cpp)")
        candidate_gates, final_gates = self.gates
        planner, why = resolve.planner(self.host, settings, target)
        profiling = Profiling(settings.profiler, self.host, context)  # checked before any build
        journal.record(events.Config(planner=planner.name, planner_reason=why,
                                     candidate_gates=[g.name for g in candidate_gates],
                                     final_gates=[g.name for g in final_gates]))
        context.stage("snapshot")
        baseline_commit = workspace.start(
            self.run_id, self.replay.baseline_commit if self.replay else None)
        journal.record(events.Workspace(
            dir=str(workspace.dir), baseline_commit=baseline_commit.decode(),
            files=len(workspace.files),
        ))
        files = workspace.files
        knobs, baseline_knobs = resolve.knobs(target, files)
        resolve.check_planner_inputs(planner, settings, target, knobs)
        journal.record(events.Knobs(
            knobs=[{"name": k.name, "file": k.file, "values": list(k.values),
                             "baseline": baseline_knobs[k.name],
                             **({"also": [f for f, _ in k.also]} if k.also else {})}
                            for k in knobs],
            declared=bool(target.knobs),
        ))
        baseline = context.baseline
        baseline.knob_values = baseline_knobs
        baseline_steps.measure(context, self.run_dir / "baseline",
                               self.replay.baseline if self.replay else None)
        baseline.knobs = knob_probe.usable(context, knobs, baseline_knobs,
                                           self.run_dir / "knob-probe")
        baseline.profile = profiling.run(workspace.baseline_tree, files,
                                         self.run_dir / "profile", "baseline")
        root = Node("baseline", {}, dict(baseline_knobs))
        search = BeamSearch(root, width=settings.search.beam)
        ctx = context.plan_context(screener(context.runner, workspace.baseline_tree,
                                            baseline.knobs, self.run_dir / "screen"))
        context.budget.start_search()
        journal.record(events.SearchStart(before_s=round(context.budget.wall_seconds(), 3)))
        self._search(planner, ctx, search, candidate_gates, baseline.ms)
        final = FinalPhase(context, profiling)
        return final.finish(search, final_gates, baseline.ms, self.evaluator.rejections)

    # ------------------------------------------------------------------ search
    def _search(self, planner: Any, ctx: PlanContext, search: BeamSearch, gates: list[Gate],
                baseline_ms: float | None) -> None:
        s, journal = self.context.settings, self.context.journal
        self.evaluated = since_best = 0
        best = 1.0
        stop = "iterations"
        while True:
            if self.evaluated >= s.search.iterations:
                break
            # a resumed run's recorded candidates cost nothing: the budgets wait until they are
            # served, so the replay reaches the state the killed run had
            spent = self.context.budget.stop_reason()
            if spent is not None:
                stop = spent
                break
            if since_best >= s.search.patience and not is_exhaustive(planner):
                stop = "patience"
                break
            if s.search.target_speedup is not None and best >= s.search.target_speedup:
                stop = "target speedup reached"
                break
            parent = search.select()
            if parent is None:
                stop = "search space exhausted"
                break
            self.context.stage("plan", parent=parent.id)
            try:
                count = min(s.search.plans, s.search.iterations - self.evaluated)
                proposals = planner.propose(ctx, parent, count)
            except BudgetExhausted as exc:
                stop = str(exc)
                break
            except PlannerError as exc:  # this attempt fails; the run goes on
                self.evaluated += 1
                since_best += 1
                self.evaluator.planner_failed(f"c{self.evaluated}", parent.id,
                                              planner.name, str(exc))
                continue
            proposals = [p for p in proposals if self._is_new(p)]
            if not proposals:  # nothing (new) to offer from this parent
                parent.exhausted = True
                continue
            for proposal in proposals:
                self.evaluated += 1
                node, outcome = self.evaluator.evaluate(proposal, parent, gates, baseline_ms,
                                                        self.evaluated)
                planner.observe(ctx, proposal, outcome)
                if node is not None:
                    search.add(node)
                if node is not None and node.speedup > best:
                    best, since_best = node.speedup, 0
                    if not outcome.replayed:  # a resumed run's journal has it already
                        journal.record(events.Best(candidate=node.id, speedup=node.speedup))
                        # timed again at the end
                        self.context.runner.keep(self.context.workspace.candidate_tree)
                else:
                    since_best += 1
        unserved = self.replay.unserved(self.evaluated) if self.replay is not None else []
        if unserved:  # this attempt stopped before them: they are not this run's
            journal.record(events.ResumeDiverged(candidate_from=f"c{self.evaluated + 1}",
                                                      discarded=unserved))
        journal.record(events.SearchEnd(reason=stop, evaluated=self.evaluated))

    def _is_new(self, proposal: Proposal) -> bool:
        """The same content is never evaluated twice in a run (planners may repeat)."""
        if self.seen.first_time(proposal.edits, self.context.workspace.files):
            return True
        self.context.journal.record(events.Duplicate(description=proposal.description))
        return False
