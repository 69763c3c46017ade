"""Triton fault files (tests/faults/triton) the CPU can run, through the harness's check under
the interpreter: the leaking one is correct (its leak is the worker's probe's, on a GPU), and
one that leaves the process with SystemExit(0) is never a pass; one that starts a process
that outlives its call fails in the real loop's bench worker, and nothing is left running."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FAULTS = REPO / "tests" / "faults" / "triton"
ORIGINAL = REPO / "examples" / "triton" / "softmax.py"

pytestmark = pytest.mark.slow  # the interpreter: a torch import and three launches per check


def _check(name: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KERNELOPT_SMALL": "1", "TRITON_INTERPRET": "1"}
    return subprocess.run([sys.executable, "-m", "kernelopt_triton.harness", "check",
                           str(FAULTS / name), "--seed", "1", "--oracle", str(ORIGINAL)],
                          env=env, capture_output=True, text=True, timeout=300)


def test_a_kernel_file_that_exits_zero_fails_the_check() -> None:
    done = _check("no_result.py")
    assert done.returncode == 4, (done.stdout, done.stderr)
    assert "kernel file: exited during check" in done.stderr


def test_the_leaking_file_computes_correctly() -> None:
    done = _check("leak.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: leak.py seed 1")


def _sleepers(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                environ = (entry / "environ").read_bytes().decode(errors="replace")
            except OSError:  # gone meanwhile, or another user's
                continue
            if line.startswith("sleep 600") and marker in environ:
                found.append(line)
    return found


def test_a_process_left_running_in_the_worker_fails_the_candidate(tmp_path: Path) -> None:
    shutil.copy(ORIGINAL, tmp_path / "softmax.py")
    marker = f"KERNELOPT_FAULT_TEST={tmp_path.name}"  # finds this test's sleeper, no other
    env = {**os.environ, "KERNELOPT_SMALL": "1", "TRITON_INTERPRET": "1",
           "KERNELOPT_FAULT_TEST": tmp_path.name}
    env.pop("KERNELOPT_HOME", None)
    state = tmp_path / "state"
    done = subprocess.run(
        [sys.executable, "-c", "from kernelopt_core.cli import main; main()", "run",
         str(tmp_path / "softmax.py"), "--state-root", str(state), "--seeds", "1",
         "--final-rounds", "2", "--screen-runs", "1",
         "--candidate", f"softmax.py={FAULTS / 'stray_child.py'}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    [run_dir] = sorted((state / "runs").iterdir())
    events = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    [result] = [e for e in events if e["event"] == "candidate_result"]
    assert result["accepted"] is False and result["failed_gate"] == "correctness", result
    assert "left processes running" in result["reason"], result["reason"]
    assert not _sleepers(marker), "the candidate's process is still running"
