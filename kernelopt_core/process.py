"""The one place kernelopt spawns children: timeouts, process-group kill, capped output.

Every child runs in its own session (process group) so a timeout or Ctrl-C kills the whole
tree it started (compilers, test runners), not just the direct child.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import secrets
import select
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


def _read_from(fh: Any, offset: int) -> str:
    fh.seek(offset)
    return _cap(fh.read())


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


def run(command: Command, log_path: Path | None = None, cap: int = OUTPUT_CAP) -> ProcessResult:
    """Run ``command`` to completion (or its timeout) and return what it did.

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


# --------------------------------------------------------------------------- bench workers

REPLY_CAP = 1 << 20  # bytes of one reply line


class WorkerError(Exception):
    """A worker crashed, hung, or broke the protocol: its tree's failure, never the run's."""


class WorkerMissing(WorkerError):
    """The worker's program was not found (a missing prerequisite)."""


@attrs.define(eq=False)
class Worker:
    """A persistent child serving requests on a private pipe pair (docs/plugins.md, "Bench
    workers"). Requests and replies are JSON lines; each request gets exactly one reply that
    echoes its ``id`` and the ``token`` sent in the first request. The child's stdout and
    stderr are kept apart (captured like any child's): they are never the reply channel."""

    command: Command
    proc: subprocess.Popen[bytes]
    to_child: int
    from_child: int
    out: Any
    err: Any
    log_path: Path | None
    token: str
    next_id: int = 1
    pending: bytes = b""
    closed: bool = False
    stdout_read: int = 0  # bytes of stdout already handed out by new_stdout()
    awaiting: tuple[int, dict[str, Any], float] | None = None  # hello sent, reply not yet read

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _log(self, text: str) -> None:
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "a", encoding="utf-8") as fh:
                fh.write(text.rstrip("\n") + "\n")

    def _fail(self, reason: str) -> WorkerError:
        tail = self.output_tail() if not self.closed else ""
        self._log(f"# worker {self.pid}: {reason}\n{tail}")
        self._terminate()
        return WorkerError(f"worker `{self.command.display()}`: {reason}"
                           + (f"\n{tail}" if tail else ""))

    def pause(self) -> None:
        """Stop the worker's whole process group between its requests (SIGSTOP): code under
        test cannot run a thread that disturbs the other tree's readings."""
        if not self.closed:
            _signal_group(self.proc, signal.SIGSTOP)

    def resume(self) -> None:
        if not self.closed:
            _signal_group(self.proc, signal.SIGCONT)

    def _terminate(self) -> None:
        """Kill the process group, reap it, release the pipes and files (idempotent)."""
        if self.closed:
            return
        self.closed = True
        _kill_group(self.proc)
        self.proc.wait()
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        self.out.close()
        self.err.close()

    def output_tail(self, chars: int = 2000) -> str:
        parts = []
        for name, fh in (("stdout", self.out), ("stderr", self.err)):
            text = _read_from(fh, 0).strip()
            if text:
                parts.append(f"[{name}] {text[-chars:]}")
        return "\n".join(parts)

    def new_stdout(self) -> str:
        """What the child wrote on its stdout since the last call (read once per request, not
        the whole output again)."""
        text = _read_from(self.out, self.stdout_read)
        self.stdout_read = self.out.tell()
        return text

    def _unexpected_bytes(self) -> bool:
        if self.pending:
            return True
        ready, _, _ = select.select([self.from_child], [], [], 0)
        if not ready:
            return False
        chunk = os.read(self.from_child, 65536)
        self.pending += chunk
        return bool(chunk)

    def request(self, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request and return its one reply; WorkerError on any breach. Ctrl-C takes
        the worker down with it."""
        if self.closed:
            raise WorkerError(f"worker `{self.command.display()}` is closed")
        try:
            return self._request(payload, timeout_s)
        except WorkerError:
            raise
        except BaseException:
            self._terminate()
            raise

    def ready(self) -> None:
        """Wait for the reply to ``hello`` when the worker was started without waiting."""
        if self.awaiting is not None:
            ident, payload, timeout_s = self.awaiting
            self.awaiting = None
            try:
                self._receive(ident, payload, timeout_s)
            except WorkerError:
                raise
            except BaseException:
                self._terminate()
                raise

    def _request(self, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self.ready()
        return self._receive(self._send(payload), payload, timeout_s)

    def _send(self, payload: dict[str, Any]) -> int:
        if self._unexpected_bytes():
            raise self._fail(f"wrote to the reply channel unasked: {self.pending[:200]!r} (a "
                             "second or forged reply)")
        ident = self.next_id
        self.next_id += 1
        line = json.dumps({**payload, "id": ident}) + "\n"
        self._log(f"> {line}")
        try:
            os.write(self.to_child, line.encode())
        except (BrokenPipeError, OSError):
            raise self._fail(f"exited {self.proc.poll()} before request {ident}") from None
        return ident

    def _receive(self, ident: int, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        deadline = time.perf_counter() + timeout_s
        buffer = b""
        while b"\n" not in buffer:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise self._fail(f"no reply to request {ident} ({payload.get('op')}) within "
                                 f"{timeout_s:g} s (hung)")
            ready, _, _ = select.select([self.from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.from_child, 65536)
            if not chunk:
                code = self.proc.wait()
                raise self._fail(f"exited {code} while serving request {ident} "
                                 f"({payload.get('op')})")
            buffer += chunk
            if len(buffer) > REPLY_CAP:
                raise self._fail(f"reply to request {ident} exceeds {REPLY_CAP} bytes")
        text, _, rest = buffer.partition(b"\n")
        self.pending = rest
        self._log(f"< {text.decode('utf-8', errors='replace')}")
        try:
            reply = json.loads(text)
        except ValueError:
            raise self._fail(f"malformed reply to request {ident}: {text[:200]!r}") from None
        if not isinstance(reply, dict) or reply.get("id") != ident or reply.get("token") != self.token:
            raise self._fail(f"malformed reply to request {ident} (wrong id or token): "
                             f"{text[:200]!r}")
        if rest or self._unexpected_bytes():
            raise self._fail(f"more than one reply to request {ident}: {self.pending[:200]!r}")
        return reply

    def close(self, grace_s: float = 5.0) -> None:
        """Ask the worker to exit; kill its process group if it does not (idempotent)."""
        if self.closed:
            return
        if self.awaiting is not None:  # never finished starting (a spare): nothing to wait for
            self._log(f"# worker {self.pid} closed before its start-up was used")
            self._terminate()
            return
        try:
            self.resume()
            if self._unexpected_bytes():  # a reply nobody asked for, after the last request
                self._log(f"# worker {self.pid}: wrote to the reply channel unasked: "
                          f"{self.pending[:200]!r}")
            if self.alive():
                try:
                    os.write(self.to_child, b'{"op": "exit"}\n')
                except OSError:
                    pass
                try:
                    self.proc.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    pass
            self._log(f"# worker {self.pid} closed (exit {self.proc.poll()})\n"
                      f"{self.output_tail()}")
        finally:
            self._terminate()


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


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
