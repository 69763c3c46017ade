"""The llama.cpp-layout fixture repo (tests/fixtures/llamacpp-mini) and a copier."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURE = Path(__file__).parent / "fixtures" / "llamacpp-mini"


def copy_fixture(dest: Path, marker: bool = True) -> Path:
    shutil.copytree(FIXTURE, dest, ignore=shutil.ignore_patterns("build", ".kernelopt"))
    if not marker:
        (dest / "kernelopt-fixture.toml").unlink()
    return dest
