"""`kernelopt run-ninfer` through the real command line: the whole loop on the CPU fixture, and
the usage errors that come before any prerequisite check."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

KERNELOPT = [sys.executable, "-c", "from kernelopt_core.cli import main; main()"]


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KERNELOPT, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def _fingerprint(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


@pytest.mark.slow  # a whole-loop run (.ci/run runs it; nox's fast set not)
@pytest.mark.skipif(not all(shutil.which(t) for t in ("cmake", "ninja", "c++", "git")),
                    reason="needs cmake, ninja, a C++ compiler and git")
def test_run_ninfer_on_the_cpu_fixture_ends_optimized(fixture_copy: Path, tmp_path: Path,
                                                     clean_env) -> None:
    before = _fingerprint(fixture_copy)
    work = tmp_path / "work"
    work.mkdir()
    # the 64-row case: cache-resident and steady on a CPU (the fixture's README; the 4096-row
    # one is DRAM-bound and swings with the host's load); a short search finds RMSNORM_VEC=2
    result = _run(["run-ninfer", "--op", "rmsnorm", "--repo", str(fixture_copy), "--device", "cpu",
                   "--case", "rmsnorm rows=64 cols=4096", "--iterations", "3", "--patience", "3",
                   "--screen-runs", "1", "--final-rounds", "2", "--seeds", "1,2"], work, clean_env())
    out = result.stdout + result.stderr
    [run_dir] = (work / ".kernelopt" / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    # the fixture's CPU bench reads a real clock (the thread's CPU time) on a shared 2-core VM:
    # its A/A noise floor has read ±87 % there once, which no 1.4× win clears. The verdict is
    # the gates' to give on the measured numbers; this test checks the loop around it.
    assert result.returncode in (0, 1), out[-4000:]
    optimized = summary["status"] == "optimized"
    if optimized:
        assert summary["speedup"] > 1.0 and result.returncode == 0
    else:
        # not proven faster, for a measured reason: the confirm rounds read it no faster (one
        # CI run here read 0.88x after the screen's 2.4x), or its noise or rounds fell short
        assert summary["status"] == "matched", summary
        assert summary["median_ratio"] <= 1.0 or summary["rounds_won"] < 2 or \
            summary["noise_pct"] >= (summary["median_ratio"] - 1.0) * 100, summary
    assert summary["target"]["backend"] == "ninfer" and summary["target"]["name"] == "rmsnorm"
    assert "src/ops/kernel/rmsnorm.cuh" in summary["target"]["files"]
    # the shape gate ran the test and found the timed case among its compared cases
    report = (run_dir / "report.md").read_text()
    assert "| shape | passed | shape check passed" in report
    assert "device cpu: --device cpu" in (run_dir / "preface.txt").read_text()
    test_log = (run_dir / "baseline" / "test.log").read_text()
    assert "OP_ERROR_STATS op=rmsnorm case=rows64_cols4096" in test_log
    assert "--seed 2 passed" in test_log and "OP_ERROR_STATS: 16 records" in test_log
    # the error records reach report.md, the baseline's and the winner's
    evidence = report.split("## Correctness evidence", 1)[1].split("\n## ", 1)[0]
    assert "| baseline | test ninfer_rmsnorm_test, seeds [1, 2], run each seed" in evidence, evidence
    assert f"| {summary['winner']} |" in evidence, (summary.get("winner"), evidence)
    assert "op_error_stats.records 16" in evidence
    pin = json.loads(next((work / ".kernelopt" / "ninfer").glob("*-rmsnorm.pin.json")).read_text())
    assert pin["case"] == "rmsnorm rows=64 cols=4096" and pin["chosen_by"] == "--case"
    assert summary["target"]["shape"] == "rmsnorm rows=64 cols=4096"
    # the winner applies to the untouched tree, which kernelopt never wrote
    if optimized:
        diff = run_dir / "report.diff"
        assert "RMSNORM_" in diff.read_text()
        check = subprocess.run(["git", "apply", "--check", str(diff)], cwd=fixture_copy,
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
    assert _fingerprint(fixture_copy) == before


@pytest.mark.slow
def test_unknown_op_exits_2_before_any_prerequisite_check(fixture_copy: Path, upstream_tree: Path,
                                                         tmp_path: Path, clean_env) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()  # no cmake, no ninja, no nvcc, no GPU: an op check must not need them
    for repo, ops in ((fixture_copy, "residual_add, rmsnorm, silu_mul"),
                      (upstream_tree, "gated_delta_rule, gqa_attention, residual_add, rmsnorm")):
        result = _run(["run-ninfer", "--op", "nope", "--repo", str(repo)], tmp_path,
                      clean_env(PATH=str(empty)))
        out = result.stdout + result.stderr
        assert result.returncode == 2, out
        assert "unknown op 'nope'" in out and ops in out


@pytest.mark.slow
def test_repo_from_dotenv_and_without_one(fixture_copy: Path, tmp_path: Path, clean_env) -> None:
    missing = _run(["run-ninfer", "--op", "rmsnorm"], tmp_path, clean_env())
    assert missing.returncode == 2 and "NINFER_REPO" in missing.stderr
    (tmp_path / ".env").write_text(f"NINFER_REPO={fixture_copy}\n")
    from_env = _run(["run-ninfer", "--op", "nope"], tmp_path, clean_env())
    assert from_env.returncode == 2 and str(fixture_copy) in from_env.stderr


@pytest.mark.slow
def test_command_absent_when_the_plugin_is_not_loaded(tmp_path: Path, clean_env) -> None:
    env = clean_env(KERNELOPT_DISABLE_PLUGINS="ninfer")
    listed = _run(["plugins"], tmp_path, env)
    assert listed.returncode == 0 and "kernelopt-ninfer" not in listed.stdout
    gone = _run(["run-ninfer", "--op", "rmsnorm"], tmp_path, env)
    assert gone.returncode == 2 and "No such command" in gone.stderr
    present = _run(["plugins"], tmp_path, clean_env())
    assert "backends: ninfer" in present.stdout and " ok " in present.stdout
