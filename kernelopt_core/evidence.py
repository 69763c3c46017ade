"""What a passing test says about itself: a check command may print, as its last line on
stdout, ``{"kernelopt_check": 1, ...}`` (NInfer's OP_ERROR_STATS summary, say); it is kept as
evidence beside the gate's pass, the baseline's and the winner's shown in report.md.

Read back from the check's log (the runner appends every check's output there), from where
the log ended before the check: the gate needs no other channel from the runner."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelopt_core.process import ProcessResult
from kernelopt_core.target import Tree

Failed = tuple[str, ProcessResult] | None  # Runner.check_all's answer

MARK = '{"kernelopt_check"'


def log_size(log: Path) -> int:
    """Where ``log`` ends now: evidence is read from here after the check ran."""
    return log.stat().st_size if log.exists() else 0


def checked(check_all: Callable[[Tree, Path], Failed], tree: Tree, log: Path
            ) -> tuple[Failed, list[dict[str, Any]]]:
    """``check_all(tree, log)`` (Runner.check_all) and, when it passed, what the check printed
    about itself into ``log`` during it."""
    start = log_size(log)
    failed = check_all(tree, log)
    return failed, [] if failed is not None else read(log, start)


def read(log: Path, start: int = 0) -> list[dict[str, Any]]:
    """The ``kernelopt_check`` lines written to ``log`` from byte ``start`` on."""
    if not log.exists():
        return []
    with open(log, "rb") as fh:
        fh.seek(start)
        text = fh.read().decode("utf-8", errors="replace")
    # per logged process (process.py's log: "$ command", its stdout, "# stderr:", its
    # stderr), the last line on stdout: a wrapper prints its line last and sends the test's
    # own output to stderr, so what the code under test prints is not taken for it (only a
    # deliberate imitation of the log's process header is; nothing is judged on evidence)
    found: list[dict[str, Any]] = []
    last: dict[str, Any] | None = None
    on_stdout = True
    for raw in text.splitlines():
        if raw.startswith("$ "):
            found += [last] if last is not None else []
            last, on_stdout = None, True
            continue
        if raw == "# stderr:":
            on_stdout = False
        line = raw.strip()
        if not on_stdout or not line.startswith(MARK):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("kernelopt_check") == 1:
            last = {k: v for k, v in data.items() if k != "kernelopt_check"}
    return found + ([last] if last is not None else [])


def describe(item: dict[str, Any], limit: int = 300) -> str:
    """One line: ``key value``, nested mappings flattened one level (``op_error_stats.records
    12``)."""
    parts = []
    for key, value in item.items():
        if isinstance(value, dict):
            parts += [f"{key}.{k} {_short(v)}" for k, v in value.items()]
        else:
            parts.append(f"{key} {_short(value)}")
    text = ", ".join(parts).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)
