"""What a backend reports: targets, knobs, commands and the trees they run in."""

from __future__ import annotations

import numbers
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

# Every record checks its fields' types when it is made (issue 55): a plugin's wrong value
# (a string where a tuple of paths belongs: tuple("ab") is ("a", "b")) fails at the plugin's
# line, named, never later inside the core. A list is taken for a tuple.


def _tuple(value: Any) -> Any:
    """A list, a generator or another iterable of items as a tuple; a string (one path, not
    its letters), bytes or a mapping stay as they are for the validator to refuse."""
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping, tuple)):
        return tuple(value)
    return value


def _whole(value: Any) -> Any:
    """A whole number of any integer type (numpy's too) or an integral float as an int."""
    if isinstance(value, bool):
        return value  # refused by the validator: True is no count
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _real(value: Any) -> Any:
    """A number of any real type (numpy's float32 too) as a float; ints stay ints."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, int, float)):
        return int(value) if isinstance(value, numbers.Integral) else float(value)
    return value


def _mapping(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) and not isinstance(value, dict) else value


def _choice(*allowed: str) -> Any:
    def check(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
        if value not in allowed:
            raise ValueError(f"{type(inst).__name__}.{attribute.name} must be one of "
                             f"{', '.join(allowed)}, got {_describe(value)}")
    return check


def _unit(value: Any) -> Any:
    return "us" if value in ("µs", "μs") else value  # the micro sign and the Greek mu


def _describe(value: Any) -> str:
    shown = repr(value)
    return f"{type(value).__name__} {shown if len(shown) <= 60 else shown[:57] + '...'}"


def _strings(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not (isinstance(value, tuple) and all(isinstance(v, str) for v in value)):
        one = f" (one path: ({value!r},))" if isinstance(value, str) else ""
        raise TypeError(f"{type(inst).__name__}.{attribute.name} must be a tuple of strings, got "
                        f"{_describe(value)}{one}")


def _of(*types: type, optional: bool = False) -> Any:
    """A validator: an instance of ``types`` (bool is never taken for a number), or None."""
    def check(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
        if value is None and optional:
            return
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            names = " or ".join(t.__name__ for t in types) + (" or None" if optional else "")
            raise TypeError(f"{type(inst).__name__}.{attribute.name} must be {names}, got "
                            f"{_describe(value)}")
    return check


def _items(key: type, item: type) -> Any:
    def check(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
        if not (isinstance(value, dict) and all(isinstance(k, key) and isinstance(v, item)
                                                for k, v in value.items())):
            raise TypeError(f"{type(inst).__name__}.{attribute.name} must be a dict of "
                            f"{key.__name__} -> {item.__name__}, got {_describe(value)}")
    return check


def _records(kind: type) -> Any:
    def check(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
        if not (isinstance(value, tuple) and all(isinstance(v, kind) for v in value)):
            raise TypeError(f"{type(inst).__name__}.{attribute.name} must be a tuple of "
                            f"{kind.__name__}, got {_describe(value)}")
    return check


def _pairs(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not (isinstance(value, tuple) and all(
            isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, str) for x in v) for v in value)):
        raise TypeError(f"{type(inst).__name__}.{attribute.name} must be a tuple of (file, pattern) "
                        f"string pairs, got {_describe(value)}")


def _condition(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not (isinstance(value, tuple) and len(value) in (0, 2) and all(isinstance(x, str) for x in value)):
        raise TypeError(f"{type(inst).__name__}.{attribute.name} must be () or a (knob, value) "
                        f"pair of strings, got {_describe(value)}")


def _path(value: Any) -> Any:
    return Path(value) if isinstance(value, (str, os.PathLike)) and not isinstance(value, Path) \
        else value


@attrs.frozen
class Command:
    """A child process the core may spawn. Backends describe; only process.py spawns."""

    argv: tuple[str, ...] = attrs.field(converter=_tuple, validator=_strings)  # no shell
    cwd: Path = attrs.field(converter=_path, validator=_of(Path))
    # added to kernelopt's environment
    env: dict[str, str] = attrs.field(factory=dict, converter=_mapping, validator=_items(str, str))
    # then the whole process group is killed
    timeout_s: float = attrs.field(default=600.0, converter=_real, validator=_of(int, float))
    label: str = attrs.field(default="", validator=_of(str))  # how logs and errors name it

    def __attrs_post_init__(self) -> None:
        if not self.argv:
            raise ValueError("Command.argv is empty: it needs at least the program")

    def display(self) -> str:
        import shlex

        return shlex.join(self.argv)


@attrs.frozen
class Knob:
    """A tunable value in an editable file.

    ``pattern`` is a regular expression (multiline) whose first group captures the value; the
    tuner rewrites that group, and every later group named ``mirror…`` (``(?P<mirror>...)``: a
    block size and the template argument that must equal it). ``values`` are the candidates,
    as source text.

    ``geometry`` (optional) says what the value is in the launch ``launch`` (any name shared by
    the knobs of one kernel launch): ``"elements"``, a block size in elements along one axis of
    a program, or ``"warps"``, warps per program. Where a launch has both, the tuner's sample
    leaves out configurations with more threads (32 per warp) than elements per program: they
    only idle or repeat work.

    ``also`` (optional): other places, as ``(file, pattern)``, that hold the same value and
    must change with it (a block size defined in a header and asserted, or clamped to, in the
    kernel's file); each pattern matches once, its first group and mirror groups are written.

    ``when`` (optional): ``(knob, value)``, this knob matters only while that other knob of the
    target (itself unconditional) holds that value, one of its values: a launch keyword of one
    branch of a switch. Where the condition fails the tuner holds the knob at the value its
    search started from (the baseline's, at first), so no two configurations it screens run
    the same code.
    """

    name: str = attrs.field(validator=_of(str))  # as shown and journaled (a #define's name)
    # the editable file holding it, relative to the target's root
    file: str = attrs.field(validator=_of(str))
    values: tuple[str, ...] = attrs.field(converter=_tuple, validator=_strings)  # as source text
    pattern: str = attrs.field(validator=_of(str))  # its first group is the value (multiline)
    # "elements" | "warps" | "": what the value is in its launch
    geometry: str = attrs.field(default="", validator=_of(str))
    launch: str = attrs.field(default="", validator=_of(str))  # shared by one launch's knobs
    # (file, pattern): other places holding the value
    also: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_tuple, validator=_pairs)
    # the largest value the tuner may grow the list to (a backend's limit: a tile no larger
    # than the problem's side); None: only the value's kind limits it (knobs.max_value)
    maximum: int | None = attrs.field(default=None, converter=_whole, validator=_of(int, optional=True))
    # (knob, value): matters only while that knob holds that value; (): always
    when: tuple[str, ...] = attrs.field(default=(), converter=_tuple, validator=_condition)

    def sites(self) -> tuple[tuple[str, str], ...]:
        """Every (file, pattern) the value is written to, the knob's own first."""
        return ((self.file, self.pattern), *self.also)


@attrs.frozen
class Tree:
    """One source tree and its build directory: the baseline's or the candidate's."""

    role: str = attrs.field(validator=_of(str))  # "baseline" | "candidate"
    # the tree's copy of the target's root (the workspace's, never the user's)
    src: Path = attrs.field(converter=_path, validator=_of(Path))
    build: Path = attrs.field(converter=_path, validator=_of(Path))  # its build directory


@attrs.frozen
class BenchSpec:
    """How to read a bench's output (docs/descriptor.md): one time per invocation."""

    format: str = attrs.field(default="json", validator=_choice("json", "csv", "regex"))
    column: str = attrs.field(default="median_ms", validator=_of(str))  # csv: the time's column
    # regex: the group named time, else the first other than checksum and shape
    regex: str = attrs.field(default="", validator=_of(str))
    # unit of the csv/regex value
    unit: str = attrs.field(default="ms", converter=_unit, validator=_choice("ns", "us", "ms", "s"))


@attrs.frozen
class Target:
    """One optimizable kernel (or group of files) as a backend reports it.

    Paths in ``editable``, ``context`` and ``contract`` are relative to ``root``, the directory
    the workspace snapshots.
    """

    backend: str = attrs.field(validator=_of(str))  # the backend's name
    # the target's name, unique among the backend's targets at one path
    name: str = attrs.field(validator=_of(str))
    root: Path = attrs.field(converter=_path, validator=_of(Path))  # what the workspace snapshots
    # the files a candidate may change
    editable: tuple[str, ...] = attrs.field(converter=_tuple, validator=_strings)
    # read-only files a planner is shown (headers, callers)
    context: tuple[str, ...] = attrs.field(default=(), converter=_tuple, validator=_strings)
    # the test and bench: a candidate that edits one is refused
    contract: tuple[str, ...] = attrs.field(default=(), converter=_tuple, validator=_strings)
    # the timed case, as shown (a bench line's "shape" replaces it)
    shape: str = attrs.field(default="", validator=_of(str))
    # DRAM bytes per call, for the roofline (or the bench's "bytes")
    bytes_moved: int | None = attrs.field(default=None, converter=_whole, validator=_of(int, optional=True))
    # floating-point operations per call, where compute bounds it
    flops: int | None = attrs.field(default=None, converter=_whole, validator=_of(int, optional=True))
    # the tuner's; none: detected from the editable files
    knobs: tuple[Knob, ...] = attrs.field(default=(), converter=_tuple, validator=_records(Knob))
    # how to read the bench; None: none
    bench: BenchSpec | None = attrs.field(factory=BenchSpec, validator=_of(BenchSpec, optional=True))
    # the kernel's share of the engine's GPU time (Amdahl)
    time_share: float | None = attrs.field(default=None, converter=_real,
                                    validator=_of(int, float, optional=True))
    # its time per call in that program as the backend profiled it (ms): with bytes_moved, how
    # near its peak it ran there (shown beside a campaign's plan)
    profiled_ms: float | None = attrs.field(default=None, converter=_real,
                                     validator=_of(int, float, optional=True))
    # Text the backend wants shown before the run and kept in its run directory as
    # preface.txt (e.g. a model's kernel ranking).
    preface: str = attrs.field(default="", validator=_of(str))
    # cpu | cuda | hip: which peak bandwidth bounds the roofline
    device: str = attrs.field(default="cpu", validator=_of(str))
    # the descriptor's override of the measured peak
    peak_gbps: float | None = attrs.field(default=None, converter=_real,
                                    validator=_of(int, float, optional=True))
    # Contract files the backend changes in every tree of the run, the baseline's and each
    # candidate's alike (a test harness that also checks the timed case): relative path ->
    # content. Never in a candidate's diff; the user's directory is never written.
    harness: dict[str, bytes] = attrs.field(factory=dict, eq=False, repr=False,
                                            validator=_items(str, bytes))
    # Backend-private data (a parsed descriptor, an op table row...). The core never reads it.
    data: Any = attrs.field(default=None, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        by_name = {k.name: k for k in self.knobs}
        for knob in self.knobs:
            if not knob.when:
                continue
            switch = by_name.get(knob.when[0])
            where = f"knob {knob.name!r} of target {self.name!r} is conditional on {knob.when[0]!r}"
            if switch is None or switch is knob:
                raise ValueError(f"{where}, which is not another knob of the target")
            if switch.when:  # one level: the search holds a knob by its switch's own value
                raise ValueError(f"{where}, which is conditional itself (one level only)")
            if knob.when[1] not in switch.values:
                raise ValueError(f"{where} holding {knob.when[1]!r}, not one of its values "
                                 f"({', '.join(switch.values)})")
