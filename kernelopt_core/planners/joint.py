"""Joint search over a knob grid by bulk screening: the tuner's strategy when the target can
screen many configurations in one process (``PlanContext.screen``).

A small grid is screened whole. A larger one gets a space-filling sample (the start point,
then maximin points of the index grid, leaving out configurations known to waste the device
(``plausible``: more threads than elements); of a very large grid, only near the start), then
a best-first coordinate descent: the best screened point with unscreened moves gets them
screened, each knob moved one step either way along its value list (for power-of-two lists:
double or halve, the moves of Inductor's coordinate descent), and when no single move is left,
two knobs moved together (a non-separable surface's valley runs diagonally); a batch of few
moves takes the next local minimum's too, since every screened batch also times the tree. The
search stops when the best points are surrounded by screened configurations, or at its
evaluation or GPU budget. Then, while the best point holds the end value of a knob's list and
the value one step inside is screened slower, ``extend`` may grow that list by one value past
the end (the tuner's KnobRange) and the best point's move onto it is screened (beyond the
evaluation budget: one configuration a value, within the GPU budget), then the descent goes on.
A conditional knob (``Knob.when``) is held at the start's value wherever its condition does not
hold: every point is taken as that canonical point, so a grid with branches counts, samples,
moves through and screens each configuration of code once.
Nothing here touches a GPU: ``evaluate`` does the screening.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterator, Sequence

import attrs

from kernelopt_core.target import Knob

Config = dict[str, str]
Point = tuple[int, ...]  # an index into each knob's value list

FULL_GRID_AT = 24  # a grid this small is screened whole
MIN_EVALUATIONS = 12
MAX_EVALUATIONS = 256
# a grid larger than this is sampled only near the current assignment (each knob within
# LOCAL_RADIUS steps, where Inductor's own coordinate descent looks): its far corners (the
# largest tiles, the most stages) can take minutes each to compile; descent may still go there
LOCAL_AT = 256
LOCAL_RADIUS = 2
# a second basin is descended only when its best point so far is within this factor of the
# best: a descent gains tens of percent at most, and each basin costs a batch or more
BASIN_WITHIN = 1.25


def threads_fit(knobs: Sequence[Knob]) -> Callable[[Config], bool]:
    """A configuration's threads (32 per warp) fit its elements in every launch whose knobs
    say both (``Knob.geometry``): more threads than a program's elements only idle or repeat
    work, so such a configuration is dominated by the same blocks with fewer warps."""
    launches: dict[str, tuple[list[str], list[str]]] = {}
    for knob in knobs:
        if knob.geometry in ("elements", "warps") and knob.launch:
            elements, warps = launches.setdefault(knob.launch, ([], []))
            (elements if knob.geometry == "elements" else warps).append(knob.name)
    pairs = [(e, w) for e, w in launches.values() if e and w]

    def fits(config: Config) -> bool:
        try:
            return all(32 * math.prod(int(config[n]) for n in w)
                       <= math.prod(int(config[n]) for n in e) for e, w in pairs)
        except (KeyError, ValueError):
            return True  # a value that is not a number: nothing to say
    return fits


def evaluation_budget(grid: int) -> int:
    """Evaluations for a grid of ``grid`` configurations: all of a small grid, else a quarter
    of it, at least MIN_EVALUATIONS and at most MAX_EVALUATIONS."""
    if grid <= FULL_GRID_AT:
        return grid
    return max(MIN_EVALUATIONS, min(MAX_EVALUATIONS, grid // 4))


def _value_lists(knobs: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, tuple[str, ...]]]:
    """A search's own copy of its knobs' value lists: ``extend`` grows them, never the caller's."""
    return [(name, tuple(values)) for name, values in knobs]


@attrs.define
class JointSearch:
    """``knobs``: (name, ordered values); ``start``: the current assignment; ``evaluate``:
    screens a batch of configurations and returns one relative cost per configuration (lower
    is faster; None for a configuration that failed to compile or check); ``start_cost``: the
    start's cost when it is already known (the tree being screened against is the start: its
    ratio is 1 by definition), so it is not screened again."""

    knobs: list[tuple[str, tuple[str, ...]]] = attrs.field(converter=_value_lists)  # extend grows them
    start: Config
    evaluate: Callable[[list[Config]], list[float | None]]
    max_evaluations: int | None = None
    within_budget: Callable[[], bool] = lambda: True  # e.g. GPU seconds left
    descents: int = 3  # how far down the ranking a descent may start
    # a descent batch takes the next minimum's moves too while it holds fewer configurations
    # than this: each batch also times the tree once, so a batch of one pays double
    fill: int = 4
    batch: int = 8  # most configurations per evaluate() call
    seed: int = 0
    start_cost: float | None = None
    # False for a configuration known to waste the device (more threads than elements): the
    # sample leaves it out; a descent may still go there
    plausible: Callable[[Config], bool] = lambda config: True
    # (knob, upward) -> a value past that end of its list, or None: it grows no further
    extend: Callable[[str, bool], str | None] | None = None
    # knob -> (knob, value): it matters only while that knob holds that value (Knob.when)
    conditions: dict[str, tuple[str, str]] = attrs.field(factory=dict)
    costs: dict[Point, float] = attrs.field(factory=dict)  # inf: failed
    # evaluations allowed: the budget of the grid as given (not as grown), plus one a grown value
    _allowed: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self) -> None:
        if not all(self.start.get(name) in values for name, values in self.knobs):
            self.start_cost = None  # the start is not a point of the grid
        if self.start_cost is not None:
            self.costs[self._start_point()] = self.start_cost
        self._allowed = self.max_evaluations if self.max_evaluations is not None \
            else evaluation_budget(self.grid)

    @property
    def evaluations(self) -> int:
        """Configurations screened (a known start cost is not an evaluation)."""
        return len(self.costs) - (self.start_cost is not None)

    @property
    def grid(self) -> int:
        """Configurations of code: a conditional knob's values count where its condition holds
        (conditions are one level deep: Target refuses a switch that is conditional itself)."""
        sizes = dict(self.knobs)
        switches = {switch for switch, _value in self.conditions.values()}
        count = math.prod(len(values) for name, values in self.knobs
                          if name not in self.conditions and name not in switches)
        for switch in switches:
            count *= sum(math.prod(len(sizes[name]) for name, when in self.conditions.items()
                                   if when == (switch, value))
                         for value in sizes.get(switch, ()))
        return count

    def _every(self) -> Iterator[Point]:
        return itertools.product(*(range(len(values)) for _name, values in self.knobs))

    def _canon(self, point: Point) -> Point:
        """The point with each knob whose condition does not hold at the start's value."""
        if not self.conditions:
            return point
        config = self._config(point)
        start = self._start_point()
        names = [name for name, _values in self.knobs]
        out = list(point)
        for axis, name in enumerate(names):
            when = self.conditions.get(name)
            if when is not None and config.get(when[0]) != when[1]:
                out[axis] = start[axis]
        return tuple(out)

    def _config(self, point: Point) -> Config:
        return {**self.start, **{name: values[i]
                                 for (name, values), i in zip(self.knobs, point, strict=True)}}

    def _budget(self) -> int:
        return self._allowed

    def _screen(self, points: list[Point]) -> None:
        room = self._budget() - self.evaluations
        fresh = list(dict.fromkeys(c for c in map(self._canon, points)
                                   if c not in self.costs))[:max(0, room)]
        # in chunks of equal size (never a full one and a remainder of one: each chunk also
        # times the tree once); the GPU budget is checked between them (a configuration of a
        # large kernel can take seconds to compile)
        if not fresh:
            return
        size = math.ceil(len(fresh) / math.ceil(len(fresh) / self.batch))
        for i in range(0, len(fresh), size):
            if not self.within_budget():
                return
            chunk = fresh[i:i + size]
            results = self.evaluate([self._config(p) for p in chunk])
            for point, cost in zip(chunk, results, strict=True):
                self.costs[point] = math.inf if cost is None else cost

    def _exhausted(self) -> bool:
        return self.evaluations >= self._budget() or not self.within_budget()

    def _start_point(self) -> Point:
        return tuple(values.index(self.start[name]) if self.start.get(name) in values else 0
                     for name, values in self.knobs)

    def _sample(self, count: int) -> list[Point]:
        """Maximin points of the index grid (normalized), from a deterministic candidate pool."""
        sizes = [len(values) for _name, values in self.knobs]
        rng = random.Random(self.seed)
        start = self._start_point()
        chosen = [start]
        if self.grid > LOCAL_AT:
            ranges = [range(max(0, i - LOCAL_RADIUS), min(n, i + LOCAL_RADIUS + 1))
                      for i, n in zip(start, sizes, strict=True)]
        else:
            ranges = [range(n) for n in sizes]
        pool = {self._canon(tuple(rng.choice(r) for r in ranges)) for _ in range(64 * count)}
        pool.discard(start)
        sensible = {p for p in pool if self.plausible(self._config(p))}
        if len(sensible) >= count - 1:
            pool = sensible

        def distance(a: Point, b: Point) -> float:
            return sum(((x - y) / max(n - 1, 1)) ** 2 for x, y, n in zip(a, b, sizes, strict=True))

        while len(chosen) < count and pool:
            best = max(sorted(pool), key=lambda p: min(distance(p, c) for c in chosen))
            pool.discard(best)
            chosen.append(best)
        return chosen

    def _moves(self, point: Point, diagonal: bool) -> list[Point]:
        sizes = [len(values) for _name, values in self.knobs]
        out: list[Point] = []
        axes = range(len(sizes))
        groups = itertools.combinations(axes, 2) if diagonal else ((a,) for a in axes)
        for group in groups:
            for steps in itertools.product((-1, 1), repeat=len(group)):
                moved = list(point)
                for axis, step in zip(group, steps, strict=True):
                    moved[axis] += step
                if all(0 <= moved[a] < sizes[a] for a in group):
                    out.append(self._canon(tuple(moved)))
        # a move of a knob whose condition does not hold is no move
        return [m for m in dict.fromkeys(out) if m != point]

    def run(self) -> list[tuple[Config, float]]:
        """Every screened configuration that worked, fastest first, with its cost."""
        if self.grid - (self.start_cost is not None) <= self._budget():
            self._screen(list(self._every()))
        else:
            dims = len(self.knobs)
            sample = max(2 * dims + 1, min(self._budget() // 4, 4 * dims))
            self._screen(self._sample(sample))
            self._descend()
        while self._extend():
            self._descend()
        ranked = sorted((cost, point) for point, cost in self.costs.items() if cost < math.inf)
        return [(self._config(point), cost) for cost, point in ranked]

    def _descend(self) -> None:
        """Best-first: the best screened points with unscreened moves get them screened (one
        batch: each point's single moves, else its two-knob moves), the next point's too while
        the batch holds fewer than ``fill`` configurations (each batch also times the tree
        once, so tiny batches waste); a worse point's turn comes when every better one is
        surrounded by screened configurations. Only a
        point no screened neighbour beats starts a descent: one with a better neighbour lies
        on the slope of a basin a better point is already descending (``descents`` basins at
        most, each within BASIN_WITHIN of the best)."""
        while not self._exhausted():
            ranked = sorted((c, p) for p, c in self.costs.items() if c < math.inf)
            if not ranked:
                return
            limit = ranked[0][0] * BASIN_WITHIN
            minima = [p for c, p in ranked
                      if c <= limit and self._unbeaten(p, c)][: self.descents]
            batch: list[Point] = []
            for point in minima:
                moves = [m for m in self._moves(point, False) if m not in self.costs]
                if not moves and len(self.knobs) > 1:
                    moves = [m for m in self._moves(point, True) if m not in self.costs]
                fresh = [m for m in moves if m not in batch]
                if batch and len(batch) + len(fresh) > self.batch:
                    break  # one evaluate() call, not a full one and a remainder
                batch += fresh
                if len(batch) >= self.fill:
                    break
            if not batch:
                return  # the best basins' minima are surrounded by screened configurations
            self._screen(batch)

    def _unbeaten(self, point: Point, cost: float) -> bool:
        """No screened single or two-knob move from ``point`` is faster."""
        return all(self.costs.get(m, math.inf) >= cost
                   for diagonal in (False, True) for m in self._moves(point, diagonal))

    def _best(self) -> tuple[float, Point] | None:
        return min(((c, p) for p, c in self.costs.items() if c < math.inf), default=None)

    def edges(self) -> list[tuple[str, bool]]:
        """(knob, upward) for each end of a knob's list the best screened point holds, the value
        one step inside screened slower (evidence that the best lies that way)."""
        best = self._best()
        if best is None:
            return []
        cost, point = best
        out = []
        for axis, (name, values) in enumerate(self.knobs):
            for upward, end, inner in ((True, len(values) - 1, len(values) - 2), (False, 0, 1)):
                if len(values) < 2 or point[axis] != end:
                    continue
                inside = self.costs.get(self._canon(point[:axis] + (inner,) + point[axis + 1:]),
                                        math.inf)
                if cost < inside < math.inf:
                    out.append((name, upward))
        return out

    def _extend(self) -> bool:
        """Each end the best point holds (``edges``) grown by one value where ``extend`` gives
        one, and the best point's move onto each new value screened; False when nothing was."""
        if self.extend is None or not self.within_budget():
            return False
        moves: list[tuple[int, bool]] = []
        for name, upward in self.edges():
            value = self.extend(name, upward)
            if value is None:
                continue
            axis = [n for n, _values in self.knobs].index(name)
            values = self.knobs[axis][1]
            self.knobs[axis] = (name, (*values, value) if upward else (value, *values))
            if not upward:  # every screened point's index along the axis moves up by one
                self.costs = {p[:axis] + (p[axis] + 1,) + p[axis + 1:]: c
                              for p, c in self.costs.items()}
            moves.append((axis, upward))
        best = self._best()
        if not moves or best is None:
            return False
        point = best[1]
        fresh = [point[:axis] + (len(self.knobs[axis][1]) - 1 if upward else 0,) + point[axis + 1:]
                 for axis, upward in moves]
        self._allowed += len(fresh)  # the extension's own configurations, past the budget
        self._screen(fresh)
        return True
