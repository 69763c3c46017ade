"""What a bench worker's replies mean to the runner: exit codes, a failed load, the per-run
bench seeds sent at load, and the reading notes kept in the journal."""

from __future__ import annotations

import secrets
from typing import Any

from kernelopt_core.measure.parsers import BenchReading
from kernelopt_core.workers.protocol import WorkerError


class LoadFailed(WorkerError):
    """A worker's load request failed; ``code`` is the exit code it reported."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def exit_code(reply: dict[str, Any]) -> int:
    code = reply.get("exit", 1)
    return code if isinstance(code, int) and not isinstance(code, bool) and code > 0 else 4


def bench_seeds() -> tuple[int, int]:
    # far above any seed a user lists (1, 2, 3...): the check seeds and these never coincide
    return (1_000_003 + secrets.randbelow(1 << 30), 1_000_003 + (1 << 30) + secrets.randbelow(1 << 30))


_READING_KEYS = {"kernelopt_bench", "time_ms", "shape", "bytes", "checksum", "timer",
                 "interpreted", "note", "device", "work"}


def how_timed(reading: BenchReading) -> dict[str, Any]:
    """The bench's own scalar notes on how it took the reading (windows, fixed costs...), kept
    in the journal so a slow reading can be explained afterwards."""
    return {k: v for k, v in reading.extra.items() if k not in _READING_KEYS
            and isinstance(v, int | float | bool | str) and len(str(v)) <= 100}
