"""The plugin author's records and return values fuzzed (issue 55): whatever a plugin puts in a
Target, Command, Knob, BenchSpec or Tree either makes the record or raises a TypeError /
ValueError that names the field; whatever a backend's build, check or bench returns, a run
either goes on or ends with exit 2 or 3 (a PluginError naming the hook) — never exit 4, "a bug
in kernelopt". The runs are real loops in this process over a chunk project (a Python kernel,
its check and bench: kernelopt_core/testing.py) with a scripted backend.

A fixed number of examples from a derandomized search: the same inputs on every run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kernelopt_core import entry  # noqa: E402
from kernelopt_core.errors import UsageError  # noqa: E402
from kernelopt_core.gates.options import TABLE_OF  # noqa: E402
from kernelopt_core.plugins import PluginHost  # noqa: E402
from kernelopt_core.settings import FIELDS as CORE_SETTINGS  # noqa: E402
from kernelopt_core.settings import load as load_settings  # noqa: E402
from kernelopt_core.target import BenchSpec, Command, Knob, Target, Tree  # noqa: E402
from kernelopt_core.testing import ScriptedBackend, write_chunk_project  # noqa: E402

# the core's settings and the built-in gates' options (gates/options.py), by flat name: a
# [run] key of a gate's option is still read, into its table
SETTING_FIELDS = {**CORE_SETTINGS, **{name: {f.name: f for f in attrs.fields(cls)}[name]
                               for name, cls in TABLE_OF.items()}}

SCALARS = st.one_of(st.none(), st.integers(-(2**40), 2**40), st.floats(allow_nan=True),
                    st.booleans(), st.text(max_size=6), st.binary(max_size=4),
                    st.just(Path("/tmp")))
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=3), st.tuples(SCALARS, SCALARS),
                   st.dictionaries(st.text(max_size=3), SCALARS, max_size=2))
RECORDS = {
    Target: dict(backend="b", name="n", root=Path("/tmp"), editable=("k.cu",)),
    Command: dict(argv=("true",), cwd=Path("/tmp")),
    Knob: dict(name="N", file="k.cu", values=("1", "2"), pattern=r"N (\d+)"),
    BenchSpec: {},
    Tree: dict(role="baseline", src=Path("/tmp"), build=Path("/tmp/b")),
}
FIELDS = [(cls, field) for cls in RECORDS for field in cls.__attrs_attrs__  # type: ignore[attr-defined]
          if field.name != "data"]  # Target.data: the backend's own, anything goes


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(st.sampled_from(FIELDS), VALUES)
def test_a_record_is_made_or_names_the_field_it_refuses(where: tuple[type, Any], value: Any) -> None:
    cls, field = where
    try:
        cls(**{**RECORDS[cls], field.name: value})
    except (TypeError, ValueError) as exc:
        assert re.search(rf"\b{cls.__name__}\.{field.name}\b|'{field.name}' must be in", str(exc)), \
            (cls.__name__, field.name, value, str(exc))


class Fuzzed(ScriptedBackend):
    """The scripted backend with one hook's return value replaced."""

    name = "fuzzed"

    def __init__(self) -> None:
        self.hook, self.value = "build", None

    def detect(self, path: Path) -> float:
        return 1.0 if (path / "bench.py").is_file() else 0.0

    def build(self, target: Target, tree: Tree) -> Any:
        return self.value if self.hook == "build" else super().build(target, tree)

    def check(self, target: Target, tree: Tree, seed: int) -> Any:
        return self.value if self.hook == "check" else super().check(target, tree, seed)

    def bench(self, target: Target, tree: Tree) -> Any:
        return self.value if self.hook == "bench" else super().bench(target, tree)


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Fuzzed, PluginHost]:
    root = tmp_path_factory.mktemp("fuzz-returns")
    project = write_chunk_project(root / "project")
    (project / "kernelopt.toml").unlink()  # the scripted backend, no descriptor
    backend = Fuzzed()
    host = PluginHost(autoload=False, extra=[("fuzzed", _Plugin(backend))])
    return project, backend, host


class _Plugin:
    def __init__(self, backend: Fuzzed) -> None:
        self.backend = backend

    from kernelopt_core.api import hookimpl as _hookimpl
    from kernelopt_core.hookspecs import PROJECT

    @_hookimpl
    def kernelopt_register_backends(self) -> list[Any]:
        return [self.backend]


RETURNS = st.one_of(VALUES, st.just([]), st.just(Command(("true",), Path("/tmp"))),
                    st.lists(st.just(Command(("false",), Path("/tmp"))), max_size=2))


@settings(max_examples=12, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["build", "check", "bench"]), RETURNS)
def test_whatever_a_backend_returns_a_run_ends_without_exit_4(
        place: tuple[Path, Fuzzed, PluginHost], hook: str, value: Any) -> None:
    project, backend, host = place
    backend.hook, backend.value = hook, value
    results = entry.run(project, host=host, backend="fuzzed", iterations=1, seeds=(1,),
                        state_root=project.parent / "state", model_check=False)
    for result in results:
        assert result.exit_code in (0, 1, 2, 3), (hook, value, result.summary.get("error"))
        if result.exit_code == 3:
            assert f"fuzzed backend's {hook}()" in result.summary["error"], result.summary


@settings(max_examples=300, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(SETTING_FIELDS)), VALUES, st.booleans())
def test_a_setting_from_a_flag_or_the_project_file_is_taken_or_refused_by_name(
        tmp_path: Path, name: str, value: Any, in_file: bool) -> None:
    """Settings as a user or api.run gives them (a flag's value, a [run] key in
    kernelopt.toml): the settings, or a UsageError (exit 2) that names the setting."""
    flags: dict[str, Any] = {name: value}
    project = None
    if in_file:
        try:
            text = f"[run]\n{name} = {_toml(value)}\n"
        except ValueError:
            return  # not a TOML value: no file can hold it
        project = tmp_path / "kernelopt.toml"
        project.write_text(text, encoding="utf-8")
        flags = {}
    try:
        made = load_settings(project, flags, cwd=tmp_path)
    except UsageError as exc:
        assert f"`{name}`" in str(exc), (name, value, str(exc))
        return
    got = made.flat()[name]
    hint = SETTING_FIELDS[name].type
    if hint in (int, float) or str(hint).startswith(("int", "float")):
        assert got is None or (isinstance(got, (int, float)) and not isinstance(got, bool)), got
    if type(got) is int and isinstance(value, float):  # never a silent truncation
        assert got == value, (name, value, got)


def _toml(value: Any) -> str:
    """``value`` as a TOML value, ValueError where TOML has none (None, bytes, a path)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(repr(value), repr(value))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise ValueError(value)
