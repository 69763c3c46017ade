"""A bench worker SIGKILLed mid-request in a whole `kernelopt run` (issue 36, item 3a): the
candidate's kernel file SIGKILLs its own worker process on its first launch (as the OOM
killer would). That candidate fails at correctness naming SIGKILL, the next candidate gets a
worker of its own and is evaluated, the run ends with its verdict, and nothing is left
running. Under Triton's interpreter: about 5 s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernelopt_tests_support import kernelopt
from kernelopt_triton_testpaths import EXAMPLES

from kernelopt_core.process import group_members
from kernelopt_core.testing import fingerprint

KILLER = """    import os, signal
    os.kill(os.getpid(), signal.SIGKILL)  # the worker dies mid-request
"""


@pytest.mark.slow
def test_a_worker_sigkilled_mid_request_fails_its_candidate_and_the_run_goes_on(
        tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    original = (EXAMPLES / "vecadd.py").read_text()
    (project / "vecadd.py").write_text(original)
    signature = "def launch(x, y, out) -> None:\n"
    assert signature in original
    killer = tmp_path / "killer.py"
    killer.write_text(original.replace(signature, signature + KILLER))
    clean = tmp_path / "clean.py"
    clean.write_text(original.replace("BLOCK_SIZE=64,", "BLOCK_SIZE=128,"))
    assert clean.read_text() != original
    before = fingerprint(project)
    state = tmp_path / "state"
    done = kernelopt("run", str(project / "vecadd.py"), "--state-root", str(state), "--seeds", "1",
                     "--screen-runs", "1", "--final-rounds", "2",
                     "--candidate", f"vecadd.py={killer}", "--candidate", f"vecadd.py={clean}",
                     cwd=tmp_path, env={"KERNELOPT_SMALL": "1", "TRITON_INTERPRET": "1"},
                     timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode in (0, 1), out[-4000:]
    assert "Traceback" not in out and "bug in kernelopt" not in out
    [run_dir] = sorted((state / "runs").iterdir())
    events = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    results = {e["candidate"]: e for e in events if e["event"] == "candidate_result"}
    assert results["c1"]["failed_gate"] == "correctness", results["c1"]
    assert "killed by SIGKILL" in results["c1"]["reason"], results["c1"]["reason"]
    assert results["c2"]["failed_gate"] != "correctness", results["c2"]  # a new worker served it
    assert events[-1]["event"] == "end" and events[-1]["exit_code"] == done.returncode
    workers = {e["pid"] for e in events if e["event"] == "worker_start"}
    assert len(workers) >= 3 and not any(group_members(pid) for pid in workers)
    assert fingerprint(project) == before
