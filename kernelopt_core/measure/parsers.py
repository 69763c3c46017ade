"""Bench-output parsers (docs/descriptor.md). A bench prints one time per invocation.

* ``json``: a line holding a JSON object with ``time_ms`` (ours:
  ``{"kernelopt_bench": 1, "time_ms": 0.412, "shape": "f32[2048,2048]", "bytes": 33554432}``);
  exactly one such line.
* ``csv``: a header line naming the ``column`` (default ``median_ms``); the first data row after it.
* ``regex``: the group named ``time`` of the one match is the time, in ``unit``, else its
  first group other than the named ``checksum`` and ``shape``; those optional named groups,
  ``checksum`` (a number) and ``shape``, are kept as a JSON bench's keys.

One time per invocation, so a second time line is an error, not a choice: the code under test
shares the bench's stdout and could otherwise print a forged time the parser would believe.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from typing import Any

import attrs

from kernelopt_core.errors import BenchParseError
from kernelopt_core.target import BenchSpec

UNIT_TO_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@attrs.frozen
class BenchLine:
    """The line a bench prints for the core (``BenchSpec(format="json")``), as a plugin's child
    side writes it (``print(BenchLine(...).to_json())``): the same names the parser reads, so the
    pinned case is ``shape`` on every backend's line and in the journal."""

    time_ms: float  # the bench's one time
    shape: str | None = None  # the case timed (a pinned case's name, a tensor's shape)
    bytes: int | None = None  # what one call moves, for the roofline gate
    # the bench's own notes (its windows, GB/s...), scalars, kept in the journal
    extra: dict[str, Any] = attrs.field(factory=dict)
    # what the shape gate compares with the baseline's: a number computed from the timed
    # calls' outputs ("nan" when they disagree)
    checksum: float | str | None = None
    timer: str | None = None  # how the time was taken (cuda_event, interpreter...)
    interpreted: bool | None = None  # True: an interpreter's time, never a device speedup
    cache_flushed: bool | None = None  # True: the cache was flushed between timed calls

    def to_json(self) -> str:
        fields = {"shape": self.shape, "bytes": self.bytes if self.bytes else None,
                  "checksum": self.checksum, "timer": self.timer,
                  "interpreted": self.interpreted, "cache_flushed": self.cache_flushed}
        # the notes first: none of them can stand in for the time, the case or the bytes
        return json.dumps({**self.extra, "kernelopt_bench": 1, "time_ms": self.time_ms,
                           **{k: v for k, v in fields.items() if v is not None}})


@attrs.frozen
class BenchReading:
    """One bench reading: its time, and what else its line reported, read through the typed
    fields of BenchLine (``reading.shape``, ``.bytes``, ``.checksum``...)."""

    time_ms: float  # the bench's one time
    # everything else its line reported (shape, bytes, checksum...), as reported: the journal's
    extra: dict[str, Any] = attrs.field(factory=dict)

    @property
    def shape(self) -> str | None:
        """The case timed, as text; None when not reported."""
        value = self.extra.get("shape")
        return str(value) if value else None

    @property
    def bytes(self) -> int | float | None:
        """What one call moves, as reported (a number, or digits); None when not reported, 0
        or not a number."""
        value = self.extra.get("bytes")
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        return value if isinstance(value, int | float) and not isinstance(value, bool) \
            and value else None

    @property
    def checksum(self) -> float | str | None:
        """The checksum of the timed calls' outputs, as reported (a number, or "nan")."""
        value: float | str | None = self.extra.get("checksum")
        return value

    @property
    def timer(self) -> str | None:
        """How the time was taken, as reported."""
        value: str | None = self.extra.get("timer")
        return value

    @property
    def interpreted(self) -> bool:
        """An interpreter's time (never a device speedup)."""
        return bool(self.extra.get("interpreted"))

    @property
    def cache_flushed(self) -> bool:
        """The bench flushed the cache between timed calls (reported as true)."""
        return self.extra.get("cache_flushed") is True


def _fail(command: str, message: str, line: str | None = None) -> BenchParseError:
    where = f"; offending line: {line!r}" if line is not None else ""
    return BenchParseError(
        f"bench output of `{command}` did not parse: {message}{where}",
        hint="make the bench print one time per invocation in the declared format "
        "(docs/descriptor.md, 'Bench output')",
    )


def _positive(value: float, command: str, line: str) -> float:
    if not math.isfinite(value) or value <= 0:
        raise _fail(command, f"time {value!r} is not a positive finite number", line)
    return value


def json_objects(text: str) -> list[tuple[dict[str, Any], str]]:
    """Every line of ``text`` that is one JSON object, parsed, with the line."""
    found: list[tuple[dict[str, Any], str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("{"):
            try:
                obj = json.loads(stripped)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                found.append((obj, stripped))
    return found


def json_time_lines(text: str) -> tuple[list[tuple[dict[str, Any], str]], list[tuple[str, str]]]:
    """The JSON object lines of ``text`` holding ``time_ms``, and the lines that mention
    ``time_ms`` but are not valid JSON (with the decoder's message). Shared by the bench parser
    and the engine gate, which each decide what one or many of them mean."""
    found: list[tuple[dict[str, Any], str]] = []
    invalid: list[tuple[str, str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("{"):
            continue
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as exc:
            if "time_ms" in stripped:
                invalid.append((stripped, exc.msg))
            continue
        if isinstance(obj, dict) and "time_ms" in obj:
            found.append((obj, stripped))
    return found, invalid


def parse(spec: BenchSpec, stdout: str, command: str) -> BenchReading:
    text = ANSI.sub("", stdout)
    unit = UNIT_TO_MS.get(spec.unit)
    if unit is None:
        raise _fail(command, f"unknown unit {spec.unit!r} (ns, us, ms, s)")
    if spec.format == "json":
        found, invalid = json_time_lines(text)
        if invalid:
            raise _fail(command, f"invalid JSON ({invalid[0][1]})", invalid[0][0])
        if not found:
            raise _fail(command, 'no JSON line with a "time_ms" field')
        if len(found) > 1:
            raise _fail(command, f'{len(found)} JSON lines with "time_ms": a bench prints '
                        "exactly one per invocation", found[1][1])
        [(obj, line)] = found
        try:
            value = float(obj["time_ms"])
        except (TypeError, ValueError) as exc:
            raise _fail(command, '"time_ms" is not a number', line) from exc
        extra = {k: v for k, v in obj.items() if k not in ("time_ms", "kernelopt_bench")}
        return BenchReading(_positive(value, command, line), extra)
    if spec.format == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        for i, row in enumerate(rows):
            cells = [c.strip() for c in row]
            if spec.column in cells:
                col = cells.index(spec.column)
                for data in rows[i + 1 :]:
                    if len(data) > col and data[col].strip():
                        try:
                            value = float(data[col]) * unit
                        except ValueError as exc:
                            raise _fail(command, f"{spec.column} is not a number", ",".join(data)) from exc
                        return BenchReading(_positive(value, command, ",".join(data)))
                raise _fail(command, f"CSV column {spec.column!r} has no data row")
        raise _fail(command, f"no CSV header with column {spec.column!r}")
    if spec.format == "regex":
        matches = list(re.finditer(spec.regex, text, re.MULTILINE))
        if not matches:
            raise _fail(command, f"regex {spec.regex!r} matched nothing")
        if len(matches) > 1:
            raise _fail(command, f"regex {spec.regex!r} matched {len(matches)} times: a bench "
                        "prints exactly one time per invocation", matches[1].group(0))
        match = matches[0]
        line = text[text.rfind("\n", 0, match.start()) + 1 : text.find("\n", match.end())]
        named = match.re.groupindex
        # the group named `time`, else the first group that is not `checksum` or `shape`
        # (unnamed, or named otherwise: `(?P<ms>...)`)
        kept_groups = {named[n] for n in ("checksum", "shape") if n in named}
        plain = [i for i in range(1, match.re.groups + 1) if i not in kept_groups]
        try:
            value = float(match.group(named["time"] if "time" in named else plain[0])) * unit
        except (IndexError, ValueError, TypeError) as exc:
            raise _fail(command, "the regex's time group is not a number", line) from exc
        kept: dict[str, Any] = {}
        if "checksum" in named and match.group("checksum") is not None:
            try:  # what the reward-hack checks compare, as a JSON bench's "checksum"
                kept["checksum"] = float(match.group("checksum"))
            except ValueError as exc:
                raise _fail(command, "the regex's checksum group is not a number", line) from exc
        if "shape" in named and match.group("shape"):
            kept["shape"] = match.group("shape")
        return BenchReading(_positive(value, command, line), kept)
    raise _fail(command, f"unknown bench format {spec.format!r} (json, csv, regex)")
