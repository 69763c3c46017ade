"""What a gate sees and what it answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import attrs

from kernelopt_core.events.base import Event
from kernelopt_core.measure.parsers import BenchReading
from kernelopt_core.process import ProcessResult
from kernelopt_core.settings import Settings
from kernelopt_core.target import Target, Tree

# What a failed final gate leaves the verdict at.
MATCHED = "matched"  # correct, not proven faster
FALLBACK = "fallback"  # not even correct: the baseline is kept
UNVERIFIED = "unverified"  # correct, but its times cannot back a claim (e.g. an interpreter's)


class EventLog(Protocol):
    """The run's journal (the source of truth) as a gate or planner writes to it: a plugin's
    own kinds by name (``write``), the core's as their classes (``record``)."""

    def write(self, event: str, **data: Any) -> dict[str, Any]:
        """Append one event of a plugin's own kind (name it after the plugin), written as given.
        A kind of the core's (docs/journal.md) is checked against its class (TypeError on a
        key it does not know or one missing): the core itself writes those with ``record``."""
        ...

    def record(self, event: Event) -> dict[str, Any]:
        """Append one of the core's events (kernelopt_core.events, e.g. ``GateWarning``)."""
        ...


class GateServices(Protocol):
    """What a gate may ask of the core (the engine's Runner provides it): build, check, bench
    and run the engine of a tree, every GPU step under the GPU lock, every spawn logged."""

    @property
    def journal(self) -> EventLog: ...

    def build(self, tree: Tree, log: Path) -> ProcessResult | None: ...

    def check_all(self, tree: Tree, log: Path) -> tuple[str, ProcessResult] | None:
        """None when every seed passes, else (which seeds, the failing result)."""
        ...

    def has_bench(self, tree: Tree) -> bool: ...

    def bench(self, tree: Tree, log: Path, purpose: str, work: float = 1.0) -> BenchReading:
        """One reading (raises BenchFailed); ``work`` < 1 only for the gate self-test."""
        ...

    def confirm_rounds(self, candidate: Tree) -> int: ...

    def shape_check(self, tree: Tree, seed: int, log: Path) -> ProcessResult | None: ...

    def has_engine(self, tree: Tree) -> bool: ...

    def engine_pairs(self) -> bool:
        """True when one engine run holds both versions (``engine(..., baseline=tree)``)."""
        ...

    def engine(self, tree: Tree, log: Path, env: dict[str, str] | None = None,
               baseline: Tree | None = None) -> ProcessResult | None: ...


@attrs.frozen
class Confirmed:
    """What the confirm gate measured, for the final gates after it (shape, roofline, engine)."""

    baseline_readings: list[BenchReading]  # two a round
    candidate_readings: list[BenchReading]  # two a round
    baseline_ms: list[float]  # per round (geometric mean of the round's two baselines)
    candidate_ms: list[float]
    median_ratio: float  # the rounds' median baseline/candidate time
    noise_pct: float  # the run's A/A noise floor, in %


@attrs.define
class GateContext:
    """Services and facts for one gate decision on one candidate."""

    runner: GateServices  # build, check, bench and engine of a tree (GateServices)
    settings: Settings  # the run's settings; a plugin's table: settings.section(MyOptions)
    target: Target  # the target being optimized
    candidate: str  # the candidate's id, e.g. "c7"
    candidate_tree: Tree  # the candidate's source and build directories
    baseline_tree: Tree  # the baseline's
    log_dir: Path  # where this gate writes its logs
    baseline_screen_ms: float | None  # the baseline's screen median at the start of the run
    edits: dict[str, bytes] = attrs.field(factory=dict)  # the candidate's changed files
    baseline_files: dict[str, bytes] = attrs.field(factory=dict)  # the baseline snapshot
    profile: dict[str, Any] = attrs.field(factory=dict)  # profiler metrics of the baseline
    confirmed: Confirmed | None = None  # set by the confirm gate
    shared: dict[str, Any] = attrs.field(factory=dict)  # free-form, for third-party gates


@attrs.frozen
class GateResult:
    gate: str  # the gate's name
    passed: bool  # False rejects the candidate (a final gate: the verdict drops)
    reason: str  # one line for the report's row
    metrics: dict[str, Any] = attrs.field(factory=dict)  # numbers for the journal and report (JSON-able)
    # For a final gate that fails: the verdict it leaves (matched or fallback).
    failed_verdict: str = MATCHED
    skipped: bool = False  # the gate had nothing to decide (e.g. no bench): not a pass on merit
