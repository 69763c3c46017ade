"""The engine gate through the real CLI: whole-program outputs compared with the baseline's by
the engine command itself (KERNELOPT_ENGINE_OUT / KERNELOPT_ENGINE_REFERENCE), times
interleaved, and the model-level speedup reported."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from kernelopt_tests_support import kernelopt

from kernelopt_core.gates.engine import amdahl, parse_engine_line
from kernelopt_core.testing import COUNTED_CLOCK

# The "application": sums a list of a size the kernel's own test never uses, writes its output,
# compares with the reference when given one, and reports its time (the counted clock of the
# chunk project's bench: the verdict must not depend on the machine's load).
APP = COUNTED_CLOCK + '''import importlib.util, json, math, os, random, sys
spec = importlib.util.spec_from_file_location("kernel", sys.argv[1] + "/kernel.py")
kernel = importlib.util.module_from_spec(spec); spec.loader.exec_module(kernel)
xs = [random.Random(7).uniform(-1, 1) for _ in range(30000)]
ms, got = counted_ms(kernel.total, xs)
with open(os.environ["KERNELOPT_ENGINE_OUT"], "w") as f:
    json.dump({"total": got}, f)
match, detail = None, "no reference"
ref = os.environ.get("KERNELOPT_ENGINE_REFERENCE")
if ref:
    want = json.load(open(ref))["total"]
    err = abs(got - want)
    match = math.isfinite(got) and err <= 1e-9 * 30000
    detail = f"abs err {err:.3g}"
print(json.dumps({"time_ms": ms, "match": match, "detail": detail}))
'''

FAST = '''"""A Python 'kernel': the sum of a list, walked CHUNK items at a time."""
CHUNK = 256


def total(xs):
    acc = 0.0
    for start in range(0, len(xs), CHUNK):
        acc += sum(xs[start:start + CHUNK])
    return acc
'''

# Correct on every size the kernel's test and bench use (≤ 20000), wrong beyond: only the
# whole program sees it.
SPECIAL_CASE = FAST + '''

_total = total


def total(xs):
    return _total(xs) if len(xs) <= 20000 else _total(xs[:20000])
'''


def project_with_engine(chunk_project: Path) -> Path:
    (chunk_project / "app.py").write_text(APP)
    toml = chunk_project / "kernelopt.toml"
    toml.write_text(toml.read_text().replace(
        'shape = "f64[20000]"', f'engine = "{sys.executable} {{repo}}/app.py {{build}}"\n'
        'shape = "f64[20000]"'))
    return chunk_project


def run(project: Path, candidate: str, tmp_path: Path) -> dict:
    local = tmp_path / "candidate.py"
    local.write_text(candidate)
    result = kernelopt("run", str(project), "--candidate", f"kernel.py={local}",
                       "--final-rounds", "3", cwd=project.parent)
    summary = json.loads(next((project.parent / ".kernelopt" / "runs").glob("*/summary.json"))
                         .read_text())
    summary["_stderr"] = result.stderr
    summary["_code"] = result.returncode
    return summary


@pytest.mark.slow
def test_engine_gate_passes_a_real_win_and_reports_the_model_speedup(chunk_project, tmp_path):
    summary = run(project_with_engine(chunk_project), FAST, tmp_path)
    assert summary["status"] == "optimized", summary["_stderr"][-3000:]
    engine = summary["engine"]
    assert engine["passed"] is True and len(engine["baseline_ms"]) == 3
    assert len(engine["candidate_ms"]) == 3 and engine["speedup"] > 1.5
    assert "outputs match (abs err" in engine["note"]
    assert "whole program" in summary["report_line"]


@pytest.mark.slow
def test_engine_gate_catches_what_only_the_whole_program_sees(chunk_project, tmp_path):
    summary = run(project_with_engine(chunk_project), SPECIAL_CASE, tmp_path)
    assert summary["status"] == "fallback" and summary["_code"] == 1
    assert summary["engine"]["passed"] is False
    assert "whole-program outputs differ" in summary["engine"]["note"]
    report = next((chunk_project.parent / ".kernelopt" / "runs").glob("*/report.md")).read_text()
    assert "whole-program outputs differ" in report


def test_engine_line_and_amdahl() -> None:
    assert parse_engine_line('noise\n{"time_ms": 2.5, "match": true}\n{"x": 1}\n') == (
        {"time_ms": 2.5, "match": True}, "")
    for bad, why in (('{"time_ms": "fast"}', "not a positive finite"),
                     ('{"time_ms": 0, "match": true}', "not a positive finite"),
                     ('{"time_ms": true}', "not a positive finite"),
                     ('{"time_ms": NaN}', "not a positive finite"),
                     ('{"time_ms": 2}\n{"time_ms": 1}', "exactly one"),
                     ("nothing", "no JSON line")):
        parsed, error = parse_engine_line(bad)
        assert parsed is None and why in error, (bad, error)
    assert abs(amdahl(0.5, 2.0) - 1 / 0.75) < 1e-12 and amdahl(0.0, 9.0) == 1.0
