"""What a backend reports: targets, knobs, commands and the trees they run in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs


@attrs.frozen
class Command:
    """A child process the core may spawn. Backends describe; only process.py spawns."""

    argv: tuple[str, ...]  # the program and its arguments (no shell)
    cwd: Path
    env: dict[str, str] = attrs.field(factory=dict)  # added to kernelopt's environment
    timeout_s: float = 600.0  # then the whole process group is killed
    label: str = ""  # how logs and errors name it

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
    """

    name: str  # as shown and journaled (a #define's name)
    file: str  # the editable file holding it, relative to the target's root
    values: tuple[str, ...]  # the candidates, as source text
    pattern: str  # its first group is the value (multiline)
    geometry: str = ""  # "elements" | "warps" | "": what the value is in its launch
    launch: str = ""  # a name shared by the knobs of one kernel launch
    also: tuple[tuple[str, str], ...] = ()  # (file, pattern): other places holding the value

    def sites(self) -> tuple[tuple[str, str], ...]:
        """Every (file, pattern) the value is written to, the knob's own first."""
        return ((self.file, self.pattern), *self.also)


@attrs.frozen
class Tree:
    """One source tree and its build directory: the baseline's or the candidate's."""

    role: str  # "baseline" | "candidate"
    src: Path  # the tree's copy of the target's root (the workspace's, never the user's)
    build: Path  # its build directory


@attrs.frozen
class BenchSpec:
    """How to read a bench's output (DESIGN.md §4): one time per invocation."""

    format: str = "json"  # json | csv | regex
    column: str = "median_ms"  # csv: the column holding the time
    regex: str = ""  # regex: first group is the time
    unit: str = "ms"  # unit of the csv/regex value: ns | us | ms | s


@attrs.frozen
class Target:
    """One optimizable kernel (or group of files) as a backend reports it.

    Paths in ``editable``, ``context`` and ``contract`` are relative to ``root``, the directory
    the workspace snapshots.
    """

    backend: str  # the backend's name
    name: str  # the target's name, unique among the backend's targets at one path
    root: Path  # the directory the workspace snapshots
    editable: tuple[str, ...]  # the files a candidate may change
    context: tuple[str, ...] = ()  # read-only files a planner is shown (headers, callers)
    contract: tuple[str, ...] = ()  # the test and bench: a candidate that edits one is refused
    shape: str = ""  # the timed case, as shown (a bench line's "shape" replaces it)
    bytes_moved: int | None = None  # DRAM bytes per call, for the roofline (or the bench's "bytes")
    flops: int | None = None  # floating-point operations per call, where compute bounds it
    knobs: tuple[Knob, ...] = ()  # the tuner's; none: detected from the editable files
    bench: BenchSpec | None = attrs.field(factory=BenchSpec)  # how to read the bench; None: none
    time_share: float | None = None  # the kernel's share of the engine's GPU time (Amdahl)
    # Text the backend wants shown before the run and kept in its run directory as
    # preface.txt (e.g. a model's kernel ranking).
    preface: str = ""
    device: str = "cpu"  # cpu | cuda | hip: which peak bandwidth bounds the roofline
    peak_gbps: float | None = None  # the descriptor's override of the measured peak
    # Contract files the backend changes in every tree of the run, the baseline's and each
    # candidate's alike (a test harness that also checks the timed case): relative path ->
    # content. Never in a candidate's diff; the user's directory is never written.
    harness: dict[str, bytes] = attrs.field(factory=dict, eq=False, repr=False)
    # Backend-private data (a parsed descriptor, an op table row...). The core never reads it.
    data: Any = attrs.field(default=None, eq=False, repr=False)
