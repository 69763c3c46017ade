"""The bench-worker protocol with real child processes (no GPU): a worker that crashes,
hangs, forges a second reply, prints a time line on its stdout or answers malformed fails
only its own tree; the baseline keeps being served; baseline and candidate never share a
process."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kernelopt_core.errors import BenchFailed
from kernelopt_core.journal import Journal
from kernelopt_core.runner import Runner
from kernelopt_core.settings import Settings
from kernelopt_core.target import BenchSpec, Command, Target, Tree
from kernelopt_core.workers.protocol import WorkerError, start_worker

PROGRAM = Path(__file__).parent / "fixtures" / "bench_worker_program.py"


class WorkerBackend:
    """A backend whose trees are served by the fixture program, in a mode per tree role."""

    name = "workers"

    def __init__(self, modes: dict[str, str]) -> None:
        self.modes = modes

    def detect(self, path: Path) -> float:
        return 0.0

    def discover(self, path: Path, settings: Settings) -> list[Target]:
        return []

    def build(self, target: Target, tree: Tree) -> list[Command]:
        return []

    def check(self, target: Target, tree: Tree, seed: int) -> Command:
        return Command((sys.executable, "-c", "pass"), tree.src)

    def bench(self, target: Target, tree: Tree) -> Command | None:
        return Command((sys.executable, "-c", "print('{\"time_ms\": 1.0}')"), tree.src)

    def engine(self, target: Target, tree: Tree) -> Command | None:
        return None

    def bench_worker(self, target: Target, tree: Tree) -> Command | None:
        times = {"baseline": "2.0", "candidate": "1.0"}
        return Command((sys.executable, str(PROGRAM), self.modes[tree.role], times[tree.role]),
                       tree.src, timeout_s=30)


def make_runner(tmp_path: Path, candidate_mode: str, baseline_mode: str = "ok",
                **settings: object) -> tuple[Runner, Tree, Tree]:
    trees = []
    for role in ("baseline", "candidate"):
        src = tmp_path / role
        src.mkdir()
        (src / "kernel.txt").write_text(role)
        trees.append(Tree(role, src, tmp_path / f"{role}-build"))
    target = Target("workers", "k", tmp_path / "baseline", ("kernel.txt",), bench=BenchSpec())
    s = Settings.make(state_root=tmp_path / "state", seeds=(1,), **settings)  # type: ignore[arg-type]
    runner = Runner(WorkerBackend({"baseline": baseline_mode, "candidate": candidate_mode}), target, s,
                    Journal(tmp_path / "journal.jsonl"))
    return runner, trees[0], trees[1]


@pytest.mark.parametrize("mode, message", [
    ("crash", "exited 139"),
    ("hang", "hung"),
    ("forge", "more than one reply"),
    ("stdout", "forged output"),
    ("malformed", "malformed reply"),
])
def test_a_misbehaving_worker_fails_only_its_tree(tmp_path: Path, mode: str, message: str) -> None:
    runner, baseline, candidate = make_runner(tmp_path, mode, bench_timeout_s=2.0)
    try:
        assert runner.check_all(baseline, tmp_path / "log") is None
        assert runner.check_all(candidate, tmp_path / "log") is None  # load and check are honest
        assert runner.bench(baseline, tmp_path / "log", "screen").time_ms == 2.0
        with pytest.raises(BenchFailed, match=message):
            runner.bench(candidate, tmp_path / "log", "screen")
        # the baseline's worker is untouched and keeps serving
        assert runner.bench(baseline, tmp_path / "log", "screen").time_ms == 2.0
    finally:
        runner.close_workers()
    assert not runner.workers


def test_a_process_left_by_a_check_fails_that_tree_only(tmp_path: Path) -> None:
    runner, baseline, candidate = make_runner(tmp_path, "stray")
    try:
        assert runner.check_all(baseline, tmp_path / "log") is None
        failed = runner.check_all(candidate, tmp_path / "log")
        assert failed is not None and "left processes running" in failed[1].stderr
        assert runner.bench(baseline, tmp_path / "log", "screen").time_ms == 2.0
    finally:
        runner.close_workers()


def test_baseline_and_candidate_never_share_a_process(tmp_path: Path) -> None:
    runner, baseline, candidate = make_runner(tmp_path, "ok")
    try:
        b = runner.bench(baseline, tmp_path / "log", "confirm")
        c = runner.bench(candidate, tmp_path / "log", "confirm")
        assert (b.time_ms, c.time_ms) == (2.0, 1.0)
        assert b.extra["pid"] != c.extra["pid"]
        # the same content is served by the same worker (start-up paid once) ...
        assert runner.bench(candidate, tmp_path / "log", "confirm").extra["pid"] == c.extra["pid"]
        # ... and a new candidate's content by a new one
        (candidate.src / "kernel.txt").write_text("another candidate")
        again = runner.bench(candidate, tmp_path / "log", "confirm")
        assert again.extra["pid"] not in (b.extra["pid"], c.extra["pid"])
        assert runner.gpu_seconds > 0  # every request held the GPU lock
    finally:
        runner.close_workers()


def test_a_worker_that_never_answers_hello_is_a_worker_error(tmp_path: Path) -> None:
    command = Command((sys.executable, str(PROGRAM), "slow_hello"), tmp_path)
    with pytest.raises(WorkerError, match="hung"):
        start_worker(command, tmp_path / "log", hello_timeout_s=1.0)


def test_a_missing_worker_program_is_a_worker_error(tmp_path: Path) -> None:
    with pytest.raises(WorkerError, match="No such file"):
        start_worker(Command(("/nonexistent/worker",), tmp_path), None)


def test_confirm_rounds_grow_only_when_both_trees_are_served(tmp_path: Path) -> None:
    runner, _baseline, candidate = make_runner(tmp_path, "ok", final_rounds=6, worker_rounds=20)
    assert runner.confirm_rounds(candidate) == 20
    runner.backend.bench_worker = lambda target, tree: None  # type: ignore[attr-defined]
    assert runner.confirm_rounds(candidate) == 6


def test_a_worker_is_stopped_between_its_requests(tmp_path: Path) -> None:
    """Code under test cannot keep a thread busy while the other tree is timed: the worker's
    process group is stopped (SIGSTOP) between its own requests."""
    runner, _baseline, candidate = make_runner(tmp_path, "ticker")
    try:
        first = runner.bench(candidate, tmp_path / "log", "screen").extra["ticks"]
        time.sleep(0.5)  # the other tree's readings would happen here
        second = runner.bench(candidate, tmp_path / "log", "screen").extra["ticks"]
    finally:
        runner.close_workers()
    assert second - first < 100, (first, second)  # ~500 if it had kept running


def test_content_changed_after_its_check_is_not_timed(tmp_path: Path) -> None:
    runner, baseline, candidate = make_runner(tmp_path, "ok")
    try:
        assert runner.check_all(baseline, tmp_path / "log") is None
        assert runner.check_all(candidate, tmp_path / "log") is None
        (candidate.src / "kernel.txt").write_text("rewritten by the candidate after its check")
        with pytest.raises(BenchFailed, match="changed after its check"):
            runner.bench(candidate, tmp_path / "log", "screen")
        assert runner.bench(baseline, tmp_path / "log", "screen").time_ms == 2.0
    finally:
        runner.close_workers()


def test_a_missing_worker_program_is_a_missing_prerequisite(tmp_path: Path) -> None:
    from kernelopt_core.errors import PrerequisiteError

    runner, baseline, _candidate = make_runner(tmp_path, "ok")
    runner.backend.bench_worker = (  # type: ignore[attr-defined]
        lambda target, tree: Command(("/nonexistent/worker",), tree.src))
    with pytest.raises(PrerequisiteError, match="needed by the workers backend"):
        runner.bench(baseline, tmp_path / "log", "screen")


def _rounds(tmp_path: Path, candidate_mode: str, baseline_mode: str) -> tuple[Any, ...]:
    from kernelopt_core.gates.base import GateContext
    from kernelopt_core.gates.perf import bracketed_rounds

    runner, baseline, candidate = make_runner(tmp_path, candidate_mode, baseline_mode)
    ctx = GateContext(runner, runner.settings, runner.target, "c1", candidate, baseline,
                      tmp_path / "logs", None)
    try:
        taken = bracketed_rounds(ctx, candidate, 20, "confirm")
    finally:
        runner.close_workers()
    events = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    rounds = [e for e in events if e["event"] == "confirm_round"]
    retakes = [e for e in rounds if e.get("retake")]
    assert taken.retakes == len({e["round"] for e in retakes})
    return taken.base, taken.cand, taken.aa, rounds, retakes


def test_a_candidate_slow_on_its_own_is_not_retaken(tmp_path: Path) -> None:
    """Only the candidate's worker reads 10 % slow (its 2nd, 10th, 18th readings) and the
    baseline is steady: nothing says the GPU was in a transient, so those rounds count as
    they were (a bimodal or gaming candidate is not re-drawn)."""
    base, cand, _aa, rounds, retakes = _rounds(tmp_path, "transient", "ok")
    assert retakes == [] and len(rounds) == 20 and base == [2.0] * 20
    assert [i + 1 for i, c in enumerate(cand) if c > 1.0] == [2, 10, 18]


def test_rounds_with_a_transient_baseline_reading_are_taken_again(tmp_path: Path) -> None:
    """Both workers read 10 % slow on every 8th reading: the baseline's transients (its 2nd,
    10th ... readings: rounds 1, 5, 9, 13, 17) are taken again, and as many candidate-only
    ones (rounds 2, 10, 18), within rounds // 2 takes in all; every take is journaled."""
    base, cand, _aa, rounds, retakes = _rounds(tmp_path, "transient", "transient")
    assert len(rounds) == 20 + len(retakes) and len(retakes) == 10  # the budget, all used
    again = {e["round"] for e in retakes}
    assert {1, 2, 5, 9} <= again <= {1, 2, 5, 9, 10, 13, 17, 18}  # in round order, to the budget
    assert sum(c > 1.0 for c in cand) + sum(b > 2.0 for b in base) < 8  # 8 before


def test_the_kept_best_candidates_worker_serves_the_final_gates(tmp_path: Path) -> None:
    """The loop keeps its new best's worker: when the tree holds that content again (the final
    gates), the same process serves it, with no second load."""
    runner, _baseline, candidate = make_runner(tmp_path, "ok")
    path = candidate.src / "kernel.txt"
    try:
        best = runner.bench(candidate, tmp_path / "log", "screen").extra["pid"]
        runner.keep(candidate)
        path.write_text("a later, slower candidate")
        later = runner.bench(candidate, tmp_path / "log", "screen").extra["pid"]
        path.write_text("candidate")  # the best's content back
        again = runner.bench(candidate, tmp_path / "log", "screen").extra["pid"]
        assert later != best and again == best
        loads = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
        assert sum(e.get("op") == "load" for e in loads) == 2
        assert runner.pool.trees["candidate"].kept is None  # the later one's closed, not kept
    finally:
        runner.close_workers()
    assert not runner.workers and not any(t.kept for t in runner.pool.trees.values())


@pytest.mark.parametrize("mode", ["ok", "compiler"])
def test_compile_goes_only_to_a_worker_that_offers_it_and_without_the_lock(
        tmp_path: Path, mode: str) -> None:
    """A worker that never heard of ``compile`` (this one would never answer it) is not sent
    it; one whose load reply offers it gets it outside the GPU lock, before the sweep."""
    from kernelopt_core.target import Knob

    runner, _baseline, candidate = make_runner(tmp_path, mode)
    (candidate.src / "kernel.txt").write_text("#define N 1\n")
    knobs = (Knob("N", "kernel.txt", ("1", "2"), r"#define N (\d+)"),)
    try:
        results = runner.sweep(candidate, [{"N": "2"}, {"N": "1"}], tmp_path / "log", knobs)
    finally:
        runner.close_workers()
    assert results is not None and [r["ok"] for r in results] == [True, True]
    events = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    requests = [(e["op"], e["gpu_lock"]) for e in events if e["event"] == "worker_request"]
    ahead = [e for e in events if e["event"] == "compiled_ahead"]
    if mode == "compiler":
        assert requests[-2:] == [("compile", False), ("sweep", True)]
        assert ahead and ahead[0]["compiled"] == 2
    else:
        assert "compile" not in [op for op, _locked in requests] and not ahead


def test_the_next_candidate_gets_a_worker_started_ahead_never_a_used_one(tmp_path: Path) -> None:
    """Issue 31: a candidate's correctness began with its worker's start-up (3.8 s on an H200).
    The candidate tree keeps its path, so a spare started with the same command while one
    candidate is checked serves the next: a fresh process (it has loaded nothing), already
    started. A spare started for a command that is no longer asked for is closed, not used."""
    runner, _baseline, candidate = make_runner(tmp_path, "ok")
    pids = []
    try:
        for content in ("first", "second", "third"):
            (candidate.src / "kernel.txt").write_text(content)
            assert runner.check_all(candidate, tmp_path / "log") is None
            pids.append(runner.workers["candidate"][1].pid)
        _command, spare = runner.pool.spares.by_role["candidate"]
        assert spare.alive() and spare.pid not in pids
        # a timed reading waits until the spare has started: its start-up never overlaps one
        assert runner.bench(candidate, tmp_path / "log", "screen").time_ms == 1.0
        assert spare.awaiting is None
        assert len(set(pids)) == 3  # every content its own process
        runner.backend.modes["candidate"] = "forge"  # type: ignore[attr-defined]
        (candidate.src / "kernel.txt").write_text("fourth")  # another command: the spare goes
        assert runner.check_all(candidate, tmp_path / "log") is None
        assert not spare.alive() and runner.workers["candidate"][1].pid != spare.pid
    finally:
        runner.close_workers()
    assert not runner.pool.spares.by_role
    starts = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    spares = [e["spare"] for e in starts if e["event"] == "worker_start" and e["tree"] == "candidate"]
    assert spares == [False, True, True, False]
