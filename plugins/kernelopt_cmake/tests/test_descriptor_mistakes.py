"""A user's kernelopt.toml mistakes are exit 2 naming the key and its line, never exit 4 (issue
55): a string where a list of files belongs, a regex bench whose pattern does not compile or
has no group, a value of the wrong type in [run]; and a plain-text bench that carries its
checksum in a named group. Through the CLI in a child, on copies of examples/cmake-cpu."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kernelopt_tests_support import REPO, kernelopt


def _project(tmp_path: Path, old: str, new: str) -> Path:
    project = Path(shutil.copytree(REPO / "examples" / "cmake-cpu", tmp_path / "project"))
    toml = project / "kernelopt.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new))
    return project


@pytest.mark.parametrize("old, new, said", [
    ('editable = ["kernel.cpp"]', 'editable = "kernel.cpp"',
     'kernelopt.toml:10: `target[0].editable`: a list of strings is expected, not the string '
     '"kernel.cpp": write ["kernel.cpp"]'),
    ('bench_format = "json"', "bench_format = \"regex\"\nbench_regex = 'median ([0-9.]+'",
     "bench_regex 'median ([0-9.]+' is not a valid regular expression: missing ), unterminated "
     "subpattern"),
    ('bench_format = "json"', "bench_format = \"regex\"\nbench_regex = 'median [0-9.]+'",
     "bench_regex 'median [0-9.]+' has no group for the time"),
    ("iterations = 14", 'iterations = "abc"',
     "`iterations` = 'abc' is not a valid integer"),
])
def test_a_descriptor_mistake_is_exit_2_naming_the_key(tmp_path: Path, old: str, new: str,
                                                       said: str) -> None:
    project = _project(tmp_path, old, new)
    proc = kernelopt("run", str(project), "--state-root", str(tmp_path / "s"), cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert said in out, out
    assert "<class" not in out and "bug in kernelopt" not in out, out


def test_a_plain_text_bench_carries_its_checksum_and_shape_in_named_groups() -> None:
    from kernelopt_core.measure.parsers import parse
    from kernelopt_core.target import BenchSpec

    spec = BenchSpec(format="regex", regex=r"grid (?P<shape>\S+) +elapsed: ([0-9.]+) ms.*"
                                           r"checksum (?P<checksum>[-0-9.e]+)")
    reading = parse(spec, "grid 2048x2048  elapsed: 6.95 ms (best of 15)  checksum 0.190\n", "b")
    assert reading.time_ms == 6.95
    assert reading.extra == {"checksum": 0.19, "shape": "2048x2048"}
