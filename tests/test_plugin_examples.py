"""docs/plugins.md's complete examples, one package per plugin kind (examples/plugins/), as an
author ships them: built into real wheels, installed with kernelopt's wheel into a fresh
virtual environment, listed by `kernelopt plugins` there, and each package's own tests run
there — tests written with the testing kit only (kernelopt_core.testing and
kernelopt_core.api), each driving the whole loop through the real CLI with its plugin.

The venv sees the outer environment's third-party packages (pytest, attrs, ...) as the
packaging tests' does (tests/packaging_support.py), offline; the examples' tests run from a
scratch copy, so neither this repository's pytest settings nor its source tree is seen.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from packaging_support import REPO, bin_of, clean_env, make_venv, ok, pip, sh

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("plugin-examples")]

EXAMPLES = REPO / "examples" / "plugins"
KINDS = {"backend": "scriptdir", "gate": "maxlines", "planner": "sweep", "profiler": "rusage",
         "provider": "localchat", "executor": "serial"}


@pytest.fixture(scope="module")
def installed(packaging_wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory,
              ) -> tuple[Path, Path]:
    """(the venv, the scratch copy of examples/plugins) with kernelopt and every example."""
    work = tmp_path_factory.mktemp("plugin-examples")
    copy = work / "plugins"
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns(
        "__pycache__", "*.egg-info", "build", "dist", ".kernelopt"))
    wheels = work / "wheels"
    ok(sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
          "--no-cache-dir", "-w", wheels, *sorted(copy.iterdir()), cwd=work, timeout=600))
    venv = make_venv(work / "venv", work)
    pip(venv, "install", "--no-deps", "--no-index", packaging_wheels["kernelopt"],
        *sorted(wheels.glob("kernelopt_example_*.whl")), cwd=work)
    return venv, copy


def test_every_kind_has_an_example_package() -> None:
    assert sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()) == sorted(
        f"kernelopt-example-{kind}" for kind in KINDS)


def test_each_example_is_listed_ok_with_what_it_provides(installed: tuple[Path, Path]) -> None:
    venv, copy = installed
    out = ok(sh(bin_of(venv, "kernelopt"), "plugins", cwd=copy))
    for kind, name in KINDS.items():
        row = next(line for line in out.splitlines() if line.split()[:1] == [name])
        assert f"kernelopt-example-{kind}" in row and " ok " in row, row


def test_every_examples_own_tests_pass_in_the_venv(installed: tuple[Path, Path]) -> None:
    venv, copy = installed
    tests = [copy / f"kernelopt-example-{kind}" / "tests" for kind in sorted(KINDS)]
    done = sh(bin_of(venv, "python"), "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
              "-n", "0", *tests, cwd=copy, env=clean_env(), timeout=900)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    passed = {Path(line.split("::")[0]).name for line in done.stdout.splitlines()
              if line.startswith("PASSED ")}  # every package's test file ran and passed
    assert passed == {f"test_{kind}.py" for kind in KINDS}, done.stdout[-3000:]
    assert "skipped" not in done.stdout, done.stdout[-2000:]
