"""A capture's kernels.json (inductor.py's ``capture`` writes it): read back, and the kernels
to optimize chosen from it (one by name, else the top K by share)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# the capture's race of compile modes (models.InductorBackend._race), made once per capture
RACE_FILE = "race.json"


def load_record(capture_dir: Path) -> dict[str, Any]:
    path = capture_dir / "kernels.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: run `python -m kernelopt_triton.inductor capture` first")
    return json.loads(path.read_text())


def select_kernels(record: dict[str, Any], top: int | None = None, kernel: str | None = None) -> list[dict]:
    """The kernels to optimize: one by name, else the top K by share (record order)."""
    kernels = record["kernels"]
    if kernel:
        hit = [k for k in kernels if k["name"] == kernel]
        if not hit:
            names = ", ".join(k["name"] for k in kernels)
            raise KeyError(f"kernel {kernel!r} not in the capture; kernels: {names}")
        return hit
    return kernels[: top or 1]
