"""Helpers for backends that drive CMake (kernelopt-cmake, kernelopt-llamacpp).

A build directory is configured once and then only rebuilt, so a candidate's rebuild compiles
the files it changed. It is configured again when the configure arguments change, or when the
last configure did not finish: a failed configure leaves a CMakeCache.txt but no build system,
and skipping configure then would wedge the directory until it is deleted by hand.

Where the build uses ccache (a project's compiler launcher; llama.cpp's GGML_CCACHE, on by
default, picks it up from PATH), its base directory (``CCACHE_BASEDIR``) is the folder that
holds every workspace, so that sources and flags name workspace paths relatively and one cache
serves the baseline trees of every workspace: another op's, a later run's clean build becomes
cache hits. (A candidate tree's paths name ``cand-src``: it hits only its own earlier objects.)
A ``CCACHE_BASEDIR`` already in the environment is kept; a ``base_dir`` in ccache.conf is not.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path

from kernelopt_core.target import Command

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


def cmake_commands(cwd: Path, source: Path, build: Path, args: Sequence[str] = (), *,
                   targets: Sequence[str] = (), generator: str | None = None,
                   jobs: int | None = None, configure_timeout_s: float = 900,
                   build_timeout_s: float = 3600) -> list[Command]:
    """The commands that build ``source`` into ``build``: a configure (``cmake -S -B``, the
    generator — default Ninja when it is on PATH — then ``args``) only when ``needs_configure``
    says so, then ``cmake --build`` (``targets`` if given, ``jobs`` or every CPU)."""
    configure = ["cmake", "-S", str(source), "-B", str(build)]
    generator = generator or ("Ninja" if shutil.which("ninja") else None)
    if generator:
        configure += ["-G", generator]
    configure += list(args)
    env = ccache_env(source, build)
    commands = []
    if needs_configure(build, configure):
        commands.append(Command(tuple(configure), cwd, env, timeout_s=configure_timeout_s,
                                label="configure"))
    compile_ = ["cmake", "--build", str(build), "-j", str(jobs or os.cpu_count() or 2)]
    if targets:
        compile_ += ["--target", *targets]
    commands.append(Command(tuple(compile_), cwd, env, timeout_s=build_timeout_s, label="build"))
    return commands


def ccache_env(source: Path, build: Path) -> dict[str, str]:
    """``CCACHE_BASEDIR`` (module docstring): the parent of the folder holding both trees (a
    workspace), unless the environment has one or that parent would be the root."""
    if os.environ.get("CCACHE_BASEDIR"):
        return {}
    shared = Path(os.path.commonpath([source.resolve(), build.resolve()]))
    return {} if len(shared.parents) < 2 else {"CCACHE_BASEDIR": str(shared.parent)}
