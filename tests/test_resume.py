"""Resume after SIGKILL (kernelopt_core.resume): the whole process tree is killed (as a lost
machine would) when the journal reaches an event number drawn from a seeded generator, at 20
points (one test each, sharing the uninterrupted reference run); the same command then resumes
the run. Every time: the user's tree is byte-identical, the resumed run reaches the verdict the
uninterrupted run reached, and no candidate the killed attempt completed is evaluated again.

The 20 points run on the chunk project, the rest on the CPU example with real CMake builds;
both read a deterministic clock (the chunk project's counted one; the CPU example's bench
through kernelopt_tests_support.COUNTED_TRANSPOSE_BENCH), so a resumed run's verdict never
depends on the machine's load (a busy 2-core machine once turned a resumed verdict into
`matched` at ±109 % noise)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from kernelopt_tests_support import counted_cpu_example, records, run_header

from kernelopt_core import journal as journal_mod

FLAGS = ["--iterations", "3", "--patience", "3", "--final-rounds", "2", "--screen-runs", "1",
         "--seeds", "1"]

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _command(project: Path, state: Path, run_id: str) -> list[str]:
    return [sys.executable, "-c", "from kernelopt_core.cli import main; main()", "run",
            str(project), *FLAGS, "--state-root", str(state), "--run-id", run_id]


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _kill_when(command: list[str], cwd: Path, journal: Path | None,
               ready: Callable[[bytes], bool]) -> None:
    """Run ``command`` and SIGKILL it and every descendant once ``ready`` holds for the
    journal's bytes (``journal`` None: the first journal under ``cwd/state/runs``), or let it
    finish if it ends first."""
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    while proc.poll() is None:
        found = journal or next(iter(sorted((cwd / "state" / "runs").glob("*/journal.jsonl"))),
                                None)
        if found is not None and found.is_file() and ready(found.read_bytes()):
            for pid in [proc.pid, *_descendants(proc.pid)]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            break
        time.sleep(0.005)
    proc.wait()


def _kill_at(command: list[str], cwd: Path, journal: Path, events: int) -> None:
    """SIGKILL the run's whole tree once its journal holds ``events`` lines."""
    _kill_when(command, cwd, journal, lambda data: data.count(b"\n") >= events)


def _summary(state: Path, run_id: str) -> dict:
    return json.loads((state / "runs" / run_id / "summary.json").read_text())


KILL_POINTS = 20


@pytest.fixture(scope="module")
def killable(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The uninterrupted reference run of a chunk project (its bench's clock is counted, so
    its verdict is the same on a busy machine) and the 20 journal event numbers, drawn from a
    seeded generator, at which the attempts below are killed; one state root for them all."""
    from kernelopt_core.testing import write_chunk_project

    root = tmp_path_factory.mktemp("sigkill")
    project = write_chunk_project(root / "project")
    state = root / "state"
    before = _tree_digest(project)
    reference = subprocess.run(_command(project, state, "reference"), cwd=root,
                               capture_output=True, text=True, timeout=300)
    assert reference.returncode == 0, reference.stdout + reference.stderr
    expected = _summary(state, "reference")["status"]
    assert expected == "optimized"
    raw = journal_mod.read(state / "runs" / "reference" / "journal.jsonl")
    rng = random.Random(16)
    points = sorted(rng.randint(1, len(raw) - 1) for _ in range(KILL_POINTS))
    first_result = next(i for i, e in enumerate(raw) if e["event"] == "candidate_result") + 1
    return {"root": root, "project": project, "state": state, "before": before,
            "expected": expected, "points": points, "first_result": first_result,
            "total": len(raw)}


@pytest.mark.slow
def test_the_kill_points_reach_into_the_search(killable: dict) -> None:
    """At least 5 of the 20 points fall after the reference's first completed candidate and
    well before its end: those attempts are resumed with recorded work to serve, not only from
    the start (each point's test checks that its attempt had recorded that work)."""
    assert len(killable["points"]) == KILL_POINTS
    first, total = killable["first_result"], killable["total"]
    assert sum(first < p < total - 5 for p in killable["points"]) >= 5


@pytest.mark.slow
@pytest.mark.parametrize("index", range(KILL_POINTS))
def test_sigkill_at_20_points_then_resume(killable: dict, index: int) -> None:
    """Killed (the whole process tree, as a lost machine would) at the index-th point, then
    the same command again: the user's tree is byte-identical, the resumed run reaches the
    reference's verdict, and no candidate the killed attempt completed is evaluated again."""
    project, state, root = killable["project"], killable["state"], killable["root"]
    point, before = killable["points"][index], killable["before"]
    run_id = f"k{index}"
    journal = state / "runs" / run_id / "journal.jsonl"
    _kill_at(_command(project, state, run_id), root, journal, point)
    assert _tree_digest(project) == before, f"killed at event {point}"
    done_before = {e["candidate"] for e in journal_mod.read(journal)
                   if e["event"] == "candidate_result"} if journal.is_file() else set()
    best_before = max((e["speedup"] for e in journal_mod.read(journal) if e["event"] == "best"),
                      default=1.0) if journal.is_file() else 1.0
    again = subprocess.run(_command(project, state, run_id), cwd=root,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, f"killed at event {point}:\n{again.stdout}{again.stderr}"
    assert _tree_digest(project) == before, f"resumed after event {point}"
    assert _summary(state, run_id)["status"] == killable["expected"], f"killed at event {point}"
    raw = journal_mod.read(journal)
    results = Counter(e["candidate"] for e in raw if e["event"] == "candidate_result")
    assert all(n == 1 for n in results.values()), (point, results)  # none evaluated twice
    resumed = [e for e in raw if e["event"] == "resumed"]
    if resumed:
        assert set(resumed[0]["completed"]) == done_before
        # the progress line goes on from the earlier best, not from 1.000× (issue 34 item 7)
        assert resumed[0]["best"] == best_before
        assert best_before == 1.0 or f"best {best_before:.3f}×" in again.stdout + again.stderr
    if point > killable["first_result"]:  # a later attempt logs no more events before it
        assert done_before, f"killed at event {point}: no completed candidate recorded"


@pytest.mark.slow
def test_a_finished_run_is_not_run_again_and_a_changed_tree_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "project"
    counted_cpu_example(project)
    state = tmp_path / "state"
    first = subprocess.run(_command(project, state, "once"), cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    lines = (state / "runs" / "once" / "journal.jsonl").read_text().count("\n")
    again = subprocess.run(_command(project, state, "once"), cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0 and "optimized" in again.stdout + again.stderr
    assert (state / "runs" / "once" / "journal.jsonl").read_text().count("\n") == lines

    # a run cut off, then the target edited: resuming would mix two baselines, so it is refused
    journal = state / "runs" / "cut" / "journal.jsonl"
    _kill_at(_command(project, state, "cut"), tmp_path, journal, 20)
    (project / "kernel.cpp").write_text((project / "kernel.cpp").read_text() + "\n// edited\n")
    refused = subprocess.run(_command(project, state, "cut"), cwd=tmp_path, capture_output=True,
                             text=True, timeout=300)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "cannot be resumed" in refused.stdout + refused.stderr
    bad = subprocess.run(_command(project, state, "../x"), cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "--run-id" in bad.stdout + bad.stderr


@pytest.mark.slow
def test_kernelopt_resume_runs_the_recorded_command_from_its_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    counted_cpu_example(project)
    state = tmp_path / "state"
    # started without --run-id, from the project's parent, with a relative path
    command = [sys.executable, "-c", "from kernelopt_core.cli import main; main()", "run",
               "project", *FLAGS, "--state-root", str(state)]
    _kill_when(command, tmp_path, None, lambda data: b'"candidate_result"' in data)  # mid-search
    [run_dir] = (state / "runs").iterdir()
    again = subprocess.run([sys.executable, "-c", "from kernelopt_core.cli import main; main()",
                            "resume", "last", "--state-root", str(state)], cwd="/",
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    events = journal_mod.read(run_dir / "journal.jsonl")
    assert [e["event"] for e in events].count("resumed") == 1
    assert _summary(state, run_dir.name)["status"] == "optimized"


@pytest.mark.slow
def test_a_resume_past_its_time_budget_still_serves_the_recorded_search(tmp_path: Path) -> None:
    """Killed in its final phase, resumed with its time budget already spent: the recorded
    candidates are served all the same (they cost nothing) and the final phase runs again."""
    project = tmp_path / "project"
    counted_cpu_example(project)
    state = tmp_path / "state"
    journal = state / "runs" / "late" / "journal.jsonl"
    _kill_when(_command(project, state, "late"), tmp_path, journal,
               lambda data: b'"stage": "final"' in data)
    recorded = {e["candidate"] for e in journal_mod.read(journal)
                if e["event"] == "candidate_result"}
    assert recorded
    again = subprocess.run([*_command(project, state, "late"), "--budget-minutes", "0.001"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    raw = journal_mod.read(journal)
    after = raw[next(i for i, e in enumerate(raw) if e["event"] == "resumed"):]
    assert not [e for e in after if e["event"] == "candidate"]  # nothing evaluated again
    assert not [e for e in after if e["event"] == "resume_diverged"]
    summary = _summary(state, "late")
    assert summary["status"] == "optimized" and summary["winner"] in recorded


@pytest.mark.slow
def test_one_process_per_run_and_a_run_id_belongs_to_its_target(tmp_path: Path) -> None:
    project, other = tmp_path / "project", tmp_path / "other"
    counted_cpu_example(project)
    counted_cpu_example(other)
    state = tmp_path / "state"
    journal = state / "runs" / "solo" / "journal.jsonl"
    first = subprocess.Popen(_command(project, state, "solo"), cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not (journal.is_file() and b'"candidate"' in journal.read_bytes()):
        assert first.poll() is None
        time.sleep(0.01)
    second = subprocess.run(_command(project, state, "solo"), cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert first.wait(timeout=300) == 0
    assert second.returncode == 2 and "running in another process" in second.stdout + second.stderr
    assert [e["event"] for e in journal_mod.read(journal)].count("resumed") == 0
    lines = journal.read_text().count("\n")
    elsewhere = subprocess.run(_command(other, state, "solo"), cwd=tmp_path,
                               capture_output=True, text=True, timeout=120)
    assert elsewhere.returncode == 2 and "is a run of" in elsewhere.stdout + elsewhere.stderr
    assert journal.read_text().count("\n") == lines  # nothing written to the other's journal
    pinned = subprocess.run(_command(project, state, "x")[:-2], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120, env={**os.environ, "KERNELOPT_RUN_ID": "x"})
    assert pinned.returncode == 2 and "--run-id only" in pinned.stdout + pinned.stderr


def _chunk_command(project: Path, state: Path, run_id: str, *extra: str) -> list[str]:
    return [sys.executable, "-c", "from kernelopt_core.cli import main; main()", "run",
            str(project), "--iterations", "6", "--patience", "6", "--final-rounds", "2",
            "--screen-runs", "1", "--seeds", "1", "--state-root", str(state), "--run-id",
            run_id, *extra]


@pytest.mark.slow
def test_the_gpu_budget_is_the_runs_not_the_attempts(tmp_path: Path) -> None:
    """A resumed attempt counts the GPU-lock seconds of the killed one: resumed with a GPU
    budget the killed attempt already spent, it serves what was recorded and evaluates
    nothing new; the run's total goes on from the killed attempt's."""
    from kernelopt_core.resume import gpu_spent
    from kernelopt_core.testing import write_chunk_project

    project = write_chunk_project(tmp_path / "project")
    state = tmp_path / "state"
    journal = state / "runs" / "gpu" / "journal.jsonl"
    _kill_when(_chunk_command(project, state, "gpu"), tmp_path, journal,
               lambda data: data.count(b'"candidate_result"') >= 2)
    before = journal_mod.read(journal)
    spent = gpu_spent(before)
    recorded = [e["candidate"] for e in before if e["event"] == "candidate_result"]
    assert spent > 0 and len(recorded) >= 2
    again = subprocess.run(_chunk_command(project, state, "gpu", "--budget-gpu-seconds",
                                          f"{spent:.6f}"),
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode in (0, 1), again.stdout + again.stderr
    raw = journal_mod.read(journal)
    after = raw[next(i for i, e in enumerate(raw) if e["event"] == "resumed"):]
    assert not [e for e in after if e["event"] == "candidate"]  # nothing new evaluated
    assert next(e for e in after if e["event"] == "search_end")["reason"] == "GPU budget"
    assert _summary(state, "gpu")["winner"] in recorded  # the recorded search was served
    assert after[-1]["event"] == "end" and after[-1]["gpu_seconds"] >= round(spent, 3)


@pytest.mark.slow
def test_the_llm_budget_is_the_runs_not_the_attempts(tmp_path: Path) -> None:
    """Killed after its first agent candidate, resumed with the same call budget: the resumed
    attempt makes exactly the calls the killed one left (the server counts them)."""
    from kernelopt_core.testing import ScriptedLLMServer, say, tool_call, write_chunk_project

    project = write_chunk_project(tmp_path / "project")
    state = tmp_path / "state"
    journal = state / "runs" / "llm" / "journal.jsonl"
    fast = (project / "kernel.py").read_text().replace("CHUNK = 1\n", "CHUNK = 64\n")
    plan = [tool_call("read_file", path="kernel.py"), tool_call("submit_plan", plan="chunks")]
    # the summary of c1 (the first call after its result) is late: the kill lands before it,
    # so the killed attempt has answered exactly c1's four calls
    late = {"sleep": 10.0, "then": say('{"strategy": "s", "lesson": "l", "action": "append"}')}
    script = {"planner": plan * 4, "summarizer": [late], "editor": [
        tool_call("write_file", path="kernel.py", content=fast), say("CHUNK is 64.")] * 4}
    budget = 7
    flags = ("--planner", "agents", "--provider", "openai", "--model", "gpt-4.1-mini",
             "--budget-llm-calls", str(budget))
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "KERNELOPT_LLM_BACKOFF_S": "0.05"}
    with ScriptedLLMServer(script) as server:
        command = _chunk_command(project, state, "llm", *flags, "--base-url", server.url)
        proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        while proc.poll() is None and not (journal.is_file()
                                           and b'"candidate_result"' in journal.read_bytes()):
            time.sleep(0.005)
        for pid in [proc.pid, *_descendants(proc.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
        answered = sum(e["event"] == "llm_call" and e.get("status") == 200
                       for e in journal_mod.read(journal))
        assert answered == 4
        def agent_calls() -> int:  # not the provider check each attempt makes first
            return sum(ScriptedLLMServer.role_of(r["json"]) != "other" for r in server.requests)

        asked_before = agent_calls()
        again = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=300)
        asked = agent_calls() - asked_before
    assert again.returncode in (0, 1), again.stdout + again.stderr
    raw = journal_mod.read(journal)
    assert [e["event"] for e in raw].count("resumed") == 1
    assert asked == budget - answered
    assert "budget" in next(e for e in raw if e["event"] == "search_end")["reason"]


class Stepper:
    """A deterministic planner: CHUNK 2, then no proposal (a PlannerError), then CHUNK 4 and
    8; what its budgets read (``ctx.gpu_seconds()``, ``ctx.seconds_left()``) is recorded."""

    name = "stepper"

    def __init__(self) -> None:
        self.asked = 0
        self.seen: list[tuple[float, float]] = []

    def unavailable_reason(self, settings, target):
        return None

    def propose(self, ctx, parent, count):
        from kernelopt_core.api import PlannerError, Proposal

        self.asked += 1
        self.seen.append((ctx.gpu_seconds(), ctx.seconds_left()))
        if self.asked == 2:
            raise PlannerError("no usable edit this time")
        chunk = {1: 2, 3: 4, 4: 8}.get(self.asked)
        if chunk is None:
            return []
        text = ctx.files["kernel.py"].replace(b"CHUNK = 1\n", f"CHUNK = {chunk}\n".encode())
        return [Proposal(f"CHUNK {chunk}", {"kernel.py": text}, planner=self.name)]

    def observe(self, ctx, proposal, outcome):
        pass


def _stepper_run(tmp_path: Path, cut_after: str) -> tuple[Path, list, Stepper]:
    """A stepper run to its verdict, its journal cut after ``cut_after``'s result (what a
    SIGKILL there leaves), then resumed in process; the resumed attempt's planner."""
    from kernelopt_core.hookspecs import hookimpl
    from kernelopt_core.loop import Loop
    from kernelopt_core.settings import Settings
    from kernelopt_core.testing import (
        ScriptedBackend,
        ScriptedBackendPlugin,
        plugin_host,
        write_chunk_project,
    )

    planners: list[Stepper] = []

    class Plugin:
        @hookimpl
        def kernelopt_register_planners(self):
            planners.append(Stepper())
            return [planners[-1]]

    project = write_chunk_project(tmp_path / "project")
    settings = Settings.make(state_root=tmp_path / "s", planner="stepper", final_rounds=2,
                             screen_runs=1, seeds=(1,), run_id="pf", beam=1, budget_minutes=30.0,
                             origins={"run_id": "flag"})
    backend = ScriptedBackend()
    target = backend.discover(project, settings)[0]
    first = Loop(plugin_host(ScriptedBackendPlugin(), Plugin()), backend, target,
                 settings).run()
    assert first.status == "optimized", first.summary
    journal = first.run_dir / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    cut = max(i for i, line in enumerate(lines)
              if '"candidate_result"' in line and f'"{cut_after}"' in line)
    journal.write_text("".join(lines[:cut + 1]))
    cut_events = journal_mod.read(journal)
    again = Loop(plugin_host(ScriptedBackendPlugin(), Plugin()), backend, target,
                 settings).run()
    assert again.status == "optimized", again.summary
    return journal, cut_events, planners[-1]


@pytest.mark.slow
def test_a_recorded_planner_failure_is_served_once_and_the_replay_goes_on(tmp_path: Path) -> None:
    """The stepper gives no proposal for c2 and is cut off after c3: resumed, c2's failure is
    the recorded one (not a second row), and c3 is served."""
    journal, _cut, _planner = _stepper_run(tmp_path, "c3")
    raw = journal_mod.read(journal)
    results = Counter(e["candidate"] for e in raw if e["event"] == "candidate_result")
    assert results == {"c1": 1, "c2": 1, "c3": 1, "c4": 1}, results
    assert not [e for e in raw if e["event"] == "resume_diverged"]


@pytest.mark.slow
def test_a_planners_budgets_leave_the_earlier_attempts_out_until_the_replay_is_served(
        tmp_path: Path) -> None:
    """Cut after c3: while c1-c3 are replayed the planner's GPU seconds and time left leave
    out what the killed attempt spent; at c4 (live) they are the run's. Exact: c4's reading
    exceeds c1's by at least the killed attempt's spending, whatever the machine's speed."""
    from kernelopt_core.resume import gpu_spent

    _journal, cut, planner = _stepper_run(tmp_path, "c3")
    # one killed attempt: its GPU seconds, and its seconds of search (the time budget's)
    start = next(e["t"] for e in cut if e["event"] == "search_start")
    spent_gpu, spent_wall = gpu_spent(cut), cut[-1]["t"] - start
    (gpu_c1, left_c1), (gpu_c4, left_c4) = planner.seen[0], planner.seen[3]
    assert spent_gpu > 0 and spent_wall > 0
    assert gpu_c4 - gpu_c1 >= spent_gpu - 1e-9
    assert left_c1 - left_c4 >= spent_wall - 1e-6


def test_a_resumed_runs_report_reads_each_profile_once() -> None:
    def profile(tree: str) -> dict:
        return {"event": "profile", "tree": tree, "metrics": {"kernels": []}}

    events = [{"event": "run"}, profile("baseline"),
              {"event": "candidate", "candidate": "c1"},
              {"event": "candidate_result", "candidate": "c1"},
              {"event": "resumed", "completed": ["c1"]}, profile("baseline"), profile("c1")]
    kept = journal_mod.effective(events)
    assert [e.get("tree") for e in kept if e["event"] == "profile"] == ["baseline", "c1"]
    assert [e.get("candidate") for e in kept if e["event"] == "candidate_result"] == ["c1"]


@pytest.mark.slow
def test_the_time_budget_is_the_searchs(tmp_path: Path) -> None:
    """A baseline that takes longer than the whole budget (here its test, 4 s against 3 s; a
    cold llama.cpp build took 220 s of a 4-minute budget on the H200) still leaves the search
    its budget: the first candidate is evaluated, then the budget stops the search."""
    project = tmp_path / "project"
    counted_cpu_example(project)
    (project / "slow_test.sh").write_text('#!/bin/sh\nsleep 4\nexec "$@"\n')
    toml = project / "kernelopt.toml"
    toml.write_text(toml.read_text().replace(
        'test = "{build}/transpose_test', 'test = "sh {repo}/slow_test.sh {build}/transpose_test'))
    state = tmp_path / "state"
    done = subprocess.run([*_command(project, state, "slow"), "--budget-minutes", "0.05"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    events = journal_mod.read(state / "runs" / "slow" / "journal.jsonl")
    [start] = [e for e in events if e["event"] == "search_start"]
    assert start["before_s"] > 4.0  # the baseline's test alone: over the 3 s budget
    [end] = [e for e in events if e["event"] == "search_end"]
    assert end == {**end, "reason": "time budget", "evaluated": 1}
    report = (state / "runs" / "slow" / "report.md").read_text()
    assert "the time budget counts from there" in report


def test_a_resumed_runs_search_time_is_its_attempts_searches(tmp_path: Path) -> None:
    """The time budget a resumed run has left: its earlier attempts' seconds of search (from
    each `search_start` to that attempt's last event), not their baseline builds."""
    from kernelopt_core.resume import Resumed
    from kernelopt_core.target import Target

    target = Target("cmake", "t", tmp_path, ("k.cpp",))
    [header] = records(run_header({"backend": "cmake", "name": "t", "root": str(tmp_path)}))
    # the spans are read from the records' times alone: the other records are kinds and times
    events = [{**header, "t": 0.0}, {"event": "search_start", "t": 100.0},
              {"event": "stage", "t": 107.0}, {"event": "resumed", "t": 200.0},
              {"event": "search_start", "t": 250.0}, {"event": "stage", "t": 252.0},
              {"event": "search_end", "t": 253.0}, {"event": "stage", "t": 290.0},
              {"event": "resumed", "t": 300.0}, {"event": "search_start", "t": 310.0},
              {"event": "stage", "t": 311.0}]  # killed searching, searching, in final gates
    journal = tmp_path / "journal.jsonl"
    journal.write_text("".join(json.dumps(e) + "\n" for e in events))
    replay = Resumed.load(journal, target)
    assert replay is not None
    assert replay.searched_s == pytest.approx(7.0 + 3.0 + 1.0)  # not the final gates' 37 s
    assert replay.spent_s == pytest.approx(107.0 + 90.0 + 11.0)
