"""What ``test-backend-ops`` prints, read: its perf lines (``SOFT_MAX(...): N runs - X us/run -
...``) and test lines, the case a bench times (``choose``: the heaviest, ties by name) and the
one JSON line the core reads of it (``bench_line``). tbo.py, the wrapper, runs the tool."""

from __future__ import annotations

import re

import attrs

from kernelopt_core.api import ANSI, BenchLine
from kernelopt_llamacpp.case_bytes import case_bytes

CASE_LINE = re.compile(r"^\s*(?P<op>[A-Z0-9_]+)\((?P<params>.*)\):\s+(?P<rest>.*?)\s*$")
PERF_REST = re.compile(r"^(?P<runs>\d+) runs -\s+(?P<us>[0-9.]+) us/run -\s+(?P<size>.*)$")
KB = re.compile(r"(\d+) kB/run")


@attrs.frozen
class PerfCase:
    op: str
    params: str
    runs: int
    us: float
    kb: int | None

    @property
    def name(self) -> str:
        return f"{self.op}({self.params})"


@attrs.frozen
class TestResults:
    ok: tuple[str, ...]
    failed: tuple[str, ...]
    unsupported: tuple[str, ...]


def strip(text: str) -> str:
    return ANSI.sub("", text)


def parse_perf(text: str) -> list[PerfCase]:
    cases = []
    for line in strip(text).splitlines():
        m = CASE_LINE.match(line)
        if not m:
            continue
        p = PERF_REST.match(m.group("rest"))
        if not p:
            continue
        kb = KB.search(p.group("size"))
        cases.append(PerfCase(m.group("op"), m.group("params"), int(p.group("runs")),
                              float(p.group("us")), int(kb.group(1)) if kb else None))
    return cases


def parse_test(text: str) -> TestResults:
    ok, failed, unsupported = [], [], []
    for line in strip(text).splitlines():
        m = CASE_LINE.match(line)
        if not m:
            continue
        name, rest = f"{m.group('op')}({m.group('params')})", m.group("rest")
        if rest.endswith("OK"):
            ok.append(name)
        elif rest.endswith("FAIL"):
            failed.append(name)
        elif rest.startswith("not supported"):
            unsupported.append(name)
    return TestResults(tuple(ok), tuple(failed), tuple(unsupported))


def case_name(op: str, case: str) -> str:
    """``--case`` may be the full case string or only its params."""
    case = case.strip()
    return case if case.startswith(f"{op}(") else f"{op}({case})"


TIE = 0.05  # us/run readings this close are not told apart by one perf run


def match_text(match: tuple[str, ...]) -> str:
    """The model's values a pinned case must print: ``ne=[4096,512,1,1]``, ``m=32000,n=1``."""
    return ",".join(match)


def prints_all(params: str, match: tuple[str, ...]) -> bool:
    """Whether a case's params (``type=f32,ne=[4096,512,1,1],v=0``) hold every ``name=value``."""
    from kernelopt_llamacpp.perfcases import split_top

    return set(match) <= set(split_top(params))


def choose(cases: list[PerfCase], op: str, wanted: str | None = None,
           checkable: tuple[str, ...] = (), match: tuple[str, ...] | None = None) -> PerfCase | None:
    """The pinned case: ``wanted`` if given (full string or params), else the largest us/run
    among the cases in ``checkable`` (the test set's), else the largest us/run of all; of
    cases within ``TIE`` of the largest, the first by name. ``match``: only cases that print
    the model's node's values (``ne=[4096,512,1,1]``: perfcases.Written.match)."""
    mine = [c for c in cases if c.op == op]
    if wanted:
        name = case_name(op, wanted)
        return next((c for c in mine if c.name == name), None)
    if match is not None:
        mine = [c for c in mine if prints_all(c.params, match)]
    pool = [c for c in mine if c.name in checkable] or mine
    if not pool:
        return None
    # cases within TIE of the heaviest are one measurement's noise apart (ROPE has 12, and H200
    # runs pinned different ones): among them the choice is by the case's name, not by this
    # run's reading. Not by kB/run: the tool's figure for some ROPE cases implies ~7 TB/s
    heaviest = max(c.us for c in pool)
    return min((c for c in pool if c.us >= heaviest * (1 - TIE)), key=lambda c: c.name)


def bench_line(timed: PerfCase) -> str:
    """The one line the core reads (``BenchSpec(format="json")``): the pinned case's time, the
    case itself as the shape timed, and the bytes it moves (for the roofline gate): the tool's
    kB/run, else, where it prints FLOPs (MUL_MAT), the least its operands and output take."""
    nbytes = timed.kb * 1024 if timed.kb else case_bytes(timed.op, timed.params)
    return BenchLine(timed.us / 1e3, timed.name, nbytes).to_json()


UNDEFINED = re.compile(r"symbol lookup error: .*?undefined symbol: (\S+)")


def left_out_problem(output: str) -> str | None:
    """The loader stopped the tool at a call into code its build left out: an op's slim build
    (slim.py) reached a left-out file after all, or the loader binds at load (LD_BIND_NOW)."""
    found = UNDEFINED.search(output)
    if found is None:
        return None
    return (f"test-backend-ops called code its build left out (the loader: undefined symbol "
            f"{found.group(1)}): an op's build leaves out ggml-cuda's matrix multiplications "
            "(mmq/mmf/mmvq/mmvf/mmid.cu and the mmq, mmf and fattn template instances) unless "
            "the op is MUL_MAT, MUL_MAT_ID or FLASH_ATTN_EXT, and binds calls into them only "
            "when made (LD_BIND_NOW set in the environment binds them all at load: unset it); "
            "rerun with --full-build ([llamacpp] full_build = true)")
