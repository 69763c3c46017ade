"""Process-level faults (issue 36, item 3), each made to happen for real on the CPU: a bench
worker SIGKILLed (mid-request and between requests), the GPU lock's holder SIGKILLed, and the
journal's disk full mid-run (a real EFBIG from a file-size limit), then the run resumed.

No step waits on a clock: each test synchronizes on what a process printed or on its exit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import portalocker
import pytest
from kernelopt_tests_support import kernelopt
from test_bench_workers import make_runner

from kernelopt_core import journal as journal_mod
from kernelopt_core.errors import BenchFailed
from kernelopt_core.journal import Journal
from kernelopt_core.lock import gpu_lock, lock_path
from kernelopt_core.process import group_members
from kernelopt_core.target import Target
from kernelopt_core.workspace import Workspace

# ---------------------------------------------------------------- a bench worker SIGKILLed


def test_a_worker_sigkilled_mid_request_fails_its_candidate_with_the_signal(tmp_path: Path) -> None:
    """The candidate's worker SIGKILLs itself inside its first bench request (as the OOM killer
    would): that reading fails naming SIGKILL, the baseline's worker keeps serving, and the
    same content gets a new worker that reads."""
    runner, baseline, candidate = make_runner(tmp_path, "sigkill")
    try:
        assert runner.bench(baseline, tmp_path / "log", "screen").time_ms == 2.0
        with pytest.raises(BenchFailed, match="killed by SIGKILL"):
            runner.bench(candidate, tmp_path / "log", "screen")
        assert runner.bench(baseline, tmp_path / "log", "screen").time_ms == 2.0
        again = runner.bench(candidate, tmp_path / "log", "screen")  # a fresh worker's first
        assert again.time_ms == 1.0
        pids = [pid for _digest, w in runner.workers.values() for pid in group_members(w.pid)]
    finally:
        runner.close_workers()
    assert pids and not any(group_members(pid) for pid in pids)  # nothing left running


def test_a_worker_sigkilled_between_requests_is_replaced(tmp_path: Path) -> None:
    """The baseline's worker, stopped between its requests, is SIGKILLed from outside: the next
    reading of that tree comes from a new worker (journaled), not an error."""
    runner, baseline, _candidate = make_runner(tmp_path, "ok")
    try:
        first = runner.bench(baseline, tmp_path / "log", "screen")
        pid = first.extra["pid"]
        os.kill(pid, signal.SIGKILL)
        _wait_dead(pid)  # delivered (a kill racing the next request fails that reading)
        again = runner.bench(baseline, tmp_path / "log", "screen")
        assert again.time_ms == 2.0 and again.extra["pid"] != pid
    finally:
        runner.close_workers()
    starts = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    assert [e["pid"] for e in starts if e["event"] == "worker_start"] == [pid, again.extra["pid"]]
    assert not group_members(pid) and not group_members(again.extra["pid"])


def _wait_dead(pid: int) -> None:
    """Until ``pid`` (a child of this process, not reaped) is a zombie: the kill has landed."""
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state == b"Z":
            return
        os.sched_yield()


# ---------------------------------------------------------------- the GPU lock's holder SIGKILLed

HOLDER = """import sys, time
from pathlib import Path
from kernelopt_core.lock import gpu_lock
with gpu_lock(Path(sys.argv[1])) as held:
    print("held", flush=True)
    time.sleep(600)
"""
WAITER = """import sys
from pathlib import Path
from kernelopt_core.lock import gpu_lock
print("asking", flush=True)
with gpu_lock(Path(sys.argv[1])) as held:
    print("acquired", flush=True)
"""


def _spawn(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            text=True)


def test_a_sigkilled_lock_holder_releases_the_gpu_lock(tmp_path: Path) -> None:
    """A real process holds kernelopt's GPU lock (an flock on gpu-<host>.lock in the state
    root) and is SIGKILLed: the OS drops its lock, so a process waiting for it goes on, and the
    lock file it leaves behind neither blocks nor says anything (it holds no holder's name)."""
    state = tmp_path / "state"
    holder = _spawn(HOLDER, str(state))
    waiter = None
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(portalocker.exceptions.AlreadyLocked):  # held, for real
            portalocker.Lock(str(lock_path(state)), timeout=0, fail_when_locked=True).acquire()
        waiter = _spawn(WAITER, str(state))
        assert waiter.stdout is not None and waiter.stdout.readline() == "asking\n"
        assert holder.poll() is None  # the waiter cannot have it yet: the holder lives
        holder.kill()
        assert holder.wait() == -signal.SIGKILL
        out, _ = waiter.communicate(timeout=120)
        assert waiter.returncode == 0 and out == "acquired\n"
    finally:
        for proc in (holder, waiter):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert lock_path(state).is_file() and lock_path(state).read_bytes() == b""
    with gpu_lock(state) as held:  # the file left behind does not block
        assert held.acquired >= held.asked


WORKSPACE_HOLDER = """import sys, time
from pathlib import Path
from kernelopt_core.target import Target
from kernelopt_core.workspace import Workspace
Workspace(Path(sys.argv[1]), Target("cpu", "k", Path(sys.argv[2]), ("k.c",))).acquire("dead")
print("held", flush=True)
time.sleep(600)
"""


def test_a_stale_workspace_holder_file_neither_blocks_nor_misleads(tmp_path: Path) -> None:
    """A run SIGKILLed while it held its target's workspace leaves ``workspace.holder`` naming
    it: the next run takes the workspace at once (no wait reported) and names itself there."""
    state, project = tmp_path / "state", tmp_path / "project"
    project.mkdir()
    holder = _spawn(WORKSPACE_HOLDER, str(state), str(project))
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    finally:
        holder.kill()
        holder.wait()
    workspace = Workspace(state, Target("cpu", "k", project, ("k.c",)))
    stale = json.loads((workspace.dir / "workspace.holder").read_text())
    assert stale["run_id"] == "dead" and stale["pid"] == holder.pid
    waits: list[dict[str, object]] = []
    try:
        assert workspace.acquire("alive", waits.append) == 0.0 and waits == []
        now = json.loads((workspace.dir / "workspace.holder").read_text())
        assert now["run_id"] == "alive" and now["pid"] == os.getpid()
    finally:
        workspace.release()


# ---------------------------------------------------------------- the journal's disk full


def test_a_failed_journal_write_leaves_no_torn_line(tmp_path: Path) -> None:
    """A real EFBIG halfway through a line (a file-size limit, in a child process): the write
    is cut back to the last complete line and reported with the path and the OS's error."""
    path = tmp_path / "run" / "journal.jsonl"
    code = """import resource, signal, sys
from pathlib import Path
from kernelopt_core.journal import Journal, JournalWriteError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write returns EFBIG instead of dying
journal = Journal(Path(sys.argv[1]))
journal.write("test_first", note="first")
size = Path(sys.argv[1]).stat().st_size
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 10, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    journal.write("stage", stage="x" * 100)
except JournalWriteError as exc:
    print(exc)
journal.write("end", exit_code=1, gpu_seconds=0.0)  # not attempted: the journal failed
journal.close()
"""
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert str(path) in done.stdout and "File too large" in done.stdout, done.stdout
    assert "stage event" in done.stdout
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and [json.loads(line)["event"] for line in lines[:-1]] == ["test_first"]


def test_a_torn_last_line_is_ended_before_the_next_record(tmp_path: Path) -> None:
    """A run SIGKILLed mid-write leaves half a line; the resumed run's first record starts on
    a line of its own, so it is read (it used to join the torn line and be skipped with it)."""
    path = tmp_path / "journal.jsonl"
    path.write_text('{"event": "run"}\n{"event": "cand')
    journal = Journal(path)
    journal.write("resumed", pid=1, host="h", argv=[], best=1.0, completed=[])
    journal.close()
    assert [e["event"] for e in journal_mod.read(path)] == ["run", "resumed"]


# the CLI, in this process, with a file-size limit set just before one journal event's write
LIMITED_RUN = """import resource, signal, sys
from kernelopt_core import journal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG from write(2), as on a full disk
at, write = sys.argv.pop(1), journal.Journal._write  # under record() and write() both

def limited(self, event, data):
    if event == at and self.path.name == "journal.jsonl":
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.path.stat().st_size + 10, hard))
    return write(self, event, data)

journal.Journal._write = limited
from kernelopt_core.cli import main
main()
"""
FLAGS = ["--iterations", "2", "--patience", "2", "--final-rounds", "2", "--screen-runs", "1",
         "--seeds", "1"]


@pytest.mark.slow
def test_a_full_disk_stops_the_run_clearly_and_it_resumes(tmp_path: Path) -> None:
    """A run of the chunk project (kernelopt.toml, real commands, a counted clock: the CPU
    example's shape at a tenth of its cost), its journal's write failing with EFBIG at the
    first candidate: exit 3 naming the journal and the OS error, no traceback, the journal
    parseable to its last line; the same command with --run-id after the space is back resumes
    and finishes with the verdict."""
    from kernelopt_core.testing import write_chunk_project

    project = write_chunk_project(tmp_path / "project")
    state = tmp_path / "state"
    args = ["run", str(project), *FLAGS, "--state-root", str(state), "--run-id", "full"]
    env = {**os.environ}
    env.pop("KERNELOPT_HOME", None)
    stopped = subprocess.run([sys.executable, "-c", LIMITED_RUN, "candidate", *args],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = stopped.stdout + stopped.stderr
    path = state / "runs" / "full" / "journal.jsonl"
    assert stopped.returncode == 3, out[-4000:]
    assert str(path) in out and "File too large" in out and "--run-id full" in out, out[-4000:]
    assert "Traceback" not in out and "bug in kernelopt" not in out
    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    written = [json.loads(line) for line in raw.splitlines()]  # every line whole
    assert written[-1]["event"] != "candidate" and any(e["event"] == "bench" for e in written)

    resumed = kernelopt(*args, cwd=tmp_path, timeout=600)
    assert resumed.returncode == 0, (resumed.stdout + resumed.stderr)[-4000:]
    events = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert [e["event"] for e in events].count("resumed") == 1
    assert json.loads((path.parent / "summary.json").read_text())["status"] == "optimized"
