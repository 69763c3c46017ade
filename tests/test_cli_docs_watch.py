"""Two commands of the design (issue 34, item 9), run as a user runs them, in a child process:
`kernelopt docs SYMBOL` (the agents' doc lookup: the local headers) and `kernelopt run --watch`
(the live view in the run's own terminal instead of progress lines)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kernelopt_tests_support import counted_cpu_example


def kernelopt(*args: str, cwd: Path, env: dict[str, str] | None = None,
              timeout: int = 300) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KERNELOPT_")
             and not k.endswith("_API_KEY")}
    return subprocess.run([sys.executable, "-c", "from kernelopt_core.cli import main; main()",
                           *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**clean, **(env or {})})


def test_docs_finds_a_symbol_in_the_local_headers(tmp_path: Path) -> None:
    include = tmp_path / "cuda" / "include"
    include.mkdir(parents=True)
    (include / "kernelopt_probe.h").write_text(
        "/* the warp's lanes exchange v */\n"
        "__device__ unsigned kernelopt_probe_shuffle(unsigned mask, unsigned v);\n")
    env = {"CUDA_HOME": str(tmp_path / "cuda")}
    found = kernelopt("docs", "kernelopt_probe_shuffle", cwd=tmp_path, env=env)
    assert found.returncode == 0, found.stderr
    assert f"{include / 'kernelopt_probe.h'}:2" in found.stdout
    assert "the warp's lanes exchange v" in found.stdout  # the lines around it
    missing = kernelopt("docs", "kernelopt_no_such_symbol", cwd=tmp_path, env=env)
    assert missing.returncode == 1 and "nothing found for kernelopt_no_such_symbol" in \
        missing.stderr and str(include) in missing.stderr
    bad = kernelopt("docs", "two words", cwd=tmp_path, env=env)
    assert bad.returncode == 2 and "is not a C/C++ identifier" in bad.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_run_watch_draws_the_live_view_in_its_own_terminal(tmp_path: Path) -> None:
    project = counted_cpu_example(tmp_path / "project")
    done = kernelopt("run", str(project), "--watch", "--iterations", "3", "--patience", "3",
                     "--final-rounds", "2", "--screen-runs", "1", "--seeds", "1",
                     "--state-root", str(tmp_path / "state"), cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    for row in ("best so far", "candidates", "confirm", "verdict", "optimized", "exit 0"):
        assert row in done.stderr, row
    assert "(median of" not in done.stderr  # the view instead of the progress lines
    [summary] = (tmp_path / "state" / "runs").glob("*/summary.json")
    assert json.loads(summary.read_text())["status"] == "optimized"
    # report.md in words, not Python reprs (issue 34, item 8)
    report = (summary.parent / "report.md").read_text()
    assert "- gates: candidate policy → build → correctness → screen; final confirm → " in report
    assert "- candidates: 3 proposed, 3 built, 3 correct, " in report and "{'" not in report


def test_progress_in_a_log_has_no_line_per_stage(capsys: pytest.CaptureFixture[str]) -> None:
    """Not a terminal (a CI log, a file): a stage's `[plan] c3  best 1.000×` status line is
    left out; what says something (the baseline, each candidate's result) stays."""
    from kernelopt_core import ui

    progress = ui.Progress()
    progress.tty = False
    progress({"event": "stage", "stage": "plan", "candidate": "c1"})
    progress({"event": "baseline", "ms": 1.5, "samples": [1.5, 1.5, 1.6]})
    err = capsys.readouterr().err
    assert "[plan]" not in err and "baseline: 1.5 ms (median of 3)" in err
