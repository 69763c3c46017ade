"""The gate alone on a GateContext it builds (the public types), then in a whole run of the
testing kit's project through the real CLI, turned on by kernelopt.toml alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelopt_example_gate import MaxLinesGate, MaxLinesOptions

from kernelopt_core.api import GateContext, Target, Tree
from kernelopt_core.testing import last_summary, run_kernelopt, settings_with, write_chunk_project


def context(tmp_path: Path, limit: int, edits: dict[str, bytes]) -> GateContext:
    tree = Tree("candidate", tmp_path, tmp_path / "build")
    return GateContext(runner=None, settings=settings_with(MaxLinesOptions(limit)),  # type: ignore[arg-type]
                       target=Target("any", "k", tmp_path, ("k.py",)), candidate="c1",
                       candidate_tree=tree, baseline_tree=tree, log_dir=tmp_path,
                       baseline_screen_ms=None, edits=edits,
                       baseline_files={"k.py": b"a = 1\nb = 2\n"})


@pytest.mark.parametrize(("limit", "passed"), [(1, True), (0, False)])
def test_it_counts_the_added_lines(tmp_path: Path, limit: int, passed: bool) -> None:
    result = MaxLinesGate().evaluate(context(tmp_path, limit, {"k.py": b"a = 1\nb = 3\n"}))
    assert result.passed is passed and result.metrics["added_lines"] == 1


GATES = '\n[gates]\ncandidate = ["policy", "maxlines", "build", "correctness", "screen"]\n'


def test_kernelopt_toml_turns_it_on_and_its_table_takes_effect(tmp_path: Path) -> None:
    project = write_chunk_project(tmp_path / "p", toml_extra=GATES + "\n[maxlines]\nmax_added_lines = 0\n")
    done = run_kernelopt("run", project, "--iterations", "2", "--patience", "2", "--seeds", "1",
                         cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # no candidate may add a line: no win
    summary = last_summary(tmp_path / ".kernelopt")
    assert summary["status"] in ("fallback", "matched")
    report = next((tmp_path / ".kernelopt" / "runs").glob("*/report.md")).read_text()
    assert "max_added_lines = 0" in report
    # the flag wins over the table: one changed line is allowed again
    done = run_kernelopt("run", project, "--iterations", "2", "--max-added-lines", "1",
                         "--final-rounds", "2", "--seeds", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert last_summary(tmp_path / ".kernelopt")["status"] == "optimized"
