"""Helpers for backends that drive CMake (kernelopt-cmake, kernelopt-llamacpp).

A build directory is configured once and then only rebuilt, so a candidate's rebuild compiles
the files it changed. It is configured again when the configure arguments change, or when the
last configure did not finish: a failed configure leaves a CMakeCache.txt but no build system,
and skipping configure then would wedge the directory until it is deleted by hand.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

STAMP = "kernelopt-configure.txt"  # the configure arguments the directory was made with
GENERATED = ("build.ninja", "Makefile")  # what a finished configure leaves (Ninja, Makefiles)


def needs_configure(build: Path, configure: Sequence[str]) -> bool:
    """Whether ``build`` must be (re)configured with ``configure``; if so, a stale cache is
    removed and the new arguments recorded, ready for the configure command to run."""
    stamp = build / STAMP
    wanted = shlex.join(configure)
    cached = (build / "CMakeCache.txt").is_file()
    generated = any((build / name).is_file() for name in GENERATED)
    if cached and generated and stamp.is_file() and stamp.read_text() == wanted:
        return False
    if cached:  # other arguments, or an unfinished configure: start from a clean cache
        (build / "CMakeCache.txt").unlink()
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(wanted)
    return True
