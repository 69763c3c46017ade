"""The isolated workspace: a private dulwich repository per target under the state root.

The user's checkout is only ever *read*: its current content (uncommitted changes included,
ignored files excluded) becomes the baseline commit of a private bare repository. Candidates
are materialized into private source trees, each with a build directory that stays warm
across runs of the same target; the candidate's starts as a copy of the baseline's. No
worktree is added to the user's repository, no hook runs, and commits carry a fixed identity.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import portalocker
from dulwich.index import commit_tree
from dulwich.object_store import commit_tree_changes, tree_lookup_path
from dulwich.objects import Blob, Commit
from dulwich.patch import write_tree_diff
from dulwich.repo import Repo

from kernelopt_core.errors import UsageError
from kernelopt_core.target import Target, Tree

IDENTITY = b"kernelopt <kernelopt@localhost>"
ALWAYS_SKIPPED = {".git", ".kernelopt", "__pycache__", ".hg", ".svn"}
SKIPPED_WITHOUT_GIT = {"build", "dist", ".venv", "venv", "node_modules", ".pytest_cache"}
MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_FILES = 100_000

Files = dict[str, bytes]


def _find_git_root(path: Path) -> Path | None:
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def snapshot(root: Path, state_root: Path | None = None) -> tuple[Files, dict[str, int]]:
    """Read the files of ``root`` as the user has them now: content and executable bit.

    Inside a git repository, .gitignore'd files are left out (as git would); otherwise common
    build and environment directories are. The state root is always left out.
    """
    root = root.resolve()
    git_root = _find_git_root(root)
    ignore = None
    if git_root is not None:
        from dulwich.ignore import IgnoreFilterManager

        try:
            ignore = IgnoreFilterManager.from_repo(Repo(str(git_root)))
        except Exception:  # an unreadable repo: fall back to the plain skip list
            ignore = None
    state = state_root.resolve() if state_root else None
    files: Files = {}
    modes: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            full = here / d
            if d in ALWAYS_SKIPPED or (state is not None and full == state):
                continue
            if ignore is None and d in SKIPPED_WITHOUT_GIT:
                continue
            if ignore is not None and git_root is not None and ignore.is_ignored(
                full.relative_to(git_root).as_posix() + "/"
            ):
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            full = here / name
            rel = full.relative_to(root).as_posix()
            if (ignore is not None and git_root is not None
                    and ignore.is_ignored(full.relative_to(git_root).as_posix())):
                continue
            if full.is_symlink() and not full.resolve().is_relative_to(root):
                continue  # never read (or show an agent) a file outside the target
            try:
                st = full.stat()
            except OSError:
                continue  # a dangling symlink
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
                continue
            files[rel] = full.read_bytes()
            modes[rel] = 0o100755 if st.st_mode & 0o111 else 0o100644
            if len(files) > MAX_FILES:
                raise UsageError(
                    f"{root} holds more than {MAX_FILES} files",
                    hint="point kernelopt at the directory of the kernel project, not above it",
                )
    return files, modes


def materialize(directory: Path, files: Mapping[str, bytes], modes: Mapping[str, int]) -> None:
    """Make ``directory`` hold exactly ``files``, rewriting only what differs (so mtimes of
    unchanged files stay and incremental builds stay incremental)."""
    directory.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        path = directory / rel
        try:
            if path.read_bytes() == data:
                continue
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, 0o755 if modes.get(rel, 0o100644) == 0o100755 else 0o644)
    wanted = set(files)
    for dirpath, _dirnames, filenames in os.walk(directory):
        for name in filenames:
            path = Path(dirpath) / name
            if path.relative_to(directory).as_posix() not in wanted:
                path.unlink()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:40] or "target"


class Workspace:
    """One target's private repository, source trees and warm build directories."""

    def __init__(self, state_root: Path, target: Target) -> None:
        digest = hashlib.sha1(str(target.root.resolve()).encode()).hexdigest()[:10]
        self.target = target
        self.state_root = state_root
        self.dir = state_root / "work" / f"{target.backend}-{_slug(target.name)}-{digest}"
        self.dir.mkdir(parents=True, exist_ok=True)
        repo_dir = self.dir / "repo.git"
        self.repo = Repo(str(repo_dir)) if repo_dir.exists() else Repo.init_bare(
            str(repo_dir), mkdir=True
        )
        self.baseline_tree = Tree("baseline", self.dir / "base-src", self.dir / "base-build")
        # equal path lengths: the candidate's first build is a relocated copy of the
        # baseline's (kernelopt_core.warm_build)
        self.candidate_tree = Tree("candidate", self.dir / "cand-src", self.dir / "cand-build")
        self._lock: portalocker.Lock | None = None
        self.files: Files = {}
        self.modes: dict[str, int] = {}
        self.baseline_commit: bytes = b""
        self._applied: dict[str, bytes] = {}  # the edits the candidate tree holds now

    # ------------------------------------------------------------------ lifetime
    def acquire(self, run_id: str = "", on_wait: Callable[[dict[str, Any]], object] | None = None,
                timeout: float = 24 * 3600) -> float:
        """Hold this workspace for one run; a second run of the same target waits, after
        ``on_wait`` is told who holds it (run id, pid, since). Returns the seconds waited."""
        path = str(self.dir / "workspace.lock")
        holder_file = self.dir / "workspace.holder"
        waited = 0.0
        try:
            self._lock = portalocker.Lock(path, timeout=0, fail_when_locked=True)
            self._lock.acquire()
        except portalocker.exceptions.AlreadyLocked:
            started = time.time()
            try:
                found = json.loads(holder_file.read_text())
            except (OSError, ValueError):
                found = {}
            holder: dict[str, Any] = {k: found[k] for k in ("run_id", "pid", "since")
                                         if isinstance(found, dict) and k in found}
            if on_wait is not None:
                on_wait(holder)
            self._lock = portalocker.Lock(path, timeout=timeout, fail_when_locked=False)
            self._lock.acquire()
            waited = time.time() - started
        for legacy in ("src", "build"):  # the candidate tree's names before cand-src/cand-build
            if (self.dir / legacy).is_dir():
                shutil.rmtree(self.dir / legacy, ignore_errors=True)
        # a run killed while dulwich updated a ref leaves its lock file (refs/heads/main.lock):
        # under the workspace lock nobody else writes refs, so any such file is stale
        repo_dir = self.dir / "repo.git"
        for stale in [*(repo_dir / "refs").rglob("*.lock"), repo_dir / "packed-refs.lock"]:
            stale.unlink(missing_ok=True)
        holder_file.write_text(json.dumps({"run_id": run_id, "pid": os.getpid(),
                                           "since": round(time.time(), 3)}))
        return waited

    def release(self) -> None:
        if self._lock is not None:
            (self.dir / "workspace.holder").unlink(missing_ok=True)  # no stale name for waiters
            self._lock.release()
            self._lock = None

    # ------------------------------------------------------------------ commits
    def _commit(self, tree_id: bytes, parents: list[bytes], message: str) -> bytes:
        commit = Commit()
        commit.tree = tree_id
        commit.parents = parents
        commit.author = commit.committer = IDENTITY
        commit.author_time = commit.commit_time = int(time.time())
        commit.author_timezone = commit.commit_timezone = 0
        commit.encoding = b"UTF-8"
        commit.message = message.encode()
        self.repo.object_store.add_object(commit)
        return commit.id

    def _blob(self, data: bytes) -> bytes:
        blob = Blob.from_string(data)
        self.repo.object_store.add_object(blob)
        return blob.id

    def start(self, run_id: str, resumed: str | None = None) -> bytes:
        """Snapshot the user's target as this run's baseline commit and materialize it.
        ``resumed``: the baseline commit (hex) of the run being resumed, reused when the
        target's content is still the same (else a usage error: resuming would mix trees)."""
        self.files, self.modes = snapshot(self.target.root, self.state_root)
        missing = [p for p in self.target.editable if p not in self.files]
        if missing:
            raise UsageError(
                f"editable file(s) {', '.join(missing)} not found under {self.target.root}",
                hint="fix the paths in the target's `editable` list (relative to its root)",
            )
        # the backend's harness is part of the baseline, so every tree has it and no diff does
        for rel, data in self.target.harness.items():
            if rel in self.target.editable or rel not in self.files:
                raise RuntimeError(f"the {self.target.backend} backend's harness file {rel} is "
                                   "editable or not in the target (a backend bug)")
            self.files[rel] = data
        entries = [
            (rel.encode(), self._blob(data), self.modes[rel]) for rel, data in self.files.items()
        ]
        tree_id = commit_tree(self.repo.object_store, entries)
        if resumed is not None:
            if resumed.encode() not in self.repo or self.repo[resumed.encode()].tree != tree_id:
                raise UsageError(
                    f"run {run_id} cannot be resumed: {self.target.root} is not what it was "
                    "when the run started (or its workspace is gone)",
                    hint="start a new run (another --run-id, or none)")
            self.baseline_commit = resumed.encode()
        else:
            head = self.repo.refs[b"refs/heads/main"] if b"refs/heads/main" in self.repo.refs \
                else None
            self.baseline_commit = self._commit(
                tree_id, [head] if head else [],
                f"kernelopt {run_id}: baseline of {self.target.name}")
            self.repo.refs[b"refs/heads/main"] = self.baseline_commit
            self.tag(run_id, "baseline", self.baseline_commit)
        materialize(self.baseline_tree.src, self.files, self.modes)
        materialize(self.candidate_tree.src, self.files, self.modes)
        self._applied = {}
        return self.baseline_commit

    def tag(self, run_id: str, name: str, commit_id: bytes) -> str:
        ref = f"refs/tags/kernelopt/{run_id}/{name}"
        self.repo.refs[ref.encode()] = commit_id
        return ref[len("refs/tags/") :]

    def commit_candidate(
        self, run_id: str, name: str, edits: Mapping[str, bytes], message: str
    ) -> tuple[bytes, str]:
        """Commit baseline + ``edits`` as a child of the baseline and tag it."""
        base_tree = self.repo[self.baseline_commit].tree
        changes = [
            (rel.encode(), self.modes.get(rel, 0o100644), self._blob(data))
            for rel, data in edits.items()
        ]
        tree_id = commit_tree_changes(self.repo.object_store, base_tree, changes)
        commit_id = self._commit(tree_id, [self.baseline_commit], message)
        return commit_id, self.tag(run_id, name, commit_id)

    def use_candidate(self, edits: Mapping[str, bytes]) -> None:
        """Put baseline + ``edits`` into the candidate tree.

        Only the files this candidate or the previous one edited can differ from the tree, so
        only those are compared and rewritten (a large target is not re-read per candidate).
        """
        for rel in set(self._applied) | set(edits):
            data = edits.get(rel, self.files.get(rel))
            if data is None or self._applied.get(rel, self.files.get(rel)) == data:
                continue
            path = self.candidate_tree.src / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        self._applied = dict(edits)

    def diff(self, old_commit: bytes, new_commit: bytes) -> bytes:
        out = io.BytesIO()
        write_tree_diff(
            out, self.repo.object_store, self.repo[old_commit].tree, self.repo[new_commit].tree
        )
        return out.getvalue()

    def file_at(self, commit_id: bytes, rel: str) -> bytes | None:
        try:
            _mode, sha = tree_lookup_path(
                self.repo.object_store.__getitem__, self.repo[commit_id].tree, rel.encode()
            )
        except KeyError:
            return None
        return self.repo[sha].as_raw_string()

    def tags(self) -> dict[str, bytes]:
        prefix = b"refs/tags/kernelopt/"
        return {
            ref[len(b"refs/tags/") :].decode(): self.repo.refs[ref]
            for ref in self.repo.refs.allkeys()
            if ref.startswith(prefix)
        }


def text_diff(files: dict[str, bytes], edits: dict[str, bytes]) -> str:
    """A unified diff of ``edits`` against ``files`` (for a candidate's edit.diff)."""
    out: list[str] = []
    for path, new in sorted(edits.items()):
        old = files.get(path, b"").decode("utf-8", errors="replace").splitlines(keepends=True)
        out.extend(difflib.unified_diff(
            old, new.decode("utf-8", errors="replace").splitlines(keepends=True),
            f"a/{path}", f"b/{path}",
        ))
    return "".join(out)
