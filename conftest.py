"""Session set-up shared by tests/ and plugins/*/tests (pytest reads this file for both).

Device facts: KERNELOPT_DEVICE_CACHE names one directory for the whole session (its workers
and every `kernelopt` child inherit it), so the roofline's peak bandwidth is measured once a
session, not once per state root (each whole-loop test has its own; a measurement is ~7 s on
two busy cores). tests/test_roofline_inputs.py's tests of that measurement and its cache take
it out of their environment.

The packaging tests' wheels and venv are built once a session (tests/packaging_support.py
says how): the tests that use them carry ``xdist_group("packaging")``, so under pytest-xdist
they all run in one worker, which builds them once.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

_OWN_DEVICE_CACHE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    # the controller (or the only process) sets it before pytest-xdist starts its workers
    if not os.environ.get("KERNELOPT_DEVICE_CACHE"):
        path = tempfile.mkdtemp(prefix="kernelopt-test-device-")
        _OWN_DEVICE_CACHE.append(path)
        os.environ["KERNELOPT_DEVICE_CACHE"] = path


def pytest_unconfigure(config: pytest.Config) -> None:
    for path in _OWN_DEVICE_CACHE:
        shutil.rmtree(path, ignore_errors=True)
        if os.environ.get("KERNELOPT_DEVICE_CACHE") == path:
            del os.environ["KERNELOPT_DEVICE_CACHE"]


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
