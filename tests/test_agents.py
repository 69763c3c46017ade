"""The agents planner driven through a real local OpenAI-compatible HTTP server.

Each test runs the real CLI in a child process against ``ScriptedLLMServer`` on 127.0.0.1; the
server replays the Planner's, Editor's and Summarizer's replies and records every request.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernelopt_tests_support import events, kernelopt, last_run, summary

from kernelopt_core.testing import ScriptedLLMServer, say, tool_call

KEY = "sk-test-DO-NOT-LEAK-7f3a9c"
SUMMARY = say('{"strategy": "bigger chunks", "lesson": "fewer Python-level slices", '
              '"action": "append"}')


def fast_kernel(project: Path, chunk: int = 128) -> str:
    return (project / "kernel.py").read_text().replace("CHUNK = 1\n", f"CHUNK = {chunk}\n")


def planner_steps() -> list[dict]:
    return [tool_call("read_file", path="kernel.py"),
            tool_call("submit_plan", plan="Walk the list in chunks of 128 to cut slicing overhead")]


def run_agents(project: Path, server: ScriptedLLMServer, *extra: str,
               env: dict[str, str] | None = None):
    # one screen run a tree: the chunk project's clock is counted, so one reading is the verdict
    # three would give; the agents' calls are the subject
    return kernelopt("run", str(project), "--planner", "agents", "--provider", "openai",
                     "--base-url", server.url, "--model", "gpt-4.1-mini", "--iterations", "1",
                     "--final-rounds", "3", "--screen-runs", "1", *extra, cwd=project.parent,
                     env={"OPENAI_API_KEY": KEY, "KERNELOPT_LLM_BACKOFF_S": "0.05", **(env or {})})


def agent_calls(server: ScriptedLLMServer) -> list[dict]:
    """The agents' requests, without the provider check a run makes before any build."""
    return [r for r in server.requests if ScriptedLLMServer.role_of(r["json"]) != "other"]


def assert_key_never_written(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), f"API key leaked into {path}"


@pytest.mark.slow
def test_a_faster_correct_kernel_is_accepted_and_accounted(chunk_project: Path) -> None:
    script = {"planner": planner_steps(),
              "editor": [tool_call("write_file", path="kernel.py",
                                     content=fast_kernel(chunk_project)), say("CHUNK is 128.")],
              "summarizer": [SUMMARY]}
    with ScriptedLLMServer(script) as server:
        result = run_agents(chunk_project, server)
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = last_run(chunk_project.parent / ".kernelopt")
    s = summary(run_dir)
    assert s["status"] == "optimized" and s["planner"] == "agents"
    assert s["llm"]["calls"] == 5 and s["llm"]["tokens_in"] > 0
    assert s["llm"]["by_role"] == {"planner": 2, "editor": 2, "summarizer": 1, "executor": 2}
    # one cheap check of the provider comes first, before any build (issue 34, item 8)
    assert server.requests[0]["json"]["messages"][0]["content"] == "Reply with the word OK."
    calls = agent_calls(server)
    first = calls[0]
    assert first["path"] == "/v1/chat/completions"
    assert first["headers"]["Authorization"] == f"Bearer {KEY}"
    assert {t["function"]["name"] for t in first["json"]["tools"]} == {
        "search_repo", "read_file", "get_profile", "search_memory", "submit_plan"}
    editor_tools = {t["function"]["name"] for t in calls[2]["json"]["tools"]}
    assert editor_tools == {"read_file", "write_file"}
    memory = (chunk_project.parent / ".kernelopt" / "experience.jsonl").read_text()
    assert "bigger chunks" in memory
    assert "LLM: 5 calls" in (run_dir / "report.md").read_text()
    assert_key_never_written(chunk_project.parent)


@pytest.mark.slow
def test_a_wrong_kernel_is_rejected_at_correctness_then_repaired(chunk_project: Path) -> None:
    wrong = fast_kernel(chunk_project).replace("acc = 0.0", "acc = 0.5")
    script = {"planner": planner_steps(),
              "editor": [tool_call("write_file", path="kernel.py", content=wrong), say("done"),
                           tool_call("write_file", path="kernel.py",
                                     content=fast_kernel(chunk_project)), say("fixed the init")],
              "summarizer": [SUMMARY, SUMMARY]}
    with ScriptedLLMServer(script) as server:
        result = run_agents(chunk_project, server, "--iterations", "2", "--retries", "1")
    run_dir = last_run(chunk_project.parent / ".kernelopt")
    outcomes = [e for e in events(run_dir) if e["event"] == "candidate_result"]
    assert outcomes[0]["failed_gate"] == "correctness" and not outcomes[0]["accepted"]
    assert outcomes[1]["accepted"], outcomes[1]
    repair_request = next(r for r in server.requests
                          if "failed at the correctness gate" in json.dumps(r["json"]))
    assert "mismatch at n=" in json.dumps(repair_request["json"])
    assert result.returncode == 0, result.stderr[-2000:]
    # the test's own failing line, in the report and whole on the console
    failing = outcomes[0]["reason"].split(" — ")[0]
    assert "mismatch at n=" in failing, outcomes[0]["reason"]
    assert failing in (run_dir / "report.md").read_text()
    assert f"rejected at correctness, —  ({failing}" in result.stderr


@pytest.mark.slow
def test_a_hack_is_rejected_by_the_gate(chunk_project: Path) -> None:
    hack = fast_kernel(chunk_project) + "import threading\nthreading.Thread(target=print).start()\n"
    script = {"planner": planner_steps(),
              "editor": [tool_call("write_file", path="kernel.py", content=hack), say("done")],
              "summarizer": [SUMMARY]}
    with ScriptedLLMServer(script) as server:
        result = run_agents(chunk_project, server)
    assert result.returncode == 1
    run_dir = last_run(chunk_project.parent / ".kernelopt")
    outcome = next(e for e in events(run_dir) if e["event"] == "candidate_result")
    assert outcome["failed_gate"] == "policy" and "side stream or thread" in outcome["reason"]


@pytest.mark.slow
def test_malformed_tool_calls_go_back_to_the_model(chunk_project: Path) -> None:
    bad_json = {"message": {"role": "assistant", "content": None, "tool_calls": [{
        "id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{oops"}}]}}
    script = {"planner": [bad_json, tool_call("run_shell", command="ls"), say(""),
                          *planner_steps()],
              "editor": [tool_call("write_file", path="check.py", content="print(1)\n"),
                           tool_call("write_file", path="../outside.py", content="x"),
                           tool_call("write_file", path="kernel.py",
                                     content=fast_kernel(chunk_project)), say("done")],
              "summarizer": [SUMMARY]}
    with ScriptedLLMServer(script) as server:
        result = run_agents(chunk_project, server, env={"KERNELOPT_MAX_MALFORMED": "4"})
    assert result.returncode == 0, result.stderr[-3000:]
    sent = json.dumps([r["json"]["messages"] for r in server.requests])
    assert "error:" in sent and "run_shell" in sent
    assert not (chunk_project.parent / "outside.py").exists()
    assert "print(1)" not in (chunk_project / "check.py").read_text()


@pytest.mark.slow
def test_too_many_malformed_replies_fail_the_candidate_not_the_run(chunk_project: Path) -> None:
    script = {"planner": [say(""), say(""), say(""), say("")], "summarizer": []}
    with ScriptedLLMServer(script) as server:
        result = run_agents(chunk_project, server, env={"KERNELOPT_MAX_MALFORMED": "2"})
    assert result.returncode == 1, result.stderr[-2000:]
    run_dir = last_run(chunk_project.parent / ".kernelopt")
    assert any(e["event"] == "planner_error" for e in events(run_dir))
    s = summary(run_dir)
    assert s["status"] == "fallback" and s["candidates"]["proposed"] == 1
    # the failed attempt is a row of its own, saying why, on the console and in the report
    assert "rejected at planner, —" in result.stderr + result.stdout
    report = (run_dir / "report.md").read_text()
    assert "| c1 | (no proposal: the planner failed) | rejected at planner | — |" in report
    assert "the model produced no usable plan" in report


@pytest.mark.slow
@pytest.mark.parametrize("case", ["closed port", "401", "404"])
def test_an_llm_that_never_answers_ends_the_run_with_exit_3_saying_why(
        chunk_project: Path, case: str) -> None:
    if case == "closed port":
        import socket

        with socket.socket() as sock:  # a port nothing listens on once the socket closes
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        url = f"http://127.0.0.1:{port}/v1"
        result = kernelopt("run", str(chunk_project), "--planner", "agents", "--provider",
                           "openai", "--base-url", url, "--model", "m", "--iterations", "1",
                           cwd=chunk_project.parent,
                           env={"OPENAI_API_KEY": KEY, "KERNELOPT_LLM_BACKOFF_S": "0.01"})
        expected = ["refused the connection", "ConnectError",
                    f"is an OpenAI-compatible server running at {url}"]
    else:
        status = int(case)
        with ScriptedLLMServer({"planner": [{"status": status}]}) as server:
            result = run_agents(chunk_project, server)
            url = server.url
        expected = [f"HTTP {status}"] + (
            ["rejected the API key", "check the API key in OPENAI_API_KEY"] if status == 401
            else ["does not know the model", "check --model (gpt-4.1-mini)"])
    out = result.stderr + result.stdout
    assert result.returncode == 3, out[-3000:]
    assert "the openai provider" in out and "/chat/completions" in out, out
    assert "no LLM call of this run succeeded" in out, out
    for words in expected:
        assert words in out, out
    run_dir = last_run(chunk_project.parent / ".kernelopt")
    assert "no LLM call of this run succeeded" in (run_dir / "report.md").read_text()
    assert KEY not in out
    if case == "closed port":  # said before any build: the provider is checked first
        assert not [e for e in events(run_dir) if e["event"] in ("baseline", "workspace")]


@pytest.mark.slow
def test_429_then_success_and_a_timeout_then_success(chunk_project: Path) -> None:
    script = {"planner": [{"status": 429, "headers": {"Retry-After": "0"}},
                          {"sleep": 2.5, "then": planner_steps()[0]}, planner_steps()[0],
                          planner_steps()[1]],
              "editor": [{"status": 503}, tool_call("write_file", path="kernel.py",
                                                      content=fast_kernel(chunk_project)),
                           say("done")],
              "summarizer": [SUMMARY]}
    with ScriptedLLMServer(script) as server:
        result = run_agents(chunk_project, server, env={"KERNELOPT_LLM_TIMEOUT_S": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    calls = [e for e in events(last_run(chunk_project.parent / ".kernelopt"))
             if e["event"] == "llm_call"]
    statuses = [c["status"] for c in calls]
    assert 429 in statuses and 503 in statuses and None in statuses  # None: the timeout
    assert summary(last_run(chunk_project.parent / ".kernelopt"))["llm"]["failed_attempts"] == 3


@pytest.mark.slow
def test_patch_mode(chunk_project: Path) -> None:
    patch = ("--- a/kernel.py\n+++ b/kernel.py\n@@ -1,3 +1,3 @@\n"
             + "".join(f" {line}\n" if i != 1 else f"-{line}\n+CHUNK = 128\n"
                       for i, line in enumerate((chunk_project / "kernel.py").read_text()
                                                .splitlines()[:3])))
    script = {"planner": planner_steps(),
              "editor": [tool_call("apply_patch", patch=patch), say("done")],
              "summarizer": [SUMMARY]}
    with ScriptedLLMServer(script) as server:
        result = run_agents(chunk_project, server, "--edit-mode", "patch")
    assert result.returncode == 0, result.stderr[-3000:]
    tools = {t["function"]["name"] for t in agent_calls(server)[2]["json"]["tools"]}
    assert tools == {"read_file", "apply_patch"}


@pytest.mark.slow
def test_without_a_key_the_tuner_runs_and_says_why(chunk_project: Path, monkeypatch) -> None:
    for name in ("OPENCODE_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    result = kernelopt("run", str(chunk_project), "--iterations", "1", "--final-rounds", "2",
                       cwd=chunk_project.parent)
    assert "planner: tuner (using the built-in tuner: no LLM key configured (OPENCODE_API_KEY" \
        in result.stderr
    forced = kernelopt("run", str(chunk_project), "--planner", "agents", cwd=chunk_project.parent)
    assert forced.returncode == 3 and "OPENCODE_API_KEY" in forced.stderr


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--budget-llm-calls"])
def test_llm_call_budget_stops_the_search(chunk_project: Path, flag: str) -> None:
    script = {"planner": planner_steps(), "editor": [], "summarizer": []}
    with ScriptedLLMServer(script) as server:
        result = run_agents(chunk_project, server, flag, "1", "--iterations", "5")
    run_dir = last_run(chunk_project.parent / ".kernelopt")
    end = next(e for e in events(run_dir) if e["event"] == "search_end")
    assert "budget" in end["reason"] and result.returncode == 1


@pytest.mark.slow
def test_a_third_party_provider_plugin_is_used_by_name(chunk_project: Path, tmp_path) -> None:
    from kernelopt_core.hookspecs import LLMProvider, hookimpl
    from kernelopt_core.loop import Loop
    from kernelopt_core.planners.agent_options import AgentOptions
    from kernelopt_core.settings import Settings
    from kernelopt_core.testing import ScriptedBackend, ScriptedBackendPlugin, plugin_host

    script = {"planner": planner_steps(),
              "editor": [tool_call("write_file", path="kernel.py",
                                     content=fast_kernel(chunk_project)), say("done")],
              "summarizer": [SUMMARY]}
    with ScriptedLLMServer(script) as server:
        class Provider:
            @hookimpl
            def kernelopt_register_llm_providers(self):
                return [LLMProvider("acme", server.url, "ACME_KEY", "acme-coder-1",
                                    headers={"x-acme-run": "{session}"})]

        host = plugin_host(ScriptedBackendPlugin(), Provider())
        settings = Settings.make(state_root=tmp_path / "s", planner="agents", iterations=1,
                                 final_rounds=3, dotenv={"ACME_KEY": "acme-secret"},
                                 tables={"agents": AgentOptions(provider="acme", llm_backoff_s=0.05)})
        backend = ScriptedBackend()
        outcome = Loop(host, backend, backend.discover(chunk_project, settings)[0],
                       settings).run()
    assert outcome.status == "optimized", outcome.summary
    first = agent_calls(server)[0]
    assert first["json"]["model"] == "acme-coder-1"
    assert first["headers"]["Authorization"] == "Bearer acme-secret"
    assert first["headers"]["x-acme-run"] == outcome.run_id


@pytest.mark.slow
def test_agents_over_two_targets_each_get_a_fresh_planner(chunk_project: Path) -> None:
    """Planner objects used to outlive their run: the second target's run wrote to the first
    run's closed journal (ValueError: I/O operation on closed file, exit 4)."""
    toml = chunk_project / "kernelopt.toml"
    text = toml.read_text()
    toml.write_text(text + "\n" + text[text.index("[[target]]"):].replace(
        'name = "chunk-sum"', 'name = "chunk-sum-2"'))
    one_run = [("planner", planner_steps()),
               ("editor", [tool_call("write_file", path="kernel.py",
                                       content=fast_kernel(chunk_project)), say("CHUNK is 128.")]),
               ("summarizer", [SUMMARY])]
    script = {role: steps * 2 for role, steps in one_run}
    with ScriptedLLMServer(script) as server:
        result = run_agents(chunk_project, server)
    assert result.returncode == 0, result.stderr[-3000:]
    runs = sorted((chunk_project.parent / ".kernelopt" / "runs").iterdir())
    summaries = [summary(r) for r in runs]
    assert [s["target"]["name"] for s in summaries] == ["chunk-sum", "chunk-sum-2"]
    assert [s["status"] for s in summaries] == ["optimized", "optimized"]
    # each run accounts only its own calls: a fresh client and history per run
    assert [s["llm"]["calls"] for s in summaries] == [5, 5]
    assert "I/O operation on closed file" not in result.stderr


@pytest.mark.slow
def test_a_server_that_only_errs_ends_the_run_after_two_attempts(chunk_project: Path) -> None:
    """500 on every call: each attempt is retried and fails (a candidate row), and once two
    attempts failed without one successful call the run exits 3 saying so."""
    with ScriptedLLMServer({"planner": [{"status": 500}] * 10}) as server:
        result = run_agents(chunk_project, server, "--iterations", "4")
    out = result.stderr + result.stdout
    assert result.returncode == 3, out[-3000:]
    assert "no LLM call of this run succeeded in 2 attempts" in out and "HTTP 500" in out
    assert len(agent_calls(server)) == 10  # 2 attempts x 5 tries, then no more
    run_dir = last_run(chunk_project.parent / ".kernelopt")
    assert summary(run_dir)["llm"]["failed_attempts"] == 10
