"""Tuner knobs in an op's ggml-cuda files: block sizes, launch bounds, unroll factors.

* ``#define CUDA_<NAME>_BLOCK_SIZE <int>`` (these live in the ``.cuh``). unary.cuh holds one
  per unary op; a file with several keeps only the ones whose NAME belongs to the op
  (``CUDA_SILU_BLOCK_SIZE`` for SILU, not ``CUDA_SILU_BACK_BLOCK_SIZE``): the others cannot
  change the op's time.
* ``__launch_bounds__(<int>...)`` and ``#pragma unroll <int>`` with an integer literal. A file
  may hold several; each becomes its own knob, its pattern anchored on the text after it on the
  same line and the next line, and kept only when that anchor makes it unique (the core's
  tuner needs a pattern that matches exactly once). ``__launch_bounds__(8*WARP_SIZE, 1)`` and
  ``#pragma unroll`` without a number are not knobs.

* a launch's block size written twice, as ``dim3 NAME(<int>, 1, 1)`` and, within the next
  three lines, as the first template argument of the kernel launched (``rms_norm_f32<1024,
  ...>``): one knob whose pattern captures both (the core writes a group that mirrors the first
  with it), when the kernel's name holds the op's and the launch sits in a function the op's
  own function calls (``ggml_cuda_op_rms_norm`` calls ``rms_norm_f32_cuda``, not the fused
  ``rms_norm_mul_f32_cuda``). The pattern is made unique by the rest of the kernel's line, so
  it matches one place before and after any edit of digits.

* a ``CUDA_<NAME>_BLOCK_SIZE`` that another op file pins with ``static_assert(NAME == V, ...)``
  (softmax.cu: "These values need to be adjusted"): the assert names the values that must
  change with it, so the knob writes the assert's V and every clamp ``(x > V ? V : x)`` to the
  same V in that file too (the kernels' template block size, which must equal the launch's),
  through the core's ``Knob.also``. Nothing else is coupled; a wrong coupling fails the tests.

* a file-scope integer constant that is a power of two (``const int CUDA_CPY_TILE_DIM_2D = 32;``,
  cpy.cu's transposed copy's tile) and that a kernel of the op's files uses in its body or its
  launch (reach.py): its values within a factor 4 of the current one (a tile or a row count
  is less free than a block size).

* a selection cap at a dispatch site, whose value picks a templated kernel's block size
  (dispatch_knobs.py: mmvf.cu's ``max_block_size``, MUL_MAT's GEMV).

Values tried are the core's powers of two around the current value (a selection cap's: its
switch's cases). Values that do not compile
are dropped before the search by the compile probe (probe.py).
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
from kernelopt_llamacpp.dispatch_knobs import selection_caps

BLOCK_DEFINE = re.compile(
    r"^[ \t]*#[ \t]*define[ \t]+(CUDA_([A-Z0-9_]+)_BLOCK_SIZE)[ \t]+\(?(\d+)\)?[ \t]*$", re.M)
CONST_INT = re.compile(r"^(?:static[ \t]+)?(?:constexpr|const)[ \t]+(?:int|int64_t|uint32_t|unsigned)"
                       r"[ \t]+(\w+)[ \t]*=[ \t]*(\d+)[ \t]*;", re.M)


def _squash(name: str) -> str:
    return name.replace("_", "")


def _belongs(define_stem: str, op: str) -> bool:
    return _squash(define_stem) == _squash(op)  # SILU owns CUDA_SILU_*, not CUDA_SILU_BACK_*


# a launch whose block size is written twice (the dim3 and the kernel's template argument)
_LAUNCH = re.compile(r"dim3[ \t]+(\w+)\((\d+), 1, 1\);((?:\n[^\n]*){0,2}?\n[^\n]*?)\b(\w+)<(\d+)\b")
_FUNCTION = re.compile(r"^(?:static[ \t]+)?(?:void|[\w:<>]+)[ \t]+(\w+)\s*\(", re.M)


def _called(text: str, function: str) -> set[str]:
    """Names called in ``function``'s body (its definition: the line ends in ``{``; to the
    closing brace at column 0)."""
    start = re.search(rf"^\w[^\n(;]*\b{re.escape(function)}\s*\([^;]*?\{{", text, re.M)
    if start is None:
        return set()
    end = text.find("\n}", start.end())
    return set(re.findall(r"\b(\w+)\s*[(<]", text[start.end():end if end > 0 else None]))


def launch_pairs(text: str, path: str, op: str, function: str) -> list[Knob]:
    """Knobs for launches whose block size appears twice (module docstring)."""
    callees = _called(text, function) if function else set()
    knobs = []
    for m in _LAUNCH.finditer(text):
        name, value, between, kernel, again = m.groups()
        enclosing = [f.group(1) for f in _FUNCTION.finditer(text, 0, m.start())]
        if value != again or _squash(op).lower() not in _squash(kernel).lower() \
                or not enclosing or enclosing[-1] not in callees:
            continue
        line_end = text.find("\n", m.end())
        tail = text[m.end():line_end if line_end >= 0 else None]
        # both numbers as groups (the second a mirror), made unique by the kernel line's rest
        pattern = (rf"dim3[ \t]+{re.escape(name)}\((\d+), 1, 1\);(?:\n[^\n]*){{0,2}}?\n[^\n]*?"
                   rf"\b{re.escape(kernel)}<(?P<mirror>\d+)(?={re.escape(tail)}$)")
        if len(re.findall(pattern, text, re.M)) == 1:
            knobs.append(Knob(f"{kernel}_block@{path}:{text.count(chr(10), 0, m.start()) + 1}",
                              path, powers_around(int(value), 32, 1024), pattern))
    return knobs


def pinned_with(texts: Mapping[str, str], name: str, value: str) -> tuple[tuple[str, str], ...]:
    """The places that must change with define ``name`` (module docstring): in each file that
    asserts ``name == value``, the assert's value and each clamp of an expression to it. None
    at all when a clamp cannot be told apart from another (its pattern would match twice):
    coupling only some of them would compile values whose launch and kernel disagree."""
    sites: list[tuple[str, str]] = []
    for path, text in sorted(texts.items()):
        assert_ = rf"static_assert\(\s*{re.escape(name)}\s*==\s*(\d+)\b"
        if [m.group(1) for m in re.finditer(assert_, text)] != [value]:
            continue
        sites.append((path, assert_))
        clamp = re.compile(rf"\(\s*(\w+)\s*>\s*({value})\s*\?\s*({value})\s*:\s*(\w+)\s*\)")
        for m in clamp.finditer(text):
            if m.group(1) != m.group(4):
                continue
            # the two numbers as groups (the second a mirror), the rest of the text as it is
            cut = [m.start(0), m.start(2), m.end(2), m.start(3), m.end(3), m.end(0)]
            parts = [text[a:b] for a, b in zip(cut, cut[1:], strict=False)]
            pattern = (re.escape(parts[0]) + r"(\d+)" + re.escape(parts[2])
                       + r"(?P<mirror>\d+)" + re.escape(parts[4]))
            if len(re.findall(pattern, text)) != 1:
                return ()
            sites.append((path, pattern))
    return tuple(sites)


def constants(texts: Mapping[str, str]) -> list[Knob]:
    """File-scope power-of-two integer constants a kernel of these files uses (docstring)."""
    from kernelopt_llamacpp.reach import Reach

    reach: Reach | None = None
    knobs = []
    for path, text in sorted(texts.items()):
        for name, value in CONST_INT.findall(text):
            number = int(value)
            if number < 2 or number & (number - 1):
                continue
            reach = reach or Reach(texts)
            if not reach.using(name):
                continue
            pattern = (rf"^(?:static[ \t]+)?(?:constexpr|const)[ \t]+\w+[ \t]+{re.escape(name)}"
                       rf"[ \t]*=[ \t]*(\d+)[ \t]*;")
            values = tuple(v for v in powers_around(number, 1, 1024)
                           if number / 4 <= int(v) <= number * 4)
            if len(re.findall(pattern, text, re.M)) == 1 and len(values) > 1:
                knobs.append(Knob(name, path, values, pattern))
    return knobs


def scan(files: Mapping[str, bytes], op: str, function: str = "") -> list[Knob]:
    knobs: list[Knob] = []
    texts = dict(source_texts(files))
    for path, text in texts.items():
        defines = BLOCK_DEFINE.findall(text)
        for name, stem, value in defines:
            if len(defines) == 1 or _belongs(stem, op):
                knobs.append(Knob(name, path, powers_around(int(value), 32, 1024),
                                  define_pattern(name), also=pinned_with(texts, name, value)))
        knobs += launch_bounds_knobs(path, text)
        knobs += launch_pairs(text, path, op, function)
        knobs += unroll_knobs(path, text)
        knobs += selection_caps(path, text)
    return knobs + constants(texts)
