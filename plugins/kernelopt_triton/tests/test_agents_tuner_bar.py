"""The agents planner on a Triton kernel file (interpreter): the built-in tuner's best screened
configuration goes through the gates first, the LLM sees the tuner's frontier (get_profile)
and how its candidate did, and the report sets each planner's best side by side (issue 11)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kernelopt_tests_support import events as journal_events
from kernelopt_tests_support import kernelopt
from kernelopt_triton_testpaths import EXAMPLES

from kernelopt_core.testing import ScriptedLLMServer, say, tool_call

KEY = "sk-test-tuner-bar"


@pytest.mark.slow
def test_the_tuner_sets_the_bar_in_an_agents_run(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "vecadd.py", tmp_path / "vecadd.py")
    llm_edit = (tmp_path / "vecadd.py").read_text().replace("BLOCK_SIZE=64", "BLOCK_SIZE=128")
    script = {
        "planner": [tool_call("get_profile", aspect="tuner_frontier"),
                    tool_call("submit_plan", plan="Blocks of 128 elements")],
        "editor": [tool_call("write_file", path="vecadd.py", content=llm_edit), say("done")],
        "summarizer": [say('{"strategy": "block 128", "lesson": "-", "action": "append"}')],
    }
    env = {"OPENAI_API_KEY": KEY, "KERNELOPT_SMALL": "1", "KERNELOPT_LLM_BACKOFF_S": "0.05"}
    with ScriptedLLMServer(script) as server:
        result = kernelopt(
            "run", "vecadd.py", "--planner", "agents", "--provider", "openai", "--base-url",
            server.url, "--model", "m", "--iterations", "2", "--final-rounds", "2", "--seeds",
            "1", "--screen-runs", "1", cwd=tmp_path, env=env)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    [run_dir] = sorted((tmp_path / ".kernelopt" / "runs").iterdir())
    events = journal_events(run_dir)
    screening = next(e for e in events if e["event"] == "screening")
    # 60 configurations as found (10 blocks × 6 warp counts), screened on a budget of 15; a
    # knob whose best screened value sits at its list's end grows past it (joint.py's extend),
    # each grown value adding at least 6 configurations and screening one or two: whether one
    # grows depends on the interpreter's timings, so the grid is 60 or more
    assert screening["ok"] and screening["grid"] >= 60
    assert screening["evaluations"] <= 15 + (screening["grid"] - 60)
    first, second = [e for e in events if e["event"] == "candidate"]
    assert first["planner"] == "tuner" and first["description"].startswith("tuner's best screened")
    assert second["planner"] == "agents"
    planner_requests = [r for r in server.requests
                        if "Plan one change" in json.dumps(r["json"]["messages"])]
    messages = planner_requests[-1]["json"]["messages"]
    answer = next(m["content"] for m in messages if m.get("tool_call_id") == "call_get_profile")
    frontier = json.loads(answer)  # the tool's answer: the tuner's screen of the grid
    assert frontier["grid"] == screening["grid"]
    assert frontier["screened"] == screening["evaluations"]
    assert frontier["best"][0]["knobs"] == first["knobs"]
    sent = json.dumps(messages)
    assert "(to beat)" in sent  # the planner saw how the tuner's candidate did
    summary = json.loads((run_dir / "summary.json").read_text())
    assert set(summary["by_planner"]) == {"tuner", "agents"}
    assert summary["by_planner"]["tuner"]["candidates"] == 1
    assert "best by planner" in (run_dir / "report.md").read_text()


@pytest.mark.slow
def test_an_llm_that_turns_unusable_does_not_throw_away_the_tuners_accepted_candidate(
        tmp_path: Path) -> None:
    """The provider answers the check a run makes before any build, then rejects the key at the
    first agent call: the tuner's accepted candidate still faces the final gates. (A provider
    that cannot answer at all stops the run before any build: tests/test_agents.py.)"""
    shutil.copy(EXAMPLES / "vecadd.py", tmp_path / "vecadd.py")
    env = {"OPENAI_API_KEY": KEY, "KERNELOPT_SMALL": "1", "KERNELOPT_LLM_BACKOFF_S": "0.01"}
    with ScriptedLLMServer({"planner": [{"status": 401}] * 3}) as server:
        result = kernelopt(
            "run", "vecadd.py", "--planner", "agents", "--provider", "openai", "--base-url",
            server.url, "--model", "m", "--iterations", "3", "--final-rounds", "2", "--seeds",
            "1", "--screen-runs", "1", cwd=tmp_path, env=env)
    [run_dir] = sorted((tmp_path / ".kernelopt" / "runs").iterdir())
    events = journal_events(run_dir)
    first = next(e for e in events if e["event"] == "candidate_result")
    if not first["accepted"]:
        return  # the interpreter's screen did not favour it: nothing to protect here
    end = next(e for e in events if e["event"] == "search_end")
    assert "the LLM is unusable" in end["reason"] and "rejected the API key" in end["reason"]
    assert any(e["event"] == "verdict" for e in events)  # the final phase ran
    assert result.returncode in (0, 1), result.stderr[-3000:]
