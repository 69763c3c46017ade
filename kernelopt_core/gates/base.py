"""What a gate sees and what it answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from kernelopt_core.runner import Runner
from kernelopt_core.settings import Settings
from kernelopt_core.target import Target, Tree

# What a failed final gate leaves the verdict at.
MATCHED = "matched"  # correct, not proven faster
FALLBACK = "fallback"  # not even correct: the baseline is kept
UNVERIFIED = "unverified"  # correct, but its times cannot back a claim (e.g. an interpreter's)


@attrs.define
class GateContext:
    """Services and facts for one gate decision on one candidate."""

    runner: Runner
    settings: Settings
    target: Target
    candidate: str  # the candidate's id, e.g. "c7"
    candidate_tree: Tree
    baseline_tree: Tree
    log_dir: Path
    baseline_screen_ms: float | None  # the baseline's screen median at the start of the run
    edits: dict[str, bytes] = attrs.field(factory=dict)  # the candidate's changed files
    baseline_files: dict[str, bytes] = attrs.field(factory=dict)  # the baseline snapshot
    profile: dict[str, Any] = attrs.field(factory=dict)  # profiler metrics of the baseline
    shared: dict[str, Any] = attrs.field(factory=dict)  # results earlier gates left for later ones


@attrs.frozen
class GateResult:
    gate: str
    passed: bool
    reason: str
    metrics: dict[str, Any] = attrs.field(factory=dict)
    # For a final gate that fails: the verdict it leaves (matched or fallback).
    failed_verdict: str = MATCHED
    skipped: bool = False  # the gate had nothing to decide (e.g. no bench): not a pass on merit
