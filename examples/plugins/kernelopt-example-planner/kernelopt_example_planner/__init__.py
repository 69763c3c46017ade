"""kernelopt-example-planner: the ``sweep`` planner, which walks each knob in turn through
its values from the node the search hands it, one value per proposal (a coordinate search:
what an engineer does by hand, and a bar any smarter planner should beat).

Choose it with ``kernelopt run PATH --planner sweep``. The loop keeps the search (which node
to expand, patience, budgets) and runs every proposal through the gates; a planner only
answers ``propose`` and learns in ``observe``. It imports only ``kernelopt_core.api``.
"""

from __future__ import annotations

from kernelopt_core.api import (
    Node,
    Outcome,
    PlanContext,
    Proposal,
    Settings,
    Target,
    apply_knobs,
    hookimpl,
)


class SweepPlanner:
    name = "sweep"

    def __init__(self) -> None:
        self.outcomes: list[tuple[str, bool]] = []  # (proposal, passed every gate)

    def unavailable_reason(self, settings: Settings, target: Target) -> str | None:
        return None  # a target without knobs simply gets no proposal

    def propose(self, ctx: PlanContext, parent: Node, count: int) -> list[Proposal]:
        start = {**ctx.baseline_knobs, **parent.knobs}  # the parent's full assignment
        proposals: list[Proposal] = []
        for knob in ctx.knobs:
            for value in knob.values:
                assignment = {**start, knob.name: value}
                key = tuple(sorted(assignment.items()))
                if value == start.get(knob.name) or key in ctx.tried:
                    continue
                ctx.tried.add(key)  # the run's record: never propose an assignment twice
                edits = apply_knobs(ctx.knobs, ctx.files, assignment)
                if edits:
                    proposals.append(Proposal(f"{knob.name}={value}", edits, assignment,
                                              self.name))
                if len(proposals) == count:
                    return proposals
        return proposals

    def observe(self, ctx: PlanContext, proposal: Proposal, outcome: Outcome) -> None:
        self.outcomes.append((proposal.description, outcome.accepted))


@hookimpl
def kernelopt_register_planners() -> list[type]:
    return [SweepPlanner]  # a class: kernelopt makes a fresh planner for each run
