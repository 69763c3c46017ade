"""The planner on a PlanContext it builds, then a whole run chosen by --planner."""

from __future__ import annotations

from pathlib import Path

from kernelopt_example_planner import SweepPlanner

from kernelopt_core.api import Knob, Node, PlanContext, Target
from kernelopt_core.testing import last_summary, run_kernelopt, settings_with, write_chunk_project


class NoJournal:
    def write(self, event: str, **data: object) -> dict:
        return {"event": event, **data}


def test_it_sweeps_one_knob_at_a_time_and_never_twice(tmp_path: Path) -> None:
    knobs = (Knob("A", "k.py", ("1", "2"), r"^A = (\d+)$"), Knob("B", "k.py", ("1", "3"), r"^B = (\d+)$"))
    ctx = PlanContext(target=Target("any", "k", tmp_path, ("k.py",)), settings=settings_with(),
                      files={"k.py": b"A = 1\nB = 1\n"}, knobs=knobs,
                      baseline_knobs={"A": "1", "B": "1"}, journal=NoJournal(), run_id="r")
    planner = SweepPlanner()
    first = planner.propose(ctx, Node("root", {}), 5)
    assert [p.description for p in first] == ["A=2", "B=3"]
    assert first[0].edits == {"k.py": b"A = 2\nB = 1\n"}
    assert planner.propose(ctx, Node("root", {}), 5) == []  # all tried


def test_a_run_with_it_ends_optimized(tmp_path: Path) -> None:
    project = write_chunk_project(tmp_path / "p")
    done = run_kernelopt("run", project, "--planner", "sweep", "--iterations", "3",
                         "--final-rounds", "2", "--seeds", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = last_summary(tmp_path / ".kernelopt")
    assert summary["status"] == "optimized" and summary["planner"] == "sweep"
