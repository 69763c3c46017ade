"""A candidate tree's first build starts from the baseline's build state.

Without this the first candidate of a target costs a clean build (llama.cpp's ggml-cuda: over
two minutes on an H200) although it changes one file. The workspace keeps the two trees at
paths of equal length (``base-src``/``cand-src``, ``base-build``/``cand-build``), so a copy of
the baseline's build directory becomes the candidate's by replacing each baseline path with the
candidate's in every file, text (build.ninja, CMakeCache.txt, depfiles) and binary (ninja's
deps log, the run paths linked into shared libraries and executables) alike: no length changes,
so no format needs parsing. File times are kept, so make and ninja see the same up-to-date
outputs and rebuild only what the candidate's edit touches.

Ninja also logs a hash of the command that made each output, and the commands hold the path.
Each log entry's hash is recomputed from the edge's command (``ninja -t compdb``) after the old
hash is checked against the same command with the baseline's paths; an entry that does not
check (a command with a response file, a log version this module does not know) is dropped,
which makes ninja rebuild that output — slower, never wrong.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from kernelopt_core import events
from kernelopt_core.process import ProcessResult
from kernelopt_core.target import Command, Tree

MASK = (1 << 64) - 1
LOG = ".ninja_log"
COMPDB_CAP = 256 * 1024 * 1024  # the whole compilation database (llama.cpp's: ~2 MB), never cut


def murmur64a(data: bytes) -> int:
    """Ninja's command hash for build logs v5 and v6 (ninja 1.10-1.12)."""
    m, r = 0xC6A4A7935BD1E995, 47
    h = (0xDECAFBADDECAFBAD ^ (len(data) * m)) & MASK
    body = len(data) - len(data) % 8
    for i in range(0, body, 8):
        k = int.from_bytes(data[i:i + 8], "little") * m & MASK
        k = (k ^ (k >> r)) * m & MASK
        h = ((h ^ k) * m) & MASK
    tail = data[body:]
    if tail:
        h = ((h ^ int.from_bytes(tail, "little")) * m) & MASK
    h = (h ^ (h >> r)) * m & MASK
    return h ^ (h >> r)


_SECRET = (0x2D358DCCAA6C78A5, 0x8BB84B93962EACC9, 0x4B33A62ED433D4A3)


def _mum(a: int, b: int) -> tuple[int, int]:
    r = a * b
    return r & MASK, r >> 64


def _mix(a: int, b: int) -> int:
    lo, hi = _mum(a, b)
    return lo ^ hi


def rapidhash(data: bytes) -> int:
    """Ninja's command hash for build log v7 (ninja 1.13: rapidhash, its fast unrolled form)."""
    def r64(i: int) -> int:
        return int.from_bytes(data[i:i + 8], "little")

    def r32(i: int) -> int:
        return int.from_bytes(data[i:i + 4], "little")

    s0, s1, s2 = _SECRET
    n = len(data)
    seed = 0xBDD89AA982704029
    seed ^= _mix(seed ^ s0, s1) ^ n
    if n <= 16:
        if n >= 4:
            last = n - 4
            delta = (n & 24) >> (n >> 3)
            a = (r32(0) << 32) | r32(last)
            b = (r32(delta) << 32) | r32(last - delta)
        elif n > 0:
            a, b = (data[0] << 56) | (data[n >> 1] << 32) | data[n - 1], 0
        else:
            a = b = 0
    else:
        p, i = 0, n
        if i > 48:
            see1 = see2 = seed
            while i >= 48:  # the unrolled 96-byte loop is this loop run twice
                seed = _mix(r64(p) ^ s0, r64(p + 8) ^ seed)
                see1 = _mix(r64(p + 16) ^ s1, r64(p + 24) ^ see1)
                see2 = _mix(r64(p + 32) ^ s2, r64(p + 40) ^ see2)
                p, i = p + 48, i - 48
            seed ^= see1 ^ see2
        if i > 16:
            seed = _mix(r64(p) ^ s2, r64(p + 8) ^ seed ^ s1)
            if i > 32:
                seed = _mix(r64(p + 16) ^ s2, r64(p + 24) ^ seed)
        a, b = r64(p + i - 16), r64(p + i - 8)
    a, b = _mum(a ^ s1, b ^ seed)
    return _mix(a ^ s0 ^ n, b ^ s1)


HASHES: dict[int, Callable[[bytes], int]] = {5: murmur64a, 6: murmur64a, 7: rapidhash}
# compiled objects and archives: a path left in them is a string (a source name for an assert
# message), never one a build or a run reads. On the H200, 2 of ~290 ggml-cuda objects compiled
# through ccache (and the library linked from them) still named the baseline's tree in a form
# the relocation did not find (not identified: the same compile on the dev VM wrote only
# "../../base-src/…", which is moved). Build files, depfiles and linked binaries (their run
# paths) must come out clean; a linked output ninja logged is rebuilt instead (_logged_outputs)
INERT = frozenset({".o", ".obj", ".a"})
# the build system's own files, which CMake may regenerate through ninja: one that still names
# the baseline is never deleted to be rebuilt (that would rerun the configure): no seeding
BUILD_SYSTEM_SUFFIXES = frozenset({".ninja", ".cmake", ".txt", ".json"})
BUILD_SYSTEM_NAMES = frozenset({"Makefile"})


def _relocate(directory: Path, moves: list[tuple[bytes, bytes]],
              markers: tuple[bytes, ...]) -> tuple[int, list[str]]:
    """Replace each (old, new) path of equal length in every file and symlink under
    ``directory``, keeping file times; (files changed, files that still name a baseline
    directory after it — written escaped or relative, which this cannot move)."""
    changed, left = 0, []
    for dirpath, dirs, names in os.walk(directory):
        for name in [*names, *(d for d in dirs if (Path(dirpath) / d).is_symlink())]:
            path = Path(dirpath) / name
            if path.is_symlink():
                target = os.fsencode(os.readlink(path))
                moved = _moved(target, moves)
                if moved != target:
                    path.unlink()
                    os.symlink(os.fsdecode(moved), path)
                    changed += 1
            elif path.is_file():
                data = path.read_bytes()
                moved = _moved(data, moves)
                if moved != data:
                    st = path.stat()
                    path.write_bytes(moved)
                    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
                    changed += 1
            else:
                continue  # a FIFO or a socket: nothing a build reads back
            if any(marker in moved for marker in markers) and path.suffix not in INERT:
                left.append(str(path.relative_to(directory)))
    return changed, left


def _moved(data: bytes, moves: list[tuple[bytes, bytes]]) -> bytes:
    for old, new in moves:
        data = data.replace(old, new)
    return data


def _logged_outputs(build: Path) -> set[str]:
    """The outputs ninja's log names (paths relative to ``build``): what a build makes again
    when it is missing. A linked library holds its objects' strings (INERT), and one that still
    names the baseline (ggml-cuda's shared library on the H200) is rebuilt rather than the
    whole tree."""
    try:
        lines = (build / LOG).read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    except OSError:
        return set()
    return {fields[3] for fields in (line.split("\t") for line in lines[1:]) if len(fields) == 5}


def _rehash_log(build: Path, moves: list[tuple[bytes, bytes]],
                spawn: Callable[[Command], ProcessResult]) -> tuple[int, int]:
    """Give the relocated ninja log the hashes of the relocated commands; returns (entries
    kept, entries dropped). Dropped entries only make ninja rebuild those outputs."""
    log = build / LOG
    lines = log.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    version = re.fullmatch(r"# ninja log v(\d+)", lines[0]) if lines else None
    hash_ = HASHES.get(int(version.group(1))) if version else None
    entries = {}
    for line in lines[1:]:
        fields = line.split("\t")
        if len(fields) == 5:
            entries[fields[3]] = fields  # a later line for the same output wins, as in ninja
    commands: dict[str, str] = {}
    if hash_ is not None and entries:
        result = spawn(Command((_ninja(build), "-C", str(build), "-t", "compdb"), build,
                               timeout_s=120, label="ninja compdb"))
        try:
            commands = {e["output"]: e["command"] for e in json.loads(result.stdout)} \
                if result.ok else {}
        except (ValueError, KeyError, TypeError):  # cut short or not ninja's: rebuild, not trust
            commands = {}
    back = [(new, old) for old, new in moves]
    kept = []
    for output, fields in entries.items():
        command = commands.get(output)
        if command is None or hash_ is None:
            continue
        new = command.encode("utf-8", errors="surrogateescape")
        if f"{hash_(_moved(new, back)):x}" == fields[4].lower():
            kept.append("\t".join([*fields[:4], f"{hash_(new):x}"]))
    log.write_text("\n".join([lines[0], *kept]) + "\n" if lines else "",
                   encoding="utf-8", errors="surrogateescape")
    return len(kept), len(entries) - len(kept)


def _ninja(build: Path) -> str:
    """The ninja CMake configured the directory with, else the one on PATH."""
    cache = build / "CMakeCache.txt"
    if cache.is_file():
        found = re.search(r"^CMAKE_MAKE_PROGRAM:\w+=(.+)$", cache.read_text(errors="replace"), re.M)
        if found and Path(found.group(1)).is_file():
            return found.group(1)
    return shutil.which("ninja") or "ninja"


def seed(baseline: Tree, candidate: Tree,
         spawn: Callable[[Command], ProcessResult]) -> events.WarmBuild | None:
    """Make the candidate's build directory a relocated copy of the baseline's when it has
    none yet; what was done (the journal's ``warm_build`` event), or None when there was
    nothing to do."""
    if not baseline.build.is_dir() or not any(baseline.build.iterdir()):
        return None
    if candidate.build.is_dir() and any(candidate.build.iterdir()):
        return None  # already warm: its own state is newer than any copy
    pairs = [(baseline.src, candidate.src), (baseline.build, candidate.build)]
    if any(len(str(a)) != len(str(b)) for a, b in pairs):
        return events.WarmBuild(seeded=False, why="the trees' paths differ in length")
    started = time.monotonic()
    moves = [(str(a).encode(), str(b).encode()) for a, b in pairs]
    # relative forms too: ccache with a base directory (kernelopt_core.cmake_support) writes
    # dependency paths relative to the build directory ("../../base-src/…"); from inside the
    # build directory a "../base-src/" can only name the workspace's own tree
    moves += [(b"../" + a.name.encode() + b"/", b"../" + b.name.encode() + b"/")
              for a, b in pairs if len(a.name) == len(b.name)]
    # the baseline's directories as a path escaped ("/my$ dir/…/base-src/") or relative in
    # another form still name them: any left after relocation means "do not seed"
    markers = tuple(b"/" + path.name.encode() for path in (baseline.src, baseline.build))
    staging = candidate.build.with_name(candidate.build.name + ".seeding")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        shutil.copytree(baseline.build, staging, symlinks=True)
        changed, left = _relocate(staging, moves, markers)
    except (OSError, UnicodeError) as exc:  # unreadable, read-only: a clean build instead
        shutil.rmtree(staging, ignore_errors=True)
        return events.WarmBuild(seeded=False, why=f"{type(exc).__name__}: {exc}"[:500])
    # an output ninja logged (not the build system's own) is deleted instead, so the
    # candidate's build makes it again
    rebuilt = sorted(path for path in set(left) & _logged_outputs(staging)
                     if Path(path).suffix not in BUILD_SYSTEM_SUFFIXES
                     and Path(path).name not in BUILD_SYSTEM_NAMES)
    left = [path for path in left if path not in rebuilt]
    if left:  # a path this cannot move would make the candidate build or run the baseline's
        shutil.rmtree(staging, ignore_errors=True)
        return events.WarmBuild(seeded=False, why="baseline paths left after relocation (written "
                         f"escaped or relative) in {len(left)} file(s), e.g. {left[0]}")
    for path in rebuilt:
        (staging / path).unlink()
    if candidate.build.exists():
        candidate.build.rmdir()  # empty (checked above)
    staging.rename(candidate.build)  # only a finished copy ever becomes the build directory
    kept = dropped = None
    if (candidate.build / LOG).is_file():
        kept, dropped = _rehash_log(candidate.build, moves, spawn)
    return events.WarmBuild(seeded=True, files_relocated=changed,
                     outputs_to_rebuild=rebuilt[:20] if rebuilt else None,
                     outputs_to_rebuild_count=len(rebuilt) if rebuilt else None,
                     ninja_log_kept=kept, ninja_log_dropped=dropped,
                     seconds=round(time.monotonic() - started, 3))
