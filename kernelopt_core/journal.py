"""The journal: the run's source of truth, one JSON event per line, flushed as it happens.

The first line is the run's metadata (``event: "run"``). Reports are rebuilt from the journal
alone (:mod:`kernelopt_core.report`), so a run killed half-way still has an honest record.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

SCHEMA = 1


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "a", encoding="utf-8")
        self.listeners: list[Any] = []

    def write(self, event: str, **data: Any) -> dict[str, Any]:
        record = {"event": event, "t": round(time.time(), 6), **data}
        self._fh.write(json.dumps(record, default=str, sort_keys=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        for listener in self.listeners:
            listener(record)
        return record

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def read(path: Path) -> list[dict[str, Any]]:
    """All events; a torn last line (the process was killed mid-write) is skipped."""
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def gpu_lock_span(event: dict[str, Any]) -> tuple[float, float] | None:
    """(acquired, released) of an event that held the GPU lock: a timed reading (``bench``)
    or a worker request made under the lock; None for any other event."""
    if event.get("event") not in ("bench", "worker_request") or not event.get("gpu_lock", True):
        return None
    acquired, released = event.get("acquired"), event.get("released")
    if isinstance(acquired, (int, float)) and isinstance(released, (int, float)):
        return float(acquired), float(released)
    return None


# a resumed run's earlier attempts: what it ends with is decided again, not kept; so are the
# profiles (each attempt profiles its baseline again: a report would list it twice)
_SUPERSEDED = {"verdict", "end", "error", "interrupted", "search_end", "confirm_round",
               "profile", "model_check"}


def effective(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events a report reads when the run was resumed (kernelopt_core.resume): before each
    ``resumed`` event, only the candidates it kept (completed ones) and what is not an ending
    (verdict, final gates, end) count; a ``resume_diverged`` event drops the candidates the
    resumed run evaluated again."""
    out: list[dict[str, Any]] = []
    for event in events:
        kind = event.get("event")
        if kind == "resumed":
            kept = set(event.get("completed", []))
            out = [e for e in out if e.get("event") not in _SUPERSEDED
                   and not (e.get("event") == "gate" and e.get("final"))
                   and ("candidate" not in e or e["candidate"] in kept)]
        elif kind == "resume_diverged":
            dropped = set(event.get("discarded", []))
            out = [e for e in out if e.get("candidate") not in dropped]
        out.append(event)
    return out
