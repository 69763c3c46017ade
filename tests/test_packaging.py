"""The plugin architecture with real packages: wheels, a virtual environment, entry points.

One session-scoped venv (root conftest.py's ``packaging_venv``: tests/packaging_support.py
says how it sees the outer environment's third-party dependencies, offline, inside an
activated venv too) gets real wheels of kernelopt, kernelopt-cmake, kernelopt-ninfer and a
third-party backend written there (kernelopt-echo); a package that raises at import
(kernelopt-broken) comes and goes per test.

Removing a backend cannot be proved in that venv: the outer site also holds kernelopt-cmake as
an *editable* install, whose dist-info and import finder stay visible there after
``pip uninstall``. So the uninstall test uses a second venv *without* the outer site whose
site-packages links to each third-party distribution of the outer site, kernelopt's own
(and every ``.pth`` file, editable finders included) left out: it sees exactly the wheels
installed into it, and ``pip uninstall`` there removes the only copy it can see.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from kernelopt_tests_support import last_run, summary
from packaging_support import (
    BROKEN_TEXT,
    CMAKE_PLUGIN,
    bin_of,
    clean_env,
    ok,
    outer_site_dirs,
    pip,
    py,
    sh,
    site_packages,
)

from kernelopt_core.testing import write_chunk_project

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("packaging")]


# --------------------------------------------------------------------------- helpers


def kernelopt(venv: Path, *args: str | Path, cwd: Path,
              **env: str) -> subprocess.CompletedProcess[str]:
    return sh(bin_of(venv, "kernelopt"), *args, cwd=cwd, env=clean_env(**env))


def plugin_rows(stdout: str) -> dict[str, list[str]]:
    """`kernelopt plugins` table rows by plugin name (a list: a name listed twice shows)."""
    rows: dict[str, list[str]] = {}
    for line in stdout.splitlines()[2:]:
        if line.strip():
            rows.setdefault(line.split()[0], []).append(line)
    return rows


def is_own(name: str) -> bool:
    """kernelopt's own distributions and import finders, and every .pth file."""
    lower = name.lower()
    return (lower.startswith(("kernelopt", "__editable__")) or lower.endswith(".pth")
            or lower == "__pycache__")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def work(packaging_work: Path) -> Path:
    return packaging_work


@pytest.fixture
def wheels(packaging_wheels: dict[str, Path]) -> dict[str, Path]:
    return packaging_wheels


@pytest.fixture
def venv(packaging_venv: Path) -> Path:
    return packaging_venv


@pytest.fixture
def broken_installed(venv: Path, wheels: dict[str, Path], work: Path):
    pip(venv, "install", "--no-deps", "--no-index", wheels["kernelopt-broken"], cwd=work)
    yield venv
    pip(venv, "uninstall", "-y", "kernelopt-broken", cwd=work)


@pytest.fixture(scope="module")
def isolated_venv(packaging_work: Path, packaging_wheels: dict[str, Path]) -> Path:
    """A venv without the outer site; third-party distributions linked in, not ours."""
    work, wheels = packaging_work, packaging_wheels
    path = work / "venv-isolated"
    ok(sh(sys.executable, "-m", "venv", "--without-pip", path, cwd=work))
    target = site_packages(path, work)
    for directory in outer_site_dirs():
        for entry in sorted(directory.iterdir()):
            if not is_own(entry.name) and not (target / entry.name).exists():
                (target / entry.name).symlink_to(entry)
    pip(path, "install", "--no-deps", "--no-index", wheels["kernelopt"],
        wheels["kernelopt-cmake"], wheels["kernelopt-echo"], cwd=work)
    return path


# --------------------------------------------------------------------------- tests


def test_wheels_carry_package_data_entry_points_and_no_tests(wheels: dict[str, Path]) -> None:
    with zipfile.ZipFile(wheels["kernelopt"]) as whl:
        names = whl.namelist()
        assert "kernelopt_core/py.typed" in names and "kernelopt_core/hookspecs.py" in names
        assert "kernelopt_core/prompts/planner.md" in names  # prompts ship as package data
        (eps,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        assert "kernelopt = kernelopt_core.cli:main" in whl.read(eps).decode()
        assert not [n for n in names if n.startswith(("tests/", "plugins/", "build/"))]
    with zipfile.ZipFile(wheels["kernelopt-cmake"]) as whl:
        names = whl.namelist()
        assert "kernelopt_cmake/plugin.py" in names
        (eps,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        assert "[kernelopt]\ncmake = kernelopt_cmake.plugin" in whl.read(eps).decode()
        assert not [n for n in names if "tests/" in n or n.startswith("kernelopt_core/")]


def test_venv_uses_the_wheels_and_lists_cmake(venv: Path, wheels: dict[str, Path],
                                              work: Path) -> None:
    paths = py(venv, "import kernelopt_core, kernelopt_cmake.plugin\n"
               "print(kernelopt_core.__file__); print(kernelopt_cmake.plugin.__file__)", work)
    for line in paths.split():
        assert Path(line).resolve().is_relative_to(venv.resolve()), paths
    # the entry point resolves to the venv's dist, not to the system's editable one
    loaded = py(venv, "from kernelopt_core.plugins import PluginHost; import sys\n"
                "h = PluginHost(autoload=True, disabled=(), strict=True)\n"
                "print(h.owner('backends', 'cmake'), sys.modules['kernelopt_cmake'].__file__)",
                work)
    owner, module_file = loaded.split()
    assert owner == "cmake" and Path(module_file).resolve().is_relative_to(venv.resolve())

    result = kernelopt(venv, "plugins", cwd=work)
    out = ok(result)
    rows = plugin_rows(out)
    assert len(rows.get("cmake", [])) == 1, out
    (row,) = rows["cmake"]
    version = wheels["kernelopt-cmake"].name.split("-")[1]
    assert row.split()[1:5] == ["kernelopt-cmake", version, "entry", "point"], row
    assert " ok " in row and "backends: cmake" in row, row
    assert "core-tuner" in rows and "FAILED" not in out


def test_third_party_backend_is_listed_and_claims_its_project(venv: Path, work: Path) -> None:
    out = ok(kernelopt(venv, "plugins", cwd=work))
    (row,) = plugin_rows(out)["echo"]
    assert row.split()[1:3] == ["kernelopt-echo", "0.2.0"] and "backends: echo" in row, row

    run_cwd = work / "echo-run"
    project = write_chunk_project(run_cwd / "project")
    (project / "kernelopt.toml").unlink()  # an echo project is just kernel.py, check.py, bench.py
    # the loaded object satisfies the Backend protocol and is the only one claiming the project
    probe = py(venv, "import json, sys; from pathlib import Path\n"
               "from kernelopt_core.hookspecs import Backend\n"
               "from kernelopt_core.plugins import PluginHost\n"
               "from kernelopt_core.settings import load\n"
               "backends = PluginHost(autoload=True, disabled=(), strict=True).registry('backends')\n"
               "echo = backends['echo']; path = Path(sys.argv[1])\n"
               "(t,) = echo.discover(path, load(None, {}))\n"
               "print(json.dumps({'protocol': isinstance(echo, Backend), 'file': "
               "sys.modules['kernelopt_echo'].__file__, 'knobs': [k.name for k in t.knobs], "
               "'scores': {n: b.detect(path) for n, b in backends.items()}}))", work, project)
    info = json.loads(probe)
    assert info["protocol"] and info["knobs"] == ["CHUNK"]
    assert Path(info["file"]).resolve().is_relative_to(venv.resolve())
    assert info["scores"]["echo"] == 0.5 and info["scores"]["cmake"] == 0.0
    assert [name for name, score in info["scores"].items() if score > 0] == ["echo"]

    # a whole run with a wheel-installed third-party backend: tests/test_plugin_examples.py
    # (examples/plugins/kernelopt-example-backend, through the real CLI in a fresh venv)


def test_plugin_that_raises_at_import_is_reported_not_fatal(broken_installed: Path,
                                                            work: Path) -> None:
    venv = broken_installed
    result = kernelopt(venv, "plugins", cwd=work)
    assert result.returncode == 1, result.stdout + result.stderr  # a FAILED plugin: like pip check
    out = result.stdout
    rows = plugin_rows(out)
    (row,) = rows["broken"]
    assert row.split()[1] == "kernelopt-broken" and "entry point" in row, row
    assert f"FAILED: RuntimeError: {BROKEN_TEXT}" in row, row
    assert "KERNELOPT_DISABLE_PLUGINS=broken" in result.stderr, result.stderr
    for name in ("cmake", "echo"):
        (good,) = rows[name]
        assert " ok " in good and f"backends: {name}" in good, good

    disabled = kernelopt(venv, "plugins", cwd=work, KERNELOPT_DISABLE_PLUGINS="broken")
    out = ok(disabled)
    assert "broken" not in plugin_rows(out) and "kernelopt-broken" not in out + disabled.stderr
    assert "cmake" in plugin_rows(out)

    run_cwd = work / "broken-run"
    project = write_chunk_project(run_cwd / "project")  # its kernelopt.toml names cmake
    run = kernelopt(venv, "run", project, "--iterations", "1", "--final-rounds", "2",
                    "--screen-runs", "2", "--seeds", "1", cwd=run_cwd)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    assert "(cmake backend)" in run.stderr
    s = summary(last_run(run_cwd / ".kernelopt"))
    assert s["target"]["backend"] == "cmake"


def test_uninstalled_backend_is_gone_and_run_names_the_package(isolated_venv: Path,
                                                               work: Path) -> None:
    venv = isolated_venv
    target = site_packages(venv, work)
    assert not [p for p in target.iterdir() if p.name.startswith("kernelopt") and p.is_symlink()]
    assert "cmake" in plugin_rows(ok(kernelopt(venv, "plugins", cwd=work)))  # it did work

    pip(venv, "uninstall", "-y", "kernelopt-cmake", cwd=work)
    gone = sh(bin_of(venv, "python"), "-c", "import kernelopt_cmake", cwd=work)
    assert gone.returncode == 1 and "ModuleNotFoundError" in gone.stderr
    result = kernelopt(venv, "plugins", cwd=work)
    out = ok(result)
    assert "cmake" not in plugin_rows(out) and "kernelopt-cmake" not in out + result.stderr
    assert "echo" in plugin_rows(out)

    project = write_chunk_project(work / "uninstalled" / "project")  # kernelopt.toml names cmake
    run = kernelopt(venv, "run", project, cwd=project.parent)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "backend 'cmake' is not installed" in run.stderr
    # the command that works today: the plugin's directory (not on the package index yet)
    assert "pip install -e" in run.stderr and "plugins/kernelopt_cmake" in run.stderr
    assert "not on the package index yet" in run.stderr

    pip(venv, "uninstall", "-y", "kernelopt-echo", cwd=work)  # now no backend at all
    run = kernelopt(venv, "run", project, cwd=project.parent)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "no backend plugin is installed" in run.stderr and "kernelopt-cmake" in run.stderr
    assert not (project.parent / ".kernelopt" / "runs").exists()

    # the system's editable install, which this process imports, was never touched
    dist = importlib.metadata.distribution("kernelopt-cmake")
    assert [ep.name for ep in dist.entry_points if ep.group == "kernelopt"] == ["cmake"]
    assert (CMAKE_PLUGIN / "kernelopt_cmake" / "plugin.py").is_file()
