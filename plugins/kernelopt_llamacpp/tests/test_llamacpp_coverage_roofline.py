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


def test_the_pinned_cases_rate_before_any_search() -> None:
    """The pin of the H100's MUL_MAT decode run (2026-12-07): test-backend-ops printed no
    kB/run for it, so the bytes are the case's least (case_bytes.py): 262.3 MB in 87.19 µs."""
    pin = {"op": "MUL_MAT", "params": "type_a=f16,type_b=f32,m=32000,n=1,k=4096,bs=[1,1],nr=[1,1],"
           "per=[0,1,2,3],k_v=0,o=1,src_overlap=0,m_v=0,pad=0", "us": 87.19, "kb": None}
    assert coverage.pinned_rate("MUL_MAT", pin) == {"bytes": 262288384, "us": 87.19,
                                                    "gbps": 3008.2}
    # the tool's own kB/run where it prints one; nothing where the case was never timed
    assert coverage.pinned_rate("NORM", {"params": "type=f32", "us": 5.995, "kb": 16384}) == {
        "bytes": 16777216, "us": 5.995, "gbps": 2798.5}
    assert coverage.pinned_rate("NORM", {}) is None
