"""The built-in tuner's knob ranges, grown past their ends while its best holds one.

A numeric knob's list (declared, or detected around the current value) may stop short of the
best value: a TILE found at 1..128 around 8 runs 4.08× at 128 and 5.54× at 4096. So while the
best assignment holds an end of a knob's list, and the value one step inside was timed slower
with the rest of the assignment the same, the list grows by one value past that end
(``KnobRange.grow``): the next power of two, else the list's own ratio or step continued
(knobs.step_beyond). It stops at ``[tuner] extend_steps`` values each way, at a value the knob
cannot take (not positive, over a C int, over 32 warps or 1024 launch-bound threads:
knobs.max_value; a value its pattern cannot hold: knobs.takes; past values the compile probe
dropped), and past a value that failed its build or check.

What it did is journaled as ``warning`` records of the tuner (report.md's Warnings): the range
growing, the best found inside it, a grown value that failed, and the best still at an end when
the cap, the knob's limit or the search's end stops it ("best TILE=4096 is the largest value
tried; larger values may be faster"). The joint search grows its lists through the same
``KnobRange`` (joint.py); ``RangeWatch`` is the neighbour search's (planners/tuner.py).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from kernelopt_core import events
from kernelopt_core import knobs as knob_edit
from kernelopt_core.planners.base import Outcome, PlanContext
from kernelopt_core.planners.joint import JointSearch
from kernelopt_core.planners.tuner_options import TunerOptions
from kernelopt_core.target import Knob

Assignment = tuple[tuple[str, str], ...]  # a full knob assignment, sorted: a dict key


def key(assignment: Mapping[str, str]) -> Assignment:
    return tuple(sorted(assignment.items()))


def span(values: tuple[str, ...]) -> str:
    return f"{values[0]}..{values[-1]}"


def _words(upward: bool) -> tuple[str, str, str]:
    return ("top", "largest", "larger") if upward else ("bottom", "smallest", "smaller")


@attrs.define
class KnobRange:
    """One knob's values as the tuner searches them: its own list, grown by one value past an
    end each time the best assignment holds that end (``grow``), at most ``steps`` values each
    way, never to a value the knob cannot take."""

    knob: Knob
    steps: int  # [tuner] extend_steps
    values: tuple[str, ...] = ()  # the knob's own list at first
    added: dict[bool, int] = attrs.field(factory=lambda: {True: 0, False: 0})  # upward -> count
    # upward -> why that end grows no further: "cap", "limit" or "failed"
    stopped: dict[bool, str] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        self.values = self.values or tuple(self.knob.values)

    @property
    def name(self) -> str:
        return self.knob.name

    def end(self, upward: bool) -> str:
        return self.values[-1] if upward else self.values[0]

    def next_value(self, upward: bool, files: Mapping[str, bytes]) -> tuple[str | None, str]:
        """The value one step past that end and "", or None and why there is none: "cap" (the
        range grew ``steps`` values that way), "limit" (not a numeric progression, not
        positive, over the knob's largest value, or a value its pattern cannot hold), or what
        ``stopped`` holds."""
        if upward in self.stopped:
            return None, self.stopped[upward]
        if self.added[upward] >= self.steps:
            return None, "cap"
        number = knob_edit.step_beyond(self.values, upward)
        if number is None or number > knob_edit.max_value(self.knob) \
                or not knob_edit.takes(self.knob, files, str(number)):
            return None, "limit"
        return str(number), ""

    def grow(self, upward: bool, files: Mapping[str, bytes]) -> str | None:
        """The next value past that end, now one of ``values``; None when there is none
        (``stopped`` says why)."""
        value, why = self.next_value(upward, files)
        if value is None:
            self.stopped[upward] = why
            return None
        self.values = (*self.values, value) if upward else (value, *self.values)
        self.added[upward] += 1
        return value


def _cut(knob: Knob, given: Knob | None) -> list[bool]:
    """The ends of ``knob``'s list (upward: the top) that the target's own list goes past:
    values the compile probe dropped (a static_assert refuses them, knob_probe.py), which
    growing that way would only try again."""
    if given is None or knob_edit.step_beyond(knob.values, True) is None:
        return []
    dropped = [int(v) for v in given.values if v not in knob.values and v.isdecimal()]
    return [upward for upward in (True, False)
            if any(v > int(knob.values[-1]) if upward else v < int(knob.values[0]) for v in dropped)]


def knob_ranges(ctx: PlanContext) -> dict[str, KnobRange]:
    """The tuner's ranges for ``ctx.knobs``: an end the probe cut grows no further."""
    steps = ctx.settings.section(TunerOptions).extend_steps
    given = {k.name: k for k in knob_edit.found(ctx.target, ctx.files)}
    return {k.name: KnobRange(k, steps, stopped={u: "limit" for u in _cut(k, given.get(k.name))})
            for k in ctx.knobs}


def edge_note(name: str, value: str, upward: bool, why: str, tried: str = "tried") -> str:
    """What a best that still holds an end of its knob's range says, ``why`` it stayed there:
    "cap" (extend_steps), "limit" (the knob takes no value past it) or the search's end."""
    _end, largest, larger = _words(upward)
    if why == "limit":
        return f"best {name}={value} is the {largest} value {tried}; {name} takes no {larger} one"
    if why == "cap":
        why = "the tuner grows a range by at most [tuner] extend_steps values each way"
    return f"best {name}={value} is the {largest} value {tried}; {larger} values may be faster ({why})"


def _step(edge: str, new: str) -> str:
    """How a range's end moved: doubling, halving, ×r, ÷r, +d or -d."""
    a, b = int(edge), int(new)
    if b == 2 * a or a == 2 * b:
        return "doubling" if b > a else "halving"
    if b > a:
        return f"×{b // a}" if b % a == 0 else f"+{b - a}"
    return f"÷{a // b}" if a % b == 0 else f"-{a - b}"


def note(ctx: PlanContext, message: str) -> None:
    """A note of the tuner's in the journal (report.md's Warnings)."""
    ctx.journal.record(events.GateWarning(gate="tuner", message=message))


def screen_notes(ctx: PlanContext, search: JointSearch, ranges: dict[str, KnobRange],
                 best: dict[str, str] | None) -> None:
    """What the screen's growth of the knob ranges did: each range it grew, and each end the
    screen's best still holds with why it grew no further."""
    if best is None:
        return
    declared = {k.name: tuple(k.values) for k in ctx.knobs}
    for r in ranges.values():
        for upward in (True, False):
            if r.added[upward]:
                note(ctx, f"{r.name}: the screen's best held the {_words(upward)[0]} of its "
                          f"range {span(declared[r.name])}: grown to {span(r.values)}; best "
                          f"{r.name}={best[r.name]}")
    for name, upward in search.edges():
        r = ranges[name]
        why = r.stopped.get(upward, "the screen's budget ended its extension")
        if why != "limit" or r.added[upward]:
            note(ctx, edge_note(name, best[name], upward, why, "screened"))


@attrs.define
class RangeWatch:
    """The neighbour search's ranges: grown while the best timed assignment holds an end, and
    each step of that said once (``noted``)."""

    ranges: dict[str, KnobRange]
    timed: dict[Assignment, float]  # the tuner's: each timed assignment's speedup
    noted: set[tuple[str, bool, str]] = attrs.field(factory=set)  # (knob, upward, what)

    def best(self) -> tuple[dict[str, str], float]:
        """The fastest assignment timed (the first of equals) and its speedup."""
        fastest, speedup = max(self.timed.items(), key=lambda item: item[1])
        return dict(fastest), speedup

    def edges(self) -> tuple[dict[str, str], list[tuple[KnobRange, bool]]]:
        """The best timed assignment, and each end of a knob's range it holds where the value
        one step inside (the rest of the assignment the same) was timed slower."""
        assignment, best = self.best()
        out = []
        for r in self.ranges.values():
            for upward, inner in ((True, -2), (False, 1)):
                if len(r.values) < 2 or assignment.get(r.name) != r.end(upward):
                    continue
                inside = self.timed.get(key({**assignment, r.name: r.values[inner]}))
                if inside is not None and inside < best:
                    out.append((r, upward))
        return assignment, out

    def _say(self, ctx: PlanContext, what: tuple[str, bool, str], message: str,
             replayed: bool) -> None:
        """A note said once, and not again where a resumed run replays what its journal holds
        (``replayed``: the killed attempt said it)."""
        if what not in self.noted and not replayed:
            note(ctx, message)
        self.noted.add(what)

    def grow(self, ctx: PlanContext) -> None:
        """Each end of a range the best assignment holds grows by one value (the neighbour
        search then proposes it); where it cannot, the note says why the best stays there."""
        _best, edges = self.edges()
        replayed = ctx.budget.replaying()  # the candidate about to be proposed is a recorded one
        for r, upward in edges:
            edge = r.end(upward)
            value = r.grow(upward, ctx.files)
            _end, largest, larger = _words(upward)
            if value is not None and r.added[upward] == 1:
                self._say(ctx, (r.name, upward, "grown"), (
                    f"{r.name}: the best so far, {r.name}={edge}, is the {largest} value of its "
                    f"range {span(r.knob.values)}: {larger} ones are tried ({_step(edge, value)}, "
                    f"at most {r.steps})"), replayed)
            elif value is None and r.stopped[upward] != "failed" and (
                    r.stopped[upward] == "cap" or r.added[upward]):
                self._say(ctx, (r.name, upward, edge),
                          edge_note(r.name, edge, upward, r.stopped[upward]), replayed)

    def inside(self, ctx: PlanContext, replayed: bool) -> None:
        """A grown end timed slower than the best: the best lies inside the grown range."""
        best, _speedup = self.best()
        for r in self.ranges.values():
            for upward in (True, False):
                beyond = self.timed.get(key({**best, r.name: r.end(upward)}))
                if r.added[upward] and best[r.name] != r.end(upward) and beyond is not None:
                    self._say(ctx, (r.name, upward, "inside"), (
                        f"{r.name}: the best so far, {r.name}={best[r.name]}, lies inside its "
                        f"range grown to {span(r.values)}"), replayed)

    def failed(self, ctx: PlanContext, assignment: dict[str, str], outcome: Outcome) -> None:
        """A value the range grew to that failed its gates (build, check): that end grows no
        further (the next would likely fail the same way). Not where that value was timed
        with other values of the other knobs: then another knob's move failed."""
        passed = {(name, value) for timed in self.timed for name, value in timed}
        for r in self.ranges.values():
            for upward, inner in ((True, -2), (False, 1)):
                if r.added[upward] and upward not in r.stopped \
                        and assignment.get(r.name) == r.end(upward) \
                        and (r.name, r.end(upward)) not in passed:
                    r.stopped[upward] = "failed"
                    self._say(ctx, (r.name, upward, "failed"), (
                        f"{r.name}={r.end(upward)} failed at {outcome.failed_gate or '?'}: "
                        f"{r.name}'s range grows no further past {r.values[inner]}"),
                        outcome.replayed)

    def search_ends(self, ctx: PlanContext, reason: str) -> None:
        """The search ends (``reason``) with the best at an end of a range: said, with why."""
        best, edges = self.edges()
        for r, upward in edges:
            value, why = r.next_value(upward, ctx.files)
            if value is not None or why == "cap" or (why == "limit" and r.added[upward]):
                self._say(ctx, (r.name, upward, best[r.name]), edge_note(
                    r.name, best[r.name], upward, why if value is None else
                    f"the search ended: {reason}"), False)
