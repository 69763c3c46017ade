"""The check step: an op's CTest test, with ``NINFER_OP_REPORT_STATS=1``, on each seed it takes.

``python -m kernelopt_ninfer.ctest_run --build DIR --test ninfer_<op>_test [--seeds 1,2,3]
[--record FILE] [--covers TAG]``

* Without ``--seeds`` (a test with fixed seeds, as upstream's are): ``ctest --test-dir DIR -R
  '^NAME$' -V --output-on-failure --no-tests=error`` once.
* With ``--seeds`` (the test's source takes ``--seed``): CTest cannot pass arguments, so the
  test runs as CTest registered it — command, working directory, environment and skip code
  read from ``ctest --show-only=json-v1`` — with ``--seed N`` appended, once per seed.

Skipped is not passed: exit 77 (or the test's SKIP_RETURN_CODE), CTest's ``***Skipped``, or a
test that prints ``SKIP:`` and exits 0 (upstream's tests do that without a usable CUDA device)
fails the check, saying nothing was verified. The ``OP_ERROR_STATS`` records the test prints
are passed through and summed up; the last line is one JSON object
``{"kernelopt_check": 1, "test": ..., "seeds": ..., "op_error_stats": {...}}``.

``--record FILE`` (the baseline's check) saves the records' case labels when the test passes;
``--covers TAG`` (the shape gate) also requires a record whose case has the pinned bench
case's dimensions (``covers``): the timed shape is then one the test compared.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from kernelopt_core.api import Command, ProcessResult, run_process

STATS_ENV = {"NINFER_OP_REPORT_STATS": "1"}
SKIP = 77
PREFIX = re.compile(r"^\d+: ")  # ctest -V prefixes each output line with the test's number
SKIP_LINE = re.compile(r"SKIP\b")
FIELD = re.compile(r"(\w+)=(.*?)(?=\s+\w+=|\s*$)")
TIMEOUT_S = 3600.0
CAP = 64 << 20  # every record matters; the core keeps its own capped log


def parse_stats(text: str) -> list[dict[str, Any]]:
    """Every ``OP_ERROR_STATS key=value ...`` record. A value runs to the next `` key=`` or the
    line's end, so a case label may hold spaces (upstream prints ``case=`` last, with labels
    like ``rmsnorm layer [5120,1]``; others print it first); numbers become floats."""
    records = []
    for line in text.splitlines():
        line = PREFIX.sub("", line.strip())
        if not line.startswith("OP_ERROR_STATS "):
            continue
        record: dict[str, Any] = {}
        for key, value in FIELD.findall(line[len("OP_ERROR_STATS "):]):
            try:
                record[key] = float(value)
            except ValueError:
                record[key] = value.strip()
        records.append(record)
    return records


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The count, the worst error-to-limit ratio (any ``*ratio`` field) and where, and the
    non-finite values reported."""
    worst: tuple[float, str, str] | None = None
    non_finite = 0.0
    for record in records:
        ratios = {k: v for k, v in record.items() if k.endswith("ratio") and isinstance(v, float)}
        for key, value in ratios.items():
            if not math.isnan(value) and (worst is None or value > worst[0]):
                worst = (value, key, str(record.get("case", "")))
        counted = record.get("non_finite")
        if isinstance(counted, float):
            non_finite += counted
        elif any(math.isnan(v) for v in ratios.values()):  # a NaN ratio: a non-finite output
            non_finite += 1
    out: dict[str, Any] = {"records": len(records), "non_finite": int(non_finite)}
    if worst is not None:
        out.update(worst_ratio=worst[0], worst_field=worst[1], worst_case=worst[2])
    return out


def dims(tag: str) -> list[tuple[str, str]]:
    """A bench tag's ``name=number`` dimensions: ``rmsnorm rows=64 cols=4096`` → rows, cols."""
    return re.findall(r"([A-Za-z]\w*?)=(\d+)\b", tag)


def covers(label: str, tag: str) -> bool:
    """Whether a test case ``label`` (``rows64_cols4096``, ``rows=64 cols=4096``) has every
    dimension of the bench case ``tag``; a tag without ``name=number`` dimensions: never."""
    found = dims(tag)
    return bool(found) and all(
        re.search(rf"(?<![A-Za-z]){re.escape(name)}[=_:]?{value}(?!\d)", label, re.I)
        for name, value in found)


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> ProcessResult:
    return run_process(Command(tuple(argv), cwd, env=env, timeout_s=TIMEOUT_S), cap=CAP,
                       under_test=True)


def registered(build: Path, test: str) -> dict[str, Any] | None:
    """The test as CTest registered it: {"command", "cwd", "env", "skip"}, or None."""
    result = _run(["ctest", "--test-dir", str(build), "--show-only=json-v1", "-R", f"^{test}$"],
                  build, {})
    try:
        tests = json.loads(result.stdout).get("tests", [])
    except json.JSONDecodeError:
        return None
    mine = next((t for t in tests if t.get("name") == test and t.get("command")), None)
    if mine is None:
        return None
    props = {p["name"]: p.get("value") for p in mine.get("properties", [])}
    env = dict(e.split("=", 1) for e in props.get("ENVIRONMENT") or [] if "=" in e)
    return {"command": mine["command"], "skip": {SKIP, int(props.get("SKIP_RETURN_CODE") or SKIP)},
            "cwd": props.get("WORKING_DIRECTORY") or str(Path(mine["command"][0]).parent),
            "env": env}


def _skipped(code: int, output: str, skip_codes: set[int]) -> str | None:
    if code in skip_codes:
        return f"the test exited {code} (skipped)"
    if code == 0:
        for line in output.splitlines():
            line = PREFIX.sub("", line.strip())
            if SKIP_LINE.match(line):
                return f"the test printed {line!r}"
    return None


def _say(message: str) -> None:
    print(f"kernelopt-ninfer: {message}", flush=True)


def check_seeded(build: Path, test: str, seeds: list[int]) -> tuple[int, str]:
    info = registered(build, test)
    if info is None:
        _say(f"ctest lists no test {test} in {build}: was it built and registered?")
        return 1, ""
    outputs = []
    for seed in seeds:
        result = _run([*info["command"], "--seed", str(seed)], Path(info["cwd"]),
                      {**info["env"], **STATS_ENV})
        output = result.stdout + result.stderr
        outputs.append(output)
        sys.stderr.write(output)  # the test's own lines: logged; stdout is the wrapper's
        why = _skipped(result.returncode, output, info["skip"])
        if why:
            _say(f"{test} --seed {seed}: {why}: a skipped test is not a pass (nothing verified)")
            return 1, "\n".join(outputs)
        if not result.ok:
            _say(f"{test} --seed {seed} FAILED: {result.describe()}")
            return 1, "\n".join(outputs)
        _say(f"{test} --seed {seed} passed")
    return 0, "\n".join(outputs)


def check_once(build: Path, test: str) -> tuple[int, str]:
    result = _run(["ctest", "--test-dir", str(build), "-R", f"^{test}$", "-V",
                   "--output-on-failure", "--no-tests=error"], build, STATS_ENV)
    output = result.stdout + result.stderr
    sys.stderr.write(output)
    status = re.search(rf"Test\s+#\d+:\s+{re.escape(test)}\s+\.*\s*(\*+)?(\w+)", output)
    word = status.group(2) if status else None
    if word == "Skipped" or _skipped(0 if word == "Passed" else 1, output, set()):
        _say(f"{test} was skipped: a skipped test is not a pass (nothing verified)")
        return 1, output
    if word != "Passed" or not result.ok:
        _say(f"{test} did not pass ({word or 'no result line'}; {result.describe()})")
        return 1, output
    _say(f"{test} passed (run as it is: the test takes no --seed, its own seeds are fixed)")
    return 0, output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_ninfer.ctest_run")
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--test", required=True)
    parser.add_argument("--seeds", help="comma-separated; only for a test that takes --seed")
    parser.add_argument("--record", type=Path, help="save the case labels when it passes")
    parser.add_argument("--covers", help="a bench case tag the test must have compared")
    a = parser.parse_args(argv)
    seeds = [int(s) for s in a.seeds.split(",") if s.strip()] if a.seeds else []
    code, output = (check_seeded(a.build, a.test, seeds) if seeds
                    else check_once(a.build, a.test))
    records = parse_stats(output)
    stats = summarize(records)
    labels = sorted({str(r.get("case", "")) for r in records})
    if code == 0 and a.record:
        a.record.parent.mkdir(parents=True, exist_ok=True)
        a.record.write_text(json.dumps({"test": a.test, "cases": labels, "stats": stats}))
    if code == 0 and a.covers and not any(covers(label, a.covers) for label in labels):
        _say(f"no OP_ERROR_STATS case of {a.test} has the timed case's dimensions ({a.covers})")
        code = 1
    if stats["records"]:
        worst = (f"; worst {stats['worst_field']} {stats['worst_ratio']:.3g} ({stats['worst_case']})"
                 if "worst_ratio" in stats else "")
        _say(f"OP_ERROR_STATS: {stats['records']} records{worst}; "
             f"{stats['non_finite']} non-finite values")
    run = ("each seed through the test's registered command" if seeds
           else "once as CTest registers it: the test takes no --seed")
    print(json.dumps({"kernelopt_check": 1, "test": a.test, "seeds": seeds or None, "run": run,
                      "passed": code == 0, "op_error_stats": stats}), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
