"""Helpers the repository's tests share (a module of its own: `from conftest import` is
ambiguous when pytest collects the plugins' tests beside these)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def kernelopt(*args: str, cwd: Path, env: dict[str, str] | None = None,
              timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process, as a user runs it."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("KERNELOPT_HOME", None)
    return subprocess.run([sys.executable, "-m", "kernelopt_core.cli", *args], cwd=cwd,
                          env=full_env, capture_output=True, text=True, timeout=timeout)


def last_run(state_root: Path) -> Path:
    runs = sorted((state_root / "runs").iterdir())
    return runs[-1]


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
