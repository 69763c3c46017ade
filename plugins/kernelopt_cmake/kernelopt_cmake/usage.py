"""What ``kernelopt init`` reads from a project's own programs and sources: the test's usage
text (a seed flag or a positional seed, its shape arguments), the sizes the bench prints, and
the headers the kernel includes.

``check_blur [seed] [width] [height]`` with a bench printing ``width=1024 height=768``: the
test is ``check_blur {seed}`` and the shape test ``check_blur {seed} 1024 768`` (the timed
shape, checked in its own process); ``x_test --seed N [--rows R --cols C]`` with a bench
printing ``rows=8192 cols=4096``: ``x_test --seed {seed} --rows 8192 --cols 4096``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import attrs

_USAGE_LINE = re.compile(r"(?i)\busage\b")
_POSITIONAL = re.compile(r"[\[<]\s*([A-Za-z][\w-]*)\s*[\]>]")
# a flag followed by its value's placeholder (`--rows R`, `--rows=<n>`, `--rows 2048`), not a
# boolean one followed by the next option (`--transpose [--rows R]`)
_VALUED_FLAG = re.compile(r"(?<![\w-])--([A-Za-z][\w-]*)(?:\s*=\s*|\s+)(?=[A-Z0-9<]|[a-z]\w*\b(?!\]))")
_SIZE = re.compile(r"\b([A-Za-z][\w]*)\s*[=:]\s*(\d+)\b")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
NOT_SHAPE = {"seed", "help", "work", "iters", "iterations", "warmup", "repeat", "repeats",
             "runs", "threads", "verbose", "device"}


@attrs.frozen
class ProgramUsage:
    """How the test takes its seed and its shape."""

    seed: str | None  # "flag" (--seed N), "positional" (first argument), None (none found)
    positionals: tuple[str, ...] = ()  # in order, after the seed when it is positional
    shape_flags: tuple[str, ...] = ()  # --rows R --cols C


def usage_line(text: str) -> str:
    """The usage text's first ``usage:`` line (the text's first line when none says so)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return next((line for line in lines if _USAGE_LINE.search(line)), lines[0] if lines else "")


def read_test_usage(text: str) -> ProgramUsage:
    line = usage_line(text)
    flags = [m.group(1) for m in _VALUED_FLAG.finditer(line)]  # as spelled: --numRows
    named = []
    for m in _POSITIONAL.finditer(line):
        # `--seed <n>`, `-s <seed>`: a flag's value, not an argument of its own
        if not re.search(r"(?<![\w-])-{1,2}[\w-]+\s*=?\s*$", line[:m.start()]):
            named.append(m.group(1).lower())
    if re.search(r"(?<![\w-])--seed(?![\w-])", line) or re.search(
            r"(?<![\w-])--seed(?![\w-])", text):
        return ProgramUsage("flag", (), tuple(f for f in flags if f.lower() not in NOT_SHAPE))
    if named and named[0] == "seed":
        return ProgramUsage("positional", tuple(named[1:]))
    return ProgramUsage(None)


def printed_sizes(stdout: str) -> dict[str, str]:
    """``name=123`` / ``name: 123`` integers a program printed (the first of each name)."""
    out: dict[str, str] = {}
    for m in _SIZE.finditer(stdout):
        out.setdefault(m.group(1).lower(), m.group(2))
    return out


def shape_arguments(usage: ProgramUsage, sizes: dict[str, str]) -> list[str] | None:
    """The test's arguments for the bench's shape, or None when the bench prints none of the
    sizes the test takes."""
    if usage.seed == "flag":
        args = [part for name in usage.shape_flags if name.lower() in sizes
                for part in (f"--{name}", sizes[name.lower()])]
        return args or None
    if usage.seed == "positional":
        args = []
        for name in usage.positionals:  # in order: the first one not printed ends them
            if name in NOT_SHAPE or name not in sizes:
                break
            args.append(sizes[name])
        return args or None
    return None


def included_headers(root: Path, sources: list[str], skip: set[str]) -> list[str]:
    """Project headers the sources include (``#include "x.h"``), found beside the source, at
    the root, or as the only project file of that path; transitively, without ``skip``."""
    headers = []
    for folder, dirs, files in os.walk(root):  # build trees and hidden folders pruned
        dirs[:] = [d for d in dirs if not d.startswith(".") and not d.startswith("build")
                   and not d.startswith("cmake-build")]
        headers += [(Path(folder) / f).relative_to(root).as_posix() for f in files
                    if Path(f).suffix in {".h", ".hh", ".hpp", ".cuh", ".inl"}]
    headers.sort()
    found: list[str] = []
    queue = list(sources)
    while queue:
        source = queue.pop(0)
        path = root / source
        text = path.read_text(errors="replace") if path.is_file() else ""
        for name in _INCLUDE.findall(text):
            beside = (path.parent / name).resolve()
            at_root = (root / name).resolve()
            match = [h for h in headers if (root / h).resolve() in (beside, at_root)] or \
                [h for h in headers if h == name or h.endswith("/" + name)]
            if len(match) == 1 and match[0] not in found and match[0] not in skip:
                found.append(match[0])
                queue.append(match[0])
    return found
