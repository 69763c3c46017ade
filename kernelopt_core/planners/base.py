"""What a planner sees (PlanContext) and what it returns (Proposal)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from kernelopt_core.budget import Budget
from kernelopt_core.gates.base import EventLog
from kernelopt_core.settings import Settings
from kernelopt_core.target import Knob, Target


@attrs.frozen
class Proposal:
    description: str  # one line for the report
    edits: dict[str, bytes]  # path (relative to the target root) -> full new content
    knobs: dict[str, str] = attrs.field(factory=dict)  # the knob assignment it makes, if it is one
    planner: str = ""  # the planner's name


@attrs.frozen
class Screened:
    """One configuration's bulk-screening result: checked on the first seed and timed in the
    target's worker beside the tree it was applied to (``ratio`` = its time / that tree's time
    in the same batch, so batches taken minutes apart compare)."""

    config: dict[str, str]  # knob name -> value, a full assignment
    ok: bool
    time_ms: float | None = None
    ratio: float | None = None
    error: str = ""


@attrs.define
class PlanContext:
    """What a planner sees. The search itself (which node to expand) stays with the loop: a
    planner gets the parent in ``propose`` and answers with proposals."""

    target: Target  # the target being optimized
    settings: Settings  # the run's settings; a plugin's table: settings.section(MyOptions)
    files: dict[str, bytes]  # the baseline snapshot
    knobs: tuple[Knob, ...]  # declared, else auto-detected
    baseline_knobs: dict[str, str]  # each knob's value in the baseline
    journal: EventLog  # the run's journal: a planner's own events (LLM calls, experience)
    run_id: str  # the run's id
    # the baseline's profile and the tuner's screen, when there are any
    profile: dict[str, Any] = attrs.field(factory=dict)
    tried: set[tuple[tuple[str, str], ...]] = attrs.field(factory=set)  # knob assignments seen
    baseline_ms: float | None = None  # the baseline's screen time
    # bulk screening of knob configurations in one worker (None: the backend has no worker);
    # cheap next to a candidate: no gates, no confirm rounds, failures cost only their compile
    screen: Callable[[list[dict[str, str]]], list[Screened]] | None = None
    # the run's budgets and what it has spent (budget.py): gpu_seconds(), seconds_left() below,
    # a resumed run's earlier LLM calls and cost (budget.llm_calls_before, llm_cost_before)
    budget: Budget = attrs.field(factory=Budget)

    def gpu_seconds(self) -> float:
        """GPU-lock seconds the run has spent so far (this attempt's only while a resumed run
        replays its recorded candidates: no budget stops a replay; seconds_left likewise)."""
        return self.budget.gpu_seconds()

    def seconds_left(self) -> float:
        """Wall seconds left of the run's time budget (a screening's compiles, outside the GPU
        lock, count here and not as GPU seconds)."""
        return self.budget.seconds_left()
