from __future__ import annotations

import pytest
from kernelopt_tests_support import REPO, events, kernelopt, last_run, summary  # noqa: F401

# kernelopt_core.testing's fixtures come from its pytest11 entry point (pyproject.toml)


@pytest.fixture
def fast_flags() -> list[str]:
    """Enough search to find the chunk project's win quickly."""
    return ["--iterations", "6", "--final-rounds", "4", "--screen-runs", "3"]
