"""kernelopt_core.outside: what a candidate writes outside its own tree is named, in the user's
tree first; its own tree, other workspaces, runs, kernelopt's locks and the user's own activity
in their tree are not blamed on it. (tests/test_fault_corpus.py replays a real candidate that
writes outside.)"""

from __future__ import annotations

import os
from pathlib import Path

from kernelopt_core import outside


def _layout(tmp_path: Path) -> tuple[Path, Path, Path, outside.Watched]:
    project, state = tmp_path / "project", tmp_path / "state"
    workspace = state / "work" / "cmake-t-1234"
    for d in (project / "src", project / ".git", workspace / "base-src" / "src",
              workspace / "cand-src", workspace / "cand-build", state / "runs" / "r1",
              state / "work" / "other-5678"):
        d.mkdir(parents=True)
    for root in (project, workspace / "base-src"):
        (root / "src" / "kernel.cu").write_text("k")
        (root / "Cargo.lock").write_text("v1")
    watch = outside.watched(project, state, workspace, workspace / "base-src",
                            {"src/kernel.cu": b"k", "Cargo.lock": b"v1"})
    return project, state, workspace, watch


def test_writes_in_the_users_tree_and_above_the_candidate_are_named(tmp_path: Path) -> None:
    project, state, workspace, watch = _layout(tmp_path)
    before = watch.stamp()
    (project / "src" / "kernel.cu").write_text("changed by a candidate")
    (project / "Cargo.lock").write_text("v2")  # a user's lock file is the user's, not ours
    (workspace / "note.txt").write_text("x")
    (state / "note.txt").write_text("x")
    (workspace / "base-src" / "src" / "kernel.cu").write_text("poisoned baseline")
    wrote = watch.changes(before, watch.stamp())
    assert wrote == sorted(str(p.resolve()) for p in (
        project / "src" / "kernel.cu", project / "Cargo.lock", workspace / "note.txt",
        state / "note.txt", workspace / "base-src" / "src" / "kernel.cu"))
    reason = outside.describe(wrote, project)
    assert reason.startswith("wrote outside its workspace: IN YOUR PROJECT TREE, ")
    assert "and 2 more" in reason and "restores nothing" in reason


def test_its_own_tree_runs_other_workspaces_and_locks_are_not_watched(tmp_path: Path) -> None:
    _project, state, workspace, watch = _layout(tmp_path)
    before = watch.stamp()
    (workspace / "cand-src" / "kernel.cu").write_text("its own tree")
    (workspace / "cand-build" / "a.o").write_text("its build")
    (state / "runs" / "r1" / "journal.jsonl").write_text("the run's journal")
    (state / "work" / "other-5678" / "x").write_text("a concurrent run's workspace")
    (state / "gpu-host.lock").write_text("")
    (workspace / "workspace.holder").write_text("pid")
    (state / "experience.jsonl").write_text("appended by a concurrent run")
    assert watch.changes(before, watch.stamp()) == []


def test_the_users_own_activity_in_their_tree_is_not_blamed(tmp_path: Path) -> None:
    """An editor's swap file, git's index, a build folder, a file rewritten with the same
    bytes (a concurrent job regenerating a model's kernel files): none is the candidate's."""
    project, _state, workspace, watch = _layout(tmp_path)
    before = watch.stamp()
    (project / ".kernel.cu.swp").write_text("vim")
    (project / ".git" / "index").write_text("git status")
    (project / "build").mkdir()
    (project / "build" / "a.o").write_text("the user's build")
    (workspace / "base-src" / "results.csv").write_text("the baseline bench's output")
    kernel = project / "src" / "kernel.cu"
    kernel.write_text("k")
    os.utime(kernel, ns=(1, 1))
    assert watch.changes(before, watch.stamp()) == []


def test_a_state_root_inside_the_project_is_watched_as_the_state_root(tmp_path: Path) -> None:
    project = tmp_path / "project"
    state = project / ".kernelopt"
    workspace = state / "work" / "w"
    (workspace / "base-src").mkdir(parents=True)
    watch = outside.watched(project, state, workspace, workspace / "base-src", {})
    before = watch.stamp()
    (state / "runs").mkdir()
    (state / "runs" / "log").write_text("kernelopt's own")
    assert watch.changes(before, watch.stamp()) == []
    (state / "stray.txt").write_text("a candidate's")  # still watched: the state root's files
    assert watch.changes(before, watch.stamp()) == [str((state / "stray.txt").resolve())]
