"""Paths the kernelopt-triton tests share (a module of its own: `from conftest import` is
ambiguous when pytest collects this plugin's tests beside the repository's tests/)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "triton"
HACKS = REPO / "tests" / "reward_hacks" / "triton"
