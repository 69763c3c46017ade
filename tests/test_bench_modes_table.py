"""bench/modes_table.py on a real model check's line (tests/fixtures/modes-table, from an H200
run): the table and the per-model summary copy its numbers, and a run's verdict comes along."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench import modes_table

FIXTURE = Path(__file__).parent / "fixtures" / "modes-table"


def test_the_table_and_summaries_copy_the_model_checks_numbers(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "res"
    shutil.copytree(FIXTURE, folder)
    run = folder / "convnext-runs" / "r1"
    run.mkdir(parents=True)
    run.joinpath("summary.json").write_text(json.dumps({
        "target": {"name": "convnext-triton_poi_fused_gelu_view_7"}, "status": "optimized",
        "speedup": 1.04, "report_line": "1.04× (kernel), whole model within noise",
        "engine": {"model_resolved": False}}))
    assert modes_table.main([str(folder), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "| convnext | 6.3468 ±5.9 % | 4.2978 ±0.7 % | 4.2018 ±0.9 % | — | 4.5202 ±1.5 % |" \
        in printed and "| reduce-overhead (4.2018) | 1.076× |" in printed
    summary = json.loads((tmp_path / "out" / "convnext-summary.json").read_text())
    assert summary["kernelopt"] == "reduce-overhead"
    assert summary["kernelopt_vs_max_autotune"] == pytest.approx(4.520240068435669 / 4.201795196533203)
    assert summary["runs"][0]["status"] == "optimized" and summary["race"] is None
    assert modes_table.main([str(tmp_path / "out")]) == 2  # no model check there
