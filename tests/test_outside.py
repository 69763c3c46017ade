"""kernelopt_core.outside: what a candidate writes outside its own tree is named, in the user's
tree first; its own tree, other workspaces, runs and kernelopt's locks are not watched.
(tests/test_fault_corpus.py replays a real candidate that writes outside.)"""

from __future__ import annotations

from pathlib import Path

from kernelopt_core import outside


def _layout(tmp_path: Path) -> tuple[Path, Path, Path, outside.Watched]:
    project, state = tmp_path / "project", tmp_path / "state"
    workspace = state / "work" / "cmake-t-1234"
    for d in (project / "src", workspace / "base-src", workspace / "cand-src",
              workspace / "cand-build", state / "runs" / "r1", state / "work" / "other-5678"):
        d.mkdir(parents=True)
    (project / "src" / "kernel.cu").write_text("k")
    (workspace / "base-src" / "kernel.cu").write_text("k")
    watch = outside.watched(project, state, workspace,
                            (workspace / "cand-src", workspace / "cand-build"))
    return project, state, workspace, watch


def test_writes_in_the_users_tree_and_above_the_candidate_are_named(tmp_path: Path) -> None:
    project, state, workspace, watch = _layout(tmp_path)
    before = watch.stamp()
    (project / "src" / "kernel.cu").write_text("changed by a candidate")
    (workspace / "note.txt").write_text("x")
    (state / "note.txt").write_text("x")
    (workspace / "base-src" / "kernel.cu").write_text("poisoned baseline")
    wrote = outside.changes(before, watch.stamp())
    assert wrote == sorted(str(p.resolve()) for p in (
        project / "src" / "kernel.cu", workspace / "note.txt", state / "note.txt",
        workspace / "base-src" / "kernel.cu"))
    reason = outside.describe(wrote, project)
    assert reason.startswith("wrote outside its workspace: IN YOUR PROJECT TREE, "
                             + str((project / "src" / "kernel.cu").resolve()))
    assert "and 1 more" in reason and "restores nothing" in reason


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
    assert outside.changes(before, watch.stamp()) == []


def test_a_state_root_inside_the_project_is_not_the_users(tmp_path: Path) -> None:
    project = tmp_path / "project"
    state = project / ".kernelopt"
    workspace = state / "work" / "w"
    (workspace / "cand-src").mkdir(parents=True)
    watch = outside.watched(project, state, workspace, (workspace / "cand-src",))
    before = watch.stamp()
    (state / "runs").mkdir()
    (state / "runs" / "log").write_text("kernelopt's own")
    assert outside.changes(before, watch.stamp()) == []
    (state / "stray.txt").write_text("a candidate's")  # still watched: the state root's files
    assert outside.changes(before, watch.stamp()) == [str((state / "stray.txt").resolve())]
