"""`python -m bench list` names every script under bench/ (bench/catalog.py): the suites, the
scripts they call or source and their inputs, and the tools run by hand."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from bench import catalog

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
# the entry point's own modules: imported by `python -m bench`, not run
ENTRY_MODULES = {"__init__.py", "__main__.py", "catalog.py", "pack.py"}


def scripts() -> list[str]:
    found = [p for ext in ("*.sh", "*.py") for p in BENCH.rglob(ext)
             if "results" not in p.relative_to(BENCH).parts and p.name not in ENTRY_MODULES]
    return sorted(p.relative_to(REPO).as_posix() for p in found)


def named(path: str, text: str) -> bool:
    return re.search(re.escape(path) + r"(?![\w./-])", text) is not None


def test_bench_list_names_every_script() -> None:
    listed = subprocess.run([sys.executable, "-m", "bench", "list"], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout
    assert len(scripts()) > 40
    assert [s for s in scripts() if not named(s, listed)] == []


def test_a_suite_is_named_after_the_script_it_runs() -> None:
    for suite in catalog.SUITES:
        stem = re.sub(r"^(h200|cpu)_", "", Path(suite.script).stem).replace("_", "-")
        assert suite.name == stem, suite
    assert len({s.name for s in catalog.SUITES}) == len(catalog.SUITES)


def test_a_suites_uses_are_whole() -> None:
    """Each bench script or input a suite's script names is in its uses (or is a suite's own
    script); each use exists."""
    suite_scripts = {s.script for s in catalog.SUITES}
    for suite in catalog.SUITES:
        assert all((REPO / use).exists() for use in suite.uses), suite.uses
        text = (REPO / suite.script).read_text(encoding="utf-8")
        named_here = {m.rstrip(".") for m in re.findall(r"bench/[\w./-]+", text)}
        existing = {m for m in named_here if (REPO / m).exists() and "results" not in m}
        missing = existing - set(suite.uses) - suite_scripts - {"bench/"}
        assert not {m for m in missing if not any(m.startswith(u + "/") for u in suite.uses)}, (
            suite.name, missing)
    assert all((REPO / tool.script).is_file() for tool in catalog.TOOLS)
