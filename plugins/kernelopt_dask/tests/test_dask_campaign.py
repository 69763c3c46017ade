"""`kernelopt campaign --executor dask` over the CPU example (real builds, checks and benches):
the Dask worker running a target's `kernelopt run` is SIGKILLed after the run's first candidate
completed; the job runs again and resumes its run from the journal."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kernelopt_tests_support import counted_cpu_example

REPO = Path(__file__).resolve().parents[3]
KERNELOPT = [sys.executable, "-c", "from kernelopt_core.cli import main; main()"]
RUN_ARGS = "--iterations 3 --patience 3 --final-rounds 2 --screen-runs 1 --seeds 1"
SAFETY_S = 300.0  # only ends a broken test


def events(journal: Path) -> list[dict]:
    if not journal.exists():
        return []
    out = []
    for line in journal.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            break  # the line being written
    return out


def run_process_of(run_id: str) -> tuple[int, int] | None:
    """(pid, parent pid) of the `kernelopt run ... --run-id RUN_ID` process, if running."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if b"run" in argv[:4] and b"--run-id" in argv and run_id.encode() in argv:
            return int(entry.name), int(stat.rsplit(")", 1)[1].split()[1])
    return None


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_a_killed_worker_mid_run_resumes_the_run(tmp_path: Path) -> None:
    # the example's real bench runs, its time modelled from the knobs (kernelopt_tests_support):
    # on the real clock a loaded 2-core machine once ended the resumed run `matched` (0.99x)
    counted_cpu_example(tmp_path / "a")
    state = tmp_path / "state"
    journal = state / "runs" / "cpu-01" / "journal.jsonl"
    campaign = subprocess.Popen(
        [*KERNELOPT, "campaign", "a", "--gpus", "0,1", "--name", "cpu", "--executor", "dask",
         "--budget-minutes", "4", "--run-args", RUN_ARGS, "--state-root", str(state)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + SAFETY_S
        while not any(e["event"] == "candidate_result" for e in events(journal)):
            assert campaign.poll() is None and time.monotonic() < deadline, "no candidate"
            time.sleep(0.05)
        found = run_process_of("cpu-01")
        assert found, "the run ended before the test could kill its worker"
        run_pid, worker_pid = found
        completed = sum(e["event"] == "candidate_result" for e in events(journal))
        os.kill(worker_pid, signal.SIGKILL)
        output, _ = campaign.communicate(timeout=SAFETY_S)
    finally:
        if campaign.poll() is None:
            campaign.kill()
            campaign.wait()

    assert campaign.returncode == 0, output
    assert not Path(f"/proc/{run_pid}").exists() or \
        Path(f"/proc/{run_pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    [job] = [e for e in events(state / "campaigns" / "cpu" / "campaign.jsonl")
             if e["event"] == "job"]
    assert job["attempts"] == 2 and job["returncode"] == 0, job
    raw = events(journal)
    [resumed] = [e for e in raw if e["event"] == "resumed"]  # resumed, not started over
    assert len(resumed["completed"]) >= completed
    # no completed candidate evaluated twice: one candidate_result per candidate
    after = [e["candidate"] for e in raw[raw.index(resumed):] if e["event"] == "candidate_result"]
    assert not set(after) & set(resumed["completed"]), (after, resumed)
    names = [e["candidate"] for e in raw if e["event"] == "candidate_result"]
    assert len(names) == len(set(names)), names
    assert [e["event"] for e in raw].count("verdict") == 1, output
