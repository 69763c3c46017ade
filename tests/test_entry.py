"""Runs started from Python (kernelopt_core.entry; `kernelopt_core.api.run`): the same
resolution, loop and results as `kernelopt run`, nothing printed, bad input raised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelopt_core.errors import UsageError
from kernelopt_core.testing import write_chunk_project


@pytest.mark.slow
def test_a_run_from_python_returns_each_targets_result(tmp_path: Path,
                                                       capfd: pytest.CaptureFixture[str]) -> None:
    from kernelopt_core.api import run

    project = write_chunk_project(tmp_path / "p")
    [result] = run(project, iterations=3, patience=3, final_rounds=2, seeds=(1,),
                   state_root=tmp_path / "state")
    assert (result.status, result.exit_code) == ("optimized", 0)
    assert result.target.name == "chunk-sum" and result.run_dir.parent == tmp_path / "state" / "runs"
    on_disk = json.loads((result.run_dir / "summary.json").read_text())
    assert on_disk["status"] == "optimized" and result.summary["speedup"] == on_disk["speedup"]
    assert capfd.readouterr() == ("", "")  # only the CLI prints


def test_bad_input_raises_what_the_cli_exits_2_with(tmp_path: Path) -> None:
    from kernelopt_core.api import run

    with pytest.raises(UsageError, match="does not exist"):
        run(tmp_path / "missing")
    project = write_chunk_project(tmp_path / "p")
    with pytest.raises(UsageError, match="iterations"):
        run(project, iterations=0)
