"""Bad kernel files fuzzed (issue 36, item 4): examples/triton/vecadd.py with its convention
values (SHAPE, BYTES, TOLERANCE, OUTPUTS, INPLACE, make_args, launch, reference) replaced by
generated junk — wrong types, negative, huge, unicode, non-callables, callables returning junk,
names removed, a syntax error — go through what `kernelopt run FILE` does with them: the
parent's discovery (the AST, in-process: entry.resolve) and the harness's check (in-process,
under Triton's interpreter; the same Session a bench worker loads). Each must work or be
refused with kernelopt's own error: a UsageError (exit 2) in the parent, exit 0/1/2/3 from the
harness, never a traceback out of the harness's own code (exit 4 from a worker). Nothing is
written beside the kernel file. Two of them also go through the real CLI.

A fixed number of examples from a derandomized search: the same inputs on every run.
"""

from __future__ import annotations

import os
import re
import traceback
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernelopt_tests_support import kernelopt  # noqa: E402
from kernelopt_triton import harness  # noqa: E402
from kernelopt_triton_testpaths import EXAMPLES  # noqa: E402

from kernelopt_core import entry  # noqa: E402
from kernelopt_core.errors import KerneloptError  # noqa: E402
from kernelopt_core.testing import fingerprint  # noqa: E402

VECADD = (EXAMPLES / "vecadd.py").read_text()
NAMES = ["SHAPE", "BYTES", "TOLERANCE", "OUTPUTS", "INPLACE", "make_args", "launch", "reference"]
JUNK = [
    "None", "0", "-1", "2**80", "1.5", "float('nan')", "float('inf')", "True", "'é\\u202e'",
    "''", "'f32[-1]'", "b'x'", "[]", "()", "{}", "(2,)", "(0, 1, 2)", "(99,)", "(-7,)", "(True,)",
    "('2',)", "[2.0]", "{2}", "{'atol': 'x'}", "{'atol': -1.0, 'rtol': 0.0}",
    "{'atol': float('nan')}", "{'rtol': 1e308 * 10}", "{'atol': 0, 'rtol': 0, 'x': 1}",
    "{'atol': 1e-3}", "print", "object()", "type", "lambda *a: None", "lambda *a: 5",
    "lambda *a: [1, 2]", "lambda *a: 'abc'", "lambda *a: [None, None, None]",
    "lambda *a: 1 / 0", "lambda seed: []",
]
EDITS = st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from([*JUNK, None])),
                 min_size=1, max_size=3)
SYNTAX_ERROR = "def (:\n"


def junk_file(edits: list[tuple[str, str | None]], broken: bool) -> str:
    """vecadd.py with each name rebound to junk at the end (None: its binding removed)."""
    text = VECADD
    for name, junk in edits:
        if junk is None:  # the name gone: its definition renamed, its assignment dropped
            text = re.sub(rf"^def {name}\(", f"def _gone_{name}(", text, flags=re.M)
            text = re.sub(rf"^{name} = .*$", "", text, flags=re.M)
        else:
            text += f"\n{name} = {junk}\n"
    return text + (SYNTAX_ERROR if broken else "")


def _raised_in_the_kernel_file(exc: BaseException, path: Path) -> bool:
    """The innermost frame is the kernel file's own code (its make_args dividing by zero):
    the file's error, reported as the file's traceback, not the harness's."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and Path(frames[-1].filename) == path


@settings(max_examples=100, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(edits=EDITS, broken=st.booleans())
def test_junk_convention_values_are_refused_never_a_crash(
        tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, str | None]],
        broken: bool) -> None:
    directory = tmp_path_factory.mktemp("junk")
    path = directory / "vecadd.py"
    path.write_text(junk_file(edits, broken and len(edits) == 1), encoding="utf-8")
    before = fingerprint(directory)
    try:  # the parent's side: discovery and the target (no import of the file)
        entry.resolve(path, {"state_root": directory / "state"})
    except KerneloptError as exc:
        assert exc.exit_code in (2, 3), exc
    previous = os.environ.get("KERNELOPT_SMALL")
    os.environ["KERNELOPT_SMALL"] = "1"
    try:  # the child's side: the check a worker's load and check run
        code = harness.main(["check", str(path), "--seed", "1"])
    except SystemExit as exc:
        code = exc.code
    except Exception as exc:  # the file's own code raised (its traceback is its report)
        assert _raised_in_the_kernel_file(exc, path), "".join(traceback.format_exception(exc))
        code = 1
    finally:
        if previous is None:
            os.environ.pop("KERNELOPT_SMALL", None)
        else:
            os.environ["KERNELOPT_SMALL"] = previous
    assert code in (0, 1, 2, 3), (code, edits)
    assert fingerprint(directory) == before  # the harness wrote nothing beside the file


@pytest.mark.slow
@pytest.mark.parametrize("edits", [
    [("OUTPUTS", "5")],  # a harness traceback (TypeError, worker exit 4) before this issue
    [("reference", "lambda *a: None"), ("SHAPE", "2**80")],
])
def test_the_cli_refuses_a_junk_kernel_file_with_exit_2(tmp_path: Path,
                                                       edits: list[tuple[str, str]]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "vecadd.py").write_text(junk_file(edits, False))
    before = fingerprint(project)
    done = kernelopt("run", str(project / "vecadd.py"), "--state-root", str(tmp_path / "state"),
                     "--seeds", "1", "--screen-runs", "1", "--iterations", "1",
                     cwd=tmp_path, env={"KERNELOPT_SMALL": "1", "TRITON_INTERPRET": "1"},
                     timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out[-3000:]
    assert "Traceback" not in out and "kernel file:" in out, out[-3000:]
    assert fingerprint(project) == before
