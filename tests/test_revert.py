"""`kernelopt revert RUN`: undo an applied winner, refuse a diverged tree, touch nothing else."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kernelopt_tests_support import kernelopt, last_run

from kernelopt_core.testing import fingerprint

# a run to a winner (the chunk project's clock is counted: always the same verdict); what it
# searched is not the subject, so one screen run a tree and one seed
RUN_FLAGS = ("--iterations", "3", "--final-rounds", "3", "--screen-runs", "1", "--seeds", "1")


@pytest.mark.slow
def test_revert_applied_then_refuse_diverged_then_nothing_to_do(chunk_project: Path) -> None:
    cwd = chunk_project.parent
    run = kernelopt("run", str(chunk_project), *RUN_FLAGS, cwd=cwd)
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


@pytest.mark.slow
def test_apply_writes_the_winner_where_git_apply_skips_it(chunk_project: Path, tmp_path: Path) -> None:
    """A target in a subdirectory of a git repository (the README's own example): `git apply`
    there exits 0 and changes nothing; `kernelopt apply RUN` writes the winner, refuses a file
    changed since, and `kernelopt revert` undoes it."""
    import shutil

    outer = tmp_path / "repo"
    target = outer / "kernels" / "chunk"
    shutil.copytree(chunk_project, target)
    for argv in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *argv], cwd=outer, check=True)
    run = kernelopt("run", str(target), *RUN_FLAGS, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "kernelopt apply" in run.stdout
    run_dir = last_run(tmp_path / ".kernelopt")
    original = fingerprint(target)
    skipped = subprocess.run(["git", "apply", str(run_dir / "report.diff")], cwd=target,
                             capture_output=True, text=True)
    assert skipped.returncode == 0 and fingerprint(target) == original  # the trap: nothing

    (target / "kernel.py").write_text((target / "kernel.py").read_text() + "# mine\n")
    refused = kernelopt("apply", run_dir.name, cwd=tmp_path)
    assert refused.returncode == 2 and "refusing to apply: kernel.py" in refused.stderr
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=outer, check=True)
    done = kernelopt("apply", run_dir.name, cwd=tmp_path)
    assert done.returncode == 0 and "applied kernel.py" in done.stdout, done.stderr
    assert "CHUNK = 1\n" not in (target / "kernel.py").read_text()
    assert "report.diff" in (run_dir / "report.md").read_text()
    assert f"kernelopt apply {run_dir.name}" in (run_dir / "report.md").read_text()
    again = kernelopt("apply", "last", cwd=tmp_path)
    assert again.returncode == 2 and "nothing to apply" in again.stderr
    assert kernelopt("revert", run_dir.name, cwd=tmp_path).returncode == 0
    assert fingerprint(target) == original
