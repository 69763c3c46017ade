"""The baseline build on the console (issue 54, item 1): what each build step took, and before
a build, how long the same target's last baseline build took in an earlier run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kernelopt_tests_support import counted_cpu_example

from kernelopt_core import events, ui
from kernelopt_core import journal as journal_mod


def test_the_build_lines_are_kept_in_a_log(capsys: pytest.CaptureFixture[str]) -> None:
    progress = ui.Progress()
    progress.tty = False  # a log: stage lines are left out, but not these
    progress({"event": "stage", "stage": "baseline build"})  # a fresh one: a status line only
    progress({"event": "built", "tree": "baseline", "ok": True, "seconds": 62.04,
              "steps": [{"label": "configure", "seconds": 3.2},
                        {"label": "build without ggml-cuda's mmq template instances",
                         "seconds": 58.8}]})
    progress({"event": "stage", "stage": "baseline build", "earlier_run": "r1",
              "earlier_seconds": 184.4})
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "baseline built in 62.0 s (configure 3.2 s, build without ggml-cuda's mmq template "
        "instances 58.8 s)",
        "[baseline build] building the unmodified target (its last build, in run r1, took 184 s)",
    ]


def _run(project: Path, state: Path, run_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from kernelopt_core.cli import main; main()", "run", str(project),
         "--iterations", "1", "--final-rounds", "2", "--screen-runs", "1", "--seeds", "1",
         "--state-root", str(state), "--run-id", run_id],
        cwd=project.parent, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_a_second_run_says_how_long_the_first_ones_build_took(tmp_path: Path) -> None:
    project, state = counted_cpu_example(tmp_path / "project"), tmp_path / "state"
    first = _run(project, state, "first")
    assert first.returncode == 0, first.stderr[-2000:]
    assert "[baseline build]" not in first.stderr  # nothing to say yet, in a log
    [built] = events.of(journal_mod.read(state / "runs" / "first" / "journal.jsonl"), events.Built)
    assert built.tree == "baseline" and built.ok
    assert [s["label"] for s in built.steps] == ["configure", "build"]
    assert built.seconds >= sum(s["seconds"] for s in built.steps) > 0
    assert f"baseline built in {built.seconds:.1f} s" in first.stderr
    second = _run(project, state, "second")
    assert second.returncode == 0, second.stderr[-2000:]
    assert f"(its last build, in run first, took {built.seconds:.0f} s)" in second.stderr


def test_the_earlier_build_is_the_same_targets_last_that_built(tmp_path: Path) -> None:
    from kernelopt_core.baseline import earlier_build
    from kernelopt_core.journal import Journal
    from kernelopt_core.session import write_header
    from kernelopt_core.settings import Settings
    from kernelopt_core.target import Target

    settings = Settings(state_root=tmp_path)
    norm = Target(backend="llamacpp", name="NORM", root=tmp_path / "tree", editable=("n.cu",))
    rope = Target(backend="llamacpp", name="ROPE", root=tmp_path / "tree", editable=("r.cu",))

    def run(run_id: str, target: Target, *builds: tuple[bool, float]) -> None:
        journal = Journal(tmp_path / "runs" / run_id / "journal.jsonl")
        write_header(journal, run_id, target, settings, ["kernelopt", "run"])
        for ok, seconds in builds:
            journal.record(events.Built(tree="baseline", ok=ok, seconds=seconds, steps=[]))
        journal.close()

    assert earlier_build(tmp_path, norm, "now") is None  # no runs at all
    run("a", norm, (True, 184.0))
    run("b", rope, (True, 20.0))  # another op of the same tree
    run("c", norm, (False, 3.0))  # a build that failed says nothing of how long one takes
    assert earlier_build(tmp_path, norm, "now") == ("a", 184.0)
    assert earlier_build(tmp_path, rope, "now") == ("b", 20.0)
    assert earlier_build(tmp_path, rope, "b") is None  # never the run's own
