"""Pure: summary.json's ``llm`` section from a run's ``llm_call`` events (the agents' calls,
their tokens, cost and latency, per role)."""

from __future__ import annotations

from typing import Any


def llm_usage(events: list[dict[str, Any]]) -> dict[str, Any]:
    calls = [e for e in events if e["event"] == "llm_call"]
    ok = [e for e in calls if e.get("status") == 200 and "tokens_in" in e]
    return {
        "calls": len(ok), "failed_attempts": len(calls) - len(ok),
        "tokens_in": sum(e["tokens_in"] for e in ok), "tokens_out": sum(e["tokens_out"] for e in ok),
        "latency_s": round(sum(e.get("latency_s", 0.0) for e in calls), 3),
        "cost": round(sum(e.get("cost", 0.0) for e in ok), 6),
        "unpriced_calls": sum(not e.get("priced", True) for e in ok),
        "by_role": by_role(ok),
    }


def by_role(ok: list[dict[str, Any]]) -> dict[str, int]:
    """Successful calls per agent role. The editor was the "executor" until 2026-12-04: an
    older journal's calls count as the editor's, and ``executor`` stays, the same count, as
    summary.json keys are only ever added within a schema."""
    roles = ["editor" if e.get("role") == "executor" else e.get("role") for e in ok]
    editor = roles.count("editor")
    return {"planner": roles.count("planner"), "editor": editor,
            "summarizer": roles.count("summarizer"), "executor": editor}
