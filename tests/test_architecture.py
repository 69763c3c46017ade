"""The layering rules, read from the source: plugin packages import only the public API, the
core has no import cycle, and every public name is documented."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from itertools import pairwise
from pathlib import Path

from kernelopt_core import api

REPO = Path(__file__).resolve().parents[1]
PUBLIC = {"kernelopt_core.api", "kernelopt_core.bench_worker"}  # the latter: worker children


def _imports(path: Path, module_level: bool, named: bool = False) -> list[tuple[int, str]]:
    """(line, module) of every kernelopt_core import in ``path``; ``module_level``: only those
    outside functions and classes (TYPE_CHECKING ones included: a type-only cycle is still a
    layering cycle); ``named``: also the modules a string names, which something imports at
    run time — ``importlib.import_module("kernelopt_core.x")``, a registry's
    ``"kernelopt_core.x"`` value, an entry point's ``"kernelopt_core.x:attr"`` (the caller
    keeps those that are modules)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes: list[ast.AST] = []
    if module_level:
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                nodes.extend(ast.walk(node))
    else:
        nodes = list(ast.walk(tree))
    found = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
            found += [(node.lineno, n) for n in [node.module, *names] if n.startswith("kernelopt_core")]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("kernelopt_core")]
        elif named and isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.startswith("kernelopt_core."):
            found.append((node.lineno, node.value.partition(":")[0]))
    return found


def _core_modules() -> dict[str, Path]:
    """Every module of kernelopt_core by its dotted name (a package by its own name)."""
    return {".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): p
            for p in (REPO / "kernelopt_core").rglob("*.py")}


def test_plugin_packages_import_only_the_public_api() -> None:
    sources = sorted(p for p in REPO.glob("plugins/kernelopt_*/kernelopt_*/**/*.py"))
    assert len(sources) >= 15
    offending = []
    for path in sources:
        imports = _imports(path, module_level=False)
        modules = {m for _line, m in imports}
        for line, module in imports:
            # `from kernelopt_core.api import X` also yields "kernelopt_core.api.X": fine
            if module in PUBLIC or any(module.startswith(p + ".") for p in PUBLIC):
                continue
            if module == "kernelopt_core" and modules & PUBLIC:
                continue
            offending.append(f"{path.relative_to(REPO)}:{line}: {module}")
    assert not offending, "plugins import core internals:\n" + "\n".join(offending)


# (importer, imported): a function-level import that is a deliberate lazy load (a heavy or
# optional module, loaded when used) and closes no layering cycle. Every entry needs its
# reason here; none is needed today.
LAZY_IMPORTS: dict[tuple[str, str], str] = {}


def core_import_graph() -> dict[str, dict[str, int]]:
    """module -> {kernelopt_core module it imports: line}: every import, at module level, for
    types only or inside a function, and every module a string names for a run-time import
    (the plugin host's built-ins, ``importlib.import_module``, entry points)."""
    modules = _core_modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        edges: dict[str, int] = {}
        for line, module in _imports(path, module_level=False, named=True):
            if module in modules and module != name and (name, module) not in LAZY_IMPORTS:
                edges.setdefault(module, line)
        graph[name] = edges
    return graph


def test_the_core_has_no_import_cycle() -> None:
    """No import cycle in the core, whatever the import's kind: module level, type-only,
    function-local, or a module named by a string (the plugin host loads its built-ins so,
    which is how cli -> plugins -> a built-in command -> cli once hid a cycle). The contract
    (hookspecs and the types it names) sits below the loop layer, never beside it."""
    graph = core_import_graph()
    found = [" -> ".join([*(f"{a}:{graph[a][b]}" for a, b in pairwise(cycle)), cycle[-1]])
             for cycle in _cycles(graph)]
    assert not found, "import cycles in the core (module:line of each import):\n" + "\n".join(found)


def test_the_lazy_imports_allowed_still_exist() -> None:
    """An allowed lazy import that is gone is taken off the list (it would hide a new one)."""
    modules = _core_modules()
    stale = [pair for pair in LAZY_IMPORTS
             if pair[1] not in {m for _l, m in _imports(modules[pair[0]], module_level=False)}]
    assert not stale, stale


def _cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """A depth-first search: the cycle each back edge closes (none: no cycle), as a path that
    ends where it starts."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                found.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)
    return found


def _sibling_imports(package: Path) -> dict[str, dict[str, int]]:
    """module -> {module of the same package it imports: line} for one package, every import
    counted: module level, TYPE_CHECKING and function-local ones (a local import that hides a
    cycle is still one)."""
    paths = {".".join(p.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__"): p
             for p in package.rglob("*.py")}
    graph: dict[str, dict[str, int]] = {}
    for name, path in paths.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]  # its __package__
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:  # relative: from its package, one level up per extra dot
                    parent = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                    module = f"{parent}.{module}" if module else parent
                # `from pkg import mod` imports the module mod; `from mod import name`, mod
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in paths else module
                           for a in node.names]
            else:
                continue
            for target in targets:
                if target in paths and target != name:
                    edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


def test_plugin_packages_have_no_import_cycle() -> None:
    """Built-in plugins follow the core's rule (issue 35), read from the source (nothing
    imported): within each package no module imports, even locally or for types only, one that
    imports it back."""
    packages = sorted(p.parent for p in REPO.glob("plugins/kernelopt_*/kernelopt_*/__init__.py"))
    assert len(packages) >= 5
    found = []
    for package in packages:
        graph = _sibling_imports(package)
        for cycle in _cycles(graph):
            steps = [f"{a}:{graph[a][b]}" for a, b in pairwise(cycle)]
            found.append(" -> ".join([*steps, cycle[-1]]))
    assert not found, ("import cycles in plugin packages (module:line of each import):\n"
                       + "\n".join(found))


MODULE_LINES = 400  # a plugin module longer than this mixes jobs: split it (issue 56)
# not split yet: each may not grow, and leaves this list once it is short enough (the Triton
# harness and engine gate, child programs whose import-time bindings needed a careful split,
# have left it)
NOT_SPLIT_YET: dict[str, int] = {}


def test_plugin_modules_are_small() -> None:
    sources = sorted(REPO.glob("plugins/kernelopt_*/kernelopt_*/**/*.py"))
    lines = {str(p.relative_to(REPO)): len(p.read_text(encoding="utf-8").splitlines())
             for p in sources}
    long = [f"{name}: {n} lines" for name, n in lines.items()
            if n > NOT_SPLIT_YET.get(name, MODULE_LINES)]
    assert not long, f"plugin modules over {MODULE_LINES} lines:\n" + "\n".join(long)
    done = [name for name, ceiling in NOT_SPLIT_YET.items() if lines.get(name, 0) <= MODULE_LINES]
    assert not done, f"split now: take them off NOT_SPLIT_YET: {', '.join(done)}"


def test_backend_plugins_are_laid_out_as_triton_is() -> None:
    """Every plugin: plugin.py holds the hooks and no class; a backend plugin has backend.py
    (the Backend class), one that declares options options.py (its option table, and no table
    elsewhere in the package)."""
    found = []
    for package in sorted(p.parent for p in REPO.glob("plugins/kernelopt_*/kernelopt_*/plugin.py")):
        hooks = (package / "plugin.py").read_text(encoding="utf-8")
        where = package.relative_to(REPO)
        tree = ast.parse(hooks)
        classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
        if classes:
            found.append(f"{where}/plugin.py declares {', '.join(classes)} (hooks only)")
        if "def kernelopt_register_backends" in hooks and not (package / "backend.py").is_file():
            found.append(f"{where}: a backend plugin without backend.py")
        if "def kernelopt_option_tables" in hooks and not (package / "options.py").is_file():
            found.append(f"{where}: option tables without options.py")
        for path in package.glob("*.py"):
            if path.name not in ("options.py", "__init__.py") and \
                    "@option_table(" in path.read_text(encoding="utf-8"):
                found.append(f"{path.relative_to(REPO)}: an option table outside options.py")
    assert not found, "\n".join(found)


def test_every_public_name_is_documented() -> None:
    text = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    missing = [name for name in api.__all__ if f"`{name}`" not in text]
    assert not missing, f"docs/plugins.md does not document: {', '.join(missing)}"
    for name in api.__all__:
        assert hasattr(api, name), name


def test_the_api_reference_is_generated_from_the_code() -> None:
    """docs/api-reference.md is what `python -m kernelopt_core.api_reference` prints, and it
    covers every record, protocol and function of the public API (the rest are constants,
    errors and hook markers, documented in docs/plugins.md)."""
    from kernelopt_core import api_reference

    text = (REPO / "docs" / "api-reference.md").read_text(encoding="utf-8")
    assert text == api_reference.render(), (
        "docs/api-reference.md is stale: run python -m kernelopt_core.api_reference > "
        "docs/api-reference.md")
    listed = {*api_reference.RECORDS, *api_reference.PROTOCOLS, *api_reference.FUNCTIONS}
    for name in api.__all__:
        value = getattr(api, name)
        if name == "hookimpl" or not callable(value) or (
                isinstance(value, type) and issubclass(value, Exception)):
            continue  # the hook marker, constants and errors: docs/plugins.md
        assert name in listed, f"{name} is missing from api_reference's lists"


CONTRACT = {
    "kernelopt_core.hookspecs", "kernelopt_core.capabilities", "kernelopt_core.target",
    "kernelopt_core.errors",
    "kernelopt_core.settings", "kernelopt_core.options", "kernelopt_core.gates.base",
    "kernelopt_core.gates.options",
    "kernelopt_core.planners.base", "kernelopt_core.budget",
    "kernelopt_core.search", "kernelopt_core.journal", "kernelopt_core.events",
    "kernelopt_core.events.base", "kernelopt_core.events.run", "kernelopt_core.events.timed",
    "kernelopt_core.measure.parsers",
    "kernelopt_core.process", "kernelopt_core.workers.protocol", "kernelopt_core.bench_worker",
    "kernelopt_core.executors",
}


def test_the_contract_imports_nothing_from_the_loop_layer() -> None:
    """What a plugin author reads (hookspecs and every type it names) depends only on itself
    (docs/architecture.md, "Layers")."""
    packages = {"kernelopt_core", "kernelopt_core.gates", "kernelopt_core.planners",
                "kernelopt_core.measure"}
    leaks = []
    for name in sorted(CONTRACT):
        path = REPO / (name.replace(".", "/") + ".py")
        if not path.exists():  # a package
            path = path.with_suffix("") / "__init__.py"
        for line, module in _imports(path, module_level=False):
            if module not in CONTRACT and module not in packages and not any(
                    module.startswith(c + ".") for c in CONTRACT):
                leaks.append(f"{name}:{line}: {module}")
    assert not leaks, "\n".join(leaks)


def test_modules_stay_small() -> None:
    """Small modules (issue 18): none of the core over 400 lines, the loop a search driver."""
    sizes = {p.relative_to(REPO).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
             for p in (REPO / "kernelopt_core").rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > 400} == {}
    assert sizes["kernelopt_core/loop.py"] <= 300


AGENTS = ("kernelopt_core.planners.agents", "kernelopt_core.llm", "kernelopt_core.experience",
          "kernelopt_core.docs_lookup", "kernelopt_core.llm_providers")


def test_the_core_does_not_import_the_agents() -> None:
    """The agents stack (planner, LLM client, tools, patch applier, experience, providers, doc
    lookup) is one wing the rest never imports; it is registered by name through the hooks."""
    def in_agents(module: str) -> bool:
        return any(module == a or module.startswith(a + ".") for a in AGENTS)

    leaks = []
    for path in sorted((REPO / "kernelopt_core").rglob("*.py")):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        if in_agents(name):
            continue
        leaks += [f"{name}:{line}: {m}" for line, m in _imports(path, module_level=False)
                  if in_agents(m)]
    assert not leaks, "\n".join(leaks)


def test_the_core_reads_the_journal_through_its_event_classes() -> None:
    """One schema (issue 37): outside journal.py (records: their kinds and times) and events/
    (the classes), no core module picks a journal record apart by its ``event`` key
    (``r["event"]``, ``r.get("event")``, ``case {"event": ...}``); it reads the record as its
    class (``events.of``, ``first``, ``last``, ``parse``)."""
    core = REPO / "kernelopt_core"
    allowed = {core / "journal.py", *(core / "events").glob("*.py")}

    def is_event_key(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant) and node.value == "event"

    def by_kind(node: ast.AST) -> bool:
        if isinstance(node, ast.Subscript):
            return is_event_key(node.slice)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return node.func.attr == "get" and bool(node.args) and is_event_key(node.args[0])
        return isinstance(node, ast.MatchMapping) and any(map(is_event_key, node.keys))

    leaks = [f"{path.relative_to(REPO)}:{getattr(node, 'lineno', '?')}"
             for path in sorted(core.rglob("*.py")) if path not in allowed
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if by_kind(node)]
    assert not leaks, "\n".join(leaks)


def test_plugins_doc_lists_every_hook_as_hookspecs_declares_it() -> None:
    """docs/plugins.md's hooks block is generated from hookspecs.py (every ``kernelopt_*``
    hook's signature and docstring): `python -m kernelopt_core.api_reference --plugins-doc`."""
    from kernelopt_core import api_reference, hookspecs

    text = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    assert text == api_reference.with_hooks(text), (
        "docs/plugins.md's hooks are stale: run python -m kernelopt_core.api_reference --plugins-doc")
    for name in vars(hookspecs):
        if name.startswith("kernelopt_"):
            assert f"`{name}(" in text, name


def _core_kind_writes(source: str) -> list[int]:
    """Lines of ``source`` that write one of the core's journal kinds by its name: a
    ``.write(...)`` (or ``._write``) whose kind, the first argument or ``event=``, is a string
    literal the events module knows."""
    from kernelopt_core import events

    lines = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("write", "_write")):
            continue
        kinds = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "event")]
        if any(isinstance(k, ast.Constant) and k.value in events.KINDS for k in kinds):
            lines.append(node.lineno)
    return sorted(lines)


def test_only_the_journal_writes_a_core_kind_by_name() -> None:
    """One way to write the core's events (issue 56): outside journal.py and events/, a core
    kind (``warning``, ``screening``, ``llm_call``...) is written as its class,
    ``journal.record(events.GateWarning(...))``, never by name (``journal.write("warning",
    ...)``), in the core, the built-in plugins and the examples; ``write`` stays for a plugin's
    own kinds."""
    core = REPO / "kernelopt_core"
    allowed = {core / "journal.py", *(core / "events").glob("*.py")}
    sources = [*core.rglob("*.py"), *REPO.glob("plugins/kernelopt_*/kernelopt_*/**/*.py"),
               *REPO.glob("examples/plugins/*/kernelopt_*/**/*.py")]
    found = [f"{path.relative_to(REPO)}:{line}" for path in sorted(sources)
             if path not in allowed
             for line in _core_kind_writes(path.read_text(encoding="utf-8"))]
    assert not found, "a core kind written by name:\n" + "\n".join(found)
    assert _core_kind_writes('log.write("warning", gate="x", message="m")') == [1]
    assert _core_kind_writes('log.write("mine_done", n=1); fh.write("warning")') == [1]


# what names a plugin's object in the core: a name (or attribute) ending so, a parameter typed
# with a protocol, or a loop variable over any of them
PLUGIN_NAMES = ("backend", "gate", "planner", "profiler", "provider", "plugin", "source",
                "executor")
PLUGIN_TYPES = {"Backend", "Gate", "Planner", "Profiler", "LLMProvider", "Executor"}


def _plugin_probes(source: str) -> list[int]:
    """Lines of ``source`` where ``getattr``/``hasattr`` reads a plugin's object (see
    test_the_core_reads_no_plugin_object_by_attribute_name)."""
    tree = ast.parse(source)

    def named(node: ast.AST) -> str:
        while isinstance(node, (ast.Subscript, ast.Call)):  # gates[0], host.registry(k)[n]
            node = node.value if isinstance(node, ast.Subscript) else node.func
        if isinstance(node, ast.Attribute):
            if node.attr == "registry":  # what the plugin host holds
                return "plugin"
            return node.attr
        return node.id if isinstance(node, ast.Name) else ""

    def pluginish(name: str) -> bool:
        bare = name.lstrip("_").lower()
        return bare.endswith(PLUGIN_NAMES) or bare.rstrip("s").endswith(PLUGIN_NAMES) \
            or bare in bound

    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None and any(
                isinstance(n, ast.Name) and n.id in PLUGIN_TYPES for n in ast.walk(node.annotation)):
            bound.add(node.arg.lower())
    for _ in range(2):  # a loop over a loop variable
        for node in ast.walk(tree):
            if isinstance(node, (ast.For, ast.comprehension)) and pluginish(named(node.iter)):
                bound |= {n.id.lower() for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    return sorted(node.lineno for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("getattr", "hasattr") and node.args
                  and pluginish(named(node.args[0])))


def test_the_core_reads_no_plugin_object_by_attribute_name() -> None:
    """No getattr/hasattr on a plugin's object in the core (issue 56): an optional method or
    attribute of a backend, gate, planner or profiler is a capability protocol
    (kernelopt_core/capabilities.py) asked with ``isinstance``, and an optional attribute is
    read through the function that gives its default (``claims_speedup(gate)``,
    ``required_gates(gate)``, ``is_exhaustive(planner)``).

    The rule, read from the source: a ``getattr(X, ...)`` or ``hasattr(X, ...)`` fails where X
    names a plugin's object — its name (or last attribute, ``self._gate``) ends in backend,
    gate, planner, profiler, provider, plugin, source or executor (a plural too), X comes from
    the plugin host (``host.registry(kind)[name]``), X is a parameter annotated with a protocol
    (``Backend``, ``Gate``, ``Planner``, ``Profiler``, ``LLMProvider``, ``Executor``), or X is
    a loop variable over any of those (``for g in gates``). plugin_checks.py is the one
    exception: it checks each registered object against its protocol, whatever it holds."""
    core = REPO / "kernelopt_core"
    allowed = {core / "plugin_checks.py"}
    found = [f"{path.relative_to(REPO)}:{line}" for path in sorted(core.rglob("*.py"))
             if path not in allowed
             for line in _plugin_probes(path.read_text(encoding="utf-8"))]
    assert not found, "getattr/hasattr on a plugin's object:\n" + "\n".join(found)
    probes = ("getattr(self._gate, 'x')\nhasattr(backend, 'y')\n"
              "any(getattr(g, 'z', 0) for g in gates)\ngetattr(host.registry('a')['b'], 'c')\n"
              "def f(p: Planner): return getattr(p, 'name')\ngetattr(self, 'stage')\n")
    assert _plugin_probes(probes) == [1, 2, 3, 4, 5]


def test_every_core_package_ships_in_the_wheel() -> None:
    """pyproject lists the core's packages by name: a new one left out installs without it
    (a wheel whose cli imports a package it lacks)."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts)
             for p in (REPO / "kernelopt_core").rglob("__init__.py")}
    assert found - listed == set()
