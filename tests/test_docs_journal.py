"""docs/journal.md against kernelopt_core.events, the journal's classes: every kind has its
row and every row a class; a row lists exactly its class's keys (those in parentheses are
the values' own keys, not the record's), an optional one marked `?`; and every class is
written somewhere in the core (``events.Name(...)`` or ``.write("kind", ...)``)."""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from kernelopt_core import events

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "journal.md"


def documented() -> dict[str, str]:
    """kind -> its row's keys column."""
    rows = re.findall(r"^\| `([a-z_]+)` \| [^|]+ \| (.+) \|$", DOC.read_text(encoding="utf-8"),
                      re.MULTILINE)
    return dict(rows)


def top_level_keys(column: str) -> dict[str, bool]:
    """key -> marked optional, from a row's keys column with its parenthesised notes cut."""
    while (cut := re.sub(r"\([^()]*\)", "", column)) != column:
        column = cut
    return {name: bool(mark) for name, mark in re.findall(r"`([a-z_]+)(\??)`", column)}


def test_every_kind_has_a_row_with_exactly_its_keys() -> None:
    doc = documented()
    assert len(events.KINDS) >= 40, sorted(events.KINDS)
    assert sorted(set(events.KINDS) - set(doc)) == [], "kinds without a row in docs/journal.md"
    assert sorted(set(doc) - set(events.KINDS)) == [], "rows without a class in events/"
    wrong = {}
    for kind, cls in events.KINDS.items():
        want = {f.name: bool(f.metadata.get("optional")) for f in attrs.fields(cls)}
        if (got := top_level_keys(doc[kind])) != want:
            wrong[kind] = {"doc": got, "events/": want}
    assert not wrong, wrong


def test_every_kind_is_written_by_the_core() -> None:
    roots = [REPO / "kernelopt_core", *sorted((REPO / "plugins").glob("*/kernelopt_*"))]
    source = "\n".join(p.read_text(encoding="utf-8") for root in roots for p in root.rglob("*.py")
                       if p.parent.name != "events")
    unwritten = [kind for kind, cls in events.KINDS.items()
                 if f"events.{cls.__name__}(" not in source
                 and not re.search(rf'\.write\(\s*"{kind}"', source)]
    assert unwritten == []


def test_a_core_kind_written_by_name_is_checked_against_its_class(tmp_path: Path) -> None:
    from kernelopt_core.journal import Journal, read

    journal = Journal(tmp_path / "journal.jsonl")
    journal.write("best", candidate="c1", speedup=2.0)
    journal.write("my_plugin_kind", anything=1)  # a plugin's own kind: as given
    for bad in ({"candidate": "c1"}, {"candidate": "c1", "speedup": 2.0, "typo": 1}):
        try:
            journal.write("best", **bad)
        except TypeError:
            continue
        raise AssertionError(f"a best event with {bad} was written")
    journal.close()
    records = read(tmp_path / "journal.jsonl")
    assert [r["event"] for r in records] == ["best", "my_plugin_kind"]
    assert events.of(records, events.Best) == [events.Best(candidate="c1", speedup=2.0)]
    assert events.parse({"event": "best", "t": 0, "candidate": "c1", "speedup": 1.5,
                         "added_later": True}) == events.Best(candidate="c1", speedup=1.5)


def test_an_optional_key_is_left_out_when_none() -> None:
    assert events.End(exit_code=0, gpu_seconds=1.0).data() == {"exit_code": 0,
                                                               "gpu_seconds": 1.0}
    assert events.Verdict(status="fallback", candidate=None, reason="r").data() == {
        "status": "fallback", "candidate": None, "reason": "r"}  # a required None is kept


def test_an_older_journal_parses_whole(tmp_path: Path) -> None:
    """Keys added within schema 1 are optional: every core record of every journal this
    repository keeps (the H200 and CPU runs under bench/results since 2026-11-30, inside each
    folder's raw.tar.xz; the test fixtures) still parses into its class, so no reader skips it."""
    from bench.pack import ARCHIVE, iter_members
    from kernelopt_core.journal import read

    paths = sorted((REPO / "tests" / "fixtures").rglob("*.jsonl"))
    for archive in sorted((REPO / "bench" / "results").glob(f"*/{ARCHIVE}")):
        for name, data in iter_members(archive, ".jsonl"):
            (path := tmp_path / archive.parent.name / name).parent.mkdir(parents=True,
                                                                          exist_ok=True)
            path.write_bytes(data)
            paths.append(path)
    assert len(paths) > 70
    core = [(path.name, r) for path in paths for r in read(path)
            if isinstance(r, dict) and r.get("event") in events.KINDS]
    assert len(core) > 5000
    assert [f"{path}: {r['event']}" for path, r in core if events.parse(r) is None] == []


def test_a_campaign_jobs_result_fits_its_event() -> None:
    """A campaign journals each JobResult whole (attrs.asdict): a field added to it needs its
    key in events.Job, or the executor's thread would raise."""
    from kernelopt_core.executors import JobResult

    assert {f.name for f in attrs.fields(JobResult)} <= {f.name for f in attrs.fields(events.Job)}
