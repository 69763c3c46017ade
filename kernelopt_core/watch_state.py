"""What `kernelopt watch` shows, folded from a run's journal events (pure: the journal is the
source of truth, so a view from another terminal, or over ssh, sees what the run wrote).

``fold(records)`` gives a WatchState; feeding it the records written since
(``WatchState.add``) keeps it current without reading the journal again. Each record is read
as its ``kernelopt_core.events`` class; one that does not parse (a torn line) changes only the
clock.
"""

from __future__ import annotations

from typing import Any

import attrs

from kernelopt_core import events
from kernelopt_core.measure.stats import median


@attrs.define
class WatchState:
    run_id: str = ""
    target: str = ""
    shape: str = ""
    planner: str = ""
    iterations: int | None = None
    started: float | None = None
    now: float | None = None  # the last event's time
    stage: str = "starting"
    stage_candidate: str | None = None
    baseline_ms: float | None = None
    proposed: int = 0
    evaluated: int = 0
    accepted: int = 0
    trying: str = ""  # the latest proposal's description
    best: float = 1.0  # the search's best screen speedup so far
    best_candidate: str | None = None
    history: list[tuple[float, float]] = attrs.field(factory=list)  # (seconds in, best)
    rejections: dict[str, int] = attrs.field(factory=dict)  # gate -> candidates it rejected
    # round -> (baseline, candidate) ms; a retaken round replaces its first reading
    confirm: dict[int, tuple[float, float]] = attrs.field(factory=dict)
    confirm_candidate: str | None = None
    screening: str = ""
    lock_wait_s: float = 0.0  # for the workspace (another run of the same target)
    gpu_lock_wait_s: float = 0.0  # for the GPU lock (another run on the same GPU)
    gpu_seconds: float = 0.0
    llm_calls: int = 0
    llm_cost: float = 0.0
    verdict: str | None = None
    report_line: str = ""
    ended: bool = False
    exit_code: int | None = None
    pid: int | None = None  # the run's process and host, from its header
    host: str = ""

    def add(self, record: Any) -> None:
        if not isinstance(record, dict):
            return
        if isinstance(t := record.get("t"), (int, float)):
            self.now = float(t)
        if (event := events.parse(record)) is not None:
            handler = getattr(self, f"_on_{event.EVENT}", None)
            if handler is not None:
                handler(event)

    @property
    def elapsed_s(self) -> float:
        return (self.now or 0.0) - (self.started or self.now or 0.0)

    @property
    def confirm_ratio(self) -> float | None:
        """The median of the rounds' baseline/candidate so far."""
        ratios = [b / c for b, c in self.confirm.values() if c > 0]
        return median(ratios) if ratios else None

    # -- one method per journal event that changes the view
    def _on_run(self, e: events.Run) -> None:
        self.run_id = e.run_id
        self.target, self.shape = str(e.target.get("name", "")), str(e.target.get("shape") or "")
        self.iterations = e.settings.get("iterations")
        self.started = self.now
        self.pid, self.host = e.pid, e.host

    def _on_resumed(self, e: events.Resumed) -> None:
        """Another attempt of the run (docs/scaling.md): its own process; what the killed one
        left half-way (a candidate, a final phase, an ending) is no longer going on."""
        self.pid, self.host = e.pid, e.host
        self.proposed = self.evaluated  # the cut-off candidate is proposed again
        self.stage, self.stage_candidate, self.trying = "resumed", None, ""
        self.confirm, self.confirm_candidate = {}, None
        self.verdict, self.report_line, self.ended, self.exit_code = None, "", False, None

    def _on_config(self, e: events.Config) -> None:
        self.planner = e.planner

    def _on_stage(self, e: events.Stage) -> None:
        self.stage, self.stage_candidate = e.stage, e.candidate

    def _on_baseline(self, e: events.Baseline) -> None:
        self.baseline_ms = e.ms

    def _on_screening(self, e: events.Screening) -> None:
        self.screening = (f"{e.evaluations} of {e.grid} configurations screened in "
                          f"{e.gpu_seconds} GPU-s" if e.ok else
                          f"failed: {(e.error or '')[:120]}")

    def _on_candidate(self, e: events.Candidate) -> None:
        self.proposed += 1
        self.trying = f"{e.candidate}: {e.description}"

    def _on_candidate_result(self, e: events.CandidateResult) -> None:
        self.evaluated += 1
        if e.accepted:
            self.accepted += 1
        elif e.failed_gate:
            self.rejections[e.failed_gate] = self.rejections.get(e.failed_gate, 0) + 1

    def _on_best(self, e: events.Best) -> None:
        self.best, self.best_candidate = float(e.speedup), e.candidate
        self.history.append((self.elapsed_s, self.best))

    def _on_confirm_round(self, e: events.ConfirmRound) -> None:
        if e.candidate != self.confirm_candidate:
            self.confirm, self.confirm_candidate = {}, e.candidate
        self.confirm[e.round] = (float(e.baseline_ms), float(e.candidate_ms))

    def _on_bench(self, e: events.Bench | events.WorkerRequest) -> None:
        if isinstance(e, events.WorkerRequest) and not e.gpu_lock:
            return  # made without the lock (a compile): no GPU time, no wait for it
        self.gpu_seconds += e.held_s
        if e.asked is not None:  # another run held the GPU lock meanwhile
            self.gpu_lock_wait_s += max(0.0, e.acquired - e.asked)

    _on_worker_request = _on_bench

    def _on_workspace_wait(self, e: events.WorkspaceWait) -> None:
        self.stage = "waiting for the workspace (another run of this target)"

    def _on_workspace_acquired(self, e: events.WorkspaceAcquired) -> None:
        self.lock_wait_s += float(e.waited_s)

    def _on_llm_call(self, e: events.LLMCall) -> None:
        self.llm_calls += 1
        self.llm_cost += float(e.cost or 0.0)

    def _on_verdict(self, e: events.Verdict) -> None:
        # the search is over: no stage or candidate of it is still going on
        self.verdict = e.status
        self.stage, self.stage_candidate, self.trying = "finished", None, ""

    def _on_end(self, e: events.End) -> None:
        self.ended, self.exit_code = True, e.exit_code
        self.gpu_seconds = float(e.gpu_seconds)


def fold(records: list[dict[str, Any]]) -> WatchState:
    state = WatchState()
    for record in records:
        state.add(record)
    return state
