"""The kernelopt.toml descriptor (docs/descriptor.md), parsed with cattrs into attrs classes.

Unknown keys, missing fields and wrong types are errors naming the file, the key, its line
where it can be found, and the fix.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs
import cattrs
from cattrs.errors import ClassValidationError
from cattrs.v import format_exception

from kernelopt_core.api import UsageError, read_toml, toml_line

FILENAME = "kernelopt.toml"


@attrs.frozen
class BuildSpec:
    """CMake (configure args + build targets) or, with ``commands``, any command list."""

    cmake_args: list[str] = attrs.field(factory=list)
    targets: list[str] = attrs.field(factory=list)
    generator: str | None = None  # default: Ninja when on PATH, else CMake's default
    jobs: int | None = None
    commands: list[str] = attrs.field(factory=list)
    source_dir: str = "."  # the CMake source directory, relative to the project root
    timeout_s: float = 1800.0


@attrs.frozen
class KnobSpec:
    name: str
    values: list[Any]  # numbers or strings, written into the source as text
    file: str | None = None  # default: the target's first editable file
    pattern: str | None = None  # default: `#define NAME <value>`


@attrs.frozen
class TargetSpec:
    name: str
    editable: list[str]
    test: str
    bench: str | None = None
    bench_format: str = "json"
    bench_column: str = "median_ms"
    bench_regex: str = ""
    bench_unit: str = "ms"
    engine: str | None = None
    shape_test: str | None = None  # checks the exact timed shape and launch path; {seed}
    device: str | None = None  # cpu | cuda | hip; default from the editable files' suffixes
    peak_gbps: float | None = None  # override the measured peak bandwidth
    context: list[str] = attrs.field(factory=list)
    contract: list[str] = attrs.field(factory=list)
    shape: str = ""
    bytes: int | None = None
    flops: int | None = None
    knobs: list[KnobSpec] = attrs.field(factory=list)
    timeout_s: float = 600.0


@attrs.frozen
class Descriptor:
    target: list[TargetSpec]
    build: BuildSpec = attrs.field(factory=BuildSpec)
    backend: str | None = None
    run: dict = attrs.field(factory=dict)  # core sections: validated by kernelopt_core.settings
    gates: dict = attrs.field(factory=dict)


_converter = cattrs.Converter(forbid_extra_keys=True)


def _strings(value: Any, _type: Any) -> list[str]:
    """A list of strings; one string is refused (cattrs would take "src/k.cpp" as its letters)."""
    if isinstance(value, str):
        raise TypeError(f"a list of strings is expected, not the string {value!r}: write "
                        f"[{value!r}]".replace("'", '"'))
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"a list of strings is expected, got {value!r}")
    return list(value)


_converter.register_structure_hook_func(lambda t: t == list[str], _strings)
_OWN = frozenset(f.name for f in attrs.fields(Descriptor))  # never a plugin's: [build], [[target]]
_MESSAGE = re.compile(r"^(?P<what>.*?) @ \$(?P<path>.*)$")


def _format(exc: BaseException, type_: Any) -> str:
    """cattrs' words for a wrong value, ours where a structure hook said what to write."""
    if isinstance(exc, TypeError) and str(exc).startswith("a list of strings"):
        return str(exc)
    return format_exception(exc, type_)


def _explain(path: Path, text: str, message: str) -> str:
    match = _MESSAGE.match(message)
    if not match:
        return f"{path}: {message}"
    what, where = match["what"], match["path"]
    keys = re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)", where)
    extra = re.search(r"extra fields found \((.*)\)", what)
    if extra:  # every extra key at once, each with its line
        section = ".".join(keys) or "top level"
        return "; ".join(f"{path}:{toml_line(text, key) or '?'}: unknown key `{key}` in {section}"
                         for key in (k.strip() for k in extra.group(1).split(","))) + \
            " (remove it or check its spelling against docs/descriptor.md)"
    key = keys[-1] if keys else "?"
    line = toml_line(text, key)
    dotted = where.lstrip(".")
    if "required field missing" in what:
        return f"{path}: missing required key `{dotted}` (add it; see docs/descriptor.md)"
    return f"{path}:{line or '?'}: `{dotted}`: {what} (fix its type; see docs/descriptor.md)"


def load(path: Path, owned: frozenset[str] = frozenset()) -> Descriptor:
    """``owned``: the top-level tables the core reads (``Settings.owned_tables``: [run],
    [gates], the installed plugins' tables), handed to it rather than checked here."""
    data, text = read_toml(path)
    data = {k: v for k, v in data.items() if k in _OWN or k not in owned}
    if isinstance(data.get("target"), dict):  # a single [target] table is accepted too
        data["target"] = [data["target"]]
    if "target" not in data:
        raise UsageError(
            f"{path}: no [[target]] table",
            hint="declare at least one [[target]] with name, editable and test (docs/descriptor.md)",
        )
    try:
        descriptor = _converter.structure(data, Descriptor)
    except ClassValidationError as exc:
        messages = [_explain(path, text, m) for m in cattrs.transform_error(
            exc, format_exception=_format)]
        tables = sorted(owned - _OWN)
        raise UsageError("\n".join(messages), hint="docs/descriptor.md has an annotated example"
                         + (f"; the installed plugins' tables: {', '.join(f'[{t}]' for t in tables)}"
                            if tables else "")) from None
    names = [t.name for t in descriptor.target]
    if len(set(names)) != len(names):
        raise UsageError(f"{path}: target names must be unique, got {names}")
    for t in descriptor.target:
        if not t.editable:
            raise UsageError(f"{path}:{toml_line(text, 'editable') or '?'}: target {t.name!r} "
                             "has an empty `editable` list", hint="list the files kernelopt may edit")
        for k in t.knobs:
            if not k.values or not all(isinstance(v, (str, int, float)) for v in k.values):
                raise UsageError(f"{path}:{toml_line(text, 'values') or '?'}: knob {k.name!r} "
                                 "needs a non-empty list of numbers or strings in `values`")
        if t.device not in (None, "cpu", "cuda", "hip"):
            raise UsageError(f"{path}:{toml_line(text, 'device') or '?'}: device {t.device!r} "
                             "is not one of cpu, cuda, hip")
        if t.bench_format not in ("json", "csv", "regex"):
            raise UsageError(f"{path}:{toml_line(text, 'bench_format') or '?'}: bench_format "
                             f"{t.bench_format!r} is not one of json, csv, regex")
        if t.bench_unit not in ("ns", "us", "µs", "μs", "ms", "s"):  # micro sign, Greek mu
            raise UsageError(f"{path}:{toml_line(text, 'bench_unit') or '?'}: bench_unit "
                             f"{t.bench_unit!r} is not one of ns, us, ms, s")
        if t.bench_format == "regex" or t.bench_regex:
            _check_regex(path, text, t)
    return descriptor


def _check_regex(path: Path, text: str, t: TargetSpec) -> None:
    """A regex bench's pattern compiles and has a group for the time."""
    where = f"{path}:{toml_line(text, 'bench_regex') or '?'}"
    if not t.bench_regex:
        raise UsageError(f"{where}: target {t.name!r} has bench_format = \"regex\" but no "
                         "bench_regex", hint='e.g. bench_regex = "elapsed: ([0-9.]+) ms"')
    try:
        compiled = re.compile(t.bench_regex, re.MULTILINE)
    except re.error as exc:
        raise UsageError(f"{where}: bench_regex {t.bench_regex!r} is not a valid regular "
                         f"expression: {exc}", hint="TOML basic strings need \\\\ for one "
                         "backslash; a literal string ('...') takes it as written") from None
    kept = [n for n in ("checksum", "shape") if n in compiled.groupindex]
    if "time" not in compiled.groupindex and compiled.groups <= len(kept):
        raise UsageError(f"{where}: bench_regex {t.bench_regex!r} has no group for the time",
                         hint='put the number in parentheses: "elapsed: ([0-9.]+) ms" (named '
                              "groups `checksum` and `shape` are read too)")
