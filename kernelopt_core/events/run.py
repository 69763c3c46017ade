"""A run's events (docs/journal.md, "A run")."""

from __future__ import annotations

from typing import Any

import attrs

from kernelopt_core.events.base import Event, optional


@attrs.frozen(kw_only=True)
class Run(Event, kind="run"):
    schema: int
    run_id: str
    kernelopt: str
    argv: list[str]
    cwd: str | None = optional()  # journals before `kernelopt resume` lack it
    host: str
    platform: str
    pid: int
    target: dict[str, Any]
    settings: dict[str, Any]
    origins: dict[str, Any]


@attrs.frozen(kw_only=True)
class Resumed(Event, kind="resumed"):
    pid: int
    host: str
    argv: list[str]
    best: float
    completed: list[str]


@attrs.frozen(kw_only=True)
class WorkspaceWait(Event, kind="workspace_wait"):
    target: str
    run_id: str | None = optional()
    pid: int | None = optional()
    since: float | None = optional()


@attrs.frozen(kw_only=True)
class WorkspaceAcquired(Event, kind="workspace_acquired"):
    waited_s: float


@attrs.frozen(kw_only=True)
class Workspace(Event, kind="workspace"):
    dir: str
    baseline_commit: str
    files: int


@attrs.frozen(kw_only=True)
class Config(Event, kind="config"):
    planner: str
    planner_reason: str
    candidate_gates: list[str]
    final_gates: list[str]


@attrs.frozen(kw_only=True)
class Knobs(Event, kind="knobs"):
    knobs: list[dict[str, Any]]
    declared: bool


@attrs.frozen(kw_only=True)
class KnobProbe(Event, kind="knob_probe"):
    ok: bool
    variants: int
    seconds: float | None = optional()
    failed: dict[str, dict[str, str]] | None = optional()
    dropped: list[str] | None = optional()
    error: str | None = optional()


@attrs.frozen(kw_only=True)
class Stage(Event, kind="stage"):
    stage: str
    candidate: str | None = optional()
    parent: str | None = optional()
    profiler: str | None = optional()
    tree: str | None = optional()
    program: str | None = optional()
    # the baseline build's stage: the same target's last baseline build in an earlier run
    earlier_run: str | None = optional()
    earlier_seconds: float | None = optional()


@attrs.frozen(kw_only=True)
class Built(Event, kind="built"):
    """A tree's build: whether it built, its wall seconds and each step's (the backend's
    command labels)."""
    tree: str
    seconds: float
    steps: list[dict[str, Any]]  # [{"label": "configure", "seconds": 3.2}, ...]
    ok: bool | None = optional()  # the first journals with this kind (one: it built) lack it


@attrs.frozen(kw_only=True)
class WarmBuild(Event, kind="warm_build"):
    seeded: bool
    why: str | None = optional()
    files_relocated: int | None = optional()
    outputs_to_rebuild: list[str] | None = optional()
    outputs_to_rebuild_count: int | None = optional()
    ninja_log_kept: int | None = optional()
    ninja_log_dropped: int | None = optional()
    seconds: float | None = optional()


@attrs.frozen(kw_only=True)
class CheckEvidence(Event, kind="check_evidence"):
    tree: str
    evidence: Any


@attrs.frozen(kw_only=True)
class Baseline(Event, kind="baseline"):
    ms: float | None
    samples: list[Any]
    note: str | None = optional()


@attrs.frozen(kw_only=True)
class SearchStart(Event, kind="search_start"):
    before_s: float


@attrs.frozen(kw_only=True)
class Candidate(Event, kind="candidate"):
    candidate: str
    parent: str
    planner: str
    description: str
    knobs: dict[str, Any]
    files: list[str]
    digest: str | None = optional()


@attrs.frozen(kw_only=True)
class Gate(Event, kind="gate"):
    candidate: str
    gate: str
    passed: bool
    final: bool | None = optional()  # a final gate
    skipped: bool
    reason: str
    metrics: dict[str, Any]
    failed_verdict: str | None = optional()


@attrs.frozen(kw_only=True)
class CandidateResult(Event, kind="candidate_result"):
    candidate: str
    accepted: bool
    speedup: float | None
    failed_gate: str | None
    reason: str
    log_tail: str | None = optional()
    gates_passed: list[str]
    tag: str | None
    wall_s: float
    child_s: float
    self_cpu_s: float | None = optional()  # the kernelopt process's own CPU seconds
    gpu_seconds: float | None = optional()  # the run's so far


@attrs.frozen(kw_only=True)
class PlannerError(Event, kind="planner_error"):
    candidate: str
    parent: str
    message: str


@attrs.frozen(kw_only=True)
class Duplicate(Event, kind="duplicate"):
    description: str


@attrs.frozen(kw_only=True)
class Best(Event, kind="best"):
    candidate: str
    speedup: float


@attrs.frozen(kw_only=True)
class ResumeDiverged(Event, kind="resume_diverged"):
    candidate_from: str
    discarded: list[str]


@attrs.frozen(kw_only=True)
class SearchEnd(Event, kind="search_end"):
    reason: str
    evaluated: int


@attrs.frozen(kw_only=True)
class ConfirmRound(Event, kind="confirm_round"):
    candidate: str
    purpose: str
    round: int
    baseline_ms: float  # the geometric mean of the bracketing pair
    candidate_ms: float
    aa_ratio: float
    retake: bool | None = optional()
    limits_ms: list[float] | None = optional()


@attrs.frozen(kw_only=True)
class Verdict(Event, kind="verdict"):
    status: str
    candidate: str | None
    description: str | None = optional()
    knobs: dict[str, Any] | None = optional()
    screen_speedup: float | None = optional()
    winner_tag: str | None = optional()
    diff: str | None = optional()
    caught_by: list[str] | None = optional()
    measured: dict[str, Any] | None = optional()
    reason: str


@attrs.frozen(kw_only=True)
class GateWarning(Event, kind="warning"):
    gate: str
    message: str


@attrs.frozen(kw_only=True)
class Profile(Event, kind="profile"):
    profiler: str
    tree: str = optional("baseline")  # older journals lack it: they profiled the baseline only
    program: str | None = optional()  # older journals lack it
    metrics: dict[str, Any]
    phase: str | None = optional()
    candidate: str | None = optional()


@attrs.frozen(kw_only=True)
class ModelCheck(Event, kind="model_check"):
    runs: list[str]
    winners: list[str]
    seconds: float
    amdahl_predicted: Any
    log: str
    error: str | None = optional()
    modes: dict[str, Any] | None = optional()
    baseline: str | None = optional()
    kernelopt: str | None = optional()
    match: bool | None = optional()
    measured_speedup: float | None = optional()
    versus: dict[str, float] | None = optional()
    device: Any = optional()
    detail: Any = optional()
    note: Any = optional()
    choice: str | None = optional()  # why kernelopt returns another mode than the baseline's


@attrs.frozen(kw_only=True)
class Interrupted(Event, kind="interrupted"):
    stage: str


@attrs.frozen(kw_only=True)
class RunError(Event, kind="error"):
    kind: str
    message: str
    exit_code: int
    log: str | None = optional()


@attrs.frozen(kw_only=True)
class End(Event, kind="end"):
    exit_code: int
    wall_seconds: float | None = optional()
    gpu_seconds: float
    child_seconds: float | None = optional()
