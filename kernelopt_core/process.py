"""The one place kernelopt spawns children: timeouts, process-group kill, capped output.

Every child runs in its own session (process group) so a timeout or Ctrl-C kills the whole
tree it started (compilers, test runners), not just the direct child. A bench worker, once
spawned here, is driven by ``workers.protocol.Worker`` (requests, replies, pause, close).
"""

from __future__ import annotations

__all__ = ["OUTPUT_CAP", "ProcessResult", "Worker", "WorkerError", "WorkerMissing", "run",
           "start_worker"]

import ctypes
import functools
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core.bench_worker import FDS_ENV  # "READ_FD,WRITE_FD" as the child sees them
from kernelopt_core.target import Command
from kernelopt_core.workers.protocol import (  # the worker's side of the pipes; re-exported
    OUTPUT_CAP,
    Worker,
    WorkerError,
    WorkerMissing,
    _cap,
    _kill_group,
    exit_text,
    group_members,
)


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
            _kill_group(proc)
            proc.wait()
        except BaseException:  # KeyboardInterrupt: take the whole group down with us
            _kill_group(proc)
            proc.wait()
            raise
        seconds = time.perf_counter() - start  # the grace below is not the command's time
        left_running = own_group and not timed_out and _outlived(proc.pid)
        if left_running:  # nothing the code under test started outlives it
            _kill_group(proc)
        out.seek(0)
        err.seek(0)
        result = ProcessResult(
            command,
            proc.returncode if not timed_out else 124,
            _cap(out.read(), cap),
            _cap(err.read(), cap),
            seconds,
            timed_out=timed_out,
            left_running=left_running,
        )
    _log(result, log_path)
    return result


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

def start_worker(command: Command, log_path: Path | None = None,
                 hello_timeout_s: float = 300.0, wait: bool = True) -> Worker:
    """Spawn ``command`` as a bench worker and exchange the first request (``hello``, carrying
    a fresh random token) so the channel is bound before any code under test is loaded.
    ``wait=False`` sends hello and returns at once (the worker does its start-up meanwhile);
    its first request, or ``ready()``, reads the reply.

    Raises WorkerError when it does not answer; WorkerMissing when the program is not found."""
    req_r, req_w = os.pipe()  # core -> child
    rep_r, rep_w = os.pipe()  # child -> core
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        proc = _popen(command, out, err, {FDS_ENV: f"{req_r},{rep_w}"}, (req_r, rep_w))
    except BaseException as exc:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        for fd in (req_r, req_w, rep_r, rep_w):
            os.close(fd)
        out.close()
        err.close()
        if isinstance(exc, (FileNotFoundError, PermissionError, NotADirectoryError)):
            raise WorkerMissing(f"worker `{command.display()}`: {exc}") from exc
        raise
    # the Worker exists before a pending Ctrl-C can fire, so the handler below reaches it
    worker = Worker(command, proc, req_w, rep_r, out, err, log_path, secrets.token_hex(16))
    try:
        os.close(req_r)
        os.close(rep_w)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        worker._log(f"$ {command.display()}  # worker {proc.pid}\n# cwd: {command.cwd}")
        hello = {"op": "hello", "token": worker.token}
        worker.awaiting = (worker._send(hello), hello, hello_timeout_s)
        if wait:
            worker.ready()
    except BaseException:
        worker._terminate()
        raise
    return worker
