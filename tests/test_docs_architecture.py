"""docs/architecture.md cannot drift from the code: every module of kernelopt_core, every
plugin package and every built-in plugin has its line there."""

from __future__ import annotations

import re
from pathlib import Path

from kernelopt_core.plugins import PluginHost

REPO = Path(__file__).resolve().parents[1]
TEXT = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
CODE = set(re.findall(r"`([^`\n]+)`", TEXT))  # every `...` span of the document (one line)


def _named(module: Path) -> bool:
    """A module is named by its path under kernelopt_core/ (`gates/perf.py`), by its file name
    where that is unique (`loop.py`), or as its package's folder (`workers/`)."""
    relative = module.relative_to(REPO / "kernelopt_core").as_posix()
    spans = {piece.strip() for span in CODE for piece in span.split(",")}
    return bool({relative, module.name, f"{module.parent.name}/"} & spans) or any(
        relative in span or f"{module.parent.name}/{module.name}" in span for span in CODE)


def test_every_core_module_has_a_line() -> None:
    modules = [p for p in sorted((REPO / "kernelopt_core").rglob("*.py"))
               if p.name != "__init__.py" and "__pycache__" not in p.parts]
    missing = [p.relative_to(REPO).as_posix() for p in modules if not _named(p)]
    assert not missing, f"docs/architecture.md does not describe: {', '.join(missing)}"


def test_every_plugin_package_and_built_in_plugin_has_a_line() -> None:
    packages = [p.name for p in sorted((REPO / "plugins").iterdir()) if (p / "pyproject.toml").is_file()]
    missing = [name for name in packages if name not in CODE]
    assert not missing, f"docs/architecture.md's package table lacks: {', '.join(missing)}"
    builtins = [i.name for i in PluginHost(autoload=False).plugin_infos() if i.builtin]
    assert builtins, "no built-in plugin registered"
    missing = [name for name in builtins if name not in CODE]
    assert not missing, f"docs/architecture.md's plugin host section lacks: {', '.join(missing)}"
