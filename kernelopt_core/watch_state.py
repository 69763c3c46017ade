"""What `kernelopt watch` shows, folded from a run's journal events (pure: the journal is the
source of truth, so a view from another terminal, or over ssh, sees what the run wrote).

``fold(events)`` gives a WatchState; feeding it the events written since (``WatchState.add``)
keeps it current without reading the journal again.
"""

from __future__ import annotations

from typing import Any

import attrs

from kernelopt_core.journal import gpu_lock_span
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

    def add(self, event: Any) -> None:
        if not isinstance(event, dict):
            return
        kind = event.get("event")
        t = event.get("t")
        if isinstance(t, (int, float)):
            self.now = float(t)
        handler = getattr(self, f"_on_{kind}", None)
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
    def _on_run(self, e: dict[str, Any]) -> None:
        self.run_id = str(e.get("run_id", ""))
        target = e.get("target") or {}
        self.target, self.shape = str(target.get("name", "")), str(target.get("shape") or "")
        self.iterations = (e.get("settings") or {}).get("iterations")
        self.started = e.get("t")
        self.pid, self.host = e.get("pid"), str(e.get("host", ""))

    def _on_resumed(self, e: dict[str, Any]) -> None:
        """Another attempt of the run (docs/scaling.md): its own process; what the killed one
        left half-way (a candidate, a final phase, an ending) is no longer going on."""
        self.pid, self.host = e.get("pid"), str(e.get("host", self.host))
        self.proposed = self.evaluated  # the cut-off candidate is proposed again
        self.stage, self.stage_candidate, self.trying = "resumed", None, ""
        self.confirm, self.confirm_candidate = {}, None
        self.verdict, self.report_line, self.ended, self.exit_code = None, "", False, None

    def _on_config(self, e: dict[str, Any]) -> None:
        self.planner = str(e.get("planner", ""))

    def _on_stage(self, e: dict[str, Any]) -> None:
        self.stage, self.stage_candidate = str(e.get("stage", "")), e.get("candidate")

    def _on_baseline(self, e: dict[str, Any]) -> None:
        self.baseline_ms = e.get("ms")

    def _on_screening(self, e: dict[str, Any]) -> None:
        self.screening = (f"{e.get('evaluations')} of {e.get('grid')} configurations screened "
                          f"in {e.get('gpu_seconds')} GPU-s" if e.get("ok") else
                          f"failed: {str(e.get('error', ''))[:120]}")

    def _on_candidate(self, e: dict[str, Any]) -> None:
        self.proposed += 1
        self.trying = f"{e.get('candidate')}: {e.get('description', '')}"

    def _on_candidate_result(self, e: dict[str, Any]) -> None:
        self.evaluated += 1
        if e.get("accepted"):
            self.accepted += 1
        elif e.get("failed_gate"):
            gate = str(e["failed_gate"])
            self.rejections[gate] = self.rejections.get(gate, 0) + 1

    def _on_best(self, e: dict[str, Any]) -> None:
        self.best, self.best_candidate = float(e.get("speedup") or 1.0), e.get("candidate")
        self.history.append((self.elapsed_s, self.best))

    def _on_confirm_round(self, e: dict[str, Any]) -> None:
        if e.get("candidate") != self.confirm_candidate:
            self.confirm, self.confirm_candidate = {}, e.get("candidate")
        b, c = e.get("baseline_ms"), e.get("candidate_ms")
        if isinstance(b, (int, float)) and isinstance(c, (int, float)):
            self.confirm[int(e.get("round") or len(self.confirm) + 1)] = (float(b), float(c))

    def _on_bench(self, e: dict[str, Any]) -> None:
        self._held(e)

    def _on_worker_request(self, e: dict[str, Any]) -> None:
        self._held(e)

    def _held(self, e: dict[str, Any]) -> None:
        span = gpu_lock_span(e)
        if span is not None:
            acquired, released = span
            self.gpu_seconds += released - acquired
            asked = e.get("asked")
            if isinstance(asked, (int, float)):  # another run held the GPU lock meanwhile
                self.gpu_lock_wait_s += max(0.0, acquired - asked)

    def _on_workspace_wait(self, e: dict[str, Any]) -> None:
        self.stage = "waiting for the workspace (another run of this target)"

    def _on_workspace_acquired(self, e: dict[str, Any]) -> None:
        self.lock_wait_s += float(e.get("waited_s") or 0.0)

    def _on_llm_call(self, e: dict[str, Any]) -> None:
        self.llm_calls += 1
        self.llm_cost += float(e.get("cost") or 0.0)

    def _on_verdict(self, e: dict[str, Any]) -> None:
        self.verdict = str(e.get("status", ""))

    def _on_end(self, e: dict[str, Any]) -> None:
        self.ended, self.exit_code = True, e.get("exit_code")
        if isinstance(e.get("gpu_seconds"), (int, float)):
            self.gpu_seconds = float(e["gpu_seconds"])


def fold(events: list[dict[str, Any]]) -> WatchState:
    state = WatchState()
    for event in events:
        state.add(event)
    return state
