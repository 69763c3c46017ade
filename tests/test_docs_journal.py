"""docs/journal.md against the code: every event kind the core and the first-party plugins
write (``<journal>.write("kind", key=...)``, read from the source), with every key written by
name or in a dict literal spread into the call, has its row; and no row names a kind nothing
writes any more. Keys spread from a dict built elsewhere are the doc's to list by hand."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "journal.md"


def written() -> dict[str, set[str]]:
    """kind -> the keys written by name (``**`` splats are the doc's to list by hand)."""
    kinds: dict[str, set[str]] = defaultdict(set)
    roots = [REPO / "kernelopt_core", *sorted((REPO / "plugins").glob("*/kernelopt_*"))]
    for path in (p for root in roots for p in root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "write" and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                    and re.fullmatch(r"[a-z_]+", node.args[0].value)):
                keys = kinds[node.args[0].value]
                keys.update(k.arg for k in node.keywords if k.arg)
                for spread in (k.value for k in node.keywords if k.arg is None):
                    keys.update(d.value for n in ast.walk(spread) if isinstance(n, ast.Dict)
                                for d in n.keys if isinstance(d, ast.Constant))
    return kinds


def documented() -> dict[str, str]:
    """kind -> its row's keys column."""
    rows = re.findall(r"^\| `([a-z_]+)` \| [^|]+ \| (.+) \|$", DOC.read_text(encoding="utf-8"),
                      re.MULTILINE)
    return dict(rows)


def test_every_kind_and_key_written_is_documented() -> None:
    code, doc = written(), documented()
    assert len(code) >= 40, sorted(code)  # the scan still finds the writes
    missing = sorted(set(code) - set(doc))
    assert not missing, f"kinds written but not in docs/journal.md: {missing}"
    stale = sorted(set(doc) - set(code))
    assert not stale, f"kinds in docs/journal.md that nothing writes: {stale}"
    undocumented = {kind: sorted(k for k in keys if f"`{k}`" not in doc[kind] and
                                 f"`{k}?`" not in doc[kind])
                    for kind, keys in code.items()}
    assert not {k: v for k, v in undocumented.items() if v}, undocumented
