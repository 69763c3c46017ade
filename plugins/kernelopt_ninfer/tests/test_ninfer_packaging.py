"""kernelopt-ninfer as a real package: its wheel, with kernelopt's, installed into a fresh
virtual environment, lists the `ninfer` backend (as tests/test_packaging.py does for the other
plugins). The wheels and the venv are the session's (root conftest.py's ``packaging_wheels``
and ``packaging_venv``; tests/packaging_support.py: the venv sees the outer environment's
site for third-party dependencies, offline, inside an activated venv too)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from packaging_support import bin_of, ok, py, sh

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("packaging")]


def test_wheels_in_a_fresh_venv_list_the_ninfer_backend(
        packaging_wheels: dict[str, Path], packaging_venv: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(packaging_wheels["kernelopt-ninfer"]) as whl:
        names = whl.namelist()
        assert "kernelopt_ninfer/plugin.py" in names and "kernelopt_ninfer/ctest_run.py" in names
        assert not [n for n in names if "tests/" in n or n.startswith("kernelopt_core/")]
        (eps,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        assert "[kernelopt]\nninfer = kernelopt_ninfer.plugin" in whl.read(eps).decode()

    venv = packaging_venv
    where = py(venv, "import kernelopt_ninfer.plugin as p; print(p.__file__)", tmp_path)
    assert Path(where.strip()).resolve().is_relative_to(venv.resolve())
    listed = ok(sh(bin_of(venv, "kernelopt"), "plugins", cwd=tmp_path))
    rows = [line for line in listed.splitlines() if line.split()[:1] == ["ninfer"]]
    assert len(rows) == 1, listed
    assert rows[0].split()[1:3] == ["kernelopt-ninfer", "0.1.0"] and " ok " in rows[0]
    assert "backends: ninfer" in rows[0] and "kernelopt_register_commands" in rows[0]
    helped = ok(sh(bin_of(venv, "kernelopt"), "run-ninfer", "--help", cwd=tmp_path))
    assert "--op" in helped and "--repo" in helped and "--device" in helped
