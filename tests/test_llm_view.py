"""summary.json's llm section (kernelopt_core/llm_view.py), on journals of both role names."""

from __future__ import annotations

from kernelopt_tests_support import records

from kernelopt_core import events
from kernelopt_core.llm_view import llm_usage


def _call(role: str, status: int = 200) -> dict:
    answered = status == 200
    [record] = records(events.LLMCall(
        role=role, model="m", attempt=1, status=status, latency_s=0.5,
        tokens_in=100 if answered else None, tokens_out=20 if answered else None,
        cost=0.001 if answered else None))
    return record


def test_an_older_journals_executor_calls_are_the_editors() -> None:
    """The editor was the "executor" until 2026-12-04: such a journal's report counts its
    calls as the editor's, and by_role keeps the old key with the same count."""
    new = llm_usage([_call("planner"), _call("editor"), _call("editor", 429), _call("summarizer")])
    old = llm_usage([_call("planner"), _call("executor"), _call("executor", 429),
                     _call("summarizer")])
    assert new == old
    assert new["by_role"] == {"planner": 1, "editor": 1, "summarizer": 1, "executor": 1}
    assert (new["calls"], new["failed_attempts"], new["tokens_in"]) == (3, 1, 300)
    assert new["latency_s"] == 2.0 and new["cost"] == 0.003
