"""What ``kernelopt init`` writes: the descriptor's text from what the smoke baseline read
of the project's programs (Probe) and the choices left open (Draft), checked by the
descriptor's own loader before init writes it (init.py does the finding and the asking)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import attrs

from kernelopt_cmake.bench_time import HumanTime
from kernelopt_cmake.descriptor import load
from kernelopt_cmake.usage import ProgramUsage
from kernelopt_core.api import UsageError


@attrs.define
class Draft:
    """What init could not decide. Without --dry-run the first open choice stops it (asked
    before, refused with --yes); a dry run asks nothing: it goes on with a provisional answer,
    marks each choice in the draft it prints, and then stops as the refusal would (exit 2)."""

    dry_run: bool = False
    marks: dict[str, str] = attrs.field(factory=dict)  # the descriptor key -> its comment
    errors: list[UsageError] = attrs.field(factory=list)

    def mark(self, key: str, comment: str, error: UsageError) -> None:
        if not self.dry_run:
            raise error
        self.marks[key] = comment
        self.errors.append(error)

    def refusal(self) -> UsageError:
        said = "\n".join(str(e) for e in self.errors)
        return UsageError(f"{said}\nnothing written (--dry-run): the draft above marks each open "
                          "choice `# CHOOSE`", hint="run kernelopt init without --dry-run to "
                          "answer it (--yes refuses it), or change the project so that nothing "
                          "needs asking")


@attrs.define
class Probe:
    """What the smoke baseline read from the project's own programs."""

    test_path: str | None = None  # where CMake puts them, under the build directory
    bench_path: str | None = None
    usage: ProgramUsage = ProgramUsage(None)  # the test's seed and shape arguments
    worked: bool = False  # the bench takes --work
    line: dict[str, Any] = attrs.field(factory=dict)  # its JSON line
    human: HumanTime | None = None  # else its own time line, read by a regex
    shape: tuple[str, str] | None = None  # the sizes it prints: ("[2048,2048]", "grid 2048x2048")
    shape_args: list[str] | None = None  # the test's arguments for them (checked)

    @property
    def checksum(self) -> Any:
        return self.human.checksum if self.human else self.line.get("checksum")


def toml_literal(text: str) -> str:
    """A TOML literal string (no escapes), or a basic one when it holds a quote."""
    plain = "'" not in text and all(ch == "\t" or ord(ch) >= 0x20 for ch in text)
    return f"'{text}'" if plain else json.dumps(text)


def commands(probe: Probe) -> tuple[str, str]:
    """The test and bench commands, with the test's seed as its usage spells it."""
    test = " ".join([f"{{build}}/{probe.test_path or '<test program>'}",
                     *probe.usage.seed_words("{seed}")])
    bench = f"{{build}}/{probe.bench_path or '<bench program>'}" + (
        " --work {work}" if probe.worked else "")
    return test, bench


def bench_lines(probe: Probe) -> list[str]:
    human = probe.human
    if human is None:
        return ['bench_format = "json"']
    said = f"`{human.label}`" if human.label else "a number and its unit"
    lines = [f'bench_format = "regex"   # the bench prints its time ({said}), not JSON',
             f"bench_regex = {toml_literal(human.regex)}", f"bench_unit = {json.dumps(human.unit)}"]
    if human.checksum is not None:
        lines[1] += "   # with its checksum: the shape gate compares it"
    return lines


def descriptor(name: str, found: dict[str, Any], test: str | None, bench: str | None,
               probe: Probe, draft: Draft) -> str:
    line = probe.line

    def strings(values: list[str]) -> str:
        return "[" + ", ".join(json.dumps(v) for v in values) + "]"

    def marked(key: str, text: str, otherwise: str = "") -> str:
        return f"{text}   # {draft.marks[key]}" if key in draft.marks else text + otherwise

    test_cmd, bench_cmd = commands(probe)
    lines = [
        "# kernelopt descriptor written by `kernelopt init` (docs/descriptor.md explains every",
        "# key); checked by a smoke baseline: build, the test on seed 1, one bench.",
    ]
    if draft.marks:
        lines.append(f"# DRAFT (--dry-run): {len(draft.marks)} choice(s) open, each marked "
                     "`# CHOOSE` below; nothing written")
    lines += [
        'backend = "cmake"', "", "[build]", 'cmake_args = ["-DCMAKE_BUILD_TYPE=Release"]',
        f"targets = {strings(sorted({n for n in (test, bench) if n}))}", "", "[[target]]",
        f"name = {json.dumps(name)}",
    ]
    if found["device"]:
        lines.append(f'device = "{found["device"]}"')
    lines += [f"editable = {strings(found['editable'])}   # the kernel: what candidates change",
              f"context = {strings(found['context'])}",
              f"contract = {strings(found['contract'])}   # the test and bench: never edited",
              marked("test", f"test = {json.dumps(test_cmd)}", "" if probe.usage.seed else
                     "   # no seed in its usage: one fixed input"),
              marked("bench", f"bench = {json.dumps(bench_cmd)}")]
    if probe.shape_args:
        lines.append(f"shape_test = {json.dumps(' '.join([test_cmd, *probe.shape_args]))}"
                     "   # the test at the shape the bench prints")
    lines += [marked("bench_format", text) if text.startswith("bench_format") else text
              for text in bench_lines(probe)]
    if line.get("shape"):
        lines.append(f"shape = {json.dumps(str(line['shape']))}   # as the bench reports it")
    elif probe.shape:
        lines.append(f"shape = {json.dumps(probe.shape[0])}   # the sizes the bench prints "
                     f"({probe.shape[1]})")
    if isinstance(line.get("bytes"), int):
        lines.append(f"bytes = {line['bytes']}   # as the bench reports it (the roofline bound)")
    lines += ["", "# Knobs (#define TILE/BLOCK/UNROLL..., __launch_bounds__) are detected; to fix",
              "# their values: [[target.knobs]] name = \"TILE\" values = [8, 16, 32]", ""]
    return "\n".join(lines)


def checked_descriptor(text: str) -> None:
    """What a run will read: the descriptor's own loader, on the text about to be written."""
    check = Path(tempfile.mkdtemp(prefix="kernelopt-init-check-"))
    try:
        (check / "kernelopt.toml").write_text(text, encoding="utf-8")
        load(check / "kernelopt.toml")
    finally:
        shutil.rmtree(check, ignore_errors=True)
