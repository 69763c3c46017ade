"""A small reader of the CMake text NInfer writes: commands, variables, loops, includes.

NInfer registers its per-op programs through its own functions, often inside a loop::

    set(ninfer_op_tests silu_mul rmsnorm ...)
    foreach(op IN LISTS ninfer_op_tests)
      ninfer_add_test(ninfer_${op}_test SOURCES ops/test_${op}.cpp LIBRARIES ninfer_ops)
    endforeach()
    ninfer_add_op_bench(ninfer_rmsnorm_bench SOURCES ops/rmsnorm_bench.cu)

Later versions call ``ninfer_add_op_test`` from ``tests/ops/tests.cmake`` through
``include("${CMAKE_CURRENT_LIST_DIR}/...")``. This module evaluates exactly what the op table
needs: ``set``/``list(APPEND)``, ``foreach`` (``IN LISTS``, ``IN ITEMS``, plain items),
``include`` and ``add_subdirectory``, and the calls themselves with variables expanded. It is
not CMake: ``if`` is not evaluated (every branch's registrations count) and function bodies are
skipped (a definition registers nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import attrs

VAR = re.compile(r"\$\{(\w+)\}")
NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
MAX_FILES = 200  # includes and subdirectories followed at most (a cycle cannot run away)


@attrs.frozen
class Call:
    """One command invocation: its name (lower case), raw argument text and arguments."""

    name: str
    args: tuple[str, ...]
    raw: str
    line: int


@attrs.frozen
class Registration:
    """A program registered by a NInfer helper: ``ninfer_<op>_test`` or ``ninfer_<op>_bench``."""

    target: str
    sources: tuple[str, ...]  # relative to the tree's root, as written once variables expand
    file: str  # the CMake file (relative to the root) that registers it
    line: int


def strip_comments(text: str) -> str:
    """The text with ``#`` comments (outside quoted strings) and bracket comments blanked,
    newlines kept so line numbers still hold."""
    text = re.sub(r"#\[(=*)\[.*?\]\1\]", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    out: list[str] = []
    for line in text.splitlines():
        quoted = False
        cut = len(line)
        for i, ch in enumerate(line):
            if ch == '"' and (i == 0 or line[i - 1] != "\\"):
                quoted = not quoted
            elif ch == "#" and not quoted:
                cut = i
                break
        out.append(line[:cut])
    return "\n".join(out)


def split_args(raw: str) -> tuple[str, ...]:
    """CMake's argument splitting: whitespace separates, quotes group (and are dropped)."""
    return tuple(a[1:-1] if a.startswith('"') else a
                 for a in re.findall(r'"(?:[^"\\]|\\.)*"|[^\s"()]+', raw))


def calls(text: str) -> Iterator[Call]:
    """Every top-level command invocation in ``text`` (comments already stripped or not)."""
    text = strip_comments(text)
    pos = 0
    while True:
        match = NAME.search(text, pos)
        if match is None:
            return
        # a command name starts a line (after indentation); anything else is inside arguments
        start = text.rfind("\n", 0, match.start()) + 1
        if text[start:match.start()].strip():
            pos = match.end()
            continue
        depth, i, quoted = 1, match.end(), False
        while i < len(text) and depth:
            ch = text[i]
            if ch == '"' and text[i - 1] != "\\":
                quoted = not quoted
            elif not quoted:
                depth += {"(": 1, ")": -1}.get(ch, 0)
            i += 1
        raw = text[match.end():i - 1]
        yield Call(match.group(1).lower(), split_args(raw), raw, text.count("\n", 0, match.start()) + 1)
        pos = i


def expand(value: str, variables: dict[str, list[str]]) -> str:
    return VAR.sub(lambda m: ";".join(variables.get(m.group(1), [])), value)


def _items(args: tuple[str, ...], variables: dict[str, list[str]]) -> list[str]:
    """Arguments with variables expanded, a list variable splitting into its items."""
    out: list[str] = []
    for arg in args:
        out += [p for p in expand(arg, variables).split(";") if p]
    return out


class Reader:
    """Walks CMake files from one entry file, collecting variables and registrations."""

    def __init__(self, root: Path, kinds: dict[str, str]) -> None:
        self.root = root
        self.kinds = kinds  # command name -> registration kind ("test" | "bench")
        self.found: dict[str, list[Registration]] = {kind: [] for kind in set(kinds.values())}
        self.variables: dict[str, list[str]] = {
            "PROJECT_SOURCE_DIR": [str(root)], "CMAKE_SOURCE_DIR": [str(root)]}
        self.visited = 0

    def read(self, path: Path, source_dir: Path | None = None) -> None:
        """Evaluate ``path`` (``source_dir``: CMAKE_CURRENT_SOURCE_DIR, its folder by default)."""
        if not path.is_file() or self.visited >= MAX_FILES:
            return
        self.visited += 1
        source_dir = source_dir or path.parent
        saved = {k: self.variables.get(k) for k in ("CMAKE_CURRENT_SOURCE_DIR", "CMAKE_CURRENT_LIST_DIR")}
        self.variables["CMAKE_CURRENT_SOURCE_DIR"] = [str(source_dir)]
        self.variables["CMAKE_CURRENT_LIST_DIR"] = [str(path.parent)]
        self._run(list(calls(path.read_text(encoding="utf-8", errors="replace"))), path, source_dir)
        for key, value in saved.items():
            if value is None:
                self.variables.pop(key, None)
            else:
                self.variables[key] = value

    def _run(self, body: list[Call], path: Path, source_dir: Path) -> None:
        i = 0
        while i < len(body):
            call = body[i]
            if call.name in ("function", "macro", "foreach"):
                end = self._block_end(body, i, call.name)
                if call.name == "foreach":
                    self._foreach(call, body[i + 1:end], path, source_dir)
                i = end + 1
                continue
            self._one(call, path, source_dir)
            i += 1

    @staticmethod
    def _block_end(body: list[Call], start: int, opener: str) -> int:
        depth = 0
        for j in range(start, len(body)):
            if body[j].name == opener:
                depth += 1
            elif body[j].name == f"end{opener}":
                depth -= 1
                if depth == 0:
                    return j
        return len(body) - 1

    def _foreach(self, call: Call, body: list[Call], path: Path, source_dir: Path) -> None:
        if not call.args:
            return
        var, rest = call.args[0], call.args[1:]
        if rest[:1] == ("RANGE",):
            return  # numeric loops register no op programs
        if rest[:2] == ("IN", "LISTS"):
            items = [v for name in rest[2:] if name != "ITEMS" for v in self.variables.get(name, [])]
        elif rest[:2] == ("IN", "ITEMS"):
            items = _items(rest[2:], self.variables)
        else:
            items = _items(rest, self.variables)
        saved = self.variables.get(var)
        for item in items:
            self.variables[var] = [item]
            self._run(body, path, source_dir)
        if saved is None:
            self.variables.pop(var, None)
        else:
            self.variables[var] = saved

    def _one(self, call: Call, path: Path, source_dir: Path) -> None:
        if call.name == "set" and call.args:
            values = list(call.args[1:])
            for stop in ("CACHE", "PARENT_SCOPE"):
                if stop in values:
                    values = values[:values.index(stop)]
            self.variables[call.args[0]] = _items(tuple(values), self.variables)
        elif call.name == "list" and call.args[:1] == ("APPEND",) and len(call.args) > 1:
            self.variables.setdefault(call.args[1], []).extend(_items(call.args[2:], self.variables))
        elif call.name == "include" and call.args:
            target = Path(expand(call.args[0], self.variables))
            if not target.is_absolute():
                target = source_dir / target
            self.read(target, source_dir)  # an include keeps the including directory's scope
        elif call.name == "add_subdirectory" and call.args:
            sub = Path(expand(call.args[0], self.variables))
            sub = sub if sub.is_absolute() else source_dir / sub
            self.read(sub / "CMakeLists.txt", sub)
        elif call.name in self.kinds and call.args:
            self._register(call, path, source_dir)

    def _register(self, call: Call, path: Path, source_dir: Path) -> None:
        args = _items(call.args, self.variables)
        target, sources, collecting = args[0], [], False
        for arg in args[1:]:
            if arg.isupper() and re.fullmatch(r"[A-Z_]+", arg):
                collecting = arg == "SOURCES"
            elif collecting:
                sources.append(self._relative(arg, source_dir))
        self.found[self.kinds[call.name]].append(Registration(
            target, tuple(sources), self._relative(str(path), self.root), call.line))

    def _relative(self, value: str, base: Path) -> str:
        candidate = Path(value)
        if not candidate.is_absolute():
            candidate = base / candidate
        try:
            return candidate.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return value


TEST_COMMANDS = {"ninfer_add_test": "test", "ninfer_add_op_test": "test"}
BENCH_COMMANDS = {"ninfer_add_op_bench": "bench", "ninfer_add_bench": "bench"}


def registrations(root: Path) -> tuple[list[Registration], list[Registration]]:
    """(test programs, bench programs) that tests/ and bench/ register, in file order."""
    reader = Reader(root, {**TEST_COMMANDS, **BENCH_COMMANDS})
    reader.read(root / "tests" / "CMakeLists.txt")
    reader.read(root / "bench" / "CMakeLists.txt")
    return reader.found.get("test", []), reader.found.get("bench", [])


def options(text: str) -> dict[str, str]:
    """``option(NAME "doc" DEFAULT)`` declarations: name -> default (OFF when not given)."""
    found = {}
    for call in calls(text):
        if call.name == "option" and call.args:
            found[call.args[0]] = call.args[2] if len(call.args) > 2 else "OFF"
    return found


def executables(folder: Path) -> set[str]:
    """Names of the ``add_executable`` targets written literally in the CMake files under
    ``folder`` (``ninfer_bench`` for the engine gate)."""
    found: set[str] = set()
    for path in sorted(folder.rglob("CMakeLists.txt")) + sorted(folder.rglob("*.cmake")):
        text = path.read_text(encoding="utf-8", errors="replace")
        found |= {c.args[0] for c in calls(text) if c.name == "add_executable" and c.args}
    return found
