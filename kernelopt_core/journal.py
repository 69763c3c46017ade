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

from kernelopt_core import events
from kernelopt_core.errors import PrerequisiteError

SCHEMA = 1


class JournalWriteError(PrerequisiteError):
    """The journal could not be written (a full disk, a file-size limit): the run stops."""


# journals whose write failed in this process, by path: the run's report is not written over
# an incomplete record, and the run ends with this error (``complete`` raises it)
_FAILED: dict[Path, JournalWriteError] = {}


def failure(path: Path) -> JournalWriteError | None:
    """Why the journal at ``path`` could not be written in this process; None when it could."""
    return _FAILED.get(path.resolve())


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.listeners: list[Any] = []
        self.failed: JournalWriteError | None = None
        # a torn last line (a run killed mid-write) is ended: the next record would join it
        # and be skipped with it (a resumed run's ``resumed`` event lost)
        if os.fstat(self._fd).st_size and _last_byte(path) != b"\n":
            self._append(b"\n", "")

    def record(self, event: events.Event) -> dict[str, Any]:
        """Append one of the core's events (kernelopt_core.events)."""
        return self._write(event.EVENT, event.data())

    def write(self, event: str, **data: Any) -> dict[str, Any]:
        """Append an event by kind and keys: a core kind is built through its class
        (kernelopt_core.events; TypeError on a key it does not know or one missing), a
        plugin's own kind is written as given."""
        return self._write(event, events.build(event, data))

    def _write(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        record = {"event": event, "t": round(time.time(), 6), **data}
        if self.failed is not None:  # the run is stopping on it: the ending is not recorded
            return record
        self._append((json.dumps(record, default=str, sort_keys=False) + "\n").encode(), event)
        for listener in self.listeners:
            listener(record)
        return record

    def _append(self, line: bytes, event: str) -> None:
        """Write ``line`` whole or not at all: a failed write (ENOSPC, EFBIG) is cut back to
        the last complete line, so the journal stays parseable and the run resumable."""
        assert self._fd is not None, "the journal is closed"
        start = os.fstat(self._fd).st_size
        try:
            view = memoryview(line)
            while view:  # unbuffered: a short write (the limit reached mid-line) is seen
                view = view[os.write(self._fd, view):]
            os.fsync(self._fd)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, start)  # shrinking needs no space
            except OSError:
                pass
            what = f" ({event} event)" if event else ""
            resume = (f", then resume: `kernelopt run PATH --run-id {self.path.parent.name}`"
                      if self.path.parent.parent.name == "runs" else "")
            self.failed = JournalWriteError(
                f"cannot write the journal {self.path}{what}: {exc.strerror or exc} (errno "
                f"{exc.errno}); stopped here, the journal intact up to its last complete event",
                hint=f"free space on {self.path.parent} (or raise the file-size limit){resume}")
            _FAILED[self.path.resolve()] = self.failed
            raise self.failed from exc

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _last_byte(path: Path) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1)


def read(path: Path) -> list[dict[str, Any]]:
    """All events; a torn last line (the process was killed mid-write) is skipped."""
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def _first_record(path: Path) -> dict[str, Any]:
    """The journal's first line alone ({} when unreadable): history reads it for every run."""
    try:
        with open(path, encoding="utf-8") as fh:
            record = json.loads(fh.readline())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def started(path: Path) -> float:
    """When the journal's first record was written (its run's start); 0.0 when unreadable."""
    t = _first_record(path).get("t", 0.0)
    return float(t) if isinstance(t, (int, float)) else 0.0


def header(path: Path) -> events.Run | None:
    """The run's header (its first record), None when it has none."""
    return events.first([_first_record(path)], events.Run)


def complete(path: Path) -> list[dict[str, Any]]:
    """``read``, for a report: raises the error a write of this journal met in this process
    (the run stopped on it: no report is written over an incomplete journal)."""
    if (failed := failure(path)) is not None:
        raise failed
    return read(path)


# a resumed run's earlier attempts: what it ends with is decided again, not kept; so are the
# profiles (each attempt profiles its baseline again: a report would list it twice)
_SUPERSEDED = {"verdict", "end", "error", "interrupted", "search_end", "confirm_round",
               "profile", "model_check"}


def effective(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events a report reads when the run was resumed (kernelopt_core.resume): before each
    ``resumed`` event, only the candidates it kept (completed ones) and what is not an ending
    (verdict, final gates, end) count; a ``resume_diverged`` event drops the candidates the
    resumed run evaluated again."""
    out: list[dict[str, Any]] = []
    for event in records:
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


def attempt_seconds(records: list[dict[str, Any]]) -> tuple[float, float]:
    """A run's seconds over all its attempts (a resumed run's killed ones too), from the
    records' times: each attempt's span, from its first record (the header or `resumed`) to
    its last; and each attempt's search, from its `search_start` to its `search_end` (the
    final gates are not the search's) or to its last record when it was killed searching."""
    if not records:
        return 0.0, 0.0
    spent, first = 0.0, records[0]["t"]
    for before, record in zip(records, records[1:], strict=False):
        if record.get("event") == "resumed":
            spent += before["t"] - first
            first = record["t"]
    spent += records[-1]["t"] - first
    searched, since = 0.0, None
    for before, record in zip(records, [*records[1:], {"event": "resumed"}], strict=True):
        kind = record.get("event")
        if kind == "search_start":
            since = record["t"]
        elif kind in ("search_end", "resumed") and since is not None:
            searched += (record if kind == "search_end" else before)["t"] - since
            since = None
    return spent, searched
