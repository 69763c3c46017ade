"""A whole `kernelopt run` of a kernel file under Triton's interpreter (started in the
background by conftest.py): it completes, tunes real knobs, and claims no speedup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.mark.slow
def test_whole_run_under_the_interpreter_is_never_optimized(whole_run: tuple[int, Path, str]) -> None:
    code, state, output = whole_run
    [run_dir] = sorted((state / "runs").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert code == 1, output[-3000:]
    assert summary["status"] != "optimized", summary
    assert summary["target"]["backend"] == "triton" and summary["target"]["shape"] == "f32[1000]"
    events = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    screening = next(e for e in events if e["event"] == "screening")  # the joint search
    assert screening["ok"] and screening["grid"] == 60 and screening["evaluations"] <= 15
    assert any(e["event"] == "sweep" for e in events)
    proposed = [e for e in events if e["event"] == "candidate"]
    # each knob by its short name, the kernel named once: "add_kernel: BLOCK_SIZE=..., num_warps=..."
    assert proposed and all(e["description"].startswith("add_kernel: ") and "@" not in e["description"]
                            for e in proposed), proposed
    benches = [e for e in events if e["event"] == "bench"]
    assert benches and all(e["checksum"] is not None for e in benches)
    report = (run_dir / "report.md").read_text()
    assert "triton" in report
    if summary["status"] == "unverified":  # a candidate screened faster: the interpreter decides
        assert summary.get("interpreted") is True
        assert (run_dir / "report.diff").read_text().startswith("diff --git a/vecadd.py")
