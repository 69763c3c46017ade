"""A whole agents run through the provider, against a real local HTTP server (the testing
kit's ScriptedLLMServer, which replays the agents' replies)."""

from __future__ import annotations

from pathlib import Path

from kernelopt_core.testing import (
    ScriptedLLMServer,
    last_summary,
    plugin_host,
    run_kernelopt,
    say,
    tool_call,
    write_chunk_project,
)


def test_it_is_registered() -> None:
    providers = plugin_host(autoload=True).registry("llm_providers")
    assert providers["localchat"].api_key_env is None


def test_an_agents_run_through_it_ends_optimized(tmp_path: Path) -> None:
    project = write_chunk_project(tmp_path / "p")
    faster = (project / "kernel.py").read_text().replace("CHUNK = 1\n", "CHUNK = 128\n")
    script = {"planner": [tool_call("submit_plan", plan="Walk the list in chunks of 128")],
              "editor": [tool_call("write_file", path="kernel.py", content=faster),
                         say("CHUNK is 128.")],
              "summarizer": [say('{"strategy": "chunks", "lesson": "fewer slices", '
                                 '"action": "append"}')]}
    with ScriptedLLMServer(script) as server:
        done = run_kernelopt("run", project, "--planner", "agents", "--provider", "localchat",
                             "--base-url", server.url, "--iterations", "1",
                             "--final-rounds", "2", "--seeds", "1", cwd=tmp_path,
                             env={"KERNELOPT_LLM_BACKOFF_S": "0.05"})
    assert done.returncode == 0, done.stderr
    summary = last_summary(tmp_path / ".kernelopt")
    assert summary["status"] == "optimized" and summary["planner"] == "agents"
    assert any(r["json"].get("model") == "local" for r in server.requests)  # default_model
