"""What a planner sees (PlanContext, with the baseline's Profile), what it returns (Proposal)
and what it learns of each (Outcome)."""

from __future__ import annotations

import abc
from collections.abc import Callable, ItemsView, Iterator, KeysView, ValuesView
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


class _ByKey(abc.ABC):
    """A record a planner once read as a dict (before issue 56): ``record.get("accepted")``,
    ``record["speedup"]``, ``"speedup" in record``, ``dict(record)``, ``keys()``/``items()``,
    iteration, ``len`` and truth (empty: false) still answer, from its fields, read-only; read
    the fields instead."""

    @abc.abstractmethod
    def _keys(self) -> dict[str, Any]:
        """The record as the dict planners once read (each record says which keys)."""

    def get(self, key: str, default: Any = None) -> Any:
        return self._keys().get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self._keys()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __bool__(self) -> bool:
        return bool(self._keys())

    def keys(self) -> KeysView[str]:
        return self._keys().keys()

    def items(self) -> ItemsView[str, Any]:
        return self._keys().items()

    def values(self) -> ValuesView[Any]:
        return self._keys().values()


@attrs.frozen
class Outcome(_ByKey):
    """What a planner's ``observe`` learns of one proposal: how its candidate fared through
    the candidate gates."""

    candidate: str  # its id, e.g. "c7"
    accepted: bool  # it passed every candidate gate and joined the search
    speedup: float | None = None  # the screen gate's, when a bench timed it
    failed_gate: str | None = None  # the gate that rejected it
    reason: str = ""  # that gate's one line, or "passed every candidate gate"
    log_tail: str = ""  # the end of the failing step's output (a compile error), if any
    diff: str = ""  # the edit, as a unified diff against the baseline
    replayed: bool = False  # served from a resumed run's journal: nothing was built or timed

    def _keys(self) -> dict[str, Any]:
        keys = attrs.asdict(self)
        if not self.replayed:  # the dict had the key only when true
            del keys["replayed"]
        return keys


@attrs.frozen
class TunerFrontier:
    """The built-in tuner's screen of the knob grid, handed to the planners after it (the
    agents' ``get_profile`` shows it as ``tuner_frontier``)."""

    grid: int  # configurations in the knob grid
    screened: int  # configurations the screen timed
    failed: int  # of which failed to compile or check
    best: list[dict[str, Any]]  # the fastest, best first: knobs, ratio (time / the baseline's)
    grown: dict[str, list[str]] = attrs.field(factory=dict)  # knobs whose range grew: values

    def to_json(self) -> dict[str, Any]:
        return {"what": "the built-in tuner's screen of the knob grid: time / the baseline's "
                        "time (lower is faster), checked on one seed, not yet through the gates",
                "grid": self.grid, "screened": self.screened, "failed": self.failed,
                "best": self.best, **({"grown": self.grown} if self.grown else {})}


@attrs.define
class Profile(_ByKey):
    """What a planner knows of the baseline beyond its time: the profiler's reading of it and
    the tuner's screen, each when there is one."""

    # the profiler's profile of the baseline, as journaled (``profile`` event): tool, kernels
    # (each with its share and whether it is the target's), columns; {} without a profiler,
    # {"error": ...} when it failed
    metrics: dict[str, Any] = attrs.field(factory=dict)
    tuner_frontier: TunerFrontier | None = None  # set by the tuner's screen

    def view(self) -> dict[str, Any]:
        """One JSON object of both, as the agents' ``get_profile`` shows it."""
        frontier = self.tuner_frontier
        return {**self.metrics, **({"tuner_frontier": frontier.to_json()} if frontier else {})}

    def _keys(self) -> dict[str, Any]:
        return self.view()


def _as_profile(value: Profile | dict[str, Any]) -> Profile:
    """A profile given as the profiler's dict (a PlanContext made before issue 56)."""
    return value if isinstance(value, Profile) else Profile(dict(value))


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
    profile: Profile = attrs.field(factory=Profile, converter=lambda p: _as_profile(p))
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
