"""Shared fixtures: a fresh copy of the llama.cpp-layout fixture repo."""

from __future__ import annotations

from pathlib import Path

import pytest
from llamacpp_fixture import copy_fixture


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return copy_fixture(tmp_path / "llama.cpp")
