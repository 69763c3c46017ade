"""`kernelopt watch`: the state folded from a journal recorded on the H200, and the live view
through a pseudo-terminal while a journal grows (the test appends events and waits for the
view to show them: no sleeps decide anything)."""

from __future__ import annotations

import json
import os
import platform
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kernelopt_tests_support import records

from kernelopt_core import events
from kernelopt_core.ui_watch import JournalTail, spark
from kernelopt_core.watch_state import fold

RECORDED = Path(__file__).parent / "fixtures" / "journals" / "h200-softmax-run.jsonl"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")


def h200_run() -> list[dict]:
    return [json.loads(line) for line in RECORDED.read_text().splitlines()]


def test_the_state_of_a_recorded_run() -> None:
    s = fold(h200_run())
    assert (s.target, s.shape, s.planner) == ("softmax", "f32[8192,8192]", "tuner")
    assert (s.proposed, s.evaluated, s.accepted) == (3, 3, 3) and s.iterations == 40
    assert s.best_candidate == "c1" and s.best == pytest.approx(1.8007, abs=1e-4)
    assert s.screening == "13 of 60 configurations screened in 1.227 GPU-s"
    assert len(s.confirm) == 20 and s.confirm_candidate == "c1"
    assert s.confirm_ratio == pytest.approx(1.80, abs=0.01)
    assert s.verdict == "optimized" and s.ended and s.exit_code == 0
    assert s.gpu_seconds == pytest.approx(18.614)  # the end event's own count
    assert s.elapsed_s == pytest.approx(44.0, abs=0.1)


def test_halfway_the_state_says_what_is_going_on() -> None:
    recorded = h200_run()
    cut = next(i for i, e in enumerate(recorded) if e["event"] == "candidate"
               and e["candidate"] == "c2")
    s = fold(recorded[:cut + 2])
    assert s.trying == "c2: BLOCK_SIZE@softmax_kernel=8192, num_warps@softmax_kernel=8"
    assert not s.ended
    assert s.proposed == 2 and s.evaluated == 1 and s.verdict is None
    assert spark([1.0, 1.5, 1.8]) == "▁▅█"


def test_a_line_still_being_written_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(b'{"event": "stage", "stage": "snapshot"}\n{"event": "sta')
    tail = JournalTail(path)
    assert [e["stage"] for e in tail.read()] == ["snapshot"]
    with open(path, "ab") as fh:
        fh.write(b'ge", "stage": "plan"}\n')
    assert [e["stage"] for e in tail.read()] == ["plan"] and tail.read() == []


def _read_until(fd: int, pattern: str, seen: list[str], timeout_s: float = 60.0) -> str:
    """Pseudo-terminal output until ``pattern`` shows (ANSI codes stripped)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen.append(os.read(fd, 65536).decode(errors="replace"))
            except OSError:  # the child closed the terminal
                break
        text = ANSI.sub("", "".join(seen))
        if re.search(pattern, text):
            return text
    raise AssertionError(f"{pattern!r} never showed:\n{ANSI.sub('', ''.join(seen))[-3000:]}")


def test_the_live_view_follows_a_growing_journal_in_a_terminal(tmp_path: Path) -> None:
    recorded = RECORDED.read_text().splitlines(keepends=True)
    header = json.loads(recorded[0])  # the run's process: alive here (this test's own)
    recorded[0] = json.dumps({**header, "pid": os.getpid(), "host": platform.node()}) + "\n"
    run = tmp_path / "state" / "runs" / "20261201T131053347Z-c3d6fc"
    run.mkdir(parents=True)
    journal = run / "journal.jsonl"
    cut = next(i for i, line in enumerate(recorded) if '"event": "best"' in line)
    journal.write_text("".join(recorded[:cut + 1]))
    primary, secondary = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "LINES": "40", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from kernelopt_core.cli import main; main()", "watch", "last",
         "--state-root", str(tmp_path / "state")],
        stdin=secondary, stdout=secondary, stderr=secondary, env=env, close_fds=True)
    os.close(secondary)
    seen: list[str] = []
    try:
        text = _read_until(primary, r"best so far\s*│\s*1\.801× \(c1\)", seen)
        assert "softmax f32[8192,8192]" in text and "verdict" not in text
        with open(journal, "a") as fh:  # the rest of the run, as it would be written
            fh.write("".join(recorded[cut + 1:]))
        text = _read_until(primary, r"ended\s*│\s*exit 0", seen)
        assert re.search(r"confirm\s*│\s*c1: 20 rounds", text)
        assert re.search(r"verdict\s*│\s*optimized", text)
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        os.close(primary)


def test_without_rich_watch_draws_plain_text(tmp_path: Path) -> None:
    """rich is an optional extra the README's main command does not install (issue 55)."""
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "journal.jsonl").write_text(RECORDED.read_text())
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['rich'] = None\n"
         "from kernelopt_core.cli import main; main()", "watch", "--once",
         "--state-root", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("kernelopt ") and "  verdict" in proc.stdout
    assert any(line.split() == ["verdict", "optimized"] for line in lines), proc.stdout
    assert any(line.split() == ["stage", "finished"] for line in lines), proc.stdout


def test_after_the_verdict_no_stage_or_candidate_is_shown_as_going_on() -> None:
    s = fold(h200_run())
    assert (s.stage, s.stage_candidate, s.trying) == ("finished", None, "")


def test_a_run_whose_process_is_gone_without_an_end_event_is_said_so(tmp_path: Path) -> None:
    """A run killed hard (SIGKILL, a reboot) writes no end event: the view says its process
    is gone and stops following, instead of waiting forever."""
    from kernelopt_core.ui_watch import gone, watch

    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    recorded = RECORDED.read_text().splitlines(keepends=True)
    header = {**json.loads(recorded[0]), "pid": finished.pid, "host": platform.node()}
    cut = next(i for i, line in enumerate(recorded) if '"event": "best"' in line)
    journal = tmp_path / "journal.jsonl"
    journal.write_text(json.dumps(header) + "\n" + "".join(recorded[1:cut]))
    state = watch(journal, once=False, interval_s=0.01)  # returns: nothing left to follow
    assert not state.ended and gone(state)
    header["host"] = "another-host"  # elsewhere: not known, so followed
    assert not gone(fold([header]))


def test_a_resumed_run_is_followed_in_its_new_process() -> None:
    """A killed attempt's half-done candidate is no longer being tried, and the resumed
    attempt's process (not the killed one's) is the one whose life the view follows."""
    from kernelopt_core.ui_watch import gone

    recorded = h200_run()
    cut = next(i for i, e in enumerate(recorded) if e["event"] == "candidate"
               and e["candidate"] == "c2")
    header = {**recorded[0], "pid": 2**22 + 1, "host": platform.node()}  # a pid no one has
    killed = fold([header, *recorded[1:cut + 2]])
    assert killed.trying.startswith("c2:") and gone(killed)
    [again] = records(events.Resumed(pid=os.getpid(), host=platform.node(),
                                     argv=["resume", "last"], best=1.8, completed=["c1"]))
    resumed = fold([header, *recorded[1:cut + 2], {**again, "t": recorded[cut]["t"]}])
    assert resumed.trying == "" and resumed.stage == "resumed" and not resumed.ended
    assert resumed.pid == os.getpid() and not gone(resumed)
    assert resumed.evaluated == resumed.proposed == 1  # c2 is proposed again, counted then
    assert resumed.baseline_ms == killed.baseline_ms
    elsewhere = fold([header, {**again, "host": "other"}])
    assert elsewhere.host == "other" and not gone(elsewhere)  # not this host's to judge


def test_a_retaken_confirm_round_replaces_its_first_reading() -> None:
    recorded = h200_run()
    first = next(e for e in recorded if e["event"] == "confirm_round")
    retaken = {**first, "candidate_ms": first["candidate_ms"] * 1.1, "retake": True}
    s = fold(recorded + [retaken])
    assert len(s.confirm) == 20  # still 20 rounds: round 1 retaken
    assert s.confirm[first["round"]][1] == pytest.approx(first["candidate_ms"] * 1.1)


def test_gpu_lock_waits_are_summed_from_the_readings() -> None:
    """A reading journals when its GPU lock was asked for and acquired: the wait is another
    run holding the lock (the recorded run predates the field: no wait)."""
    assert fold(h200_run()).gpu_lock_wait_s == 0.0
    reading = records(events.Bench(tree="baseline", purpose="screen", ms=0.25,
                                   checksum="3f2a", asked=10.0, acquired=12.5, released=12.75))
    s = fold(h200_run()[:5] + reading)
    assert s.gpu_lock_wait_s == pytest.approx(2.5) and s.gpu_seconds >= 0.25
