"""The tuner with bulk screening (PlanContext.screen), against a scripted screen: what it
proposes, and that it falls back to proposing neighbours when screening gives nothing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kernelopt_core.planners.base import Outcome, PlanContext, Screened
from kernelopt_core.planners.tuner import Tuner, screened_frontier
from kernelopt_core.planners.tuner_options import TunerOptions
from kernelopt_core.search import Node
from kernelopt_core.settings import SearchSettings, Settings
from kernelopt_core.target import Knob, Target

SOURCE = b"#define BLOCK 64\n#define WARPS 2\n"
KNOBS = (Knob("BLOCK", "k.cu", ("16", "32", "64", "128", "256"), r"#define BLOCK (\d+)"),
         Knob("WARPS", "k.cu", ("1", "2", "4"), r"#define WARPS (\d+)"))


class Journal:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def write(self, event: str, **data: Any) -> None:
        self.events.append({"event": event, **data})

    def record(self, event: Any) -> None:
        self.events.append({"event": event.EVENT, **event.data()})


def context(screen: Any, **tuner: Any) -> PlanContext:
    """``tuner``: the [tuner] table's options (TunerOptions)."""
    target = Target("cmake", "k", Path("."), ("k.cu",), knobs=KNOBS)
    settings = Settings.make(tables={"tuner": TunerOptions(**tuner)})
    return PlanContext(target, settings, {"k.cu": SOURCE}, KNOBS,
                       {"BLOCK": "64", "WARPS": "2"}, Journal(), "run-1", screen=screen)


def bowl(configs: list[dict[str, str]]) -> list[Screened]:
    """Fastest at BLOCK 128, WARPS 4; the baseline (64, 2) is 1.0."""
    return [Screened(c, True, 1.0, (1 + abs(int(c["BLOCK"]) - 128) / 128)
                     * (1 + abs(int(c["WARPS"]) - 4) / 8) / ((1 + 64 / 128) * (1 + 2 / 8)))
            for c in configs]


def test_the_best_screened_configurations_become_the_proposals() -> None:
    ctx = context(bowl, screen_top=2)
    tuner = Tuner()
    proposals = tuner.propose(ctx, Node("baseline", {}), 5)
    assert [p.knobs for p in proposals][0] == {"BLOCK": "128", "WARPS": "4"}
    assert len(proposals) == 2 and all(p.planner == "tuner" for p in proposals)
    assert proposals[0].edits == {"k.cu": b"#define BLOCK 128\n#define WARPS 4\n"}
    screening = next(e for e in ctx.journal.events if e["event"] == "screening")  # type: ignore[attr-defined]
    # the whole grid but the baseline's own assignment (its ratio is 1 by definition); the
    # best's WARPS, 4, is its list's top: WARPS=8 is screened too (slower; the grid now 5 x 4),
    # and the descent spends the budget's one spare configuration (15, the baseline known) there
    assert screening["ok"] and screening["grid"] == 20 and screening["evaluations"] == 16
    assert [e["message"] for e in ctx.journal.events if e["event"] == "warning"] == [  # type: ignore[attr-defined]
        "WARPS: the screen's best held the top of its range 1..4: grown to 1..8; best WARPS=4"]
    assert ctx.profile.tuner_frontier is not None
    assert ctx.profile.tuner_frontier.best[0]["knobs"] == {"BLOCK": "128", "WARPS": "4"}
    # the screen already looked at the neighbourhood: no one-knob candidates after the top two
    assert tuner.propose(ctx, Node("c1", {}, {"BLOCK": "128", "WARPS": "4"}), 5) == []


def test_nothing_screened_successfully_falls_back_to_neighbours() -> None:
    def all_fail(configs: list[dict[str, str]]) -> list[Screened]:
        return [Screened(c, False, error="does not compile") for c in configs]

    ctx = context(all_fail)
    assert screened_frontier(ctx, {"BLOCK": "64", "WARPS": "2"}) is None
    proposals = Tuner().propose(ctx, Node("baseline", {}), 2)
    # the neighbour search: one knob one step from the baseline
    assert [p.knobs for p in proposals] == [{"BLOCK": "128", "WARPS": "2"},
                                            {"BLOCK": "32", "WARPS": "2"}]
    events = [e for e in ctx.journal.events if e["event"] == "screening"]  # type: ignore[attr-defined]
    assert not events[0]["ok"] and "no configuration" in events[0]["error"]


def test_without_screening_the_tuner_proposes_neighbours() -> None:
    proposals = Tuner().propose(context(None), Node("baseline", {}), 1)
    assert [p.knobs for p in proposals] == [{"BLOCK": "128", "WARPS": "2"}]


def test_the_runs_time_budget_stops_the_screening() -> None:
    """Compiling ahead is wall time outside the GPU lock: the run's time budget bounds it."""
    screened: list[dict[str, str]] = []

    def counting(configs: list[dict[str, str]]) -> list[Screened]:
        screened.extend(configs)
        return bowl(configs)

    ctx = context(counting)
    # the budget is spent: a one-minute search that started two minutes ago (not a budget of
    # microseconds, which a fast first call could still find open)
    ctx.budget.search = SearchSettings(budget_minutes=1.0)
    ctx.budget.search_started = time.time() - 120.0
    assert screened_frontier(ctx, {"BLOCK": "64", "WARPS": "2"}) is None
    assert screened == []


def test_without_screening_the_descent_follows_what_moved_the_time() -> None:
    """A knob the timed case does not take (SPARE: every value the same time) listed before one
    whose baseline is 16× too small (BLOCK, fastest at 256): after one move of SPARE shows it
    changes nothing, every candidate goes to BLOCK, each step continuing the one that helped."""
    knobs = (Knob("SPARE", "k.cu", ("1", "2", "4"), r"#define SPARE (\d+)"),
             Knob("BLOCK", "k.cu", ("16", "32", "64", "128", "256"), r"#define BLOCK (\d+)"))
    target = Target("cmake", "k", Path("."), ("k.cu",), knobs=knobs)
    ctx = PlanContext(target, Settings(), {"k.cu": b"#define SPARE 2\n#define BLOCK 16\n"}, knobs,
                      {"SPARE": "2", "BLOCK": "16"}, Journal(), "run-1")

    def speedup(config: dict[str, str]) -> float:  # over the baseline (BLOCK 16): 256 / 16
        return int(config["BLOCK"]) / 16

    tuner, parent, tried = Tuner(), Node("baseline", {}), []
    for i in range(6):
        [proposal] = tuner.propose(ctx, parent, 1)
        tried.append(proposal.knobs)
        outcome = Outcome(f"c{i + 1}", False, speedup(proposal.knobs))
        tuner.observe(ctx, proposal, outcome)
        assert outcome.speedup is not None
        if outcome.speedup > parent.speedup:  # the search's best node is the next parent
            parent = Node(f"c{i + 1}", {}, dict(proposal.knobs), speedup=outcome.speedup)
    assert tried[:5] == [{"SPARE": "4", "BLOCK": "16"}, {"SPARE": "2", "BLOCK": "32"},
                         {"SPARE": "2", "BLOCK": "64"}, {"SPARE": "2", "BLOCK": "128"},
                         {"SPARE": "2", "BLOCK": "256"}]
