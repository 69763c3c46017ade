"""docs/architecture.md cannot drift from the code: its layer table is read and every module of
kernelopt_core must have its row in it, and the imports read from the source (every import
statement: module level, type-only, inside a function) must follow the rule it states — a
module imports only modules of its own layer or below. Every plugin package and built-in
plugin has its line too."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from kernelopt_core.plugins import PluginHost

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "kernelopt_core"
TEXT = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
CODE = set(re.findall(r"`([^`\n]+)`", TEXT))  # every `...` span of the document (one line)
SECTION = "## Modules of kernelopt_core, by layer"


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The kernelopt_core modules ``path`` imports, however and wherever (``from pkg import
    mod`` imports the module ``pkg.mod``; ``from mod import name`` the module ``mod``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                      else node.module for a in node.names}
    return {m for m in found if m in modules}


def _modules() -> dict[str, Path]:
    """Every module of kernelopt_core by its dotted name; a package's ``__init__.py`` only when
    it imports something of the core (one that is a docstring has no row)."""
    every = {_dotted(p): p for p in CORE.rglob("*.py") if "__pycache__" not in p.parts}
    return {name: path for name, path in every.items()
            if path.name != "__init__.py" or path.parent == CORE
            or _imports(path, set(every) - {name})}


def _layers() -> tuple[list[str], dict[str, int]]:
    """The document's layers, bottom first, and each module's layer (its index), read from
    the ``### N. name`` tables of its module section."""
    section = TEXT[TEXT.index(SECTION):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    names: list[str] = []
    layer_of: dict[str, int] = {}
    for line in section.splitlines():
        heading = re.match(r"### (\d+)\. (\S+)", line)
        if heading:
            assert int(heading.group(1)) == len(names) + 1, f"layers out of order at {line!r}"
            names.append(heading.group(2))
        elif line.startswith("| `") and names:
            cell = line.split(" | ")[0]
            for path in re.findall(r"`([^`]+\.py)`", cell):
                name = _dotted(CORE / path)
                assert name not in layer_of, f"{path} has two rows"
                layer_of[name] = len(names) - 1
    return names, layer_of


def test_every_core_module_has_one_row_in_a_layer() -> None:
    modules = _modules()
    _names, layer_of = _layers()
    missing = sorted(m for m in modules if m not in layer_of)
    assert not missing, f"docs/architecture.md has no row for: {', '.join(missing)}"
    gone = sorted(m for m in layer_of if m not in modules)
    assert not gone, f"docs/architecture.md lists modules that do not exist: {', '.join(gone)}"


def test_the_layer_diagram_names_the_layers_in_order() -> None:
    names, _layer_of = _layers()
    assert len(names) >= 5
    diagram = TEXT[TEXT.index("## Layers"):TEXT.index(SECTION)]
    listed = [(int(n), name) for n, name in re.findall(r"^(\d) (\S+) ", diagram, re.M)]
    assert sorted(listed) == list(enumerate(names, 1)), listed


def test_a_module_imports_only_its_layer_or_below() -> None:
    """The rule the document states, read from the source: every import statement, at module
    level, for types only or inside a function (a string naming a module, as the plugin host
    names its built-ins, is the cycle test's: tests/test_architecture.py)."""
    modules = _modules()
    names, layer_of = _layers()
    upward = []
    for name, path in sorted(modules.items()):
        for imported in sorted(_imports(path, set(modules)) - {name}):
            if imported in layer_of and layer_of[imported] > layer_of.get(name, len(names)):
                upward.append(f"{name} ({names[layer_of[name]]}) imports {imported} "
                              f"({names[layer_of[imported]]})")
    assert not upward, "imports above their layer:\n" + "\n".join(upward)


def test_every_plugin_package_and_built_in_plugin_has_a_line() -> None:
    packages = [p.name for p in sorted((REPO / "plugins").iterdir()) if (p / "pyproject.toml").is_file()]
    missing = [name for name in packages if name not in CODE]
    assert not missing, f"docs/architecture.md's package table lacks: {', '.join(missing)}"
    builtins = [i.name for i in PluginHost(autoload=False).plugin_infos() if i.builtin]
    assert builtins, "no built-in plugin registered"
    missing = [name for name in builtins if name not in CODE]
    assert not missing, f"docs/architecture.md's plugin host section lacks: {', '.join(missing)}"
