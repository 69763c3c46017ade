"""The run's budgets and what it has spent, one account (the loop's, its planners' through
``PlanContext.budget``): the wall seconds of the search (from the moment the baseline is
built, timed and probed: a cold build's minutes are not traded for candidates), the GPU-lock
and child seconds of the runner and its bench workers (``Spent``), and what a resumed run's
earlier attempts spent (the journal's replay: their wall, search and GPU seconds and their LLM
calls and cost count against the same budgets). While a resumed run serves its recorded
candidates no budget stops it, and a planner sees only this attempt's spending: the replay
reaches the state the killed run had."""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs

from kernelopt_core.settings import SearchSettings


@attrs.define
class Spent:
    """Seconds the runner and its pool spent, one account for both."""

    gpu_seconds: float = 0.0  # time holding the GPU lock
    child_seconds: float = 0.0  # time inside child processes


@attrs.frozen
class Earlier:
    """What a resumed run's earlier attempts spent (resume.Resumed's totals from the journal)."""

    wall_s: float = 0.0  # their wall seconds (the run's wall_seconds)
    searched_s: float = 0.0  # their seconds of search (the time budget is shared)
    gpu_s: float = 0.0  # their GPU-lock seconds (so is the GPU budget)
    llm_calls: int = 0  # their answered LLM calls (so are the LLM budgets)
    llm_cost: float = 0.0  # USD


@attrs.define(eq=False)
class Budget:
    search: SearchSettings = attrs.field(factory=SearchSettings)  # the budgets
    spent: Spent = attrs.field(factory=Spent)  # the runner's account (and its workers')
    earlier: Earlier | None = None  # a resumed run's earlier attempts
    # whether the next candidate is a recorded one the replay serves (the loop's answer)
    replaying: Callable[[], bool] = lambda: False
    started: float = attrs.field(factory=time.time)  # the run's start, earlier attempts' included
    search_started: float | None = None  # None: the search has not started

    def __attrs_post_init__(self) -> None:
        if self.earlier is not None:  # the earlier attempts' wall and GPU seconds are the run's
            self.started -= self.earlier.wall_s
            self.spent.gpu_seconds = self.earlier.gpu_s

    def start_search(self) -> None:
        self.search_started = time.time() - (self.earlier.searched_s if self.earlier else 0.0)

    def wall_seconds(self) -> float:
        return time.time() - self.started

    def search_seconds_left(self) -> float:
        """Wall seconds left of the time budget (inf without one, or before the search)."""
        minutes = self.search.budget_minutes
        if not minutes or self.search_started is None:
            return float("inf")
        return self.search_started + minutes * 60 - time.time()

    def stop_reason(self) -> str | None:
        """Why the search stops now for its budgets, or None (never while replaying)."""
        if self.replaying():
            return None
        if self.search_seconds_left() <= 0:
            return "time budget"
        limit = self.search.budget_gpu_seconds
        if limit is not None and self.spent.gpu_seconds >= limit:
            return "GPU budget"
        return None

    # ------------------------------------------------------------------ a planner's view
    def _excused(self) -> tuple[float, float]:
        """(GPU, search) seconds a planner's budgets leave out: while the replay lasts, the
        earlier attempts' (after it, the budgets are the run's)."""
        if self.earlier is not None and self.replaying():
            return self.earlier.gpu_s, self.earlier.searched_s
        return 0.0, 0.0

    def gpu_seconds(self) -> float:
        """GPU-lock seconds the run has spent so far (this attempt's while replaying)."""
        return self.spent.gpu_seconds - self._excused()[0]

    def seconds_left(self) -> float:
        """Wall seconds left of the run's time budget (a screening's compiles, outside the GPU
        lock, count here and not as GPU seconds)."""
        return self.search_seconds_left() + self._excused()[1]

    @property
    def llm_calls_before(self) -> int:
        """A resumed run's answered LLM calls in its earlier attempts: an LLM planner counts
        them against its budgets, which are the run's, not the attempt's."""
        return self.earlier.llm_calls if self.earlier else 0

    @property
    def llm_cost_before(self) -> float:  # their cost, USD
        return self.earlier.llm_cost if self.earlier else 0.0
