"""A results folder made light to carry: ``python -m bench pack DIR [DIR ...]``.

What a reader opens stays a plain file: every ``*.md`` (the README, the runs' report.md) and
the summaries (``*summary*.json``, ``provenance.json``). Everything else under the folder
(logs, journals, generated kernel files, tarballs a suite wrote) moves into one ``raw.tar.xz``
at the folder's top, by its path in the folder; ``tar -xJf raw.tar.xz`` gives it back. Packing
again adds new raw files to the archive; one whose path the archive already holds with other
bytes is refused. The archive is reproducible (sorted, no times or owners), so packing twice
changes nothing, and it is read back and compared before any file is removed.
``python -m bench pack --check [DIR ...]`` says what breaks the rule (tests/test_bench_results.py).
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ARCHIVE = "raw.tar.xz"
PLAIN_LIMIT = 256 * 1024  # a plain file over it belongs in the archive
ARCHIVE_LIMIT = 4 * 1024 * 1024
NOTE = ("Raw files (logs, journals, generated kernels, tarballs) named above are inside "
        f"`{ARCHIVE}` beside this README, by their path in this folder: `tar -xJf {ARCHIVE}` "
        "(packed by `python -m bench pack`, bench/README.md).")


def kept_plain(name: str) -> bool:
    """What stays a plain file: Markdown and summaries."""
    return name.endswith(".md") or (name.endswith(".json")
                                    and ("summary" in name or name == "provenance.json"))


@dataclass(frozen=True)
class Packed:
    folder: Path
    added: int  # files moved into the archive by this call
    members: int  # files the archive holds
    archive_bytes: int


def _loose(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and not kept_plain(p.name) and p != folder / ARCHIVE)


def members(archive: Path) -> dict[str, bytes]:
    """The archive's files by path."""
    with tarfile.open(archive, "r:xz") as tar:
        return {m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
                for m in tar.getmembers() if m.isfile()}


def iter_members(archive: Path, suffix: str) -> Iterator[tuple[str, bytes]]:
    """The archive's files whose names end with ``suffix``, in archive order."""
    with tarfile.open(archive, "r:xz") as tar:
        for m in tar:
            if m.isfile() and m.name.endswith(suffix):
                yield m.name, tar.extractfile(m).read()  # type: ignore[union-attr]


def _write(path: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:xz", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[name]))


def _note_in_readme(folder: Path) -> None:
    """The README says where its raw files went: one paragraph appended, the record kept."""
    readme = folder / "README.md"
    if readme.is_file() and NOTE not in (text := readme.read_text(encoding="utf-8")):
        readme.write_text(text.rstrip("\n") + "\n\n" + NOTE + "\n", encoding="utf-8")


def pack(folder: Path) -> Packed:
    archive = folder / ARCHIVE
    loose = _loose(folder)
    files = members(archive) if archive.is_file() else {}
    before = len(files)
    for path in loose:
        name = path.relative_to(folder).as_posix()
        data = path.read_bytes()
        if files.get(name, data) != data:
            raise SystemExit(f"{folder}: {name} differs from the archive's; move one aside")
        files[name] = data
    if loose:
        fresh = archive.with_name(ARCHIVE + ".new")
        _write(fresh, files)
        if members(fresh) != files:  # read back before anything is removed
            raise SystemExit(f"{fresh}: did not read back whole; nothing removed")
        fresh.replace(archive)
        for path in loose:
            path.unlink()
        for directory in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
            if not any(directory.iterdir()):
                directory.rmdir()
    if files:
        _note_in_readme(folder)
    return Packed(folder, len(files) - before, len(files),
                  archive.stat().st_size if archive.is_file() else 0)


def problems(folder: Path) -> list[str]:
    """What breaks the rule in a results folder (empty: it keeps it)."""
    found = []
    if not (folder / "README.md").is_file():
        found.append(f"{folder}: no README.md")
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        size = path.stat().st_size
        if path == folder / ARCHIVE:
            if size > ARCHIVE_LIMIT:
                found.append(f"{path}: {size} bytes, over {ARCHIVE_LIMIT}")
        elif not kept_plain(path.name):
            found.append(f"{path}: a raw file outside {ARCHIVE} (python -m bench pack)")
        elif size > PLAIN_LIMIT:
            found.append(f"{path}: {size} bytes, over {PLAIN_LIMIT} for a plain file")
    return found


def results_folders(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir())
