"""`kernelopt revert RUN`: undo an applied winner, refuse a diverged tree, touch nothing else."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kernelopt_tests_support import kernelopt, last_run

from kernelopt_core.testing import fingerprint


@pytest.mark.slow
def test_revert_applied_then_refuse_diverged_then_nothing_to_do(chunk_project: Path) -> None:
    cwd = chunk_project.parent
    run = kernelopt("run", str(chunk_project), "--iterations", "3", "--final-rounds", "3", cwd=cwd)
    assert run.returncode == 0, run.stderr
    run_dir = last_run(cwd / ".kernelopt")
    original = fingerprint(chunk_project)
    subprocess.run(["git", "apply", str(run_dir / "report.diff")], cwd=chunk_project, check=True)
    applied = (chunk_project / "kernel.py").read_text()
    assert "CHUNK = 1\n" not in applied

    (chunk_project / "kernel.py").write_text(applied + "# my own edit\n")
    refused = kernelopt("revert", run_dir.name, cwd=cwd)
    assert refused.returncode == 2
    assert "refusing to revert: kernel.py" in refused.stderr
    assert (chunk_project / "kernel.py").read_text() == applied + "# my own edit\n"

    (chunk_project / "kernel.py").write_text(applied)
    done = kernelopt("revert", run_dir.name, cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "restored kernel.py" in done.stdout
    assert fingerprint(chunk_project) == original

    again = kernelopt("revert", "last", cwd=cwd)
    assert again.returncode == 2 and "nothing to revert" in again.stderr
