"""README's first command on the embedded default: the CPU CMake example, built-in tuner."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from kernelopt_tests_support import REPO, events, kernelopt, summary

EXAMPLE = REPO / "examples" / "cmake-cpu"


def _git_status() -> str | None:
    if not (REPO / ".git").exists():
        return None
    return subprocess.run(["git", "status", "--porcelain", "--ignored=no"], cwd=REPO,
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("c++") is None,
                    reason="needs cmake and a C++ compiler")
def test_readme_main_job_optimizes_the_cpu_example(tmp_path: Path) -> None:
    status_before = _git_status()
    state = tmp_path / "state"
    # README's command, its search shortened (the descriptor's 14 iterations take two minutes
    # on two cores; the tuner finds the tile win in its first few): the same path, real clock
    result = kernelopt("run", "examples/cmake-cpu", "--state-root", str(state),
                       "--iterations", "5", "--patience", "3", cwd=REPO)
    run_dir = next((state / "runs").iterdir())
    s = summary(run_dir)
    assert s["target"]["shape"] == "f32[2048,2048]", s
    confirm = next((e for e in events(run_dir)
                    if e["event"] == "gate" and e.get("final") and e["gate"] == "confirm"), None)
    assert confirm is not None, f"no confirm gate ran: {s}"
    rounds = confirm["metrics"]
    if s["status"] != "optimized":
        # The real clock: with two CI runs on two cores (2026-12-03) the bracketing baselines
        # of a round read 27-43 ms, their A/A noise outgrew the ~2x win, and the confirm gate
        # declined to claim it, as it must (its threshold is 1 + the run's own noise, never
        # loosened). What must still hold: every round won, the refusal that threshold, the
        # verdict `matched` with exit 1. tests/test_resume.py etc. check the loop's logic on a
        # counted clock, deterministically.
        assert (result.returncode, s["status"]) == (1, "matched"), result.stderr[-3000:]
        assert rounds["wins"] == rounds["rounds"] == 6, rounds
        assert 1.3 <= rounds["median_ratio"] <= rounds["threshold"], rounds  # the win is there
    else:
        assert result.returncode == 0, result.stderr[-3000:]
        assert s["speedup"] >= 1.3 and s["rounds_won"] == 6, s
        # the diff applies cleanly to the example, and the user's tree was never written
        diff = run_dir / "report.diff"
        check = subprocess.run(["git", "apply", "--check", str(diff)], cwd=EXAMPLE,
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        copy = tmp_path / "copy"
        shutil.copytree(EXAMPLE, copy)
        patched = subprocess.run(["patch", "-p1", "-i", str(diff)], cwd=copy,
                                 capture_output=True, text=True)
        assert patched.returncode == 0, patched.stdout
    assert _git_status() == status_before
    # the loop's own work per candidate stays small: its CPU seconds, not wall time outside
    # the children (that grows with another process's load on the cores, and is no measure of
    # the loop)
    results = [e for e in events(run_dir) if e["event"] == "candidate_result"]
    own = [r["self_cpu_s"] for r in results]
    assert max(own) < 1.0, own
