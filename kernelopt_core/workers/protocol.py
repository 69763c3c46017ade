"""A bench worker's pipes, as the core drives them: hello, one JSON-line request, exactly one
reply (its id and the token of hello), pause and resume of its process group, close. The
child itself is spawned by process.py (``spawn_worker``), the one module that spawns.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core.process import (
    WorkerChild,
    capped,
    exit_text,
    group_members,
    kill_group,
    signal_group,
    spawn_worker,
)
from kernelopt_core.target import Command


def _read_from(fh: Any, offset: int) -> str:
    fh.seek(offset)
    return capped(fh.read())


REPLY_CAP = 1 << 20  # bytes of one reply line


class WorkerError(Exception):
    """A worker crashed, hung, or broke the protocol: its tree's failure, never the run's."""


class WorkerMissing(WorkerError):
    """The worker's program was not found (a missing prerequisite)."""


STRAY_GRACE_S = 2.0  # a child winding down after its request may take this long
STRAY_CHECKED = frozenset({"hello", "load", "check"})  # the requests followed by a stray check


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

    def strays(self) -> list[int]:
        """Live processes of the worker's group other than the worker, after a short grace for
        one winding down: what the code under test started and left running (a worker's own
        pools are not allowed: the backend starts it so that it needs none)."""
        deadline = time.perf_counter() + STRAY_GRACE_S
        while (others := [pid for pid in group_members(self.pid) if pid != self.pid]):
            if time.perf_counter() > deadline:
                return others
            time.sleep(0.05)
        return []

    def pause(self) -> None:
        """Stop the worker's whole process group between its requests (SIGSTOP): code under
        test cannot run a thread that disturbs the other tree's readings."""
        if not self.closed:
            signal_group(self.proc, signal.SIGSTOP)

    def resume(self) -> None:
        if not self.closed:
            signal_group(self.proc, signal.SIGCONT)

    def _terminate(self) -> None:
        """Kill the process group, reap it, release the pipes and files (idempotent)."""
        if self.closed:
            return
        self.closed = True
        kill_group(self.proc)
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
            raise self._fail(f"{exit_text(self.proc.poll())} before request {ident}") from None
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
                raise self._fail(f"{exit_text(code)} while serving request {ident} "
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
        # where a content's code first runs (its import, its first calls): what it started
        # then skews every later reading. Not after compile/sweep: a compile past its deadline
        # may still be in ptxas, the harness's own child (compile_ahead.py)
        if payload.get("op") in STRAY_CHECKED and (strays := self.strays()):
            raise self._fail(f"left processes running after request {ident} "
                             f"({payload.get('op')}): pids {strays} (killed with its group)")
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


def start_worker(command: Command, log_path: Path | None = None,
                 hello_timeout_s: float = 300.0, wait: bool = True) -> Worker:
    """Spawn ``command`` as a bench worker (process.spawn_worker) and exchange the first
    request (``hello``, carrying a fresh random token) so the channel is bound before any code
    under test is loaded. ``wait=False`` sends hello and returns at once (the worker does its
    start-up meanwhile); its first request, or ``ready()``, reads the reply.

    Raises WorkerError when it does not answer; WorkerMissing when the program is not found."""
    def adopt(child: WorkerChild) -> Worker:
        return Worker(command, child.proc, child.to_child, child.from_child, child.out,
                      child.err, log_path, secrets.token_hex(16))

    try:
        worker = spawn_worker(command, adopt)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        raise WorkerMissing(f"worker `{command.display()}`: {exc}") from exc
    try:
        worker._log(f"$ {command.display()}  # worker {worker.pid}\n# cwd: {command.cwd}")
        hello = {"op": "hello", "token": worker.token}
        worker.awaiting = (worker._send(hello), hello, hello_timeout_s)
        if wait:
            worker.ready()
    except BaseException:
        worker._terminate()
        raise
    return worker
