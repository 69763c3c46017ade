"""Shared fixtures of the kernelopt-triton tests.

The whole-loop test is slow only because every check and bench is a fresh process that
imports torch; in a plain pytest process it is started in the background as soon as
collection ends, so the rest of the suite runs on the other core meanwhile. Under
pytest-xdist every worker collects every test but runs only some: the run starts when its
test asks for it, and the other workers go on meanwhile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from kernelopt_triton.backend import gpu_device

if gpu_device() is None:
    # Triton reads TRITON_INTERPRET when it decorates a kernel: set it before any test module
    # imports triton, or kernels imported later in this process are not interpretable.
    os.environ["TRITON_INTERPRET"] = "1"

from kernelopt_triton_testpaths import EXAMPLES, HACKS, REPO  # noqa: F401

WHOLE_RUN_TEST = "test_whole_run_under_the_interpreter_is_never_optimized"
WHOLE_RUN_ARGS = ("--iterations", "1", "--final-rounds", "2", "--seeds", "1", "--screen-runs", "1")
_background: dict[str, object] = {}


def kernelopt_command() -> list[str]:
    return [sys.executable, "-c", "from kernelopt_core.cli import main; main()"]


def pytest_collection_finish(session: pytest.Session) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # this worker may never run it: whole_run starts it if it does
    if not any(item.name == WHOLE_RUN_TEST for item in session.items):
        return
    _start_whole_run()


def _start_whole_run() -> None:
    work = Path(tempfile.mkdtemp(prefix="kernelopt-triton-run-"))
    shutil.copy(EXAMPLES / "vecadd.py", work / "vecadd.py")
    env = {**os.environ, "KERNELOPT_SMALL": "1"}
    env.pop("KERNELOPT_HOME", None)
    out = open(work / "output.log", "w")
    _background.update(work=work, out=out, proc=subprocess.Popen(
        [*kernelopt_command(), "run", str(work / "vecadd.py"), "--state-root", str(work / "state"),
         *WHOLE_RUN_ARGS], cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT))


def pytest_sessionfinish(session: pytest.Session) -> None:
    proc = _background.get("proc")
    if isinstance(proc, subprocess.Popen) and proc.poll() is None:
        proc.kill()
        proc.wait()
    work = _background.get("work")
    if isinstance(work, Path):
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="session")
def whole_run() -> tuple[int, Path, str]:
    """(exit code, state root, output) of `kernelopt run vecadd.py` under the interpreter."""
    if "proc" not in _background:
        _start_whole_run()
    proc = _background["proc"]
    assert isinstance(proc, subprocess.Popen)
    code = proc.wait(timeout=600)
    out = _background["out"]
    out.close()  # type: ignore[attr-defined]
    work = _background["work"]
    assert isinstance(work, Path)
    return code, work / "state", (work / "output.log").read_text()


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """The examples' small shapes (read when a kernel file is imported)."""
    monkeypatch.setenv("KERNELOPT_SMALL", "1")
