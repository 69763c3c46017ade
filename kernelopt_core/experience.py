"""The experience archive: what strategies did on earlier candidates, for later runs.

One JSON object per line in ``<state root>/experience.jsonl``, bounded to MAX_ENTRIES (the
oldest go first). The Summarizer appends a lesson, replaces the one for the same strategy,
or skips; a strategy that failed AVOID_AFTER times without a win is marked ``avoid``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import portalocker

MAX_ENTRIES = 200
AVOID_AFTER = 3


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_]+", text.lower()) if len(w) > 2}


class Experience:
    def __init__(self, state_root: Path) -> None:
        self.path = state_root / "experience.jsonl"

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    def search(self, query: str, backend: str | None = None, limit: int = 5) -> list[str]:
        wanted = _words(query)
        scored = []
        for entry in self.entries():
            text = f"{entry.get('strategy', '')} {entry.get('lesson', '')}"
            score = len(wanted & _words(text)) + (0.5 if entry.get("backend") == backend else 0)
            if score > 0:
                scored.append((score, entry))
        scored.sort(key=lambda pair: -pair[0])
        return [
            f"[{e.get('status', '?')}{' · AVOID' if e.get('avoid') else ''}] "
            f"{e.get('strategy')}: {e.get('lesson')} (best {e.get('best_speedup', 1.0):.2f}×, "
            f"{e.get('wins', 0)} wins / {e.get('failures', 0)} failures, {e.get('backend')})"
            for _, e in scored[:limit]
        ]

    def update(self, action: str, strategy: str, lesson: str, backend: str, target: str,
               won: bool, speedup: float | None) -> None:
        """``action``: append | replace | skip (the Summarizer's choice)."""
        if action == "skip" or not strategy.strip():
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with portalocker.Lock(str(self.path) + ".lock", timeout=60):
            entries = self.entries()
            key = strategy.strip().lower()
            old = next((e for e in entries if e.get("key") == key and e.get("backend") == backend),
                       None)
            if old is not None and action == "replace":
                entries.remove(old)
            entry = old if (old is not None and action == "replace") else {}
            wins = entry.get("wins", 0) + int(won)
            failures = entry.get("failures", 0) + int(not won)
            entries.append({
                "key": key, "strategy": strategy.strip(), "lesson": lesson.strip()[:500],
                "backend": backend, "target": target, "wins": wins, "failures": failures,
                "best_speedup": max(entry.get("best_speedup", 1.0), speedup or 1.0),
                "status": "win" if wins else "no win",
                "avoid": wins == 0 and failures >= AVOID_AFTER,
            })
            entries = entries[-MAX_ENTRIES:]
            partial = self.path.with_suffix(".tmp")
            partial.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
            os.replace(partial, self.path)
