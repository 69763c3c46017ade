"""Tuner knobs: declared in a descriptor or found in the editable sources, and applied.

A knob is a regex whose first group is a value in an editable file. Auto-detection finds, in
CUDA/HIP/C/C++ sources, ``#define NAME <int>`` where NAME speaks of a block, tile, unroll, warp,
thread, vector or chunk size, ``__launch_bounds__(<int>)`` and ``#pragma unroll <int>``; the
values tried are powers of two around the current one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kernelopt_core.errors import UsageError
from kernelopt_core.target import Knob

SIZE_WORDS = re.compile(r"BLOCK|TILE|UNROLL|WARP|THREAD|VEC|CHUNK|GROUP|ROWS_PER|COLS_PER|TB_")
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Z][A-Z0-9_]*)[ \t]+\(?(\d+)\)?[ \t]*$", re.M)
LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\((\d+)")
PRAGMA_UNROLL = re.compile(r"^[ \t]*#pragma[ \t]+unroll[ \t]+(\d+)", re.M)
C_LIKE = (".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".cuh", ".hip")


def define_pattern(name: str) -> str:
    return rf"^[ \t]*#[ \t]*define[ \t]+{re.escape(name)}[ \t]+\(?([^\s)]+)\)?[ \t]*$"


def powers_around(value: int, low: int = 1, high: int = 1024) -> tuple[str, ...]:
    out = {value}
    v = 1
    while v <= high:
        if v >= low and value / 16 <= v <= value * 16:
            out.add(v)
        v *= 2
    return tuple(str(x) for x in sorted(out))


def detect(files: Mapping[str, bytes]) -> list[Knob]:
    knobs: list[Knob] = []
    for path, data in sorted(files.items()):
        if not path.endswith(C_LIKE):
            continue
        text = data.decode("utf-8", errors="replace")
        for match in DEFINE.finditer(text):
            name, value = match.group(1), int(match.group(2))
            if SIZE_WORDS.search(name) and value > 0:
                knobs.append(Knob(name, path, powers_around(value), define_pattern(name)))
        bounds = LAUNCH_BOUNDS.findall(text)
        if len(bounds) == 1:
            value = int(bounds[0])
            knobs.append(
                Knob(f"launch_bounds@{path}", path, powers_around(value, 32, 1024),
                     r"__launch_bounds__\((\d+)")
            )
        unrolls = PRAGMA_UNROLL.findall(text)
        if len(unrolls) == 1:
            value = int(unrolls[0])
            knobs.append(
                Knob(f"unroll@{path}", path, powers_around(value, 1, 32),
                     r"^[ \t]*#pragma[ \t]+unroll[ \t]+(\d+)")
            )
    return knobs


def anchored_pattern(text: str, start: int, end: int, prefix: str) -> str | None:
    """A knob pattern for the number at ``text[start:end]`` (``prefix`` matches what precedes
    it), made to match once by the rest of its line, else of the next line; None when neither
    is unique. Tuning rewrites only digits, so the anchor survives every knob's edits."""
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    next_end = text.find("\n", line_end + 1)
    next_end = len(text) if next_end < 0 else next_end
    for stop in (line_end, next_end):
        pattern = prefix + r"(\d+)" + "(?=" + re.escape(text[end:stop]) + ")"
        if len(re.findall(pattern, text, re.M)) == 1:
            return pattern
    return None


def current_values(knobs: tuple[Knob, ...], files: Mapping[str, bytes],
                   editable: tuple[str, ...] | None = None) -> dict[str, str]:
    """The baseline value of each knob; a knob outside the editable files, or a pattern that
    does not match exactly once, is an error (every tuner proposal would fail otherwise)."""
    values = {}
    for knob in knobs:
        found = []
        for file, pattern in knob.sites():
            if file not in files or (editable is not None and file not in editable):
                raise UsageError(
                    f"knob {knob.name!r}: file {file!r} is not one of the target's editable "
                    f"files ({', '.join(editable or sorted(files))})",
                    hint="a knob's `file` must be one of the target's editable files",
                )
            text = files[file].decode("utf-8", errors="replace")
            matches = list(re.finditer(pattern, text, re.M))
            if len(matches) != 1:
                raise UsageError(
                    f"knob {knob.name!r}: pattern {pattern!r} matches {len(matches)} times "
                    f"in {file} (needs exactly 1)",
                    hint="make the knob's pattern unique, with its value in the first group",
                )
            found.append(matches[0].group(1))
        if len(set(found)) != 1:
            raise UsageError(f"knob {knob.name!r}: its places hold different values {found}",
                             hint="every place in `also` must hold the knob's value")
        values[knob.name] = found[0]
    return values


def apply(
    knobs: tuple[Knob, ...], files: Mapping[str, bytes], assignment: Mapping[str, str]
) -> dict[str, bytes]:
    """Rewrite each knob's value; returns only the files that changed (full new content)."""
    texts: dict[str, str] = {}
    for knob in knobs:
        if knob.name not in assignment:
            continue
        for file, pattern in knob.sites():
            text = texts.get(file, files[file].decode("utf-8"))
            match = next(re.finditer(pattern, text, re.M))
            # the first group is the value; groups named mirror... repeat it (a block size and
            # the template argument that must equal it): all written, last to first
            named = {index: name for name, index in match.re.groupindex.items()}
            mirrors = [g for g in range(2, len(match.groups()) + 1)
                       if named.get(g, "").startswith("mirror") and match.start(g) >= match.end(1)]
            for group in [*reversed(mirrors), 1]:
                start, end = match.span(group)
                text = text[:start] + assignment[knob.name] + text[end:]
            texts[file] = text
    return {
        path: text.encode("utf-8")
        for path, text in texts.items()
        if text.encode("utf-8") != files[path]
    }


def short_name(name: str, width: int = 40) -> str:
    """A long name cut in the middle, its start and its end kept (Inductor's kernel names end
    in a distinguishing index: ``triton_poi_fused__scaled…_view_where_5``); the same name
    always gives the same short form."""
    if len(name) <= width:
        return name
    tail = max(8, width // 3)
    return f"{name[:width - tail - 1]}…{name[-tail:]}"


def describe_assignment(assignment: Mapping[str, str]) -> str:
    """``k=v`` pairs, a knob by its own name and its scope (``BLOCK@kernel``: the kernel it
    belongs to) named once per group: ``kernel: BLOCK=128, num_warps=4``."""
    groups: dict[str, list[str]] = {}
    for name, value in assignment.items():
        knob, _, scope = name.partition("@")
        groups.setdefault(scope, []).append(f"{knob}={value}")
    return "; ".join((f"{short_name(scope)}: " if scope else "") + ", ".join(pairs)
                     for scope, pairs in groups.items())
