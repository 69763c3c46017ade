"""The built-in tuner: the default planner without an LLM, and the bar an LLM must beat.

From the parent node's knob assignment it proposes neighbours: each knob moved one step, then
two steps, along its value list; when a parent's neighbourhood is used up it proposes a line
search on each knob (every untried value of one knob). Assignments are never tried twice.
"""

from __future__ import annotations

from typing import Any

from kernelopt_core import knobs as knob_edit
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.planners.base import PlanContext, Proposal
from kernelopt_core.search import Node
from kernelopt_core.settings import Settings
from kernelopt_core.target import Target


class Tuner:
    name = "tuner"

    def unavailable_reason(self, settings: Settings, target: Target) -> str | None:
        return None  # knobs are checked once the baseline is read (declared or detected)

    def _neighbours(self, ctx: PlanContext, assignment: dict[str, str]) -> list[dict[str, str]]:
        out: list[dict[str, str]] = []
        for step in (1, 2):
            for knob in ctx.knobs:
                values = list(knob.values)
                current = assignment[knob.name]
                index = values.index(current) if current in values else None
                if index is None:
                    continue
                for j in (index + step, index - step):
                    if 0 <= j < len(values):
                        out.append({**assignment, knob.name: values[j]})
        for knob in ctx.knobs:  # line search once the close neighbourhood is used up
            for value in knob.values:
                out.append({**assignment, knob.name: value})
        return out

    def propose(self, ctx: PlanContext, parent: Node, count: int) -> list[Proposal]:
        assignment = {**ctx.baseline_knobs, **parent.knobs}
        proposals: list[Proposal] = []
        for candidate in self._neighbours(ctx, assignment):
            key = tuple(sorted(candidate.items()))
            if key in ctx.tried:
                continue
            ctx.tried.add(key)
            edits = knob_edit.apply(ctx.knobs, ctx.files, candidate)
            if not edits:
                continue
            changed = {k: v for k, v in candidate.items() if ctx.baseline_knobs.get(k) != v}
            text = ", ".join(f"{k}={v}" for k, v in changed.items())
            proposals.append(Proposal(text or "baseline values", edits, candidate, self.name))
            if len(proposals) >= count:
                break
        return proposals

    def observe(self, ctx: PlanContext, proposal: Proposal, outcome: dict[str, Any]) -> None:
        pass  # the search itself keeps what the tuner needs (speedups, tried assignments)


@hookimpl
def kernelopt_register_planners() -> list[object]:
    return [Tuner()]
