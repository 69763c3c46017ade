"""The one place kernelopt spawns children: timeouts, process-group kill, capped output.

Every child runs in its own session (process group) so a timeout or Ctrl-C kills the whole
tree it started (compilers, test runners), not just the direct child.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs

from kernelopt_core.target import Command

OUTPUT_CAP = 256 * 1024  # bytes of stdout and of stderr kept; the rest is cut from the middle


@attrs.frozen
class ProcessResult:
    command: Command
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    missing: bool = False  # the program was not found

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def tail(self, chars: int = 2000) -> str:
        text = (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()
        return text if len(text) <= chars else "…" + text[-chars:]

    def describe(self) -> str:
        if self.missing:
            return f"`{self.command.display()}`: program not found"
        if self.timed_out:
            return f"`{self.command.display()}` timed out after {self.command.timeout_s:g} s"
        return f"`{self.command.display()}` exited {self.returncode}"


def _cap(data: bytes, cap: int = OUTPUT_CAP) -> str:
    if len(data) > cap:
        half = cap // 2
        cut = len(data) - cap
        data = data[:half] + f"\n…[{cut} bytes cut]…\n".encode() + data[-half:]
    return data.decode("utf-8", errors="replace")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


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


def run(command: Command, log_path: Path | None = None, cap: int = OUTPUT_CAP) -> ProcessResult:
    """Run ``command`` to completion (or its timeout) and return what it did.

    Output goes to temporary files, not pipes, so a chatty child can never block on a full
    pipe. If ``log_path`` is given, the command, exit status and output are written there.
    ``cap``: bytes kept of each stream (the middle is cut); a caller that parses every line
    of a long output asks for more.
    """
    env = dict(os.environ)
    env.update(command.env)
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # Ctrl-C must not land between fork and `proc` being known (the child would escape
        # the group kill): hold SIGINT/SIGTERM until then; the child unblocks its own copy.
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            proc = subprocess.Popen(
                list(command.argv),
                cwd=str(command.cwd),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                preexec_fn=functools.partial(_prepare_child, os.getpid()),
            )
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
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        result = ProcessResult(
            command,
            proc.returncode if not timed_out else 124,
            _cap(out.read(), cap),
            _cap(err.read(), cap),
            seconds,
            timed_out=timed_out,
        )
    _log(result, log_path)
    return result


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
