"""coverage.json's roofline per op: how far an op was from its bound before and after the
search (issue 54's account of decode ops already at their roofline)."""

from __future__ import annotations

import json
import os
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


DECODE_MUL_MAT = {"op": "MUL_MAT", "params": "type_a=f16,type_b=f32,m=32000,n=1,k=4096,bs=[1,1],"
                  "nr=[1,1],per=[0,1,2,3],k_v=0,o=1,src_overlap=0,m_v=0,pad=0", "us": 87.19,
                  "kb": None}
H100_COPY_GBPS = 2994.0  # the H100's device-to-device copy rate measured 2026-12-06


def test_each_ops_bound_against_the_measured_peak() -> None:
    """Decode's output projection reads its 262 MB of f16 weights at 100.5 % of the copy rate:
    at its roofline, nothing left for a search. The same matrix at prefill's 512 columns does
    400 FLOPs a byte: not held to the memory roofline. A decode RMS_NORM's 16 kB would move in
    5 ns at that peak: its 3 µs are the launch."""
    mm = coverage.bound("MUL_MAT", DECODE_MUL_MAT, coverage.pinned_rate("MUL_MAT", DECODE_MUL_MAT),
                        H100_COPY_GBPS)
    assert mm == {"peak_gbps": 2994.0, "of_peak": 1.005, "floor_us": 87.605, "headroom": 1.0,
                  "flop_per_byte": 1.0, "bound": "at its memory roofline"}
    prefill = {**DECODE_MUL_MAT, "params": DECODE_MUL_MAT["params"].replace("n=1,", "n=512,"),
               "us": 180.0}
    big = coverage.bound("MUL_MAT", prefill, coverage.pinned_rate("MUL_MAT", prefill),
                         H100_COPY_GBPS)
    assert big is not None and big["bound"] == "not memory-bound" and big["flop_per_byte"] > 300
    small = {"params": "type=f32,ne=[4096,1,1,1]", "us": 3.1, "kb": 16}
    norm = coverage.bound("RMS_NORM", small, coverage.pinned_rate("RMS_NORM", small),
                          H100_COPY_GBPS)
    assert norm is not None and norm["bound"] == "launch-bound" and norm["floor_us"] < 0.01
    slow = {"params": "type=f32,ne=[4096,512,1,1]", "us": 40.0, "kb": 16384}
    below = coverage.bound("NORM", slow, coverage.pinned_rate("NORM", slow), H100_COPY_GBPS)
    assert below is not None and below["bound"] == "below its memory roofline"
    assert below["headroom"] == round(1 / below["of_peak"], 2) > 5
    # no peak measured, or no bytes: no bound
    assert coverage.bound("NORM", slow, coverage.pinned_rate("NORM", slow), None) is None
    assert coverage.bound("MUL_MAT", {}, None, H100_COPY_GBPS) is None


def test_the_peak_is_the_newest_runs_and_the_account_sums_shares(tmp_path: Path) -> None:
    assert coverage.measured_peak(tmp_path) is None
    # by the time each was written (a campaign's runs are named by job): the newest with a peak
    for when, (name, peak) in enumerate((("llama-02", 2990.0), ("llama-03", 3001.5),
                                         ("llama-01", None))):
        (tmp_path / "runs" / name).mkdir(parents=True)
        summary = tmp_path / "runs" / name / "summary.json"
        summary.write_text(
            json.dumps({"roofline": {"peak_gbps": peak}} if peak else {"status": "fallback"}))
        os.utime(summary, (1_800_000_000 + when, 1_800_000_000 + when))
    assert coverage.measured_peak(tmp_path) == 3001.5
    entries = [{"share": 0.627, "bound": {"bound": "at its memory roofline"}},
               {"share": 0.05, "bound": {"bound": "launch-bound"}},
               {"share": 0.04, "bound": {"bound": "launch-bound"}}, {"share": 0.01, "bound": None}]
    assert coverage.account(entries) == {
        "share_by_bound": {"at its memory roofline": 0.627, "launch-bound": 0.09, "unknown": 0.01},
        "listed_share": 0.727}
