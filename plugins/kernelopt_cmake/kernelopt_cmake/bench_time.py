"""The time a bench prints in its own words, read by ``kernelopt init`` as a ``bench_regex``.

Every number with a time unit (ns, us, µs, ms, s, msec...) in the output is a candidate; what
names it decides which one is the bench's time: a label before it (``median = 3.1 ms``,
``elapsed: 6.95 ms``, ``took 1.2 s``) or a note after it (``0.42 ms/iter``, ``6.95 ms (best
of 15)``). The median is preferred, then a mean or a per-iteration time, then a plain time
(``time``, ``elapsed``...), then a minimum, then any other label; a spread or a maximum is no
time. Two candidates of the best kind are the user's call (None). The regex written for the
one taken is applied to the output as the run's parser applies it (one match, the same
number) before it is proposed; a checksum printed on the same line (``checksum 0.190``) is
read by it too, as the run's named group ``checksum``.
"""

from __future__ import annotations

import re

import attrs

from kernelopt_core.api import ANSI

_NUMBER = r"[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?"
# the number group a written regex holds: any later reading (``6.95``, ``12``, ``.5``, ``1e-3``)
NUMBER_GROUP = r"([0-9.]+(?:[eE][-+]?[0-9]+)?)"
_UNITS = {"ns": "ns", "nsec": "ns", "nanosecond": "ns", "nanoseconds": "ns",
          "us": "us", "µs": "us", "μs": "us", "usec": "us", "microsecond": "us",
          "microseconds": "us", "ms": "ms", "msec": "ms", "millisecond": "ms",
          "milliseconds": "ms", "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s"}
_QUANTITY = re.compile(rf"(?<![\w.])({_NUMBER})[ \t]*("
                       + "|".join(sorted(_UNITS, key=len, reverse=True)) + r")(?!\w)", re.I)
# the word just before the number, with what separates them (`elapsed: `, `time = `, `took `)
_LABEL = re.compile(r"\b([A-Za-z][A-Za-z0-9_]*)([ \t]*[:=]?[ \t]*)$")
# a note just after the unit that names the time (`/iter`, `per call`, `(best of 15)`)
_PER = re.compile(r"[ \t]*(?:/|per\b)[ \t]*(iter(?:ation)?s?|it|call|run|launch|rep)\b", re.I)
_OF = re.compile(r"[ \t]*\([ \t]*(median|mean|avg|average|min|best)[ \t]+of[ \t]+[0-9]+[ \t]*\)",
                 re.I)
_CHECKSUM = re.compile(r"\b(checksum|cksum)([ \t]*[:=]?[ \t]*)([-+]?" + _NUMBER + r"|nan|inf)"
                       r"(?![\w.])", re.I)
# lower is preferred; a label not listed ranks 4, no label at all 5
_RANK = {"median": 0, "p50": 0, "mean": 1, "avg": 1, "average": 1, "per": 1,
         "time": 2, "elapsed": 2, "took": 2, "duration": 2, "latency": 2, "kernel": 2,
         "min": 3, "minimum": 3, "best": 3, "fastest": 3}
NOT_A_TIME = {"max", "maximum", "worst", "std", "stddev", "stdev", "sd", "dev", "sigma", "var",
              "variance", "spread", "jitter", "warmup", "timeout", "budget", "limit", "compile",
              "overhead"}


@attrs.frozen
class HumanTime:
    """The bench_regex and bench_unit for a bench's own time line, and what they read."""

    regex: str
    unit: str  # ns | us | ms | s
    value: str  # the number as printed
    label: str  # what named it: "elapsed", "/iter", "(best of 15)"; "" for a bare number
    checksum: str | None = None  # the checksum the line printed, read by the same regex


@attrs.frozen
class _Candidate:
    match: re.Match[str]
    line: str  # the whole line it is on
    start: int  # where the number starts in its line
    label: re.Match[str] | None
    note: re.Match[str] | None  # `/iter`, `(best of 15)` after the unit
    rank: int

    @property
    def said(self) -> str:
        """What named it, for the user."""
        if self.label is not None:
            return self.label.group(1)
        return self.note.group(0).strip() if self.note is not None else ""


def _candidates(text: str) -> list[_Candidate]:
    found = []
    for m in _QUANTITY.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end())
        line = text[line_start:len(text) if line_end < 0 else line_end]
        start, end = m.start() - line_start, m.end() - line_start
        label = _LABEL.search(line[:start])
        note = _PER.match(line, end) or _OF.match(line, end)
        words = [label.group(1).lower()] if label else []
        if note is not None:
            words.append("per" if note.re is _PER else note.group(1).lower())
        if any(w in NOT_A_TIME for w in words):
            continue
        ranks = [_RANK.get(w, 4) for w in words]
        found.append(_Candidate(m, line, start, label, note, min(ranks, default=5)))
    return found


def _pattern(c: _Candidate) -> str:
    """A regex for the candidate's time: its label and separator (else the note after the unit,
    else the bare number), the number as group 1, the unit as printed."""
    unit = re.escape(c.match.group(2)) + r"\b"
    if c.label is not None:
        sep = c.label.group(2).strip()
        head = r"\b" + re.escape(c.label.group(1)) + (rf"\s*{re.escape(sep)}\s*" if sep else r"\s*")
        return head + NUMBER_GROUP + r"\s*" + unit
    tail = ""
    if c.note is not None:  # `ms/iter`, `ms (best of 15)`: the count may change
        tail = re.sub(r"[0-9]+", "[0-9]+", re.escape(c.note.group(0).strip()))
        tail = r"\s*" + re.sub(r"(\\ )+|\\\t", r"\\s*", tail)
    return r"(?<![\w.])" + NUMBER_GROUP + r"\s*" + unit + tail


def _with_checksum(c: _Candidate, pattern: str) -> tuple[str, str] | None:
    """The pattern that also reads the checksum printed on the candidate's line, and that
    checksum; None when the line prints none (or more than one)."""
    sums = list(_CHECKSUM.finditer(c.line))
    if len(sums) != 1:
        return None
    s = sums[0]
    sep = s.group(2).strip()
    group = (r"\b" + re.escape(s.group(1)) + (rf"\s*{re.escape(sep)}\s*" if sep else r"\s+")
             + r"(?P<checksum>[-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|nan|inf))")
    joined = pattern + ".*?" + group if s.start() > c.start else group + ".*?" + pattern
    return joined, s.group(3)


def reads(regex: str, text: str) -> tuple[str, str | None] | None:
    """What the run's parser reads from ``text`` with ``regex`` (its rules: ANSI stripped, the
    one match, the group named ``time`` else the first unnamed one, a number; the group named
    ``checksum``), as (time, checksum); None where the run would fail to parse it."""
    try:
        matches = list(re.finditer(regex, ANSI.sub("", text), re.MULTILINE))
    except re.error:
        return None
    if len(matches) != 1:
        return None
    m = matches[0]
    named = m.re.groupindex
    plain = [i for i in range(1, m.re.groups + 1) if i not in named.values()]
    if "time" not in named and not plain:
        return None
    value = m.group(named["time"] if "time" in named else plain[0])
    checksum = m.group("checksum") if "checksum" in named else None
    try:  # the parser's float(): a time must be positive, a checksum a number (nan too)
        if value is None or not float(value) > 0:
            return None
        float(checksum or 0)
    except ValueError:
        return None
    return value, checksum


def human_time(stdout: str) -> HumanTime | None:
    """The bench_regex and bench_unit for a bench whose time is one labelled number; None when
    it prints none, or two of the best kind (which of them is the time is then the user's
    call), or when the regex would not read back the number it was made for."""
    text = ANSI.sub("", stdout)
    found = _candidates(text)
    best = min((c.rank for c in found), default=None)
    chosen = [c for c in found if c.rank == best]
    if len(chosen) != 1:
        return None
    c = chosen[0]
    unit, value, pattern = _UNITS[c.match.group(2).lower()], c.match.group(1), _pattern(c)
    summed = _with_checksum(c, pattern)
    if summed is not None and reads(summed[0], text) == (value, summed[1]):
        return HumanTime(summed[0], unit, value, c.said, summed[1])
    # the run reads it with this very regex: exactly one match, the same number
    if reads(pattern, text) != (value, None):
        return None
    return HumanTime(pattern, unit, value, c.said)
