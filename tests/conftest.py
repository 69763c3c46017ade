from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # kernelopt_tests_support, whatever the rootdir
from kernelopt_tests_support import REPO, events, kernelopt, last_run, summary  # noqa: F401

pytest_plugins = ["kernelopt_core.testing"]


@pytest.fixture
def fast_flags() -> list[str]:
    """Enough search to find the chunk project's win quickly."""
    return ["--iterations", "6", "--final-rounds", "4", "--screen-runs", "3"]
