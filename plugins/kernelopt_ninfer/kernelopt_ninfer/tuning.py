"""Tuner knobs in an op's launchers and kernels, found by what their names say.

* ``#define NAME <int>`` and ``constexpr int kName = <int>;`` (NInfer's launchers write
  ``constexpr int kBlock = 256;``) whose name speaks of a launch size: a block or thread count
  (``BLOCK``, ``THREADS``: 32..1024), rows/warps/vector width/unroll/items per thread (``ROWS``,
  ``WARPS``, ``VEC``, ``UNROLL``, ``... PER THREAD``: 1..32), a tile or chunk (1..1024). Names
  split on ``_`` and camel case, so ``kRowsPerBlock`` is a rows knob and ``kBlock`` a block
  knob. The warp size (``WARP`` + ``SIZE``) is hardware, never a knob.
* ``__launch_bounds__(<int>...)`` and ``#pragma unroll <int>`` with an integer literal; a file
  may hold several, each its own knob, its pattern anchored on the text after it on the line
  (or the next line) and kept only when that makes it unique. ``__launch_bounds__(Block)``
  and a bare ``#pragma unroll`` are not knobs.

Every knob's pattern matches exactly once in its file (the core's tuner rewrites that match);
the values tried are the core's powers of two around the current value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kernelopt_core.api import (
    Knob,
    define_pattern,
    launch_bounds_knobs,
    powers_around,
    source_texts,
    unroll_knobs,
)

DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+\(?(\d+)\)?[ \t]*(?://.*)?$",
                    re.M)
CONSTEXPR_HEAD = r"^[ \t]*(?:static[ \t]+)?(?:inline[ \t]+)?constexpr[ \t]+[\w:]+[ \t]+"
CONSTEXPR = re.compile(CONSTEXPR_HEAD + r"([A-Za-z_]\w*)[ \t]*=[ \t]*(\d+)[ \t]*;", re.M)
SMALL = {"ROWS", "ROW", "WARPS", "VEC", "VECTOR", "UNROLL"}
PER_WHAT = {"ITEMS", "ELEMS", "ELEMENTS", "PAIRS", "VALUES"}
THREADS = {"BLOCK", "BLOCKSIZE", "BLOCKDIM", "THREADS", "NTHREADS"}
SPANS = {"TILE", "CHUNK"}
C_LIKE = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".inl")


def words(name: str) -> set[str]:
    """``kRowsPerBlock`` → {K, ROWS, PER, BLOCK}; ``RMSNORM_BLOCK_SIZE`` → {RMSNORM, BLOCK, SIZE}."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return {w.upper() for w in spaced.split("_") if w}


def size_range(name: str) -> tuple[int, int] | None:
    """The range a knob of this name is tuned in, or None when the name is no launch size."""
    w = words(name)
    if "WARP" in w and "SIZE" in w:
        return None
    if w & SMALL or ("PER" in w and w & PER_WHAT):
        return 1, 32
    if w & THREADS:
        return 32, 1024
    if w & SPANS:
        return 1, 1024
    return None


def _unique(pattern: str, text: str) -> bool:
    return len(re.findall(pattern, text, re.M)) == 1


def _constexpr_pattern(name: str) -> str:
    return CONSTEXPR_HEAD + re.escape(name) + r"[ \t]*=[ \t]*(\d+)(?=[ \t]*;)"


def _named(path: str, text: str) -> list[tuple[str, str, str, int, tuple[int, int]]]:
    """(name, pattern, file, value, range) for the size-named defines and constexprs."""
    found = []
    for regex, make in ((DEFINE, define_pattern), (CONSTEXPR, _constexpr_pattern)):
        for match in regex.finditer(text):
            name, value = match.group(1), int(match.group(2))
            span = size_range(name)
            pattern = make(name)
            if span and value > 0 and _unique(pattern, text):
                found.append((name, pattern, path, value, span))
    return found


def scan(files: Mapping[str, bytes]) -> list[Knob]:
    """The knobs of ``files`` (path → content), in a stable order."""
    named: list[tuple[str, str, str, int, tuple[int, int]]] = []
    positional: list[Knob] = []
    for path, text in source_texts(files, C_LIKE):
        named += _named(path, text)
        positional += launch_bounds_knobs(path, text) + unroll_knobs(path, text)
    counts: dict[str, int] = {}
    for name, *_ in named:
        counts[name] = counts.get(name, 0) + 1
    # one name in two files (kBlock in two launchers): each knob is named with its file
    return [Knob(name if counts[name] == 1 else f"{name}@{path}", path,
                 powers_around(value, low, high), pattern)
            for name, pattern, path, value, (low, high) in named] + positional
