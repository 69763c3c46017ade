"""kernelopt-ninfer as a real package: wheels of kernelopt and kernelopt-ninfer, installed into a
fresh virtual environment, list the `ninfer` backend (as tests/test_packaging.py does for the
other plugins; the venv sees the system site for third-party dependencies, offline)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
PLUGIN = REPO / "plugins" / "kernelopt_ninfer"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KERNELOPT_") and k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


def _ok(*argv: str | Path, cwd: Path) -> str:
    result = subprocess.run([str(a) for a in argv], cwd=cwd, env=_env(), capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, f"{argv}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_wheels_in_a_fresh_venv_list_the_ninfer_backend(tmp_path: Path) -> None:
    # clean copies: an in-tree build writes build/ and *.egg-info into the checkout
    junk = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist", ".kernelopt",
                                  "fixture_repo")
    core = tmp_path / "src" / "kernelopt"
    core.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, core / name)
    for name in ("kernelopt_core", "prompts"):
        shutil.copytree(REPO / name, core / name, ignore=junk)
    plugin = shutil.copytree(PLUGIN, tmp_path / "src" / "kernelopt_ninfer", ignore=junk)
    wheels = tmp_path / "wheels"
    _ok(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
        "--no-cache-dir", "-w", wheels, core, plugin, cwd=tmp_path)
    (ninfer_wheel,) = wheels.glob("kernelopt_ninfer-*-py3-none-any.whl")
    (core_wheel,) = wheels.glob("kernelopt-*-py3-none-any.whl")
    with zipfile.ZipFile(ninfer_wheel) as whl:
        names = whl.namelist()
        assert "kernelopt_ninfer/plugin.py" in names and "kernelopt_ninfer/ctest_run.py" in names
        assert not [n for n in names if "tests/" in n or n.startswith("kernelopt_core/")]
        (eps,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        assert "[kernelopt]\nninfer = kernelopt_ninfer.plugin" in whl.read(eps).decode()

    venv = tmp_path / "venv"
    _ok(sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv, cwd=tmp_path)
    _ok(venv / "bin" / "python", "-m", "pip", "install", "--no-deps", "--no-index", core_wheel,
        ninfer_wheel, cwd=tmp_path)
    where = _ok(venv / "bin" / "python", "-c",
                "import kernelopt_ninfer.plugin as p; print(p.__file__)", cwd=tmp_path)
    assert Path(where.strip()).resolve().is_relative_to(venv.resolve())
    listed = _ok(venv / "bin" / "kernelopt", "plugins", cwd=tmp_path)
    rows = [line for line in listed.splitlines() if line.split()[:1] == ["ninfer"]]
    assert len(rows) == 1, listed
    assert rows[0].split()[1:3] == ["kernelopt-ninfer", "0.1.0"] and " ok " in rows[0]
    assert "backends: ninfer" in rows[0] and "kernelopt_register_commands" in rows[0]
    helped = _ok(venv / "bin" / "kernelopt", "run-ninfer", "--help", cwd=tmp_path)
    assert "--op" in helped and "--repo" in helped and "--device" in helped
