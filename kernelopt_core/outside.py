"""Writes a candidate makes outside its own tree (docs/faults.md, "A write outside its tree").

A candidate's commands run with its tree as their directory, but nothing stops an absolute
path or a ``../``. Around each candidate's gates the places it must not touch are stamped
(path -> size and mtime: a stat, no reading) and compared:

* the user's files that the workspace copied (its snapshot: what a run reads of the project),
  in the user's project tree and in the baseline's source tree. A stamp that moved is read
  and compared with the snapshot's bytes, so a file rewritten with the same content (a
  concurrent job regenerating a model's kernel files) is no change. The rest of the project
  tree is the user's to change while a run goes on (an editor's swap file, git's index, their
  own build): not watched, and not blamed on a candidate;
* the state root's, ``work/``'s and the workspace's own files (a file written above the
  candidate's tree).

Other targets' workspaces, the runs' folders, the baseline's build folder (its bench runs
beside the candidate's) and kernelopt's own moving files there (locks, the experience log)
are left out. Nothing is restored: what changed is named, so the user can look.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import attrs

Stamp = dict[str, tuple[int, int]]

# kernelopt's own files that change while a candidate runs, in the state root and workspaces
# (another run's lock, the experience log a concurrent run appends to)
OWN_SUFFIXES = (".lock", ".holder")
OWN_NAMES = frozenset({"experience.jsonl"})


@attrs.frozen
class Watched:
    """Where a candidate must not write: ``copies`` of the snapshot ``originals`` (relative
    path -> bytes), and the ``shallow`` directories by their own files."""

    copies: tuple[Path, ...]
    originals: Mapping[str, bytes]
    shallow: tuple[Path, ...]

    def stamp(self) -> Stamp:
        found: Stamp = {}
        for root in self.copies:
            for rel in self.originals:
                _stat(os.path.join(root, rel), found)
        for directory in self.shallow:
            _files_of(directory, found)
        return found

    def changes(self, before: Stamp, after: Stamp) -> list[str]:
        """Paths added, removed or rewritten, sorted; a copy of a snapshot file whose stamp
        moved but whose bytes are the snapshot's is not one."""
        moved = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        return [p for p in moved if not self._same_as_original(p)]

    def _same_as_original(self, path: str) -> bool:
        for root in self.copies:
            rel = os.path.relpath(path, root)
            if not rel.startswith("..") and rel in self.originals:
                try:
                    return Path(path).read_bytes() == self.originals[rel]
                except OSError:
                    return False  # removed
        return False


def watched(project: Path, state_root: Path, workspace_dir: Path, baseline_src: Path,
            originals: Mapping[str, bytes]) -> Watched:
    """The places around one candidate of the workspace at ``workspace_dir``."""
    return Watched(copies=(project.resolve(), baseline_src.resolve()), originals=originals,
                   shallow=(state_root.resolve(), state_root.resolve() / "work",
                            workspace_dir.resolve()))


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
        return  # absent (or gone meanwhile): a removal shows as a missing key
    found[path] = (st.st_size, st.st_mtime_ns)


def _files_of(directory: Path, found: Stamp) -> None:
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False) and not _own(entry.name):
            _stat(entry.path, found)
