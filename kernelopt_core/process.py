"""The one place kernelopt spawns children: timeouts, process-group kill, capped output.

Every child runs in its own session (process group) so a timeout or Ctrl-C kills the whole
tree it started (compilers, test runners), not just the direct child. A bench worker is
spawned here too (``spawn_worker``: the child on a fresh pipe pair) and driven by
``workers.protocol`` (hello, requests, replies, pause, close), which imports this module,
never the other way round.
"""

from __future__ import annotations

__all__ = ["OUTPUT_CAP", "ProcessResult", "WorkerChild", "capped", "exit_text", "group_members",
           "kill_group", "run", "signal_group", "spawn_worker"]

import ctypes
import functools
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs

from kernelopt_core.bench_worker import FDS_ENV  # "READ_FD,WRITE_FD" as the child sees them
from kernelopt_core.target import Command

OUTPUT_CAP = 256 * 1024  # bytes of stdout and of stderr kept; the rest is cut from the middle


def capped(data: bytes, cap: int = OUTPUT_CAP) -> str:
    """``data`` decoded, its middle cut when it is over ``cap`` bytes."""
    if len(data) > cap:
        half = cap // 2
        cut = len(data) - cap
        data = data[:half] + f"\n…[{cut} bytes cut]…\n".encode() + data[-half:]
    return data.decode("utf-8", errors="replace")


# what a signal that ended a process says about the code it ran
_SIGNAL_MEANING = {
    signal.SIGSEGV: "segmentation fault: an invalid memory access",
    signal.SIGBUS: "bus error: a misaligned or unmapped memory access",
    signal.SIGABRT: "abort: a failed assertion or std::abort",
    signal.SIGFPE: "arithmetic fault: an integer division by zero",
    signal.SIGILL: "illegal instruction",
    signal.SIGKILL: "killed: by kernelopt at a timeout, or by the system out of memory",
}


def exit_text(code: int | None) -> str:
    """``exited N``, naming the signal when one ended the process (``-11``), or when a shell
    reported one (``139`` = 128 + SIGSEGV): the fault a user has to fix."""
    if code is None:
        return "is still running"
    number = -code if code < 0 else code - 128 if 128 < code < 160 else 0
    try:
        name = signal.Signals(number).name if number else ""
    except ValueError:
        name = ""
    if not name:
        return f"exited {code}"
    meaning = _SIGNAL_MEANING.get(signal.Signals(number), "")
    how = f"killed by {name}" if code < 0 else f"a shell's report of {name}"
    return f"exited {code} ({how}{': ' + meaning if meaning else ''})"


def signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """``sig`` to the whole process group of ``proc`` (gone already: nothing to do)."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    signal_group(proc, signal.SIGKILL)


def _killed_gone(pgid: int) -> None:
    """After SIGKILL to the group: wait (a few seconds at most) until none of it is alive, so a
    command that returns killed has nothing left running (a loaded machine delivers the kill
    late: a test saw the killed process still listed right after)."""
    deadline = time.perf_counter() + KILLED_GONE_S
    while group_members(pgid) and time.perf_counter() < deadline:
        time.sleep(0.02)


def group_members(pgid: int) -> list[int]:
    """Live processes (zombies aside) of the group ``pgid``, from /proc (Linux; elsewhere
    none known)."""
    try:
        entries = [e for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return []
    found = []
    for entry in entries:
        try:
            with open(f"{entry.path}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            found.append(int(entry.name))
    return found


@attrs.frozen
class ProcessResult:
    command: Command
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    missing: bool = False  # the program was not found
    # it ended, but processes it started were still running in its group (then killed): a
    # leftover server, a forgotten background job — a fault of the code it ran
    left_running: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.left_running

    def tail(self, chars: int = 2000) -> str:
        text = (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()
        return text if len(text) <= chars else "…" + text[-chars:]

    def describe(self) -> str:
        if self.missing:
            return f"`{self.command.display()}`: program not found"
        if self.timed_out:
            return f"`{self.command.display()}` timed out after {self.command.timeout_s:g} s"
        left = " but left processes running (killed)" if self.left_running else ""
        return f"`{self.command.display()}` {exit_text(self.returncode)}{left}"


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _prepare_child(parent: int) -> None:
    """In the child, before exec: take the signals back, and die with kernelopt (Linux)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: a SIGKILLed kernelopt takes it along
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # kernelopt died before the line above took effect
            os._exit(137)


def _popen(command: Command, out: Any, err: Any, extra_env: dict[str, str] | None = None,
           pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    """The one Popen: its own session (a group to kill), dying with kernelopt, output to the
    given files. Call it with SIGINT/SIGTERM blocked; unblock once the handle is kept."""
    env = {**os.environ, **command.env, **(extra_env or {})}
    return subprocess.Popen(
        list(command.argv), cwd=str(command.cwd), env=env, stdin=subprocess.DEVNULL,
        stdout=out, stderr=err, start_new_session=True, pass_fds=pass_fds,
        preexec_fn=functools.partial(_prepare_child, os.getpid()),
    )


def run(command: Command, log_path: Path | None = None, cap: int = OUTPUT_CAP,
        own_group: bool = False) -> ProcessResult:
    """Run ``command`` to completion (or its timeout) and return what it did.

    ``own_group``: the command runs the code under test (a check, a bench, the engine), so
    a process it leaves running in its group (after a short grace) is killed and fails it.
    Builds and tools may leave a daemon behind (sccache's server): theirs are left alone.

    Output goes to temporary files, not pipes, so a chatty child can never block on a full
    pipe. If ``log_path`` is given, the command, exit status and output are written there.
    ``cap``: bytes kept of each stream (the middle is cut); a caller that parses every line
    of a long output asks for more.
    """
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # Ctrl-C must not land between fork and `proc` being known (the child would escape
        # the group kill): hold SIGINT/SIGTERM until then; the child unblocks its own copy.
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            proc = _popen(command, out, err)
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
            result = ProcessResult(command, 127, "", str(exc), 0.0, missing=True)
            _log(result, log_path)
            return result
        except BaseException:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
            raise
        timed_out = False
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)  # a pending one fires here
            proc.wait(timeout=command.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc)
            proc.wait()
            _killed_gone(proc.pid)
        except BaseException:  # KeyboardInterrupt: take the whole group down with us
            kill_group(proc)
            proc.wait()
            raise
        seconds = time.perf_counter() - start  # the grace below is not the command's time
        left_running = own_group and not timed_out and _outlived(proc.pid)
        if left_running:  # nothing the code under test started outlives it
            kill_group(proc)
            _killed_gone(proc.pid)
        out.seek(0)
        err.seek(0)
        result = ProcessResult(
            command,
            proc.returncode if not timed_out else 124,
            capped(out.read(), cap),
            capped(err.read(), cap),
            seconds,
            timed_out=timed_out,
            left_running=left_running,
        )
    _log(result, log_path)
    return result


KILLED_GONE_S = 5.0  # a killed group's members are gone by then even on a loaded machine
LEFT_GRACE_S = 2.0  # a child winding down after its parent (a pool's worker) may take this long


def _outlived(pgid: int) -> bool:
    """Whether a process of the ended command's group is still alive after a short grace."""
    deadline = time.perf_counter() + LEFT_GRACE_S
    while group_members(pgid):
        if time.perf_counter() > deadline:
            return True
        time.sleep(0.05)
    return False


def _log(result: ProcessResult, log_path: Path | None) -> None:
    if log_path is None:
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as fh:
        fh.write(f"$ {result.command.display()}\n# cwd: {result.command.cwd}\n")
        fh.write(f"# {result.describe()} in {result.seconds:.3f} s\n")
        if result.stdout:
            fh.write(result.stdout.rstrip("\n") + "\n")
        if result.stderr:
            fh.write("# stderr:\n" + result.stderr.rstrip("\n") + "\n")
        fh.write("\n")


# --------------------------------------------------------------------------- bench workers

@attrs.frozen
class WorkerChild:
    """A bench worker just spawned: its handle, the core's ends of its pipe pair, and the
    files its stdout and stderr go to (workers.protocol.Worker owns them from here)."""

    proc: subprocess.Popen[bytes]
    to_child: int
    from_child: int
    out: Any
    err: Any


Adopted = TypeVar("Adopted")


def spawn_worker(command: Command, adopt: Callable[[WorkerChild], Adopted]) -> Adopted:
    """Spawn ``command`` as a bench worker on a fresh pipe pair (the child finds its ends in
    ``bench_worker.FDS_ENV``) and hand it to ``adopt`` while SIGINT/SIGTERM are still held:
    what owns the child exists before a pending Ctrl-C can fire, so its handler reaches it.
    Returns what ``adopt`` made. A program that cannot be started raises as Popen does
    (FileNotFoundError, PermissionError, NotADirectoryError), nothing left open."""
    req_r, req_w = os.pipe()  # core -> child
    rep_r, rep_w = os.pipe()  # child -> core
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        proc = _popen(command, out, err, {FDS_ENV: f"{req_r},{rep_w}"}, (req_r, rep_w))
    except BaseException:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        for fd in (req_r, req_w, rep_r, rep_w):
            os.close(fd)
        out.close()
        err.close()
        raise
    child = WorkerChild(proc, req_w, rep_r, out, err)
    theirs = [req_r, rep_w]  # the child's ends, closed here once it has them
    try:
        adopted = adopt(child)
        while theirs:
            os.close(theirs.pop())
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)  # a pending Ctrl-C fires here
    except BaseException:  # the child goes down with whatever stopped its adoption
        kill_group(proc)
        proc.wait()
        for fd in (*theirs, req_w, rep_r):
            try:
                os.close(fd)
            except OSError:
                pass
        out.close()
        err.close()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        raise
    return adopted
