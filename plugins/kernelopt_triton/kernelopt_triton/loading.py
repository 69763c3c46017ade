"""Importing a kernel file by path, under a deadline: what the harness's sweep and the
compile-ahead step (compile_ahead.py) share. Standard library only, so both import it at top
level and neither imports the other."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType


class ConventionError(Exception):
    """The kernel file does not follow the convention (exit 2)."""


class DeadlinePassed(BaseException):  # not an Exception: no kernel-file handler swallows it
    pass


def module_name(path: Path, role: str) -> str:
    """The unique module name a kernel file is imported under (``load``)."""
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
    return f"kernelopt_kernel_{role}_{path.stem}_{digest}"


def load(path: Path, role: str) -> ModuleType:
    """Import a kernel file by path under a unique module name (no bytecode written)."""
    sys.dont_write_bytecode = True  # keep the workspace's source tree clean
    name = module_name(path, role)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConventionError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # triton's jit and dataclasses look modules up by name
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # sibling helper modules
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:  # the file's own error, said as one: where, what
        raise ConventionError(f"{path}: line {exc.lineno}: {exc.msg} (the kernel file is not "
                              "valid Python)") from None
    return module


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """SIGALRM after ``seconds``: raised where Python regains control (between compile stages,
    in the wait for ptxas), so a configuration compiling for minutes fails on its own."""
    if not seconds or seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(_signum: int, _frame: object) -> None:
        raise DeadlinePassed(f"took longer than {seconds:g} s (compile, check and timing)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
