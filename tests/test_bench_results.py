"""bench/results stays light to carry (bench/pack.py, `python -m bench pack`): each results
folder holds its README.md, other Markdown and summary JSON as plain files (none over 256 KiB)
and everything else in one raw.tar.xz (none over 4 MiB); a folder added raw fails here until
it is packed."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import pack

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
TOTAL_LIMIT = 16 * 1024 * 1024  # the whole of bench/results, archives included


def test_each_results_folder_keeps_the_rule() -> None:
    folders = pack.results_folders(RESULTS)
    assert len(folders) > 20
    assert [p.name for p in RESULTS.iterdir() if p.is_file()] in ([], ["README.md"])
    assert [line for folder in folders for line in pack.problems(folder)] == []


def test_bench_results_fits_its_budget() -> None:
    total = sum(p.stat().st_size for p in RESULTS.rglob("*") if p.is_file())
    assert total < TOTAL_LIMIT, total


def test_packing_moves_raw_files_and_gives_them_back(tmp_path: Path) -> None:
    folder = tmp_path / "2026-12-31-h200-x"
    (folder / "run").mkdir(parents=True)
    (folder / "README.md").write_text("# x\n\nThe log: `run/console.log`.\n")
    (folder / "run" / "summary.json").write_text("{}\n")
    (folder / "run" / "console.log").write_text("one\n")
    (folder / "kernel.py").write_text("x = 1\n")
    assert len(pack.problems(folder)) == 2
    first = pack.pack(folder)
    assert (first.added, first.members) == (2, 2)
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        "README.md", "raw.tar.xz", "run/summary.json"]
    assert (folder / "README.md").read_text().startswith("# x\n\nThe log: `run/console.log`.\n")
    assert pack.NOTE in (folder / "README.md").read_text()
    archived = (folder / "raw.tar.xz").read_bytes()
    # a later raw file joins the archive; packing again changes nothing
    (folder / "run" / "later.txt").write_text("two\n")
    assert pack.pack(folder).added == 1
    assert pack.members(folder / "raw.tar.xz") == {
        "kernel.py": b"x = 1\n", "run/console.log": b"one\n", "run/later.txt": b"two\n"}
    again = (folder / "raw.tar.xz").read_bytes()
    assert pack.pack(folder).added == 0 and (folder / "raw.tar.xz").read_bytes() == again
    assert archived != again and pack.problems(folder) == []


def test_packing_refuses_a_raw_file_the_archive_holds_otherwise(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# x\n")
    (tmp_path / "a.log").write_text("one\n")
    pack.pack(tmp_path)
    (tmp_path / "a.log").write_text("changed\n")
    with pytest.raises(SystemExit, match="a.log differs"):
        pack.pack(tmp_path)
    assert (tmp_path / "a.log").read_text() == "changed\n"
    assert pack.members(tmp_path / "raw.tar.xz") == {"a.log": b"one\n"}
