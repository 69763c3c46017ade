"""The whole loop on the chunk project: verdicts, artifacts, gates from config."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from kernelopt_tests_support import events, kernelopt, last_run, summary

from kernelopt_core.loop import Loop
from kernelopt_core.settings import load
from kernelopt_core.testing import ScriptedBackend


@pytest.mark.slow
def test_cli_run_optimizes_and_writes_every_artifact(chunk_project: Path, fast_flags) -> None:
    result = kernelopt("run", str(chunk_project), *fast_flags, cwd=chunk_project.parent)
    assert result.returncode == 0, result.stderr + result.stdout
    run_dir = last_run(chunk_project.parent / ".kernelopt")
    s = summary(run_dir)
    assert s["status"] == "optimized"
    assert s["speedup"] > 1.3
    assert s["rounds_won"] == 4 and len(s["rounds"]["baseline_ms"]) == 4
    assert s["planner"] == "tuner"
    assert "using the built-in tuner" in result.stderr
    # progress says what each candidate tries, which of at most how many, and the best so far
    assert re.search(r"^c1 \(1 of at most 6, \d+ s, best 1\.000×\): CHUNK=\d+$", result.stderr,
                     re.M), result.stderr
    assert "rounds" in s["report_line"] and "f64[20000]" in s["report_line"]
    for name in ("journal.jsonl", "report.md", "report.diff", "summary.json"):
        assert (run_dir / name).stat().st_size > 0, name
    ev = events(run_dir)
    assert ev[0]["event"] == "run" and ev[-1]["event"] == "end"
    # the verdict event carries the numbers it rests on; the summary renders them as they are
    measured = next(e for e in ev if e["event"] == "verdict")["measured"]
    assert measured["gate"] == "confirm" and measured["median_ratio"] == s["median_ratio"]
    assert measured["baseline_ms"] == s["rounds"]["baseline_ms"] and measured["wins"] == 4
    assert (run_dir / "candidates" / "c1" / "build.log").exists()
    assert (run_dir / "candidates" / "c1" / "edit.diff").read_text().startswith("--- a/kernel.py")
    # report.diff applies to the user's directory with patch -p1 (checked on a copy)
    copy = chunk_project.parent / "copy"
    subprocess.run(["cp", "-r", str(chunk_project), str(copy)], check=True)
    patch = subprocess.run(["patch", "-p1", "-i", str(run_dir / "report.diff")], cwd=copy,
                           capture_output=True, text=True)
    assert patch.returncode == 0, patch.stdout + patch.stderr
    assert "CHUNK = 1\n" not in (copy / "kernel.py").read_text()
    # history lists the run with its tags; report reprints from the journal
    hist = kernelopt("history", cwd=chunk_project.parent)
    assert run_dir.name in hist.stdout and "winner" in hist.stdout
    rep = kernelopt("report", run_dir.name[:12], cwd=chunk_project.parent)
    assert rep.returncode == 0 and s["report_line"] in rep.stdout


@pytest.mark.slow
def test_gates_from_config_change_what_runs(kernelopt_host, chunk_project: Path, tmp_path) -> None:
    toml = chunk_project / "kernelopt.toml"
    toml.write_text(toml.read_text() + '\n[gates]\ncandidate = ["build", "correctness"]\n'
                    'final = []\n\n[run]\niterations = 2\n')
    settings = load(toml, {"state_root": tmp_path / "state"})
    backend = ScriptedBackend()
    target = backend.discover(chunk_project, settings)[0]
    outcome = Loop(kernelopt_host, backend, target, settings).run()
    ev = events(outcome.run_dir)
    config = next(e for e in ev if e["event"] == "config")
    assert config["candidate_gates"] == ["build", "correctness"] and config["final_gates"] == []
    gates_run = {e["gate"] for e in ev if e["event"] == "gate"}
    assert gates_run - {"protocol"} == {"build", "correctness"}
    assert not [e for e in ev if e["event"] == "bench" and e["purpose"].startswith("screen")]
    # without confirm nothing is claimed: at most matched, and the protocol result says why
    verdict = next(e for e in ev if e["event"] == "verdict")
    assert verdict["status"] == "matched", verdict  # the tuner's correct candidates pass both
    assert verdict["caught_by"] == ["protocol"] and "confirm gate did not run" in verdict["reason"]


@pytest.mark.parametrize(("candidate", "final", "message"), [
    ("build,screen", "confirm", "lack `correctness`"),
    ("build,correctness", "roofline,confirm", "needs `confirm` before it"),
    ("build,correctness", "shape,roofline", "needs `confirm` before it"),
])
def test_gate_plans_a_verdict_cannot_rest_on_are_refused(chunk_project: Path, candidate: str,
                                                         final: str, message: str) -> None:
    result = kernelopt("run", str(chunk_project), "--gates", candidate, "--final-gates", final,
                       cwd=chunk_project.parent)
    assert result.returncode == 2 and message in result.stderr, result.stderr[-2000:]
    assert not (chunk_project.parent / ".kernelopt" / "runs").exists() or \
        not any((chunk_project.parent / ".kernelopt" / "runs").glob("*/candidates/*"))


def test_unknown_gate_in_config_is_a_usage_error(chunk_project: Path) -> None:
    toml = chunk_project / "kernelopt.toml"
    toml.write_text(toml.read_text() + '\n[gates]\ncandidate = ["build", "nope"]\n')
    result = kernelopt("run", str(chunk_project), cwd=chunk_project.parent)
    assert result.returncode == 2
    assert "unknown candidate gate 'nope'" in result.stderr and "known gates" in result.stderr


def test_baseline_that_fails_its_test_exits_2(chunk_project: Path) -> None:
    kernel = chunk_project / "kernel.py"
    kernel.write_text(kernel.read_text().replace("acc = 0.0", "acc = 1.0"))
    result = kernelopt("run", str(chunk_project), cwd=chunk_project.parent)
    assert result.returncode == 2, result.stderr
    assert "the baseline fails its own test (seed 1)" in result.stderr
    assert "mismatch at n=1" in result.stderr


def test_bench_output_that_does_not_parse_names_command_and_line(chunk_project: Path) -> None:
    bench = chunk_project / "bench.py"
    assert '"time_ms": time_ms,' in bench.read_text()
    bench.write_text(bench.read_text().replace('"time_ms": time_ms,', '"time_ms": "fast",'))
    result = kernelopt("run", str(chunk_project), cwd=chunk_project.parent)
    assert result.returncode == 2
    assert "bench output of `" in result.stderr and "bench.py" in result.stderr
    assert "offending line" in result.stderr and '"time_ms": "fast"' in result.stderr


@pytest.mark.slow
def test_no_win_possible_ends_fallback_with_exit_1(chunk_project: Path) -> None:
    kernel = chunk_project / "kernel.py"  # already at the best chunk: nothing to gain
    kernel.write_text(kernel.read_text().replace("CHUNK = 1", "CHUNK = 256"))
    toml = chunk_project / "kernelopt.toml"
    toml.write_text(toml.read_text().replace("values = [1, 2, 4, 8, 16, 32, 64, 128, 256]",
                                             "values = [128, 256]"))
    result = kernelopt("run", str(chunk_project), "--iterations", "1", cwd=chunk_project.parent)
    assert result.returncode == 1, result.stderr
    s = summary(last_run(chunk_project.parent / ".kernelopt"))
    assert s["status"] in ("fallback", "matched")
    assert (last_run(chunk_project.parent / ".kernelopt") / "report.diff").read_text() == ""
    assert json.loads(json.dumps(s))["final_ms"] == s["baseline_ms"]
