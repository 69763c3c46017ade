"""kernelopt.toml: parsing, and errors that name file, key, line and fix (exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kernelopt_cmake.backend import CMakeBackend
from kernelopt_cmake.descriptor import load

from kernelopt_core.errors import UsageError
from kernelopt_core.settings import Settings
from kernelopt_core.target import Tree

GOOD = """backend = "cmake"

[build]
cmake_args = ["-DCMAKE_BUILD_TYPE=Release"]
targets = ["t_test", "t_bench"]

[[target]]
name = "t"
editable = ["k.cpp"]
test = "{build}/t_test --seed {seed}"
bench = "{build}/t_bench --out {out}"
shape = "f32[64]"
bytes = 512

[[target.knobs]]
name = "TILE"
values = [1, 2, 4]
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "k.cpp").write_text("#define TILE 1\nint k() { return TILE; }\n")
    path = tmp_path / "kernelopt.toml"
    path.write_text(text)
    return path


def test_good_descriptor_becomes_targets_and_commands(tmp_path: Path) -> None:
    write(tmp_path, GOOD)
    backend = CMakeBackend()
    assert backend.detect(tmp_path) > 0
    assert backend.detect(tmp_path / "nothing-here") == 0
    [target] = backend.discover(tmp_path, Settings())
    assert target.name == "t" and target.editable == ("k.cpp",) and target.bytes_moved == 512
    assert target.knobs[0].values == ("1", "2", "4")
    tree = Tree("candidate", tmp_path / "src", tmp_path / "build")
    check = backend.check(target, tree, 7)
    assert check.argv == (str(tmp_path / "build" / "t_test"), "--seed", "7")
    bench = backend.bench(target, tree)
    assert bench.argv[-1] == str(tmp_path / "build" / "kernelopt-out")
    build = backend.build(target, tree)
    assert build[0].argv[:5] == ("cmake", "-S", str(tmp_path / "src"), "-B", str(tmp_path / "build"))
    assert build[-1].argv[-3:] == ("--target", "t_test", "t_bench")


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda t: t.replace('test = "{build}/t_test --seed {seed}"\n', ""),
         ["missing required key `target[0].test`"]),
        (lambda t: t.replace("bytes = 512", 'bytes = "many"'),
         [":13:", "`target[0].bytes`"]),
        (lambda t: t.replace('shape = "f32[64]"', 'shape = "f32[64]"\nbench_fromat = "json"'),
         [":13:", "unknown key `bench_fromat`"]),
        (lambda t: t.replace("[build]", "[build]\nflags = 1"), [":4:", "unknown key `flags`"]),
        (lambda t: t.replace("values = [1, 2, 4]", "values = []"), ["knob 'TILE'"]),
        (lambda t: t + "\n[run]\nitterations = 3\n", [":20:", "unknown key `itterations` in [run]"]),
        (lambda t: t + "\n[run]\niterations = \"many\"\n", ["`iterations`", "not a valid"]),
        (lambda t: t.replace("[[target]]", "[[target]\n"), ["invalid TOML"]),
    ],
)
def test_malformed_descriptor_exits_2_naming_file_and_key(
    tmp_path: Path, edit, expected: list[str]
) -> None:
    path = write(tmp_path, edit(GOOD))
    env = {**os.environ, "KERNELOPT_DISABLE_PLUGIN_AUTOLOAD": ""}
    result = subprocess.run([sys.executable, "-m", "kernelopt_core.cli", "run", str(tmp_path)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert str(path) in result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr
    assert not (tmp_path / ".kernelopt" / "work").exists()  # nothing started


def test_knob_in_a_non_editable_file_is_refused(tmp_path: Path) -> None:
    write(tmp_path, GOOD.replace('name = "TILE"', 'name = "TILE"\nfile = "other.cpp"'))
    with pytest.raises(UsageError, match="not editable"):
        CMakeBackend().discover(tmp_path, Settings())


def test_unknown_placeholder_is_a_usage_error(tmp_path: Path) -> None:
    write(tmp_path, GOOD.replace("--seed {seed}", "--seed {sed}"))
    [target] = CMakeBackend().discover(tmp_path, Settings())
    with pytest.raises(UsageError, match="unknown placeholder 'sed'"):
        CMakeBackend().check(target, Tree("c", tmp_path, tmp_path / "b"), 1)


def test_single_target_table_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("[[target]]", "[target]").replace(
        "[[target.knobs]]", "[[target.knobs]]"))
    assert load(path).target[0].name == "t"
