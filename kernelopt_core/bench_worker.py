"""The child's side of the bench-worker protocol (docs/plugins.md, "Bench workers").

A backend whose bench can stay alive and serve many requests offers ``bench_worker(target,
tree) -> Command``; the core starts that command with ``KERNELOPT_WORKER_FDS=R,W`` (a request
pipe to read, a reply pipe to write) and talks JSON lines over them. A Python worker uses
:class:`Channel`; a worker in another language follows the same rules:

* the first request is ``{"op": "hello", "token": T, "id": 1}``: keep T, do the slow
  start-up that touches no code under test (imports, device initialisation: the core waits
  for this reply outside the GPU lock), answer it, and only then load the code under test;
* every later request gets exactly one reply line ``{"id": <its id>, "token": T, "ok": true,
  ...}`` (``"ok": false`` with ``"exit"`` and ``"error"`` for a failure); a second line, a
  wrong id or token, a crash or a hang past the timeout fails that tree only;
* ``{"op": "exit"}`` (no id) asks the worker to leave.

Imports only the standard library and binds what it uses at import, so code under test that
rebinds json or os functions does not change the replies. Code under test runs in the same
process and could still reach the channel object itself (through gc, frames): the framing
(one reply per request, its id, the token) catches output written beside the protocol, and the
policy gate bans the reaching; neither is a sandbox.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

FDS_ENV = "KERNELOPT_WORKER_FDS"
_dumps, _loads, _write, _read, _exit = json.dumps, json.loads, os.write, os.read, os._exit


class Channel:
    """The worker's reply channel, bound before any code under test is imported."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._read_fd, self._write_fd = read_fd, write_fd
        self._buffer = b""
        self._token = ""

    @classmethod
    def from_env(cls, setup: Callable[[], None] | None = None) -> Channel:
        """Bind the pipes named by the environment, read ``hello``, run ``setup`` (imports and
        device initialisation: kept outside the GPU-locked requests) and answer ``hello``; the
        variable is removed so code loaded later does not find it by name."""
        spec = os.environ.pop(FDS_ENV, "")
        try:
            read_fd, write_fd = (int(part) for part in spec.split(","))
        except ValueError:
            raise SystemExit(f"{FDS_ENV} is {spec!r}: this program serves bench requests only "
                             "when kernelopt starts it as a worker") from None
        channel = cls(read_fd, write_fd)
        hello = channel.read()
        if hello is None or hello.get("op") != "hello" or not hello.get("token"):
            raise SystemExit("bench worker: the first request must be hello with a token")
        channel._token = str(hello["token"])
        if setup is not None:
            setup()
        channel.reply(hello, ok=True)
        return channel

    def read(self) -> dict[str, Any] | None:
        """The next request; None when the core closed the pipe or asked the worker to exit."""
        while b"\n" not in self._buffer:
            chunk = _read(self._read_fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        request = _loads(line)
        if not isinstance(request, dict) or request.get("op") == "exit":
            return None
        return request

    def reply(self, request: dict[str, Any], **fields: Any) -> None:
        """Exactly one reply line for ``request``."""
        line = _dumps({**fields, "id": request.get("id"), "token": self._token}) + "\n"
        data = line.encode()
        while data:
            data = data[_write(self._write_fd, data):]

    @staticmethod
    def leave(code: int = 0) -> None:
        """Exit at once, before any atexit handler of the code under test can run."""
        _exit(code)
