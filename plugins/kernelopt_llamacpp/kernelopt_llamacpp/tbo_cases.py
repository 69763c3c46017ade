"""The test set's case list that ``tbo check --cases FILE`` keeps (written by the first check that
passed whole) and the ``-o`` filters that split a run over processes by it (tbo.py)."""

from __future__ import annotations

import json
from pathlib import Path

MAX_FILTER = 100_000  # characters in one -o argument; Linux refuses one over 128 KiB


def read_cases(path: Path) -> list[str] | None:
    try:
        cases = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    usable = isinstance(cases, list) and cases and all(isinstance(c, str) for c in cases)
    return cases if usable else None


def write_cases(path: Path, names: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")  # a reader never sees half a list
    partial.write_text(json.dumps(list(dict.fromkeys(names)), indent=0))
    partial.replace(path)


def shard_filters(cases: list[str], shards: int) -> list[str]:
    """``-o`` arguments that split the test set over ``shards`` processes: full case strings,
    comma-separated (the tool matches each exactly and skips the commas inside parentheses).
    The op alone, one process, when a case's params hold parentheses (they would break that
    split) or a filter would be too long for one argument."""
    whole = [cases[0].split("(", 1)[0]]
    shards = min(shards, len(cases))
    if shards < 2 or any(c.count("(") != 1 or c.count(")") != 1 or not c.endswith(")")
                         for c in cases):
        return whole
    filters = [",".join(cases[i::shards]) for i in range(shards)]
    return filters if max(map(len, filters)) <= MAX_FILTER else whole
