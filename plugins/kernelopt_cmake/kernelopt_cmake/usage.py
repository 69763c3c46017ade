"""What ``kernelopt init`` reads from a project's own programs and sources: the test's usage
text (its seed as spelled there, its shape arguments), the sizes the bench prints, and the
headers the kernel includes.

``check_blur [seed] [width] [height]`` with a bench printing ``width=1024 height=768``: the
test is ``check_blur {seed}`` and the shape test ``check_blur {seed} 1024 768`` (the timed
shape, checked in its own process); ``x_test --seed N [--rows R --cols C]`` with a bench
printing ``rows=8192 cols=4096``: ``x_test --seed {seed} --rows 8192 --cols 4096``;
``stencil_test [-s SEED] [-n N]`` with a bench printing ``grid 2048x2048``:
``stencil_test -s {seed} -n 2048`` (a square grid's side).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import attrs

_USAGE_LINE = re.compile(r"(?i)\busage\b")
# a flag followed by its value's placeholder (`-s SEED`, `--rows R`, `--seed=<n>`, `--n 2048`),
# not a boolean one followed by the next option (`--transpose [--rows R]`, `[-v] seed`)
# (one space before the value: an option line's description is two spaces away)
_VALUED_FLAG = re.compile(r"(?<![\w-])(-{1,2}[A-Za-z][\w-]*)(?:(=)|[ \t])"
                          r"(<[^<>\s]+>|\[[^\[\]\s-][^\[\]\s]*\]|[A-Za-z][\w-]*|[0-9]+)(?![\w-])")
_ANY_FLAG = re.compile(r"(?<![\w-])-{1,2}[A-Za-z][\w-]*")
_WORD = re.compile(r"[A-Za-z][\w-]*")
# words of a usage line that are no argument of their own
_NOT_ARGUMENT = {"usage", "options", "option", "opts", "flags", "args", "arguments", "or"}
# a printed size: `n=4096`, `rows: 8192`, `grid 2048x2048`, `size 1024 x 1024`, a bare `512x384`
_SIZE = re.compile(r"(?:\b(?P<name>[A-Za-z][\w-]*)[ \t]*(?:[=:][ \t]*|[ \t]+))?(?<![\w.])"
                   r"(?P<dims>\d+(?:[ \t]*[x×][ \t]*\d+)*)(?![\w.])")
# a placeholder for a whole grid: `WxH`, `NXxNY`, `wxh`
_GRID_PLACEHOLDER = re.compile(r"[A-Z0-9]{1,4}[x×][A-Z0-9]{1,4}|[a-z][x×][a-z]")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
NOT_SHAPE = {"seed", "help", "work", "iters", "iterations", "warmup", "repeat", "repeats",
             "runs", "threads", "verbose", "device", "of", "best"}
# the names a program gives one side or the whole of its problem: one square grid's side fills
# any of them (`-n N` for `grid 2048x2048`); a lone scalar among them stands for another
GENERIC_SIZES = {"n", "size", "side", "len", "length", "dim", "grid", "elements"}
SIZE_NAMES = GENERIC_SIZES | {"width", "height", "depth", "w", "h", "rows", "cols", "columns",
                              "nx", "ny", "nz", "m", "k"}


@attrs.frozen
class Flag:
    """An option of a program's usage text, as spelled there."""

    spelled: str  # "-s", "--seed"
    joined: bool = False  # `--seed=N`: the value in the same word
    placeholder: str = ""  # "SEED", "<n>", "WxH"

    @property
    def name(self) -> str:
        return self.spelled.lstrip("-").lower()

    def words(self, value: str) -> tuple[str, ...]:
        return (f"{self.spelled}={value}",) if self.joined else (self.spelled, value)


@attrs.frozen
class ProgramUsage:
    """How the test takes its seed and its shape."""

    seed: str | None  # "flag" (-s N, --seed=N), "positional" (first argument), None (none found)
    positionals: tuple[str, ...] = ()  # in order, after the seed when it is positional
    shape_flags: tuple[Flag, ...] = ()  # --rows R --cols C
    seed_flag: Flag = Flag("--seed")

    def seed_words(self, value: str) -> tuple[str, ...]:
        """The test's arguments for seed ``value`` (``{seed}`` in a descriptor)."""
        if self.seed == "flag":
            return self.seed_flag.words(value)
        return (value,) if self.seed == "positional" else ()


def usage_line(text: str) -> str:
    """The usage text's first ``usage:`` line (the text's first line when none says so)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return next((line for line in lines if _USAGE_LINE.search(line)), lines[0] if lines else "")


def _flags(text: str, described: bool = False) -> list[tuple[Flag, str]]:
    """The valued flags of a text, each with its option line's description when ``described``."""
    return [(Flag(m.group(1), bool(m.group(2)), m.group(3).strip("<>[]")),
             text[m.end():] if described else "") for m in _VALUED_FLAG.finditer(text)]


def _option_flags(text: str) -> list[tuple[Flag, str]]:
    """The valued flags of a help text's option lines (``  -s, --seed SEED   random seed``)."""
    found = []
    for line in text.splitlines():
        if line.lstrip().startswith("-"):
            found += _flags(line, described=True)
    return found


def _seed_evidence(flag: Flag, described: str) -> int:
    """How surely a flag takes the seed: 3 named so (`--seed`, `--rng-seed`), 2 its placeholder
    says so (`-s SEED`, `-r <seed>`), 1 its option line's description starts by naming it
    (`-s N  random seed`, `RNG seed (default 1)`, `seed for inputs`; not `trials per seed` or
    `seed-independent`), 0 none."""
    if re.fullmatch(r"(?:\w+[-_])?seed", flag.name):
        return 3
    if re.fullmatch(r"(?i)(?:\w+[-_])?seed", flag.placeholder):
        return 2
    described_so = re.match(r"(?i)\W*(?:(?:the|a|random|rng|prng|initial|input)\s+){0,2}seed"
                            r"(?![\w-])", described)
    return 1 if described_so else 0


def _positionals(line: str) -> list[str]:
    """The usage line's own arguments in order (`[seed] [width]`, `seed [n]`, `<SEED>`): the
    program's name, the flags with their values and any (remark) taken out."""
    parts = _USAGE_LINE.sub(" ", line, count=1).lstrip(" \t:").split(None, 1)
    rest = parts[1] if len(parts) > 1 else ""  # after the program's name
    rest = re.sub(r"\([^()]*\)", " ", _ANY_FLAG.sub(" ", _VALUED_FLAG.sub(" ", rest)))
    return [w.lower() for w in _WORD.findall(rest) if w.lower() not in _NOT_ARGUMENT]


def read_test_usage(text: str) -> ProgramUsage:
    line = usage_line(text)
    described = _flags(line) + _option_flags(text)
    flags: dict[str, tuple[Flag, str]] = {}
    for flag, after in described:  # the usage line's spelling, the option line's description
        kept, said = flags.get(flag.spelled, (flag, ""))
        flags[flag.spelled] = (kept, said or after)
    # the surest evidence wins (`--seed S` over `--trials N  trials per seed`), then order
    ranked = sorted(((-_seed_evidence(f, after), i, f) for i, (f, after) in
                     enumerate(flags.values())), key=lambda r: r[:2])
    seed_flag = next((f for score, _i, f in ranked if score < 0), None)
    if seed_flag is None and re.search(r"(?<![\w-])--seed(?![\w-])", text):
        # named only in prose ("pass --seed=N"): spelled as the text joins it
        seed_flag = Flag("--seed", re.search(r"(?<![\w-])--seed=", text) is not None, "N")
    shape = tuple(f for f, _ in flags.values() if f != seed_flag and f.name not in NOT_SHAPE)
    named = _positionals(line)
    if seed_flag is not None:
        return ProgramUsage("flag", tuple(named), shape, seed_flag)
    if named and named[0] == "seed":
        return ProgramUsage("positional", tuple(named[1:]), shape)
    return ProgramUsage(None, tuple(named), shape)


@attrs.frozen
class Size:
    """A size a program printed: ``grid 2048x2048`` is ("grid", ("2048", "2048"))."""

    name: str  # lower case; "" for bare dimensions
    dims: tuple[str, ...]

    @property
    def text(self) -> str:
        return "x".join(self.dims)

    @property
    def square(self) -> bool:
        return len(set(self.dims)) == 1


def printed_sizes(stdout: str) -> list[Size]:
    """The integer sizes a program printed, in order (the first of each name)."""
    out: dict[str, Size] = {}
    for m in _SIZE.finditer(stdout):
        name = (m.group("name") or "").lower()
        dims = tuple(re.split(r"[ \t]*[x×][ \t]*", m.group("dims")))
        if name in NOT_SHAPE or (not name and len(dims) < 2):
            continue
        out.setdefault(name, Size(name, dims))
    return list(out.values())


def proposed_shape(sizes: list[Size], usage: ProgramUsage) -> tuple[str, str] | None:
    """The bench's timed shape in the descriptor's form (``[2048,2048]``) and as the bench
    printed it: its first grid (``grid 2048x2048``), else its sizes by name (``n=4096``,
    ``width=512 height=384``: those of a size's name or taken by the test), in printed order."""
    grid = next((s for s in sizes if len(s.dims) > 1), None)
    taken = set(usage.positionals) | {f.name for f in usage.shape_flags}
    named = [grid] if grid else [s for s in sizes if s.name in SIZE_NAMES | taken]
    if not named:
        return None
    printed = " ".join(f"{s.name} {s.text}" if len(s.dims) > 1 else f"{s.name}={s.text}"
                       for s in named).strip()
    return "[" + ",".join(d for s in named for d in s.dims) + "]", printed


def _value(name: str, placeholder: str, sizes: list[Size]) -> str | None:
    """The bench's value for the test's argument ``name``: the size printed under that name
    (a grid whole where the placeholder is one, ``WxH``, else one side of a square grid); a
    square grid's side for a side's name (``-n N`` for ``grid 2048x2048``); the one size of a
    generic name (``n=4096`` for ``--size N``)."""
    exact = next((s for s in sizes if s.name == name), None)
    if exact is not None:
        if len(exact.dims) == 1 or _GRID_PLACEHOLDER.fullmatch(placeholder):
            return exact.text
        return exact.dims[0] if exact.square else None
    if name not in SIZE_NAMES:
        return None
    grids = [s for s in sizes if len(s.dims) > 1]
    if grids:
        return grids[0].dims[0] if len(grids) == 1 and grids[0].square else None
    generic = [s for s in sizes if s.name in GENERIC_SIZES]
    return generic[0].text if name in GENERIC_SIZES and len(generic) == 1 else None


def shape_arguments(usage: ProgramUsage, sizes: list[Size]) -> list[str] | None:
    """The test's arguments for the bench's shape, or None when the bench prints none of the
    sizes the test takes."""
    args: list[str] = []
    for flag in usage.shape_flags:
        value = _value(flag.name, flag.placeholder, sizes)
        if value is not None:
            args += flag.words(value)
    for name in usage.positionals:  # in order: the first one not printed ends them
        value = None if name in NOT_SHAPE else _value(name, "", sizes)
        if value is None:
            break
        args.append(value)
    return args or None


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
