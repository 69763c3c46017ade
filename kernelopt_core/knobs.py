"""Tuner knobs: declared in a descriptor or found in the editable sources, and applied.

A knob is a regex whose first group is a value in an editable file. Auto-detection finds, in
CUDA/HIP/C/C++ sources, ``#define NAME <int>`` where NAME speaks of a block, tile, unroll, warp,
thread, vector or chunk size, ``__launch_bounds__(<int>)`` and ``#pragma unroll <int>``; the
values tried are powers of two around the current one. The launch-bounds and unroll sites are
found by ``launch_bounds_knobs`` / ``unroll_knobs``, which the CUDA backends use too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

import attrs

from kernelopt_core.errors import UsageError
from kernelopt_core.target import Knob, Target

SIZE_WORDS = re.compile(r"BLOCK|TILE|UNROLL|WARP|THREAD|VEC|CHUNK|GROUP|ROWS_PER|COLS_PER|TB_")
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Z][A-Z0-9_]*)[ \t]+\(?(\d+)\)?[ \t]*$", re.M)
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


# Beyond its list, a knob's value stays a positive C ``int`` (the type a #define'd size is used
# as): a larger one overflows the arithmetic it sizes
INT_MAX = 2 ** 31 - 1
# warps per program: 32 warps are 1024 threads, the most a CUDA or HIP block holds; so is a
# __launch_bounds__ argument, a count of threads
MAX_WARPS = 32
MAX_THREADS = 1024


def _ascending_ints(values: Sequence[str]) -> list[int] | None:
    """``values`` as integers when they are positive decimal integers in strictly ascending
    order (a size, a count, a factor), else None."""
    if not all(v.isdecimal() for v in values):
        return None
    numbers = [int(v) for v in values]
    if not numbers or numbers[0] < 1 or any(a >= b for a, b in zip(numbers, numbers[1:], strict=False)):
        return None
    return numbers


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def step_beyond(values: Sequence[str], upward: bool) -> int | None:
    """The value one step past the top (``upward``) or the bottom end of ``values``: where the
    end and its neighbour are powers of two, the next power of two (double or halve); where the
    end's last three keep a constant integer ratio, that ratio again; else the step between the
    end and its neighbour, continued. None when ``values`` are not ascending positive integers
    (at least two), or a step down leaves the positive integers."""
    numbers = _ascending_ints(values)
    if numbers is None or len(numbers) < 2:
        return None
    near = numbers[-3:] if upward else numbers[2::-1]  # the edge last
    edge, inner = near[-1], near[-2]
    big, small = max(edge, inner), min(edge, inner)
    ratio = None
    if _is_pow2(edge) and _is_pow2(inner):
        ratio = 2
    elif len(near) == 3 and near[0] * edge == inner * inner and big % small == 0:
        ratio = big // small
    if ratio is not None and upward:
        return edge * ratio
    if ratio is not None:
        return edge // ratio if edge % ratio == 0 else None
    beyond = edge + (edge - inner)
    return beyond if beyond >= 1 else None


def max_value(knob: Knob) -> int:
    """The largest value the tuner may give ``knob`` beyond its list (step_beyond keeps it
    positive): a C int; for warps per program (``geometry`` "warps") 32; for a
    __launch_bounds__ argument 1024 threads; never over the knob's own ``maximum``."""
    kind = MAX_WARPS if knob.geometry == "warps" else \
        MAX_THREADS if "__launch_bounds__" in knob.pattern else INT_MAX
    return kind if knob.maximum is None else min(kind, knob.maximum)


def takes(knob: Knob, files: Mapping[str, bytes], value: str) -> bool:
    """Whether ``value``, written into ``files``, is read back whole at every place of ``knob``
    (its pattern and ``also`` patterns each matching once): a pattern that admits only some
    numbers (``(\\d{1,3})``, a list of alternatives) refuses the others."""
    try:
        edited = {**files, **apply((knob,), files, {knob.name: value})}
        return current_values((knob,), edited) == {knob.name: value}
    except (UsageError, StopIteration, KeyError, UnicodeDecodeError):
        return False


def source_texts(files: Mapping[str, bytes],
                 suffixes: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """(path, text) of ``files`` whose path ends in one of ``suffixes`` (any, when none), in
    path order so that knobs come in a stable order; undecodable bytes replaced."""
    for path, data in sorted(files.items()):
        if not suffixes or path.endswith(suffixes):
            yield path, data.decode("utf-8", errors="replace")


def found(target: Target, files: Mapping[str, bytes]) -> tuple[Knob, ...]:
    """A target's knobs as it gives them, before any compile probe drops values: declared,
    else detected in its editable files (resolve.knobs' rule)."""
    return target.knobs or tuple(detect({p: files[p] for p in target.editable if p in files}))


def detect(files: Mapping[str, bytes]) -> list[Knob]:
    knobs: list[Knob] = []
    for path, text in source_texts(files, C_LIKE):
        for match in DEFINE.finditer(text):
            name, value = match.group(1), int(match.group(2))
            if SIZE_WORDS.search(name) and value > 0:
                knobs.append(Knob(name, path, powers_around(value), define_pattern(name)))
        # a generic target: one knob a file and kind, where the file has exactly one such site
        knobs += launch_bounds_knobs(path, text, each=False) + unroll_knobs(path, text, each=False)
    return knobs


@attrs.frozen
class _SiteKind:
    """An integer literal a CUDA source may hold at several sites, each a knob."""

    label: str  # the knob's name before ``#i@path``
    prefix: str  # a regex for what precedes the number
    follows: str  # a lookahead after it: ``__launch_bounds__(Block)`` or ``(8*WARP_SIZE)`` is none
    low: int
    high: int

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.prefix + r"(\d+)" + self.follows, re.M)


_LAUNCH_BOUNDS = _SiteKind("launch_bounds", r"__launch_bounds__\(\s*", r"(?=\s*[,)])", 32, 1024)
_UNROLL = _SiteKind("unroll", r"^[ \t]*#[ \t]*pragma[ \t]+unroll[ \t]+", "", 1, 32)


def _site_knobs(kind: _SiteKind, path: str, text: str, each: bool) -> list[Knob]:
    sites = list(kind.regex.finditer(text))
    if not each:
        if len(sites) != 1:
            return []
        return [Knob(f"{kind.label}@{path}", path,
                     powers_around(int(sites[0].group(1)), kind.low, kind.high), kind.regex.pattern)]
    knobs = []
    for i, site in enumerate(sites):
        # the tuner needs a pattern that matches once: kept only where an anchor makes it so
        pattern = anchored_pattern(text, site.start(1), site.end(1), kind.prefix)
        if pattern:
            knobs.append(Knob(f"{kind.label}#{i}@{path}", path,
                              powers_around(int(site.group(1)), kind.low, kind.high), pattern))
    return knobs


def launch_bounds_knobs(path: str, text: str, *, each: bool = True) -> list[Knob]:
    """Knobs for the integer literals of ``__launch_bounds__(<int>...)`` in ``text`` (the file
    ``path``), tried at 32..1024. ``each``: every site its own knob ``launch_bounds#i@path``
    (i counts the file's sites), anchored on the text after it and kept only when that makes
    it unique; else one ``launch_bounds@path`` for a file with exactly one site, none for more."""
    return _site_knobs(_LAUNCH_BOUNDS, path, text, each)


def unroll_knobs(path: str, text: str, *, each: bool = True) -> list[Knob]:
    """Knobs for the factors of ``#pragma unroll <int>`` in ``text``, tried at 1..32; a bare
    ``#pragma unroll`` is none. ``each`` as for ``launch_bounds_knobs`` (``unroll#i@path``,
    else ``unroll@path``)."""
    return _site_knobs(_UNROLL, path, text, each)


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
