"""Pure: summary.json's ``llm`` section from a run's ``llm_call`` events (the agents' calls,
their tokens, cost and latency, per role)."""

from __future__ import annotations

from typing import Any

from kernelopt_core import events


def llm_usage(records: list[dict[str, Any]]) -> dict[str, Any]:
    calls = events.of(records, events.LLMCall)
    ok = [c for c in calls if c.answered]
    return {
        "calls": len(ok), "failed_attempts": len(calls) - len(ok),
        "tokens_in": sum(c.tokens_in or 0 for c in ok),
        "tokens_out": sum(c.tokens_out or 0 for c in ok),
        "latency_s": round(sum(c.latency_s for c in calls), 3),
        "cost": round(sum(c.cost or 0.0 for c in ok), 6),
        "unpriced_calls": sum(c.priced is False for c in ok),
        "by_role": by_role(ok),
    }


def by_role(ok: list[events.LLMCall]) -> dict[str, int]:
    """Successful calls per agent role. The editor was the "executor" until 2026-12-04: an
    older journal's calls count as the editor's, and ``executor`` stays, the same count, as
    summary.json keys are only ever added within a schema."""
    roles = ["editor" if c.role == "executor" else c.role for c in ok]
    editor = roles.count("editor")
    return {"planner": roles.count("planner"), "editor": editor,
            "summarizer": roles.count("summarizer"), "executor": editor}
