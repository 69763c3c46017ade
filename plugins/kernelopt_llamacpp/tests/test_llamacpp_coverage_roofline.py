"""coverage.json's roofline per op: how far an op was from its bound before and after the
search (issue 54's account of decode ops already at their roofline)."""

from __future__ import annotations

import json
from pathlib import Path

from kernelopt_llamacpp import coverage

# summary.json of the H200's fresh NORM run (bench/results/2026-12-06-h200-llamacpp-lean)
NORM = {"status": "optimized", "baseline_ms": 0.005994833523397739, "final_ms": 0.004265,
        "speedup": 1.4034206664728237,
        "roofline": {"bytes": 16777216, "achieved_gbps": 3933.6966002344666,
                     "peak_gbps": 4204.815920126134, "fraction": 0.9355217148522558,
                     "cache_resident": True}}


def test_roofline_before_and_after_from_the_runs_own_numbers(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps(NORM))
    (run / "journal.jsonl").write_text("")
    facts = coverage.run_facts(run)["roofline"]
    # 16 MiB over 5.995 µs and 4.265 µs
    assert facts["baseline_gbps"] == round(16777216 / 0.005994833523397739e-3 / 1e9, 1) == 2798.6
    assert facts["final_gbps"] == 3933.7
    assert facts["baseline_of_peak"] == 0.666 and facts["final_of_peak"] == 0.936
    assert facts["cache_resident"] is True


def test_no_roofline_without_bytes_or_peak() -> None:
    assert coverage.roofline_facts({"baseline_ms": 1.0, "roofline": {"bytes": None}}) is None
    assert coverage.roofline_facts({"baseline_ms": 1.0}) is None
    no_final = coverage.roofline_facts({**NORM, "final_ms": None})
    assert no_final is not None and no_final["final_gbps"] is None
