"""Timed windows and workers, the agents, the gate self-test and campaigns (docs/journal.md)."""

from __future__ import annotations

from typing import Any

import attrs

from kernelopt_core.events.base import Event, optional

# --------------------------------------------------------------- timed windows and workers

@attrs.frozen(kw_only=True)
class Bench(Event, kind="bench"):
    tree: str
    purpose: str
    ms: float
    checksum: Any
    shape: str | None = optional()
    interpreted: bool | None = optional()
    asked: float | None = optional()  # when the GPU lock was asked for (older journals lack it)
    acquired: float
    released: float
    timer: Any = optional()
    how: dict[str, Any] | None = optional()

    @property
    def held_s(self) -> float:
        """GPU-lock seconds the reading held (every timed reading holds the lock)."""
        return self.released - self.acquired


@attrs.frozen(kw_only=True)
class Sweep(Event, kind="sweep"):
    tree: str
    configs: int
    ok: int
    reference_ms: float | None
    results: list[dict[str, Any]]
    acquired: float
    released: float


@attrs.frozen(kw_only=True)
class CompiledAhead(Event, kind="compiled_ahead"):
    compiled: Any
    stuck: Any
    left: Any


@attrs.frozen(kw_only=True)
class Screening(Event, kind="screening"):
    ok: bool
    grid: Any = optional()
    evaluations: int | None = optional()
    failed: Any = optional()
    batches: list[int] | None = optional()
    gpu_seconds: float | None = optional()
    best: Any = optional()
    error: str | None = optional()


@attrs.frozen(kw_only=True)
class WorkerStart(Event, kind="worker_start"):
    tree: str
    pid: int
    spare: bool | None = optional()  # older journals lack it
    seconds: float


@attrs.frozen(kw_only=True)
class WorkerRequest(Event, kind="worker_request"):
    op: str | None
    pid: int
    ok: bool
    asked: float | None = optional()  # older journals lack it
    gpu_lock: bool = optional(True)  # older journals lack it: every request held the lock
    acquired: float
    released: float
    stages: Any = optional()  # a load's parts

    @property
    def held_s(self) -> float:
        """GPU-lock seconds the request held: none when made without the lock (a compile)."""
        return self.released - self.acquired if self.gpu_lock else 0.0


@attrs.frozen(kw_only=True)
class WorkerRetired(Event, kind="worker_retired"):
    tree: str
    pid: int
    reason: str


# ------------------------------------------------------------------------------ the agents

@attrs.frozen(kw_only=True)
class LLMCall(Event, kind="llm_call"):
    role: str  # planner, editor, summarizer (executor in journals before 2026-12-04)
    model: str
    attempt: int
    status: int | None
    latency_s: float
    tokens_in: int | None = optional()
    tokens_out: int | None = optional()
    cost: float | None = optional()
    priced: bool | None = optional()
    error: str | None = optional()

    @property
    def answered(self) -> bool:
        """A call the client counts (its budgets, summary.json): a 200 with a usable body."""
        return self.status == 200 and self.tokens_in is not None


@attrs.frozen(kw_only=True)
class Experience(Event, kind="experience"):
    strategy: Any
    lesson: Any
    action: Any


# ----------------------------------------------------------- gate self-test and campaigns

@attrs.frozen(kw_only=True)
class SelftestCalibration(Event, kind="selftest_calibration"):
    planted_speedup: float
    work: float
    measured_ratio: float


@attrs.frozen(kw_only=True)
class SelftestDecision(Event, kind="selftest_decision"):
    kind: str  # aa, planted
    trial: int
    accept: bool
    naive_accept: bool
    median_ratio: float
    noise_pct: float
    threshold: float
    retakes: int | None = optional()  # older journals lack it


@attrs.frozen(kw_only=True)
class Campaign(Event, kind="campaign"):
    name: str
    executor: str
    gpus: list[str]
    entries: list[dict[str, Any]]
    jobs: list[list[str]]


@attrs.frozen(kw_only=True)
class CampaignResumed(Event, kind="campaign_resumed"):
    executor: str
    gpus: list[str]


@attrs.frozen(kw_only=True)
class Job(Event, kind="job"):
    key: str
    returncode: int
    output_tail: str
    worker: str
    gpu: str
    seconds: float
    attempts: int
    summary: Any
