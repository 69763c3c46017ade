"""test-backend-ops: its console output, the pinned perf case, and the check/bench/shape steps.

The backend's commands run ``python -m kernelopt_llamacpp.tbo check|bench|shape ...``, which
calls the tree's own ``test-backend-ops`` and passes its output through unchanged; ``bench``
adds one JSON line (``bench_line``, what the core parses) made from the real tool's line::

      SOFT_MAX(type=f32,ne=[4096,4096,5,1],...):   3536 runs -   283.24 us/run - 655360 kB/run - 2227.83 GB/s
      {"kernelopt_bench": 1, "time_ms": 0.28324, "shape": "SOFT_MAX(type=f32,...)", "bytes": 671088640}

The wrapper exists for what the bare tool does not do:

* ``check``: ``test -o OP -b CUDA0`` exits 0 even when no case ran ("0/0 tests passed"); the
  wrapper demands at least one case OK and none FAIL, and case lines that add up to the tool's
  own count. ``--runs N`` runs the seeds' checks at once; with ``--cases FILE`` the first check
  that passes whole writes the op's case list there, and later ones split each run over
  ``--shards`` processes by it (``-o`` a list of full case strings) and fail when a listed case
  printed nothing.
* ``bench``: the **pinned case**. Unless ``--case`` names one, the first bench runs
  ``perf -o OP -b CUDA0`` once and chooses. With the harness (``--harness``: the tree's
  test-backend-ops also runs the perf cases in test mode, harness.py) it takes the largest
  ``us/run`` of all and tests that case alone; without it, it runs ``test -o OP`` and takes the
  largest among the perf cases the test set also holds, else the largest of all. Cases within
  5 % of the largest count as a tie, broken by name (the first), so that another machine's
  reading does not pin another case. The pin is
  *checkable* when the chosen case passed in test mode on the baseline (otherwise the shape gate
  cannot check the timed shape: at best matched). It is written to the pin file (JSON) that
  every later invocation, baseline's or candidate's, reads; a pin made with the harness is not
  reused without it, nor the reverse. Every timed run then executes only that case, by its
  full case string (``-o 'OP(params)'``, which the tool matches exactly — unlike ``-p``, a
  regex over the params that brackets and dots would need escaping for).
* ``shape``: ``test -o 'OP(params)'`` on the pinned case (with the harness's variable when the
  pin was made with it); the shape gate then checks exactly the timed shape.

An op with no perf cases (RMS_NORM in the vendored version, unless the harness adds one) cannot
be timed: ``bench`` says so and exits 3.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kernelopt_core.api import Command, ncu_kernels, read_pin, run_process, write_pin
from kernelopt_llamacpp.tbo_cases import read_cases, shard_filters, write_cases
from kernelopt_llamacpp.tbo_output import (  # the tool's output, read
    TestResults,
    bench_line,
    case_name,
    choose,
    left_out_problem,
    match_text,
    parse_perf,
    parse_test,
    strip,
)

EXIT_CANNOT_TIME = 3
TOOL_TIMEOUT_S = 3600.0
HARNESS_ENV = "KERNELOPT_TBO_PERF_IN_TEST"  # harness.ENV (the wrapper imports nothing else)
SEED_ENV = "KERNELOPT_TBO_SEED"  # harness.SEED_ENV: a run's inputs, the same in every build
TOOL_OUTPUT_CAP = 256 << 20  # test -o MUL_MAT prints thousands of case lines


# --------------------------------------------------------------------------- the wrapper


def _run(argv: list[str], harness: bool = False, seed: int | None = None) -> tuple[int, str]:
    # The backend's own Command bounds the whole wrapper; this bound only stops a hung tool.
    # every case line matters (the test set, a FAIL): keep the whole output, not the core's cap
    # ``harness``: test mode also holds the perf cases (harness.py), for the pinned one
    # ``seed``: the inputs a harnessed tool draws (harness.py; an unharnessed one ignores it)
    env = {HARNESS_ENV: "1"} if harness else {}
    if seed is not None:
        env[SEED_ENV] = str(seed)
    result = run_process(Command(tuple(argv), Path.cwd(), env=env, timeout_s=TOOL_TIMEOUT_S),
                         cap=TOOL_OUTPUT_CAP, under_test=True)
    output = result.stdout + result.stderr
    if result.left_running:  # the tool (the ops under test) started something that outlived it
        # the fault's words first, on a line of their own: the tool's command line is a few
        # kilobytes of case names, and shards' outputs follow this one
        return 1, (f"{output}\ntest-backend-ops left processes running after it exited "
                   f"(killed; the tool exited {result.returncode})\n")
    return result.returncode, output


def usable_pin(path: Path, op: str, wanted: str | None, harness: bool = False,
               match: tuple[str, ...] | None = None) -> dict | None:
    """The saved pin if it still answers the question: the ``--case`` asked for, or, without
    one, the default choice (never a pin an earlier ``--case`` left behind; never one chosen
    without the harness when this tree has it: the choice and its checkability differ)."""
    pin = read_pin(path, op)
    if pin is None or bool(pin.get("harness")) != harness:  # the choice and checkability differ
        return None
    if "dispatched" not in pin:  # made before pins read the case's kernels: made again
        return None
    if wanted:
        return pin if pin["case"] == case_name(op, wanted) else None
    # a pin made by another rule (an earlier --case, before the tie rule, another model's
    # shape) is made again
    return pin if pin.get("chosen_by") == chosen_by(harness, match) else None


def params_filter(match: tuple[str, ...] | None) -> list[str]:
    """``-p REGEX``: only the perf cases printing the node's values, in the order the tool prints
    its parameters (the constructor's), so a long perf list (MUL_MAT's) is not timed whole just
    to find one case. ECMAScript regex; only its special characters are escaped."""
    if not match:
        return []
    parts = [re.sub(r"([][(){}.*+?^$|\\])", r"\\\1", m) for m in match]
    return ["-p", "(^|,)" + ",(.*,)?".join(parts) + "(,|$)"]


def chosen_by(harness: bool, match: tuple[str, ...] | None = None) -> str:
    """How the default pin is chosen, as the pin file records it."""
    if match is not None:
        return f"the model's node {match_text(match)} (its heaviest node of the op; --nodes)"
    if harness:
        return ("largest us/run of all perf cases (the harness lets test mode check any; "
                "within 5 %: the first by name)")
    return ("largest us/run of the perf cases the test set also holds (else of all perf "
            "cases; within 5 %: the first by name)")


def pin_case(tool: str, op: str, backend: str, pin_path: Path, wanted: str | None,
             harness: bool = False, match: tuple[str, ...] | None = None) -> dict:
    """Choose the case (module docstring), record whether the test set covers it, save it.
    With the harness every perf case can be tested: the heaviest is chosen, then tested."""
    code, out = _run([tool, "perf", "-o", op, "-b", backend, *params_filter(match)])
    if code != 0 and (left_out := left_out_problem(out)):
        raise SystemExit(_say(left_out, 1))
    cases = parse_perf(out)
    if match and not wanted and not choose(cases, op, None, match=match):
        # a tool without -p, or one whose params print in another order: the whole list
        code, out = _run([tool, "perf", "-o", op, "-b", backend])
        cases = parse_perf(out)
    if harness:  # every perf case can be tested: the heaviest, then it alone
        chosen = choose(cases, op, wanted, match=match)
        tested = parse_test(_run([tool, "test", "-o", chosen.name, "-b", backend], True)[1]
                            if chosen else "")
    else:
        tested = parse_test(_run([tool, "test", "-o", op, "-b", backend])[1])
        chosen = choose(cases, op, wanted, tested.ok + tested.failed, match)
    if chosen is None and match is not None and not wanted:
        raise SystemExit(_say(f"no perf case of {op} prints the model's node {match_text(match)} "
                              "(the harness adds one: does this tree's test-backend-ops.cpp "
                              "carry it?)", EXIT_CANNOT_TIME))
    if chosen is None:
        if wanted:
            known = "\n  ".join(c.name for c in cases if c.op == op) or "(none)"
            raise SystemExit(_say(f"--case {wanted!r} is not among {op}'s perf cases:\n  {known}", 2))
        sys.stdout.write(out[-2000:])
        raise SystemExit(_say(
            f"{op} has no perf cases in this llama.cpp's test-backend-ops (`perf -o {op}` printed "
            f"none; exit {code}), so it cannot be timed. Its correctness can still be tested "
            "(`test-backend-ops test -o OP`). To time it, add a perf case for it to "
            "make_test_cases_perf() in tests/test-backend-ops.cpp, or pick another op.",
            EXIT_CANNOT_TIME))
    # the whole test set ran above: whether it holds the chosen case needs no third run
    pin: dict[str, Any] = {"op": op, "case": chosen.name, "params": chosen.params, "us": chosen.us,
           # checkable: it passed in test mode on the baseline (a case that fails or is not
           # supported there would fail every candidate's shape gate for nothing)
           "kb": chosen.kb, "checkable": chosen.name in tested.ok,
           "harness": harness,
           "chosen_by": "--case" if wanted else chosen_by(harness, match),
           "candidates": [{"case": c.name, "us": c.us, "kb": c.kb} for c in cases if c.op == op]}
    pin.update(dispatch_profile(tool, chosen.name, backend, pin_path.parent))
    write_pin(pin_path, pin)
    launched = ", ".join(sorted({k["function"] for k in pin["dispatched"] or ()})) or "not read"
    print(f"kernelopt-llamacpp: pinned {chosen.name} ({chosen.us} us/run, "
          f"{len(pin['candidates'])} perf cases; test set covers it: {pin['checkable']}; "
          f"kernels it launches: {launched}) in {pin_path}", file=sys.stderr)
    return pin


DISPATCH_METRICS = ("gpu__time_duration.sum,launch__grid_size,launch__block_size,"
                    "launch__registers_per_thread")
DISPATCH_LAUNCHES = 20  # the pinned case's first launches: its kernels, not their timing
DISPATCH_TIMEOUT_S = 600.0


def dispatch_profile(tool: str, case: str, backend: str, folder: Path) -> dict[str, Any]:
    """The kernels the pinned case launches (``dispatched``: names, grid, block, registers), read
    once by ncu when it is on PATH; the compile probe then drops knob values that reach none of
    them (reach.py). ``dispatched`` None (with ``dispatch_note``): not known, every knob kept."""
    from kernelopt_llamacpp.dispatch import function_name

    ncu = shutil.which("ncu")
    if ncu is None:
        return {"dispatched": None, "dispatch_note": "ncu is not on PATH: every knob is kept"}
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"dispatch-ncu-{case.split('(', 1)[0]}-{os.getpid()}.csv"  # pins at once
    argv = (ncu, "--clock-control", "none", "--csv", "--print-units", "base", "--metrics",
            DISPATCH_METRICS, "--launch-count", str(DISPATCH_LAUNCHES), "--log-file", str(log),
            tool, "perf", "-o", case, "-b", backend)
    result = run_process(Command(argv, Path.cwd(), timeout_s=DISPATCH_TIMEOUT_S, label="ncu"))
    try:
        kernels = ncu_kernels(log.read_text(errors="replace")) if result.ok else []
    except OSError:
        kernels = []
    if not kernels:
        return {"dispatched": None, "dispatch_note": f"ncu read no launch ({result.describe()}): "
                f"every knob is kept; {result.tail(300)}"}
    return {"dispatched": [
        {"kernel": k.name, "function": function_name(k.name), "launches": k.launches,
         "mean_us": round(k.mean_us, 3),
         **{key: int(k.metrics[m]) for key, m in (("block", "launch__block_size"),
                                                   ("grid", "launch__grid_size"),
                                                   ("registers", "launch__registers_per_thread"))
            if m in k.metrics}} for k in kernels]}


def _say(message: str, code: int) -> int:
    print(f"kernelopt-llamacpp: {message}", file=sys.stderr)
    return code


def cmd_check(a: argparse.Namespace) -> int:
    # -j: the tool's own parallel test workers (one backend each; results printed whole under
    # its output lock), where the tree's test-backend-ops has them (OpData.test_jobs)
    jobs = ["-j", str(a.jobs)] if a.jobs > 1 else []
    # --runs N: N independent runs (the core's seeds; each draws fresh inputs, run n seed n's
    # where the harness seeds them: harness.py) at once. One run
    # keeps only 3.4-3.8 of an H200 machine's 16 cores busy whatever its -j, so three ROPE runs at
    # once took 17.3 s, against 41-46 s one after another (bench/results/2026-12-02-h200-llamacpp).
    # --shards S: each run split over S processes by the test set's case list (--cases, written
    # by the first check that passed whole), so the idle cores take part of one run too.
    # The threads only start and wait: each spawn goes through the core's run_process.
    listed = read_cases(Path(a.cases)) if a.cases else None
    filters = shard_filters(listed, a.shards) if listed else [a.op]
    # run n draws seed n's inputs: the same in the baseline's build and every candidate's
    argvs = [([a.tool, "test", "-o", f, "-b", a.backend, *jobs], n)
             for n in range(1, a.runs + 1) for f in filters]
    with ThreadPoolExecutor(max_workers=len(argvs)) as pool:
        outs = list(pool.map(lambda job: _run(job[0], seed=job[1]), argvs))
    per_run = [outs[n * len(filters):(n + 1) * len(filters)] for n in range(a.runs)]
    results = []
    for n, parts in enumerate(per_run, 1):
        if a.runs > 1:
            print(f"--- run {n} of {a.runs} ---")
        text = "".join(out for _, out in parts)
        sys.stdout.write(text)
        r = parse_test(text)
        failed = next(((code, out) for code, out in parts if code != 0), (0, ""))
        problem = _check_problem(a, *failed, r) or _count_problem([out for _, out in parts], r)
        printed = {*r.ok, *r.failed, *r.unsupported}
        missing = [c for c in listed or () if c not in printed]
        if not problem and missing:  # a split run must still cover the whole test set
            problem = (f"{len(missing)} case(s) of the test set printed no result, e.g. "
                       f"{missing[0]}; delete {a.cases} if the test set changed")
        if problem:
            return _say(problem + (f" (run {n} of {a.runs})" if a.runs > 1 else ""), 1)
        results.append(r)
    if a.cases and listed is None:
        try:
            write_cases(Path(a.cases), [*results[0].ok, *results[0].failed, *results[0].unsupported])
        except OSError as exc:  # the check passed; only later checks lose the split
            print(f"kernelopt-llamacpp: could not write the case list {a.cases}: {exc}",
                  file=sys.stderr)
    oks = sorted({len(r.ok) for r in results})
    count = f"{oks[0]}" if len(oks) == 1 else f"{oks[0]}-{oks[-1]}"
    each = f", in each of {a.runs} runs with fresh inputs" if a.runs > 1 else ""
    if a.runs > 1 and _seeds_inputs(Path.cwd()):
        each = f", in each of {a.runs} runs, run n on seed n's uniform inputs (the same in every build)"
    split = f", each split over {len(filters)} processes" if len(filters) > 1 else ""
    print(f"kernelopt-llamacpp: {count} {a.op} cases OK on {a.backend}{each}{split} "
          "(NMSE vs the CPU backend)")
    return 0


def _seeds_inputs(tree: Path) -> bool:
    """Whether the tree's test-backend-ops.cpp reads SEED_ENV (harness.py patched it)."""
    try:
        return SEED_ENV in (tree / "tests" / "test-backend-ops.cpp").read_text(errors="replace")
    except OSError:
        return False


SUMMARY = re.compile(r"^\s*(\d+)/(\d+) tests passed", re.MULTILINE)


def _count_problem(outputs: list[str], r: TestResults) -> str | None:
    """The tool's own counts (``N/M tests passed``, one line a process) against the case lines
    read: a case the wrapper did not read would otherwise drop out of the case list and so out
    of every later split check. Tools that print no such line are not compared."""
    counts = [SUMMARY.findall(strip(out)) for out in outputs]
    if not all(counts):
        return None
    passed = sum(int(n) for found in counts for n, _ in found)
    total = sum(int(m) for found in counts for _, m in found)
    if (passed, total) != (len(r.ok), len(r.ok) + len(r.failed)):
        return (f"the tool counted {passed}/{total} tests passed, but {len(r.ok)} OK and "
                f"{len(r.failed)} FAIL case lines were read")
    return None


ERROR_LINE = re.compile(r"^error: .+$", re.MULTILINE)  # the CUDA ledger's words, for one


def _check_problem(a: argparse.Namespace, code: int, output: str, r: TestResults) -> str | None:
    if code != 0 and (left_out := left_out_problem(output)):
        return left_out
    if r.failed:
        return f"{len(r.failed)} case(s) FAIL, e.g. {r.failed[0]}"
    if not r.ok:
        return (f"no {a.op} case ran OK on {a.backend} ({len(r.unsupported)} not supported; "
                f"exit {code}): nothing was checked")
    if code != 0:  # every case passed: what made it fail is its last `error:` line, if any
        said = ERROR_LINE.findall(strip(output))
        return f"test-backend-ops exited {code}" + (f": {said[-1]}" if said else "")
    return None


def cmd_bench(a: argparse.Namespace) -> int:
    match = tuple(a.match) if a.match else None
    pin = usable_pin(Path(a.pin), a.op, a.case, a.harness, match) or \
        pin_case(a.tool, a.op, a.backend, Path(a.pin), a.case, a.harness, match)
    code, out = _run([a.tool, "perf", "-o", pin["case"], "-b", a.backend])
    sys.stdout.write(out)
    timed = [c for c in parse_perf(out) if c.name == pin["case"]]
    if len(timed) != 1:
        if code != 0 and (left_out := left_out_problem(out)):
            return _say(left_out, 1)
        return _say(f"the pinned case {pin['case']} printed {len(timed)} perf lines, not one "
                    f"(exit {code})", 1)
    print(bench_line(timed[0]))
    return code


def cmd_shape(a: argparse.Namespace) -> int:
    pin = read_pin(Path(a.pin), a.op)
    if pin is None:
        return _say(f"no pinned case in {a.pin}: the bench has not run", 2)
    code, out = _run([a.tool, "test", "-o", pin["case"], "-b", a.backend],
                     bool(pin.get("harness")))
    sys.stdout.write(out)
    r = parse_test(out)
    if pin["case"] not in r.ok or r.failed or code != 0:
        return _say(f"the timed case {pin['case']} did not pass (exit {code})", 1)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_llamacpp.tbo")
    parser.add_argument("mode", choices=("check", "bench", "shape"))
    parser.add_argument("--tool", required=True, help="path to test-backend-ops")
    parser.add_argument("--op", required=True)
    parser.add_argument("--backend", default="CUDA0")
    parser.add_argument("--pin", help="the pin file (bench, shape)")
    parser.add_argument("--case", help="the perf case to time (full string or params)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="check: the tool's parallel test workers (-j), when it has them")
    parser.add_argument("--runs", type=int, default=1,
                        help="check: independent runs at once (one per seed), each must pass")
    parser.add_argument("--shards", type=int, default=1,
                        help="check: processes per run, splitting the case list of --cases")
    parser.add_argument("--cases", help="check: the test set's case list, written by the first "
                        "check that passes whole and read by the later ones to split it")
    parser.add_argument("--harness", action="store_true",
                        help="the tree's test-backend-ops has kernelopt's harness (harness.py)")
    parser.add_argument("--match", action="append",
                        help="bench: pin a case that prints this NAME=VALUE of the model's node "
                             "(ne=[4096,512,1,1], m=32000); repeated: all of them")
    a = parser.parse_args(argv)
    if a.match and not all(re.fullmatch(r"\w+=\S+", m) for m in a.match):
        return _say(f"--match takes NAME=VALUE (got {a.match!r})", 2)
    if min(a.runs, a.jobs, a.shards) < 1:
        return _say(f"--runs, --jobs and --shards must be at least 1 (got {a.runs}, {a.jobs}, "
                    f"{a.shards})", 2)
    if not Path(a.tool).is_file():
        return _say(f"{a.tool} does not exist: did the build of test-backend-ops succeed?", 1)
    return {"check": cmd_check, "bench": cmd_bench, "shape": cmd_shape}[a.mode](a)


if __name__ == "__main__":
    sys.exit(main())
