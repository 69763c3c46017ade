"""The journal's events: one attrs class per kind the core writes (docs/journal.md says what
each means; tests/test_docs_journal.py keeps the two the same).

The core writes its events as these classes (``Journal.record``), and a ``Journal.write`` of a
core kind by name is built through its class too, so a key the class does not know, or a
required one left out, fails where it is written, not in a reader. Reports and resume read
them back with ``of`` (or ``parse``). A key whose field is marked optional is left out of the
record when it is None. Within schema 1 a kind's keys are only ever added, and an added one is
optional: a reader then still parses an older journal's records (``parse`` returns None for a
record without a required key). A plugin's own kinds (``EventLog.write("my_kind", ...)``) are not
listed here and are written as given.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import attrs

from kernelopt_core.events import run, timed
from kernelopt_core.events.base import KINDS, E, Event, optional
from kernelopt_core.events.run import (
    Baseline,
    Best,
    Built,
    Candidate,
    CandidateResult,
    CheckEvidence,
    Config,
    ConfirmRound,
    Duplicate,
    End,
    Gate,
    GateWarning,
    Interrupted,
    KnobProbe,
    Knobs,
    ModelCheck,
    PlannerError,
    Profile,
    Resumed,
    ResumeDiverged,
    Run,
    RunError,
    SearchEnd,
    SearchStart,
    Stage,
    Verdict,
    WarmBuild,
    Workspace,
    WorkspaceAcquired,
    WorkspaceWait,
)
from kernelopt_core.events.timed import (
    Bench,
    Campaign,
    CampaignResumed,
    CompiledAhead,
    Experience,
    Job,
    LLMCall,
    Screening,
    SelftestCalibration,
    SelftestDecision,
    Sweep,
    WorkerRequest,
    WorkerRetired,
    WorkerStart,
)

__all__ = [
    "KINDS", "Event", "optional", "build", "parse", "of", "first", "last", "Baseline", "Bench",
    "Best", "Built", "Campaign", "CampaignResumed", "Candidate", "CandidateResult", "CheckEvidence",
    "CompiledAhead", "Config", "ConfirmRound", "Duplicate", "End", "Experience", "Gate",
    "GateWarning", "Interrupted", "Job", "KnobProbe", "Knobs", "LLMCall", "ModelCheck",
    "PlannerError", "Profile", "ResumeDiverged", "Resumed", "Run", "RunError", "Screening",
    "SearchEnd", "SearchStart", "SelftestCalibration", "SelftestDecision", "Stage", "Sweep",
    "Verdict", "WarmBuild", "WorkerRequest", "WorkerRetired", "WorkerStart", "Workspace",
    "WorkspaceAcquired", "WorkspaceWait",
]

for _cls in (c for m in (run, timed) for c in vars(m).values()):
    if isinstance(_cls, type) and issubclass(_cls, Event) and _cls.EVENT:
        assert KINDS.setdefault(_cls.EVENT, _cls) is _cls, f"two classes of kind {_cls.EVENT}"
_KEYS = {kind: frozenset(f.name for f in attrs.fields(cls)) for kind, cls in KINDS.items()}


def build(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` checked against ``kind``'s class when it is a core kind (TypeError on a key
    the class does not know or a required one missing); a plugin's own kind as given."""
    cls = KINDS.get(kind)
    return cls(**data).data() if cls is not None else data


def parse(record: dict[str, Any]) -> Event | None:
    """The event a journal record holds; None for a plugin's kind, or a record without a
    key its class requires (an older or a torn journal). Keys the class does not know (a
    newer journal's) are ignored."""
    kind = str(record.get("event"))
    cls = KINDS.get(kind)
    if cls is None:
        return None
    try:
        return cls(**{k: v for k, v in record.items() if k in _KEYS[kind]})
    except TypeError:
        return None


def _matching(records: Iterable[dict[str, Any]], cls: type[E]) -> Iterator[E]:
    for record in records:
        if record.get("event") == cls.EVENT and isinstance(event := parse(record), cls):
            yield event


def of(records: Iterable[dict[str, Any]], cls: type[E]) -> list[E]:
    """The records of ``cls``'s kind, as ``cls``, in journal order."""
    return list(_matching(records, cls))


def first(records: Iterable[dict[str, Any]], cls: type[E]) -> E | None:
    """The first record of ``cls``'s kind, as ``cls``; the rest are not parsed."""
    return next(_matching(records, cls), None)


def last(records: Sequence[dict[str, Any]], cls: type[E]) -> E | None:
    """The last record of ``cls``'s kind, as ``cls``; the ones before it are not parsed."""
    return first(reversed(records), cls)
