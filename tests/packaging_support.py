"""Real wheels and a real virtual environment, shared by the packaging tests of the core
(tests/test_packaging.py) and of the plugins (plugins/kernelopt_ninfer/tests): built once a
session by the fixtures of the repository's root conftest.py.

The venv sees the *outer* environment's site-packages for its third-party dependencies
(cattrs, click, ...), offline: the environment README's install ran in, i.e. the one of the
interpreter running pytest. ``venv --system-site-packages`` is not that: it shows the *base*
interpreter's site-packages, which inside an activated ``python3 -m venv`` lack them. So the
venv is made without it, and one ``.pth`` file in its site-packages adds each outer site
directory with ``site.addsitedir`` (their ``.pth`` files processed, editable finders included,
exactly as a system site would be), after the venv's own site-packages: the wheels installed
into the venv come first.

Every command runs in a scratch directory (``python -c`` puts the working directory first on
``sys.path``; run from the checkout it would import the source tree, not the wheel) with
``PYTHONPATH`` and ``KERNELOPT_*`` removed from the environment. Nothing uses the network.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CMAKE_PLUGIN = REPO / "plugins" / "kernelopt_cmake"
NINFER_PLUGIN = REPO / "plugins" / "kernelopt_ninfer"
BROKEN_TEXT = "kernelopt-broken fails at import on purpose (token 7f3a91)"

ECHO_MODULE = r'''"""kernelopt-echo: a third-party backend for a directory holding kernel.py, check.py and
bench.py. It imports only kernelopt_core.api and the standard library, as docs/plugins.md asks."""

from __future__ import annotations

import sys
from pathlib import Path

from kernelopt_core.api import BenchSpec, Command, Knob, Target, UsageError, hookimpl

FILES = ("kernel.py", "check.py", "bench.py")
CHUNKS = ("1", "2", "4", "8", "16", "32", "64", "128", "256")
COPY = "import shutil, sys; shutil.copy(sys.argv[1], sys.argv[2])"


def _is_project(path: Path) -> bool:
    return path.is_dir() and all((path / name).is_file() for name in FILES)


class EchoBackend:
    name = "echo"

    def detect(self, path: Path) -> float:
        return 0.5 if _is_project(Path(path)) else 0.0

    def discover(self, path: Path, settings: object) -> list[Target]:
        root = Path(path).resolve()
        if not _is_project(root):
            raise UsageError(f"{root} is not an echo project", hint="it needs " + ", ".join(FILES))
        knob = Knob("CHUNK", "kernel.py", CHUNKS, r"^CHUNK = (\d+)$")
        return [Target(self.name, "echo-sum", root, ("kernel.py",),
                       contract=("check.py", "bench.py"), shape="f64[20000]",
                       bytes_moved=160000, knobs=(knob,), bench=BenchSpec(format="json"))]

    def build(self, target: Target, tree) -> list[Command]:
        return [Command((sys.executable, "-c", COPY, str(tree.src / "kernel.py"),
                         str(tree.build / "kernel.py")), tree.src, timeout_s=120)]

    def check(self, target: Target, tree, seed: int) -> Command:
        return Command((sys.executable, str(tree.src / "check.py"), "--seed", str(seed),
                        "--build", str(tree.build)), tree.src, timeout_s=120)

    def bench(self, target: Target, tree) -> Command | None:
        return Command((sys.executable, str(tree.src / "bench.py"), str(tree.build)), tree.src,
                       timeout_s=120)

    def engine(self, target: Target, tree) -> Command | None:
        return None


@hookimpl
def kernelopt_register_backends() -> list[EchoBackend]:
    return [EchoBackend()]
'''

BROKEN_MODULE = f'"""A kernelopt plugin that cannot be imported."""\n\nraise RuntimeError({BROKEN_TEXT!r})\n'


def pyproject(dist: str, module: str, entry_point: str) -> str:
    return f'''[build-system]
requires = ["setuptools>=77", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.2.0"
description = "written by kernelopt's tests/packaging_support.py"
requires-python = ">=3.10"
dependencies = ["kernelopt>=0.1.0"]

[project.entry-points.kernelopt]
{entry_point} = "{module}"

[tool.setuptools]
packages = ["{module}"]
'''


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without PYTHONPATH, PYTHONHOME and KERNELOPT_* (the session's
    shared device cache, root conftest.py, kept)."""
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith("KERNELOPT_") or k == "KERNELOPT_DEVICE_CACHE")
           and k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    env.update(extra)
    return env


def sh(*argv: str | Path, cwd: Path, env: dict[str, str] | None = None,
       timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env or clean_env(),
                          capture_output=True, text=True, timeout=timeout)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"{result.args}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def bin_of(venv: Path, name: str) -> Path:
    return venv / "bin" / name


def pip(venv: Path, *args: str | Path, cwd: Path) -> str:
    return ok(sh(bin_of(venv, "python"), "-m", "pip", *args, cwd=cwd))


def py(venv: Path, code: str, cwd: Path, *args: str | Path) -> str:
    return ok(sh(bin_of(venv, "python"), "-c", code, *args, cwd=cwd))


def site_packages(venv: Path, cwd: Path) -> Path:
    return Path(py(venv, "import sysconfig; print(sysconfig.get_path('purelib'))", cwd).strip())


def outer_site_dirs() -> list[Path]:
    """The site-packages of the environment running the tests (a venv's own when inside one;
    the base interpreter's otherwise), user site included where Python reads it."""
    dirs = [Path(p) for p in site.getsitepackages()]
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        dirs.append(Path(site.getusersitepackages()))
    return [d for d in dirs if d.is_dir()]


def build_wheels(work: Path) -> dict[str, Path]:
    """Wheels of kernelopt, kernelopt-cmake, kernelopt-ninfer, kernelopt-echo and
    kernelopt-broken, by distribution name, in one ``pip wheel``.

    The in-repo projects are built from clean copies: an in-tree build writes build/ and
    *.egg-info into the checkout, and a stale build/lib would leak into the wheel. The core's
    copy holds tests/ too: its wheel must leave it out.
    """
    src = work / "src"
    core = src / "kernelopt"
    core.mkdir(parents=True)
    junk = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist", ".kernelopt")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, core / name)
    for name in ("kernelopt_core", "prompts", "tests"):
        shutil.copytree(REPO / name, core / name, ignore=junk)
    shutil.copytree(CMAKE_PLUGIN, src / "kernelopt_cmake", ignore=junk)
    shutil.copytree(NINFER_PLUGIN, src / "kernelopt_ninfer",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist",
                                                  ".kernelopt", "fixture_repo"))
    for dist, module, ep, text in (("kernelopt-echo", "kernelopt_echo", "echo", ECHO_MODULE),
                                   ("kernelopt-broken", "kernelopt_broken", "broken",
                                    BROKEN_MODULE)):
        (src / dist / module).mkdir(parents=True)
        (src / dist / "pyproject.toml").write_text(pyproject(dist, module, ep))
        (src / dist / module / "__init__.py").write_text(text)
    out = work / "wheels"
    ok(sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
          "--no-cache-dir", "-w", out, core, src / "kernelopt_cmake", src / "kernelopt_ninfer",
          src / "kernelopt-echo", src / "kernelopt-broken", cwd=work, timeout=600))
    found = {}
    for dist in ("kernelopt", "kernelopt_cmake", "kernelopt_ninfer", "kernelopt_echo",
                 "kernelopt_broken"):
        (wheel,) = out.glob(f"{dist}-*-py3-none-any.whl")
        found[dist.replace("_", "-")] = wheel
    return found


def make_venv(path: Path, cwd: Path) -> Path:
    """A venv whose third-party dependencies come from the outer environment's site
    directories (after its own site-packages), offline.

    ``--without-pip`` saves seconds: ``<venv>/bin/python -m pip`` then runs the outer
    environment's pip, which installs into the venv it runs in (and never uninstalls outside
    it).
    """
    ok(sh(sys.executable, "-m", "venv", "--without-pip", path, cwd=cwd))
    target = site_packages(path, cwd)
    lines = "".join(f"import site; site.addsitedir({str(d)!r})\n" for d in outer_site_dirs())
    # a name sorted after any distribution's own .pth: the venv's own come first
    (target / "zz_kernelopt_tests_outer_site.pth").write_text(lines)
    return path
