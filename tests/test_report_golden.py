"""What the core renders from a recorded journal, byte for byte: report.md, summary.json and
report.html of a run (kernelopt_core.report.write_all, what `kernelopt report` and the loop
write), a campaign's summary.json (kernelopt_core.campaign.write_summary). The goldens beside
each journal under tests/fixtures/reports were rendered at commit 21ba026 (issue 56's base);
a refactor that changes one byte fails here. Nothing is normalised: the renderers read the
journal alone (no clock, no paths of this machine).

A change meant to alter a report regenerates them:
``python -m tests.test_report_golden`` (then review the diff)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from kernelopt_core import campaign, report

CASES = Path(__file__).parent / "fixtures" / "reports"
RUN_FILES = ("report.md", "summary.json", "report.html")


def render(case: Path, out: Path) -> dict[str, bytes]:
    """The files the core writes from the case's journal, rendered in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    if (case / "campaign.jsonl").is_file():
        shutil.copy(case / "campaign.jsonl", out / "campaign.jsonl")
        campaign.write_summary(out)
        names: tuple[str, ...] = ("summary.json",)
    else:
        shutil.copy(case / "journal.jsonl", out / "journal.jsonl")
        report.write_all(out)
        names = RUN_FILES
    return {name: (out / name).read_bytes() for name in names}


def cases() -> list[Path]:
    return sorted(p for p in CASES.iterdir() if p.is_dir())


def test_the_cases_cover_each_backend_and_verdict() -> None:
    names = {p.name for p in cases()}
    assert len(names) >= 5
    for word in ("triton", "cmake", "llamacpp", "inductor", "campaign", "optimized", "fallback",
                 "error", "interrupted"):
        assert any(word in name for name in names), word


@pytest.mark.parametrize("case", cases(), ids=lambda p: p.name)
def test_a_recorded_journal_renders_its_golden_reports(case: Path, tmp_path: Path) -> None:
    rendered = render(case, tmp_path)
    for name, data in rendered.items():
        assert data == (case / name).read_bytes(), f"{case.name}/{name} differs from its golden"


def _regenerate(tmp: Path) -> None:
    for case in cases():
        for name, data in render(case, tmp / case.name).items():
            (case / name).write_bytes(data)
            print(f"wrote {case / name}")


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        _regenerate(Path(tmp))
    sys.exit(0)
