"""Writes a candidate makes outside its own tree (docs/faults.md, "A write outside its tree").

A candidate's commands run with its tree as their directory, but nothing stops an absolute
path or a ``../``. Around each candidate's gates the places it must not touch are stamped
(path -> size and mtime: a stat walk, no reading) and compared: the user's project tree
(kernelopt never writes there, so any change is the candidate's) and, in the state root, the
directories above the candidate's tree (the state root's and ``work/``'s own files, and this
target's workspace but for the candidate's tree). Other targets' workspaces and the runs'
folders are left out: a concurrent run writes there. kernelopt's own moving files (locks, the
experience log), the baseline's build folder (its bench runs beside the candidate's) and
``__pycache__`` folders (Python writes them when kernelopt imports a user's module) are left
out too. Nothing is restored: what changed is named, so the user can
look.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

Stamp = dict[str, tuple[int, int]]

MAX_FILES = 20_000  # per watched tree: a huge project is watched in part (bounded cost)
# kernelopt's own files that change while a candidate runs (another run's lock, the experience
# log a concurrent run appends to)
OWN_SUFFIXES = (".lock", ".holder")
OWN_NAMES = frozenset({"experience.jsonl"})


@attrs.frozen
class Watched:
    """Where a candidate must not write: ``trees`` walked in full (bounded), ``shallow``
    directories by their own files only; ``skip``: its own tree, inside them."""

    trees: tuple[Path, ...]
    shallow: tuple[Path, ...]
    skip: tuple[Path, ...]

    def stamp(self) -> Stamp:
        found: Stamp = {}
        skip = {str(p) for p in self.skip}
        for root in self.trees:
            _walk(root, skip, found)
        for directory in self.shallow:
            _files_of(directory, found)
        return found


def watched(project: Path, state_root: Path, workspace_dir: Path,
            candidate_dirs: tuple[Path, ...]) -> Watched:
    """The places around one candidate: its project tree, the state root's and ``work/``'s
    own files, and its workspace but for ``candidate_dirs``."""
    project, state_root = project.resolve(), state_root.resolve()
    skip = tuple(p.resolve() for p in candidate_dirs)
    # a state root inside the project (``.kernelopt/``) is kernelopt's, not the user's
    inside = state_root if state_root.is_relative_to(project) else None
    return Watched(trees=(project, workspace_dir.resolve()),
                   shallow=(state_root, state_root / "work"),
                   skip=skip + ((inside,) if inside is not None else ()))


def changes(before: Stamp, after: Stamp) -> list[str]:
    """Paths added, removed or rewritten, sorted."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def describe(paths: list[str], project: Path) -> str:
    """The failure reason: the paths, those in the user's tree first and said so."""
    root = str(project.resolve())
    mine = [p for p in paths if p == root or p.startswith(root + os.sep)]
    rest = [p for p in paths if p not in mine]
    shown = (mine + rest)[:3]
    more = f" and {len(paths) - len(shown)} more" if len(paths) > len(shown) else ""
    where = "IN YOUR PROJECT TREE, " if mine else ""
    return (f"wrote outside its workspace: {where}{', '.join(shown)}{more} (kernelopt "
            f"restores nothing there: check {'them' if len(paths) > 1 else 'it'})")


def _own(name: str) -> bool:
    return name in OWN_NAMES or name.endswith(OWN_SUFFIXES)


def _stat(path: str, found: Stamp) -> None:
    try:
        st = os.lstat(path)
    except OSError:
        return  # gone meanwhile
    found[path] = (st.st_size, st.st_mtime_ns)


def _files_of(directory: Path, found: Stamp) -> None:
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False) and not _own(entry.name):
            _stat(entry.path, found)


def _walk(root: Path, skip: set[str], found: Stamp) -> None:
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        # sorted: the same files are stamped before and after when the bound is reached
        # __pycache__: Python writes it when kernelopt's own processes import the user's module
        # (a Triton oracle, a model file), whatever the candidate does
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__"
                             and os.path.join(dirpath, d) not in skip)
        for name in sorted(filenames):
            if _own(name):
                continue
            _stat(os.path.join(dirpath, name), found)
            count += 1
            if count >= MAX_FILES:
                return
