"""What a planner sees (PlanContext) and what it returns (Proposal)."""

from __future__ import annotations

from typing import Any

import attrs

from kernelopt_core.journal import Journal
from kernelopt_core.search import BeamSearch
from kernelopt_core.settings import Settings
from kernelopt_core.target import Knob, Target


@attrs.frozen
class Proposal:
    description: str
    edits: dict[str, bytes]  # path (relative to the target root) -> full new content
    knobs: dict[str, str] = attrs.field(factory=dict)
    planner: str = ""


@attrs.define
class PlanContext:
    target: Target
    settings: Settings
    files: dict[str, bytes]  # the baseline snapshot
    knobs: tuple[Knob, ...]  # declared, else auto-detected
    baseline_knobs: dict[str, str]
    search: BeamSearch
    journal: Journal
    profile: dict[str, Any] = attrs.field(factory=dict)
    tried: set[tuple[tuple[str, str], ...]] = attrs.field(factory=set)  # knob assignments seen
    host: Any = None  # the PluginHost, for doc lookup and prompt fragments
    baseline_ms: float | None = None
