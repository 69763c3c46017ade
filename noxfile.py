"""Developer sessions, in the current environment (README's test command installs it):

    nox                    lint, typecheck, tests-fast: the quick loop, <= 2 min on 2 cores
    nox -s tests-all       every test, those marked slow included (what `pytest` runs)
    nox -s lint typecheck  ruff (RUF100 on) and mypy (the core and the plugins)

Tiers: `pytest` (README's test command, and CI's .ci/run: lint, typecheck and every test) runs
everything, on every core (pytest-xdist, pyproject's addopts). Tests over ~3 s on the 2-core
machine (whole-loop runs, wheels and venvs, Dask clusters, the Triton interpreter; every test
over 20 s) are marked `slow`; tests-fast leaves them out.
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["lint", "typecheck", "tests-fast"]


@nox.session
def lint(session: nox.Session) -> None:
    session.run("python3", "-m", "ruff", "check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    session.run("python3", "-m", "mypy")


@nox.session(name="tests-fast")
def tests_fast(session: nox.Session) -> None:
    session.run("python3", "-m", "pytest", "-q", "-m", "not slow", *session.posargs)


@nox.session(name="tests-all")
def tests_all(session: nox.Session) -> None:
    session.run("python3", "-m", "pytest", "-q", *session.posargs)
