"""Isolation: interrupts never touch the user's checkout, locks never go stale, runs never overlap
their timed windows.

Every run here is the real CLI in a child process (``python -m kernelopt_core.cli``), started with
``subprocess.Popen`` so the test can signal it at a chosen point of its journal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kernelopt_tests_support import summary

from kernelopt_core import journal as journal_mod
from kernelopt_core.testing import fingerprint, git_repo, write_chunk_project

# The brief's shape of run, made cheaper per candidate (one seed, one screen run per side) so
# every interrupt point is reached within a few seconds on a small machine.
RUN_FLAGS = ["--iterations", "4", "--final-rounds", "3", "--screen-runs", "1", "--seeds", "1"]
POLL_TIMEOUT_S = 60.0
EXIT_TIMEOUT_S = 60.0

# (stage, candidate or None): a "stage" event of the journal to wait for before signalling
BASELINE_BUILD = ("baseline build", None)
BASELINE_BENCH = ("baseline bench", None)
CORRECTNESS_C2 = ("correctness", "c2")
CONFIRM = ("confirm", None)


# ---------------------------------------------------------------------------- helpers
def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KERNELOPT_HOME", None)  # the state root is ./.kernelopt of the child's cwd
    return env


def start_run(project: Path, cwd: Path, flags: list[str], logs: Path) -> subprocess.Popen[bytes]:
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / "stdout.txt", "wb") as out, open(logs / "stderr.txt", "wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "kernelopt_core.cli", "run", str(project), *flags],
            cwd=cwd, env=_env(), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
        )


def output(logs: Path) -> str:
    return ((logs / "stdout.txt").read_text(errors="replace") + "\n"
            + (logs / "stderr.txt").read_text(errors="replace"))


def run_dirs(state_root: Path) -> set[Path]:
    runs = state_root / "runs"
    return set(runs.iterdir()) if runs.is_dir() else set()


def journal_text(run_dir: Path | None) -> str:
    if run_dir is None:
        return "<no run directory yet>"
    path = run_dir / "journal.jsonl"
    return path.read_text(errors="replace") if path.exists() else "<no journal yet>"


def read_events(run_dir: Path) -> list[dict]:
    path = run_dir / "journal.jsonl"
    return journal_mod.read(path) if path.exists() else []


def is_point(event: dict, point: tuple[str, str | None]) -> bool:
    stage, candidate = point
    return (event["event"] == "stage" and event.get("stage") == stage
            and (candidate is None or event.get("candidate") == candidate))


def wait_for_point(proc: subprocess.Popen[bytes], state_root: Path, before: set[Path],
                   point: tuple[str, str | None], logs: Path) -> Path:
    """Poll the new run's journal until ``point`` appears; return the run directory."""
    deadline = time.monotonic() + POLL_TIMEOUT_S
    run_dir: Path | None = None
    while time.monotonic() < deadline:
        if run_dir is None:
            new = run_dirs(state_root) - before
            run_dir = next(iter(new)) if len(new) == 1 else None
        if run_dir is not None and any(is_point(e, point) for e in read_events(run_dir)):
            return run_dir
        if proc.poll() is not None:
            break
        time.sleep(0.005)
    proc.kill()
    proc.wait()
    pytest.fail(
        f"the run never reached stage {point} (exit {proc.returncode}); journal:\n"
        f"{journal_text(run_dir)}\noutput:\n{output(logs)}"
    )


def _processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes (not zombies) whose argv mentions ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(f"{entry.name}: {cmdline}")
    return found


def wait_for_orphans(root: Path, timeout: float = 30.0) -> list[str]:
    """After a SIGKILL the child of the moment lives on in its own session; let it finish so
    nothing it does is missed and it does not slow the next test. Returns what remains."""
    deadline = time.monotonic() + timeout
    while (left := _processes_mentioning(str(root))) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def git(path: Path, *args: str) -> str:
    # --no-optional-locks: `git status` must not refresh .git/index, or it would change the
    # fingerprint by itself
    return subprocess.run(["git", "--no-optional-locks", *args], cwd=path, check=True,
                          capture_output=True, text=True).stdout


def git_state(path: Path) -> dict[str, str]:
    return {
        "status": git(path, "status", "--porcelain"),
        "stash": git(path, "stash", "list"),
        "head": git(path, "rev-parse", "HEAD"),
        "refs": git(path, "show-ref"),
    }


def user_repo(tmp_path: Path) -> Path:
    return git_repo(write_chunk_project(tmp_path / "project"))


# ---------------------------------------------------------------------------- 1. interrupts
CASES = [
    # signal, point, state root inside the user's repository?
    pytest.param(signal.SIGINT, BASELINE_BUILD, False, id="sigint-baseline-build"),
    pytest.param(signal.SIGINT, CORRECTNESS_C2, True, id="sigint-correctness-c2-inside"),
    pytest.param(signal.SIGINT, CONFIRM, False, id="sigint-confirm"),
    pytest.param(signal.SIGKILL, BASELINE_BENCH, True, id="sigkill-baseline-bench-inside"),
    pytest.param(signal.SIGKILL, CORRECTNESS_C2, False, id="sigkill-correctness-c2"),
    pytest.param(signal.SIGKILL, CONFIRM, True, id="sigkill-confirm-inside"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "point", "inside"), CASES)
def test_interrupt_leaves_user_repository_byte_identical(
    tmp_path: Path, sig: signal.Signals, point: tuple[str, str | None], inside: bool
) -> None:
    project = user_repo(tmp_path)
    cwd = project if inside else tmp_path / "elsewhere"
    cwd.mkdir(exist_ok=True)
    state_root = cwd / ".kernelopt"
    git_before = git_state(project)
    files_before = fingerprint(project)
    assert "kernel.py" in git_before["status"] and "staged.txt" in git_before["status"]
    assert git_before["stash"].strip()

    logs = tmp_path / "logs"
    proc = start_run(project, cwd, RUN_FLAGS, logs)
    run_dir = wait_for_point(proc, state_root, set(), point, logs)
    os.kill(proc.pid, sig)
    try:
        code = proc.wait(timeout=EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"no exit {EXIT_TIMEOUT_S} s after {sig.name}; journal:\n"
                    f"{journal_text(run_dir)}\noutput:\n{output(logs)}")

    ev = read_events(run_dir)
    context = f"journal:\n{journal_text(run_dir)}\noutput:\n{output(logs)}"
    if sig == signal.SIGINT:
        assert code == 130, context
        interrupted = [e for e in ev if e["event"] == "interrupted"]
        assert len(interrupted) == 1, context
        assert interrupted[0]["stage"] == point[0], context  # it landed where we aimed
        assert ev[-1]["event"] == "end" and ev[-1]["exit_code"] == 130, context
        s = summary(run_dir)
        assert s["status"] == "interrupted" and s["interrupted"]["stage"] == point[0], context
        assert f"kernelopt resume {run_dir.name}" in s["report_line"], context
        # said as an interruption, with where it stopped and how to go on (issue 14 item 5)
        assert s["report_line"].startswith(f"interrupted during {point[0]}"), context
        assert "run again" in s["report_line"] and "run again" in output(logs), context
        assert "interrupted before a verdict" in (run_dir / "report.md").read_text()
        if point == CONFIRM:  # a candidate was accepted before: named, with its tag
            assert s["interrupted"]["best"] and s["interrupted"]["tag"], context
            assert "best so far" in s["report_line"], context
    else:
        assert code == -signal.SIGKILL, context
        assert not [e for e in ev if e["event"] in ("end", "interrupted")], context
    # After SIGKILL the child of the moment (own session) outlives kernelopt; after SIGINT it
    # should not, but one can when the signal lands while subprocess.Popen is still starting it
    # (process.run never gets the Popen object to kill). Let any such child finish first, so a
    # late write of it would still show in the fingerprint.
    wait_for_orphans(tmp_path)

    assert fingerprint(project) == files_before
    assert git_state(project) == git_before
    if inside:
        assert (state_root / ".gitignore").read_text().splitlines()[-1] == "*"


# ---------------------------------------------------------------------------- 2. no stale lock
# the roofline gate's one-off peak-bandwidth measurement (seconds) is not what these tests are
# about, so the later runs keep only the confirm gate in the final phase
RERUN_FLAGS = ["--iterations", "1", "--final-rounds", "2", "--screen-runs", "1", "--seeds", "1",
               "--final-gates", "confirm"]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_run_after_interrupted_run_of_same_target_works(tmp_path: Path, sig: signal.Signals) -> None:
    project = user_repo(tmp_path)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    state_root = cwd / ".kernelopt"
    logs = tmp_path / "logs-1"
    proc = start_run(project, cwd, RUN_FLAGS, logs)
    first = wait_for_point(proc, state_root, set(), BASELINE_BENCH, logs)
    # inside the first bench: the workspace lock and the GPU lock are both held
    time.sleep(0.15)
    os.kill(proc.pid, sig)
    assert proc.wait(timeout=EXIT_TIMEOUT_S) == (130 if sig == signal.SIGINT else -signal.SIGKILL)
    wait_for_orphans(tmp_path)

    logs = tmp_path / "logs-2"
    second_proc = start_run(project, cwd, RERUN_FLAGS, logs)
    try:
        code = second_proc.wait(timeout=EXIT_TIMEOUT_S)  # a stale lock would wait for 24 h
    except subprocess.TimeoutExpired:
        second_proc.kill()
        second_proc.wait()
        pytest.fail(f"the second run hung (stale lock?); output:\n{output(logs)}")
    new = run_dirs(state_root) - {first}
    assert len(new) == 1, output(logs)
    second = new.pop()
    assert code in (0, 1), f"{output(logs)}\njournal:\n{journal_text(second)}"
    s = summary(second)
    assert s["status"] in ("optimized", "matched", "fallback"), s
    ev = read_events(second)
    assert ev[-1]["event"] == "end" and ev[-1]["exit_code"] == code
    assert [e for e in ev if e["event"] == "bench"], "the second run never benched"
    workspaces = [next(e["dir"] for e in read_events(d) if e["event"] == "workspace")
                  for d in (first, second)]
    assert workspaces[0] == workspaces[1]  # the same target's workspace, taken over again


# ---------------------------------------------------------------------------- 3. GPU lock
RENDEZVOUS_BUILD = """import pathlib, shutil, sys, time
shutil.copy(sys.argv[1], sys.argv[2])
meeting, me, other = pathlib.Path(sys.argv[3]), sys.argv[4], sys.argv[5]
if not (meeting / me).exists():  # the baseline build: wait here until the other run is here too
    (meeting / me).touch()
    deadline = time.time() + 60
    while not (meeting / other).exists():
        if time.time() > deadline:
            sys.exit("the other run never reached its baseline build")  # exit 2: the test fails
        time.sleep(0.01)
"""


@pytest.mark.slow
def test_concurrent_runs_serialize_their_timed_windows(tmp_path: Path) -> None:
    """Two runs on one state root: their baseline builds meet (a rendezvous outside the GPU
    lock), so both runs are live at once by construction, not by timing; every locked window
    of one must then fall outside every window of the other."""
    projects = [write_chunk_project(tmp_path / name) for name in ("a", "b")]
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    for me, other in (("a", "b"), ("b", "a")):
        (tmp_path / me / "build.py").write_text(RENDEZVOUS_BUILD)
        toml = tmp_path / me / "kernelopt.toml"
        text = toml.read_text()
        start = text.index("commands = [")
        end = text.index("\n", start)
        toml.write_text(text[:start] + f'commands = ["{sys.executable} {{repo}}/build.py '
                        f'{{repo}}/kernel.py {{build}}/kernel.py {meeting} {me} {other}"]'
                        + text[end:])
    shared = tmp_path / "shared"  # one state root, so one gpu.lock for both runs
    shared.mkdir()
    flags = ["--iterations", "3", "--final-rounds", "3", "--screen-runs", "1", "--seeds", "1",
             "--final-gates", "confirm"]
    procs = [start_run(p, shared, flags, tmp_path / f"logs-{p.name}") for p in projects]
    codes = []
    for proc, project in zip(procs, projects, strict=True):
        try:
            codes.append(proc.wait(timeout=120))
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
                p.wait()
            pytest.fail(f"run of {project.name} did not finish:\n"
                        f"{output(tmp_path / f'logs-{project.name}')}")
    for code, project in zip(codes, projects, strict=True):
        assert code in (0, 1), output(tmp_path / f"logs-{project.name}")

    runs = sorted(run_dirs(shared / ".kernelopt"))
    assert len(runs) == 2
    journals = {}
    for run_dir in runs:
        ev = read_events(run_dir)
        journals[ev[0]["target"]["root"]] = ev
    assert sorted(journals) == sorted(str(p.resolve()) for p in projects)

    # they ran at the same time (the rendezvous): each ended after the other started
    (ev_a, ev_b) = journals.values()
    assert ev_a[-1]["event"] == "end" and ev_b[-1]["event"] == "end"
    assert ev_a[-1]["t"] > ev_b[0]["t"] and ev_b[-1]["t"] > ev_a[0]["t"]
    assert sorted(p.name for p in meeting.iterdir()) == ["a", "b"]

    windows = sorted(
        (e["acquired"], e["released"], root)
        for root, ev in journals.items() for e in ev if e["event"] == "bench"
    )
    per_run = {root: [w for w in windows if w[2] == root] for root in journals}
    assert all(len(w) >= 5 for w in per_run.values()), per_run
    for earlier, later in zip(windows, windows[1:], strict=False):
        assert earlier[0] <= earlier[1], earlier
        assert earlier[1] <= later[0], f"timed windows overlap: {earlier} and {later}"


def test_a_ref_lock_left_by_a_killed_run_does_not_wedge_the_workspace(tmp_path: Path) -> None:
    """SIGKILL while dulwich updates refs/heads/main leaves refs/heads/main.lock (found by the
    20-point kill test): the next holder of the workspace lock removes it and starts."""
    from kernelopt_core.target import Target
    from kernelopt_core.workspace import Workspace

    project = tmp_path / "p"
    project.mkdir()
    (project / "k.c").write_text("int k;\n")
    target = Target("cmake", "k", project, ("k.c",))
    first = Workspace(tmp_path / "state", target)
    first.acquire("r1")
    first.start("r1")
    first.release()
    (first.dir / "repo.git" / "refs" / "heads" / "main.lock").write_text("stale")
    (first.dir / "repo.git" / "refs" / "tags" / "kernelopt" / "r1" / "c1.lock").write_text("x")
    again = Workspace(tmp_path / "state", target)
    again.acquire("r2")
    try:
        again.start("r2")  # raised dulwich's FileLocked before
    finally:
        again.release()
    assert not list((again.dir / "repo.git" / "refs").rglob("*.lock"))
