"""Developer sessions, in the current environment (README's test command installs it):

    nox                    lint, typecheck, tests-fast
    nox -s tests-all       every test, the whole-loop ones (marked slow) included
    nox -s lint typecheck  ruff (RUF100 on) and mypy (the core and the plugins)

CI runs README's test command (.ci/run): lint, typecheck and every test.
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
