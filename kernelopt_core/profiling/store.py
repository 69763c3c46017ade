"""The profiles ``kernelopt profile`` recorded (``<state root>/profiles/<id>/journal.jsonl``),
read back for a plugin: llama.cpp ranks a model's ops by the kernels of its last profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import events, journal


@attrs.frozen
class RecordedProfile:
    """One finished ``kernelopt profile`` of a target: its kernels per phase."""

    run_id: str
    directory: Path
    # phase (``Backend.profile_phases``' names, else "bench" or "engine") -> the profiler's
    # kernels: dicts with at least name, launches and total_us
    phases: dict[str, list[dict[str, Any]]]


def last_profile(state_root: Path, backend: str, name: str, root: Path,
                 shape: str | None = None) -> RecordedProfile | None:
    """The newest profile of the target ``name`` of ``backend`` at ``root`` (and ``shape``,
    when given: the same program, e.g. the same model file) that ended without an error and
    measured every phase; None when there is none."""
    folder = state_root / "profiles"
    runs = sorted(folder.iterdir(), reverse=True) if folder.is_dir() else []  # ids sort by time
    for run in runs:
        try:
            records = journal.read(run / "journal.jsonl")
        except OSError:
            continue
        header = events.first(records[:1], events.Run)
        target = header.target if header else {}
        if (target.get("backend"), target.get("name"), target.get("root")) != \
                (backend, name, str(root)) or (shape is not None and target.get("shape") != shape):
            continue
        if not any(end.exit_code == 0 for end in events.of(records, events.End)):
            continue
        phases: dict[str, list[dict[str, Any]]] = {}
        for profile in events.of(records, events.Profile):
            if profile.tree == "baseline":
                if "error" in profile.metrics or not profile.metrics.get("kernels"):
                    phases = {}
                    break
                phases[str(profile.phase or profile.program)] = list(profile.metrics["kernels"])
        if phases:
            return RecordedProfile(run.name, run, phases)
    return None
