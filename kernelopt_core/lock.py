"""The GPU lock: bench, verify, profile and engine steps hold it so runs never overlap timing.

One exclusive cross-process lock per device (``gpu-<host>.lock``, or ``gpu<N>-<host>.lock``
when ``KERNELOPT_DEVICE`` / ``CUDA_VISIBLE_DEVICES`` names a single device index) in the state
root; the host's name in it, so hosts sharing a state root (a campaign's cluster) do not take
turns for each other's GPU 0.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs
import portalocker


def lock_path(state_root: Path) -> Path:
    device = os.environ.get("KERNELOPT_DEVICE") or os.environ.get("CUDA_VISIBLE_DEVICES", "")
    host = "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in platform.node()) or "host"
    if device and device.isdigit():
        return state_root / f"gpu{device}-{host}.lock"
    return state_root / f"gpu-{host}.lock"


@attrs.define
class Held:
    """When the lock was asked for, acquired and released (epoch seconds)."""

    asked: float
    acquired: float = 0.0
    released: float = 0.0

    @property
    def waited_s(self) -> float:
        return self.acquired - self.asked


@contextmanager
def gpu_lock(state_root: Path) -> Iterator[Held]:
    state_root.mkdir(parents=True, exist_ok=True)
    held = Held(asked=time.time())
    lock = portalocker.Lock(str(lock_path(state_root)), timeout=24 * 3600, fail_when_locked=False)
    lock.acquire()
    held.acquired = time.time()
    try:
        yield held
    finally:
        held.released = time.time()
        lock.release()


@contextmanager
def unlocked() -> Iterator[Held]:
    """The same record for work that does not take the lock (a worker compiling ahead)."""
    held = Held(asked=time.time())
    held.acquired = held.asked
    try:
        yield held
    finally:
        held.released = time.time()
