"""The bench step: one op microbenchmark run, its pinned case read from its lines.

``python -m kernelopt_ninfer.bench_run --build DIR --target ninfer_<op>_bench --op OP --pin FILE
[--case TAG] [--args 'ARGS']``

NInfer's harness (bench/ops/ninfer_bench_common.h) prints one line per case::

    <tag>  median=   X.XX us  min=   X.XX us  p95=   X.XX us   X.X GB/s  (X.X% of 1792 GB/s roofline)

A bench may print several cases (rmsnorm: shapes × token counts), so one is **pinned**: the
``--case`` given, else the case with the largest median (the most work per call: the least
timer noise and launch overhead in the reading). The first run records the choice, every
case's median and the bench's arguments in the pin file, which every later run — baseline's
and candidates' alike — reads. Each run then prints exactly one JSON line for the core::

    {"kernelopt_bench": 1, "time_ms": median/1000, "gbps": ..., ..., "shape": tag, "bytes": GB/s × median}

(``bytes``: what the bench itself counts a call moving, for the roofline gate). The bench's own
lines go to stderr (kept in the log, never parsed by the core); a pinned tag printed twice is a
failure, not a choice (the code under test shares the bench's stdout).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core.api import ANSI, BenchLine, Command, read_pin, run_process, write_pin

LINE = re.compile(r"^(?P<tag>\S.*?)\s+median=\s*(?P<median>[0-9.]+)\s*us\s+min=\s*(?P<min>[0-9.]+)\s*us"
                  r"\s+p95=\s*(?P<p95>[0-9.]+)\s*us\s+(?P<gbps>[0-9.]+)\s*GB/s")
SKIP_LINE = re.compile(r"^\s*SKIP\b", re.M)
TIMEOUT_S = 3600.0


@attrs.frozen
class Case:
    tag: str
    median_us: float
    min_us: float
    p95_us: float
    gbps: float

    @property
    def bytes(self) -> int:
        """Bytes one call moves, as the bench counts them (its GB/s × its median)."""
        return round(self.gbps * 1e9 * self.median_us * 1e-6)


def normalize(tag: str) -> str:
    """Tags are printed padded (``%-32s``): compare them with whitespace collapsed."""
    return " ".join(tag.split())


def parse(text: str) -> list[Case]:
    cases = []
    for line in ANSI.sub("", text).splitlines():
        m = LINE.match(line.strip())
        if m:
            cases.append(Case(normalize(m.group("tag")), float(m.group("median")),
                              float(m.group("min")), float(m.group("p95")), float(m.group("gbps"))))
    return cases


def find_binary(build: Path, target: str) -> Path | None:
    """Where CMake put the executable: bench/, bin/, the build root, else anywhere below."""
    for folder in ("bench", "bin", "", "bench/ops"):
        path = build / folder / target
        if path.is_file():
            return path
    return next((p for p in sorted(build.rglob(target)) if p.is_file() and p.stat().st_mode & 0o111),
                None)


def usable_pin(path: Path, op: str, wanted: str | None, args: str) -> dict[str, Any] | None:
    """The saved pin if it answers this question: the same bench arguments and the ``--case``
    asked for, or, without one, the default choice (never a pin an earlier --case left)."""
    pin = read_pin(path, op)
    if pin is None or pin.get("args", "") != args:
        return None
    if wanted:
        return pin if pin["case"] == normalize(wanted) else None
    return None if pin.get("chosen_by") == "--case" else pin


def choose(cases: list[Case], wanted: str | None) -> Case | None:
    if wanted:
        return next((c for c in cases if c.tag == normalize(wanted)), None)
    return max(cases, key=lambda c: c.median_us, default=None)


def _say(message: str, code: int) -> int:
    print(f"kernelopt-ninfer: {message}", file=sys.stderr, flush=True)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_ninfer.bench_run")
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--target", required=True, help="the bench's CMake target")
    parser.add_argument("--op", required=True)
    parser.add_argument("--pin", required=True, type=Path)
    parser.add_argument("--case", help="the case tag to time (as printed)")
    parser.add_argument("--args", default="", help="arguments for the bench program")
    parser.add_argument("--may-pin", action="store_true",
                        help="this is the baseline's tree: it may choose the pinned case")
    a = parser.parse_args(argv)
    binary = find_binary(a.build, a.target)
    if binary is None:
        return _say(f"{a.target} is not in {a.build}: did its build succeed?", 1)
    result = run_process(Command((str(binary), *shlex.split(a.args)), binary.parent,
                                 timeout_s=TIMEOUT_S), under_test=True)
    output = result.stdout + result.stderr
    sys.stderr.write(output)  # the bench's own lines: logged, never parsed by the core
    cases = parse(result.stdout)
    if not result.ok:
        return _say(f"{a.target} failed: {result.describe()}", 1)
    if not cases:
        if SKIP_LINE.search(output):
            return _say(f"{a.target} skipped itself: nothing was timed", 3)
        return _say(f"{a.target} printed no `<tag>  median= ... us` line", 1)
    pin = usable_pin(a.pin, a.op, a.case, a.args)
    if pin is not None and pin["case"] not in {c.tag for c in cases}:
        if not a.may_pin:  # a candidate never moves the timed case (it would compare shapes)
            return _say(f"the pinned case {pin['case']!r} is not among the cases this tree's "
                        f"{a.target} printed", 1)
        # the baseline's bench no longer prints a default pin's case (a pin from another
        # checkout at this path): chosen again
        if a.case:
            return _say(f"--case {a.case!r} is not among {a.target}'s cases", 2)
        _say(f"the pinned case {pin['case']!r} is not among {a.target}'s cases: pinning again", 0)
        pin = None
    if pin is None and not a.may_pin:
        return _say(f"no pinned case in {a.pin}: the baseline's bench pins it first", 1)
    if pin is None:
        chosen = choose(cases, a.case)
        if chosen is None:
            known = "\n  ".join(c.tag for c in cases)
            return _say(f"--case {a.case!r} is not among {a.target}'s cases:\n  {known}", 2)
        pin = {"op": a.op, "case": chosen.tag, "args": a.args, "median_us": chosen.median_us,
               "gbps": chosen.gbps, "bytes": chosen.bytes,
               "chosen_by": "--case" if a.case else "the largest median of the bench's cases",
               "cases": [{"case": c.tag, "median_us": c.median_us} for c in cases]}
        write_pin(a.pin, pin)
        _say(f"pinned {chosen.tag!r} ({chosen.median_us} us, of {len(cases)} cases) in {a.pin}", 0)
    mine = [c for c in cases if c.tag == pin["case"]]
    if len(mine) != 1:
        return _say(f"the pinned case {pin['case']!r} was printed {len(mine)} times "
                    "(once per run is the contract)", 1)
    (case,) = mine
    # the pin's byte count: one constant of the bench, read once (each run's GB/s is rounded)
    nbytes = int(pin.get("bytes") or case.bytes)
    print(BenchLine(case.median_us / 1000.0, case.tag, nbytes if nbytes > 0 else None,
                    {"gbps": case.gbps, "min_us": case.min_us, "p95_us": case.p95_us}).to_json(),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
