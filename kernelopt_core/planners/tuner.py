"""The built-in tuner: the default planner without an LLM, and the bar an LLM must beat.

When the target can screen configurations in one worker (``PlanContext.screen``: Triton
kernel files and Inductor kernels), the tuner searches the joint knob space first
(planners/joint.py: the whole grid when small, else a space-filling sample and coordinate
descent, within an evaluation and a GPU-seconds budget) and proposes only the best few screened
configurations as candidates; the candidate and final gates then judge them like any other.

Without screening (a CMake target: every configuration is a build and processes), it proposes
neighbours of the parent's assignment: first the move that continues the one that made the
parent faster (the same knob, one more step the same way, as Inductor's coordinate descent
does), then each knob moved one step, then two steps, along its value list; when a parent's
neighbourhood is used up, a line search on each knob (every untried value of one knob). Knobs
are taken in order of what the run has measured of them: a knob whose one-knob moves changed
the time by more than the γ margin first, an unmeasured knob next, a knob whose moves changed
nothing last (a launch the timed case does not take). Assignments are never tried twice.

Either way a numeric knob's list grows past an end while the best assignment holds it, the
value one step inside timed slower (planners/tuner_ranges.py: how far, and what the journal,
the report's Warnings and the candidates' descriptions say of it).
"""

from __future__ import annotations

import math
from typing import Any

from kernelopt_core import events
from kernelopt_core import knobs as knob_edit
from kernelopt_core.errors import BenchFailed, UsageError
from kernelopt_core.gates.options import ConfirmOptions
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.planners.base import Outcome, PlanContext, Proposal, TunerFrontier
from kernelopt_core.planners.joint import JointSearch, threads_fit
from kernelopt_core.planners.tuner_options import TunerOptions
from kernelopt_core.planners.tuner_ranges import (
    Assignment,
    KnobRange,
    RangeWatch,
    key,
    knob_ranges,
    screen_notes,
    span,
)
from kernelopt_core.search import Node
from kernelopt_core.settings import Settings
from kernelopt_core.target import Knob, Target


def screened_frontier(ctx: PlanContext, start: dict[str, str]) -> list[dict[str, str]] | None:
    """The joint search from ``start``: the best ``screen_top`` configurations the screen saw
    faster than the tree, best first; None without screening, or when it failed (the caller
    falls back to proposing candidates). Journaled as ``screening`` and kept in
    ``ctx.profile.tuner_frontier`` (the agents' get_profile shows it)."""
    screen = ctx.screen
    if screen is None or not ctx.knobs:
        return None
    s = ctx.settings
    options = s.section(TunerOptions)
    spent_before = ctx.gpu_seconds()
    batches: list[int] = []

    def within_budget() -> bool:
        spent = ctx.gpu_seconds()
        return spent - spent_before < options.screen_gpu_seconds and ctx.seconds_left() > 0 and (
            s.search.budget_gpu_seconds is None or spent < s.search.budget_gpu_seconds)

    def evaluate(configs: list[dict[str, str]]) -> list[float | None]:
        batches.append(len(configs))
        return [r.ratio if r.ok else None for r in screen(configs)]

    # the screen times configurations against the baseline tree: the baseline's own
    # assignment has ratio 1 by definition and is not screened again
    is_baseline = all(start.get(k.name) == ctx.baseline_knobs.get(k.name) for k in ctx.knobs)
    ranges = knob_ranges(ctx)
    search = JointSearch([(k.name, tuple(k.values)) for k in ctx.knobs], start, evaluate,
                         options.screen_evaluations, within_budget,
                         start_cost=1.0 if is_baseline else None,
                         plausible=threads_fit(ctx.knobs),
                         conditions={k.name: (k.when[0], k.when[1]) for k in ctx.knobs if k.when},
                         extend=lambda name, upward: ranges[name].grow(upward, ctx.files))
    try:
        ranked = search.run()
    except BenchFailed as exc:
        ctx.journal.record(events.Screening(ok=False, error=str(exc)[:2000]))
        return None
    failed = sum(1 for cost in search.costs.values() if cost == float("inf"))
    # the baseline's own ratio is 1 by definition (not screened): labelled as such
    best = [{"knobs": c, "ratio": round(r, 4), **({"baseline": True} if c == start else {})}
            for c, r in ranked[:10]]
    gpu_seconds = round(ctx.gpu_seconds() - spent_before, 3)
    # nothing screened worked (or nothing was screened): the caller proposes instead
    worked = search.evaluations - failed > 0
    ctx.journal.record(events.Screening(
        ok=worked, grid=search.grid, evaluations=search.evaluations, failed=failed,
        batches=batches, gpu_seconds=gpu_seconds, best=best if worked else None,
        error=None if worked else "no configuration was screened successfully"))
    if not worked:
        return None
    screen_notes(ctx, search, ranges, ranked[0][0] if ranked else None)
    grown = {r.name: list(r.values) for r in ranges.values() if any(r.added.values())}
    ctx.profile.tuner_frontier = TunerFrontier(search.grid, search.evaluations, failed, best,
                                               grown)
    # only what the screen saw faster than the tree; the gates decide on the rest
    return [c for c, ratio in ranked if ratio < 1.0 and c != start][: options.screen_top]


def held(knobs: tuple[Knob, ...], assignment: dict[str, str],
         baseline: dict[str, str]) -> dict[str, str]:
    """The assignment with each conditional knob whose condition does not hold at the
    baseline's value (Knob.when): one assignment for one configuration of code."""
    return {**assignment, **{k.name: baseline[k.name] for k in knobs
                             if k.when and k.name in baseline
                             and assignment.get(k.when[0]) != k.when[1]}}


def knob_proposal(ctx: PlanContext, assignment: dict[str, str], planner: str) -> Proposal | None:
    """A knob assignment as a proposal (edits against the baseline), or None when it changes
    nothing. A value past its knob's own list says so (the console's candidate line, the
    report's table and its verdict show the description)."""
    edits = knob_edit.apply(ctx.knobs, ctx.files, assignment)
    if not edits:
        return None
    changed = {k: v for k, v in assignment.items() if ctx.baseline_knobs.get(k) != v}
    text = knob_edit.describe_assignment(changed)
    past = [f"{knob_edit.short_name(k.name)}'s range {span(tuple(k.values))}" for k in ctx.knobs
            if k.name in changed and changed[k.name] not in k.values]
    if past:
        text += f" (past {', '.join(past)})"
    return Proposal(text or "baseline values", edits, assignment, planner)


def untried_proposals(ctx: PlanContext, configs: list[dict[str, str]], count: int,
                      planner: str) -> list[Proposal]:
    """Up to ``count`` proposals from ``configs`` in order, each assignment the run has not
    tried yet (and now marked tried)."""
    proposals: list[Proposal] = []
    for config in list(configs):
        key = tuple(sorted(config.items()))
        if key in ctx.tried:
            continue
        ctx.tried.add(key)
        proposal = knob_proposal(ctx, config, planner)
        if proposal is None:
            continue
        proposals.append(proposal)
        if len(proposals) >= count:
            break
    return proposals


class Tuner:
    name = "tuner"

    def __init__(self) -> None:  # one tuner per run (the core makes it from the class)
        self.screened = False
        # every assignment the candidate gates timed: its screen speedup over the baseline
        self.timed: dict[Assignment, float] = {}
        # the screened configurations to propose, best first; None: no screening, the
        # neighbour search proposes
        self.queue: list[dict[str, str]] | None = None
        # each knob's values, grown past its ends while the best holds one (tuner_ranges.py)
        self.watch = RangeWatch({}, self.timed)
        # the loop's own count, as its stopping checks read it (``_search_ends``)
        self.observed = 0  # candidates evaluated
        self.pending = 0  # proposals of the last propose not yet observed
        self.best = 1.0  # the best accepted speedup
        self.since_best = 0  # candidates since it improved

    selection_rank = 0  # the bar every other planner must beat: chosen when none is

    def select(self, settings: Settings, target: Target) -> tuple[bool, str]:
        return True, "using the built-in tuner"

    def unavailable_reason(self, settings: Settings, target: Target) -> str | None:
        return None  # knobs are checked once the baseline is read (declared or detected)

    def check_inputs(self, settings: Settings, target: Target, knobs: tuple[Knob, ...]) -> None:
        """The tuner searches knobs: a target without any (declared or detected) cannot be
        tuned."""
        if not knobs:
            raise UsageError(
                f"target {target.name!r} declares no tuner knobs and none were found in "
                f"{', '.join(target.editable)}",
                hint="declare [[target.knobs]] in kernelopt.toml (docs/descriptor.md) or "
                "configure an LLM planner",
            )

    def _one_knob_pairs(self) -> list[tuple[str, dict[str, str], float, dict[str, str], float]]:
        """(knob, a, speedup of a, b, speedup of b) for timed assignments differing in one knob."""
        items = [(dict(k), v) for k, v in self.timed.items()]
        pairs = []
        for i, (a, sa) in enumerate(items):
            for b, sb in items[i + 1:]:
                differ = [k for k in a if a[k] != b.get(k)]
                if len(differ) == 1:
                    pairs.append((differ[0], a, sa, b, sb))
        return pairs

    def _knob_order(self, ctx: PlanContext, pairs: list[Any]) -> list[KnobRange]:
        """Knobs that moved the time first, unmeasured ones next, ones that did not move it last."""
        effect: dict[str, float] = {}
        for knob, _a, sa, _b, sb in pairs:
            effect[knob] = max(effect.get(knob, 0.0), abs(math.log(sa / sb)))
        margin = math.log(ctx.settings.section(ConfirmOptions).gamma)

        def rank(r: KnobRange) -> tuple[int, float]:
            if r.name not in effect:
                return (1, 0.0)
            return (0, -effect[r.name]) if effect[r.name] > margin else (2, 0.0)
        return sorted(self.watch.ranges.values(), key=rank)

    def _continued(self, assignment: dict[str, str], pairs: list[Any]) -> list[dict[str, str]]:
        """One more step of each one-knob move that led to ``assignment`` and made it faster."""
        here = self.timed.get(key(assignment))
        if here is None:
            return []
        pairs = [p for p in pairs if assignment in (p[1], p[3])]
        out = []
        for r in self.watch.ranges.values():
            values = list(r.values)
            for name, a, sa, b, sb in pairs:
                if name != r.name:
                    continue
                prev, s_prev = (b, sb) if assignment == a else (a, sa)
                if here <= s_prev or prev[name] not in values or assignment[name] not in values:
                    continue
                index = values.index(assignment[name])
                j = index + (1 if index > values.index(prev[name]) else -1)
                if 0 <= j < len(values) and {**assignment, name: values[j]} not in out:
                    out.append({**assignment, name: values[j]})
        return out

    def _neighbours(self, ctx: PlanContext, assignment: dict[str, str]) -> list[dict[str, str]]:
        pairs = self._one_knob_pairs()  # once per proposal: quadratic in the assignments timed
        out = self._continued(assignment, pairs)
        # a conditional knob moves only where its condition holds (Knob.when)
        off = {k.name for k in ctx.knobs if k.when and assignment.get(k.when[0]) != k.when[1]}
        ordered = [r for r in self._knob_order(ctx, pairs) if r.name not in off]
        for step in (1, 2):
            for r in ordered:
                values = list(r.values)
                current = assignment[r.name]
                index = values.index(current) if current in values else None
                if index is None:
                    continue
                for j in (index + step, index - step):
                    if 0 <= j < len(values):
                        out.append({**assignment, r.name: values[j]})
        for r in ordered:  # line search once the close neighbourhood is used up
            for value in r.values:
                out.append({**assignment, r.name: value})
        return [held(ctx.knobs, a, ctx.baseline_knobs) for a in out]

    def _search_ends(self, ctx: PlanContext) -> str | None:
        """Why the loop ends its search after the candidate just observed, by its own checks in
        its order (loop.py): a best still at an end of its range is said before it does."""
        s = ctx.settings.search
        if self.observed >= s.iterations:
            return "iterations"
        if (spent := ctx.budget.stop_reason()) is not None:
            return spent
        if self.since_best >= s.patience:
            return "patience"
        if s.target_speedup is not None and self.best >= s.target_speedup:
            return "target speedup reached"
        return None

    # ------------------------------------------------------------------ the planner
    def propose(self, ctx: PlanContext, parent: Node, count: int) -> list[Proposal]:
        assignment = {**ctx.baseline_knobs, **parent.knobs}
        self.timed.setdefault(key(ctx.baseline_knobs), 1.0)
        self.watch.ranges = self.watch.ranges or knob_ranges(ctx)
        if not self.screened:
            self.screened = True
            self.queue = screened_frontier(ctx, assignment)
        if self.queue is not None:
            candidates = self.queue
        else:
            self.watch.grow(ctx)
            candidates = self._neighbours(ctx, assignment)
        proposals = untried_proposals(ctx, candidates, count, self.name)
        self.pending = len(proposals)
        return proposals

    def observe(self, ctx: PlanContext, proposal: Proposal, outcome: Outcome) -> None:
        speedup = outcome.speedup
        assignment = {**ctx.baseline_knobs, **proposal.knobs}
        replayed = outcome.replayed
        if speedup and proposal.knobs:  # timed by the screen gate (a failed build is not)
            self.timed[key(assignment)] = speedup
            self.watch.inside(ctx, replayed)
        elif proposal.knobs and not outcome.accepted:
            self.watch.failed(ctx, assignment, outcome)
        # the loop's count (loop.py's _search): a node's speedup, 1.0 without a bench
        node = (1.0 if speedup is None else speedup) if outcome.accepted else None
        self.observed, self.pending = self.observed + 1, self.pending - 1
        if node is not None and node > self.best:
            self.best, self.since_best = node, 0
        else:
            self.since_best += 1
        if self.queue is None and self.pending <= 0 and not replayed \
                and (reason := self._search_ends(ctx)) is not None:
            self.watch.search_ends(ctx, reason)


@hookimpl
def kernelopt_register_planners() -> list[object]:
    return [Tuner]  # a class: the core makes a fresh one per run


@hookimpl
def kernelopt_option_tables() -> list[type]:
    return [TunerOptions]
