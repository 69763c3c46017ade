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


def test_runs_packed_by_the_call_are_read_from_the_campaigns_tarball(tmp_path: Path) -> None:
    """A device call brings back 8 files, none deeper than two folders: h200_modes.sh packs the
    campaign's runs into MODEL-campaign.tar.gz, and the table reads them from there."""
    import tarfile

    folder = tmp_path / "res"
    shutil.copytree(FIXTURE, folder)
    state = tmp_path / "state"
    for name, status in (("c-01", "optimized"), ("c-02", "fallback")):
        (state / "runs" / name).mkdir(parents=True)
        (state / "runs" / name / "summary.json").write_text(json.dumps(
            {"target": {"name": f"k-{name}"}, "status": status, "report_line": status}))
        (state / "runs" / name / "report.md").write_text("# report\n")
    (state / "campaigns" / "c").mkdir(parents=True)
    (state / "campaigns" / "c" / "summary.json").write_text("{}")
    with tarfile.open(folder / "convnext-campaign.tar.gz", "w:gz") as tar:
        for path in ("campaigns/c", "runs/c-01/summary.json", "runs/c-01/report.md",
                     "runs/c-02/summary.json"):
            tar.add(state / path, arcname=path)
    summary = modes_table.model_summary(folder, "convnext")
    assert [(r["run"], r["kernel"], r["status"]) for r in summary["runs"]] == [
        ("c-01", "k-c-01", "optimized"), ("c-02", "k-c-02", "fallback")]


def test_the_captures_depthwise_choice_comes_along(tmp_path: Path) -> None:
    """The capture's depthwise.json (h200_modes.sh brings it back beside the model check):
    per shape the decision, both sides' GPU ms and why, copied as they are."""
    folder = tmp_path / "res"
    shutil.copytree(FIXTURE, folder)
    assert modes_table.model_summary(folder, "convnext")["depthwise"] is None
    shape = {"key": "64x96x56x56/7x7/s1x1/p3x3/d1x1", "calls": 3, "chosen": True,
             "why": "the kernel: …", "launch": {"block_w": 16}, "launches_tried": 19,
             "library_ms": 0.2018, "kernel_ms": 0.1526}
    (folder / "convnext-capture-depthwise.json").write_text(json.dumps({
        "device": "cuda", "search_s": 31.5, "rounds": 8, "form": "opaque",
        "precompile": {"compiles": 19, "compiled": 19, "failed": 0, "left": 0, "seconds": 9.1},
        "shapes": [shape], "launches": {shape["key"]: shape["launch"]}}))
    got = modes_table.model_summary(folder, "convnext")["depthwise"]
    assert got["form"] == "opaque" and got["search_s"] == 31.5
    assert got["precompile"]["compiled"] == 19
    assert got["shapes"] == [{k: shape[k] for k in ("key", "calls", "chosen", "library_ms",
                                                    "kernel_ms", "why")}]
