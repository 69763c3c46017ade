"""Session fixtures shared by tests/ and plugins/*/tests (pytest reads this file for both).

The packaging tests' wheels and venv are built once a session (tests/packaging_support.py
says how): the tests that use them carry ``xdist_group("packaging")``, so under pytest-xdist
they all run in one worker, which builds them once.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def packaging_work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("packaging")


@pytest.fixture(scope="session")
def packaging_wheels(packaging_work: Path) -> dict[str, Path]:
    """Wheels of kernelopt, kernelopt-cmake, kernelopt-ninfer, kernelopt-echo and
    kernelopt-broken (a plugin that raises at import), by distribution name."""
    from packaging_support import build_wheels

    return build_wheels(packaging_work)


@pytest.fixture(scope="session")
def packaging_venv(packaging_work: Path, packaging_wheels: dict[str, Path]) -> Path:
    """A venv over the outer environment's site directories, with the wheels of kernelopt,
    kernelopt-cmake, kernelopt-ninfer and kernelopt-echo installed (kernelopt-broken comes and
    goes per test)."""
    from packaging_support import make_venv, pip

    path = make_venv(packaging_work / "venv", packaging_work)
    pip(path, "install", "--no-deps", "--no-index", packaging_wheels["kernelopt"],
        packaging_wheels["kernelopt-cmake"], packaging_wheels["kernelopt-ninfer"],
        packaging_wheels["kernelopt-echo"], cwd=packaging_work)
    return path
