"""Past runs: listing, finding one by id, applying a winner and reverting it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dulwich.repo import Repo

from kernelopt_core import events, report
from kernelopt_core import journal as journal_mod
from kernelopt_core.errors import UsageError


def runs(state_root: Path) -> list[Path]:
    """Every run, oldest first by when it started (a --run-id name does not sort by time)."""
    base = state_root / "runs"
    found = [p for p in base.iterdir() if (p / "journal.jsonl").exists()] if base.is_dir() else []
    return sorted(found, key=lambda p: (journal_mod.started(p / "journal.jsonl"), p.name))


def find_run(state_root: Path, ref: str) -> Path:
    """A run by id, unique id prefix, or ``last``."""
    all_runs = runs(state_root)
    if not all_runs:
        raise UsageError(f"no runs under {state_root / 'runs'}",
                         hint="run `kernelopt run PATH` first, or point --state-root elsewhere")
    exact = [p for p in all_runs if p.name == ref]  # a named run (--run-id) before prefixes
    if exact:
        return exact[0]
    if ref == "last":
        return all_runs[-1]
    matches = [p for p in all_runs if p.name.startswith(ref)]
    if len(matches) != 1:
        raise UsageError(
            f"{'no run' if not matches else 'several runs'} under {state_root / 'runs'} "
            f"match {ref!r}",
            hint=f"recent runs there: {', '.join(p.name for p in all_runs[-5:])}; a run made "
                 "elsewhere: pass its --state-root (or KERNELOPT_HOME)",
        )
    return matches[0]


def summary(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "summary.json"
    if path.exists():
        return json.loads(path.read_text())
    return report.write_all(run_dir)


def refused(records: list[dict[str, Any]]) -> bool:
    """A run refused before it took its workspace (a usage or set-up error, exit 2 or 3):
    nothing was done. A crash (exit 4) stays listed."""
    return (any(e.exit_code in (2, 3) for e in events.of(records, events.RunError))
            and events.first(records, events.Workspace) is None)


def speed(s: dict[str, Any]) -> str:
    """A run's speedup as history lists it: only a verified win has one; a matched run shows
    what its rounds measured, marked as not proven."""
    if s["status"] == "optimized" and s.get("speedup"):
        return f"{s['speedup']:.3f}×"
    if s["status"] in ("matched", "unverified") and s.get("median_ratio"):
        return f"{s['median_ratio']:.3f}× (median, not proven)"
    return "-"


def table_rows(state_root: Path, show_all: bool) -> tuple[list[list[str]], int]:
    """`kernelopt history`'s rows (run, target, status, speed, tags) and how many refused runs
    were left out."""
    rows, hidden = [], 0
    for run_dir in runs(state_root):
        records = journal_mod.effective(journal_mod.read(run_dir / "journal.jsonl"))  # once
        if not show_all and refused(records):
            hidden += 1
            continue
        s = summary(run_dir)
        rows.append([run_dir.name, s["target"]["name"], s["status"], speed(s),
                     ", ".join(tags(run_dir, records)) or "-"])
    return rows, hidden


def workspace_repo(records: list[dict[str, Any]]) -> Repo | None:
    """The run's private workspace repository (its tags), from the journal's events."""
    ws = events.first(records, events.Workspace)
    if ws is None or not (Path(ws.dir) / "repo.git").exists():
        return None
    return Repo(str(Path(ws.dir) / "repo.git"))


def tags(run_dir: Path, records: list[dict[str, Any]]) -> list[str]:
    repo = workspace_repo(records)
    if repo is None:
        return []
    prefix = f"refs/tags/kernelopt/{run_dir.name}/".encode()
    return sorted(r[len(prefix):].decode() for r in repo.refs.allkeys() if r.startswith(prefix))


def blob(repo: Repo, commit: bytes, rel: str) -> bytes | None:
    from dulwich.object_store import tree_lookup_path

    try:
        _mode, sha = tree_lookup_path(repo.object_store.__getitem__, repo[commit].tree,
                                      rel.encode())
    except KeyError:
        return None
    return repo[sha].as_raw_string()


def _winner_paths(run_dir: Path, what: str) -> tuple[Path, Repo, bytes, bytes, list[str]]:
    """The run's target root, workspace repo, winner and baseline commits, and the files the
    winner changed; a UsageError when the run has no winner."""
    from dulwich.diff_tree import tree_changes

    records = journal_mod.effective(journal_mod.read(run_dir / "journal.jsonl"))
    header = events.first(records, events.Run)
    if header is None:
        raise UsageError(f"run {run_dir.name}'s journal has no readable header",
                         hint=f"see {run_dir / 'journal.jsonl'}; `kernelopt history` lists runs")
    root = Path(header.target["root"])
    repo = workspace_repo(records)
    winner_ref = f"refs/tags/kernelopt/{run_dir.name}/winner".encode()
    base_ref = f"refs/tags/kernelopt/{run_dir.name}/baseline".encode()
    if repo is None or winner_ref not in repo.refs:
        raise UsageError(f"run {run_dir.name} has no winner to {what}",
                         hint="only runs that produced report.diff have a winner; "
                              "`kernelopt history` lists them")
    winner, baseline = repo.refs[winner_ref], repo.refs[base_ref]
    paths = sorted({
        (c.new.path or c.old.path).decode()
        for c in tree_changes(repo.object_store, repo[baseline].tree, repo[winner].tree)
    })
    return root, repo, winner, baseline, paths


def _move(root: Path, repo: Repo, paths: list[str], source: bytes, dest: bytes,
          verb: str, diverged_why: str, hint: str, nothing: str) -> list[str]:
    """Every file of ``paths`` under ``root`` from commit ``source``'s content to ``dest``'s:
    each must hold one of the two (else nothing is written); the files written."""
    diverged, todo = [], []
    inside = root.resolve()
    for rel in paths:
        path = root / rel
        if not path.resolve().is_relative_to(inside):  # a link put there since the run
            raise UsageError(f"refusing to {verb}: {rel} in {root} leads outside it "
                             f"({path.resolve()})", hint="replace the link by the file first")
        current = path.read_bytes() if path.exists() else None
        if current == blob(repo, source, rel):
            todo.append(rel)
        elif current != blob(repo, dest, rel):
            diverged.append(rel)
    if diverged:
        raise UsageError(f"refusing to {verb}: {', '.join(diverged)} in {root} {diverged_why}",
                         hint=hint)
    if not todo:
        raise UsageError(nothing)
    for rel in todo:
        data = blob(repo, dest, rel)
        path = root / rel
        if data is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return todo


def apply(run_dir: Path) -> list[str]:
    """Write the run's winner into the user's tree (report.diff, without git or patch: a target
    in a subdirectory of a git repository makes `git apply` there skip every file). Every file
    the winner changes must still hold the baseline's content; anything else is refused and
    nothing is written. Returns the files written."""
    root, repo, winner, baseline, paths = _winner_paths(run_dir, "apply")
    return _move(root, repo, paths, baseline, winner, "apply",
                 f"changed since run {run_dir.name} started (it matches neither its baseline "
                 "nor its winner)",
                 "apply report.diff by hand (patch -p1 -d TARGET < report.diff), or restore the "
                 "file first",
                 f"nothing to apply: the winner of {run_dir.name} is already in {root}")


def revert(run_dir: Path) -> list[str]:
    """Undo an applied winner in the user's tree. Returns the files restored.

    Every file the winner changed must hold exactly the winner's content (the diff was applied
    and nothing changed since); each is then rewritten with the baseline's content. Anything
    else is refused, and nothing is written.
    """
    root, repo, winner, baseline, paths = _winner_paths(run_dir, "revert")
    return _move(root, repo, paths, winner, baseline, "revert",
                 "changed since the winner was applied (it matches neither the winner nor the "
                 "baseline)",
                 "revert by hand (report.diff shows the change), or restore the file first",
                 f"nothing to revert: the winner of {run_dir.name} is not applied in {root}")
