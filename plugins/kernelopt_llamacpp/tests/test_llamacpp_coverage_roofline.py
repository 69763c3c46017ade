"""coverage.json's roofline per op: how far an op was from its bound before and after the
search (issue 54's account of decode ops already at their roofline)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kernelopt_llamacpp import coverage

from kernelopt_core.api import DeviceInfo, cached_device
from kernelopt_core.measure.device import device_key

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
                  "kb": None, "chosen_by": "the model's node m=32000,n=1,k=4096 (its heaviest node "
                  "of the op; --nodes)"}
# the H100's device-to-device copy rate measured 2026-12-06, and its 50 MiB L2
H100 = DeviceInfo("NVIDIA H100 80GB HBM3", 2994.0, 50 * 2**20, "cuda copy", "cuda-x")


def _bound(op: str, pin: dict, device: DeviceInfo | None = H100) -> dict | None:
    return coverage.bound(op, pin, coverage.pinned_rate(op, pin), device)


def test_each_ops_bound_against_the_measured_peak() -> None:
    """Decode's output projection reads its 262 MB of f16 weights at 100.5 % of the copy rate:
    at its roofline, nothing left for a search on bandwidth."""
    assert _bound("MUL_MAT", DECODE_MUL_MAT) == {
        "peak_gbps": 2994.0, "cache_bytes": 52428800, "of_peak": 1.005, "floor_us": 87.605,
        "headroom": 1.0, "flop_per_byte": 1.0, "bound": "at its memory roofline",
        "pinned_by": DECODE_MUL_MAT["chosen_by"]}
    # a decode RMS_NORM: 32 kB in 3.1 µs, 0.01 µs of it at the peak: the launch
    tiny = _bound("RMS_NORM", {"params": "type=f32,ne=[4096,1,1,1]", "us": 3.1, "kb": 32})
    assert tiny is not None and tiny["bound"] == "launch-bound" and tiny["floor_us"] < 0.02
    # 16 MiB fits the 50 MiB cache: the node runs again on the same tensors, so a rate near or
    # above the DRAM peak says nothing about the DRAM roofline
    hot = _bound("NORM", {"params": "type=f32,ne=[4096,512,1,1]", "us": 5.9, "kb": 16384})
    assert hot is not None and hot["bound"] == "cache-resident" and hot["of_peak"] > 0.9
    # prefill's 512 columns through the same weights, below the memory roofline: 399 FLOPs a
    # byte, so its bound may be arithmetic
    prefill = {**DECODE_MUL_MAT, "params": DECODE_MUL_MAT["params"].replace("n=1,", "n=512,"),
               "us": 400.0}
    heavy = _bound("MUL_MAT", prefill)
    assert heavy is not None and heavy["bound"] == "compute-heavy" and heavy["flop_per_byte"] > 300
    # the same intensity read at the memory roofline is at it: memory binds first
    assert _bound("MUL_MAT", {**prefill, "us": 100.0})["bound"] == "at its memory roofline"
    # a 128 MiB op at a quarter of the peak: below, with its headroom
    slow = _bound("NORM", {"params": "type=f32,ne=[4096,8192,1,1]", "us": 180.0, "kb": 131072})
    assert slow is not None and slow["bound"] == "below its memory roofline"
    assert slow["headroom"] == round(1 / slow["of_peak"], 2) > 3
    # a small case that is slow is not launch-bound: 1.4 µs at the peak, 20 µs measured
    assert _bound("NORM", {"params": "x", "us": 20.0, "kb": 4096})["bound"] != "launch-bound"
    # no peak kept, or no bytes: no bound
    assert _bound("NORM", {"params": "x", "us": 20.0, "kb": 4096}, None) is None
    assert coverage.bound("MUL_MAT", {}, None, H100) is None


def test_the_account_counts_only_the_models_own_nodes() -> None:
    node = "the model's node m=32000,n=1 (its heaviest node of the op; --nodes)"
    perf = "largest us/run of all perf cases (the harness lets test mode check any)"
    entries = [{"share": 0.627, "bound": {"bound": "at its memory roofline", "pinned_by": node}},
               {"share": 0.05, "bound": {"bound": "launch-bound", "pinned_by": node}},
               {"share": 0.04, "bound": {"bound": "launch-bound", "pinned_by": node}},
               {"share": 0.03, "bound": {"bound": "compute-heavy", "pinned_by": perf}},
               {"share": 0.01, "bound": None}]
    assert coverage.account(entries) == {
        "share_by_bound": {"at its memory roofline": 0.627, "launch-bound": 0.09,
                           coverage.NOT_THE_NODE: 0.03, "unknown": 0.01},
        "listed_share": 0.757}


def test_the_device_is_the_one_this_machine_measured(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """cached_device reads the device cache the roofline gate writes (keyed by host and device)
    and measures nothing; a run's newest summary is each op's run, by the time it was written."""
    monkeypatch.delenv("KERNELOPT_DEVICE_CACHE", raising=False)
    assert cached_device(tmp_path, "cuda") is None
    cache = tmp_path / "device" / f"{device_key('cuda')}.json"
    cache.parent.mkdir()
    cache.write_text(json.dumps({"name": "NVIDIA H100 80GB HBM3", "peak_gbps": 2994.0,
                                 "cache_bytes": 52428800, "method": "cuda copy",
                                 "measured_at": 1_800_000_000.0}))
    found = cached_device(tmp_path, "cuda")
    assert found is not None and (found.peak_gbps, found.cache_bytes) == (2994.0, 52428800)
    assert cached_device(tmp_path, "cpu") is None  # another device's facts are not this one's
    for when, name in enumerate(("llama-03", "llama-01", "llama-02")):  # written in this order
        (tmp_path / "runs" / name).mkdir(parents=True)
        summary = tmp_path / "runs" / name / "summary.json"
        summary.write_text(json.dumps({"target": {"name": "NORM"}}))
        os.utime(summary, (1_800_000_000 + when, 1_800_000_000 + when))
    assert coverage.campaign_runs(tmp_path, None) == {"NORM": tmp_path / "runs" / "llama-02"}


def test_bytes_the_op_cannot_move_do_not_make_it_roofline_bound() -> None:
    """Decode's GET_ROWS, measured on an H100 (2026-12-07): test-backend-ops counts its whole
    262 MB table, read 'at' 72x the copy rate in 1.23 µs — two rows were read: the launch."""
    pin = {"params": "type=f16,n=4096,m=32000,r=2,be1=1,be2=1", "us": 1.23, "kb": 256032}
    got = _bound("GET_ROWS", pin)
    assert got is not None and got["bound"] == "launch-bound" and got["bytes_overcounted"]
    # a rate above the DRAM peak within the cache stays cache-resident (a rerun on the same
    # tensors: the cache's rate, not bytes over-counted)
    hot = _bound("NORM", {"params": "type=f32,ne=[4096,512,1,1]", "us": 1.0, "kb": 16384})
    assert hot is not None and hot["bound"] == "cache-resident" and hot["of_peak"] > 5
    assert "bytes_overcounted" not in hot
    # slower than a launch, the same impossible rate proves nothing: not at the roofline
    slow = _bound("GET_ROWS", {**pin, "us": 12.0})
    assert slow is not None and slow["bytes_overcounted"]
    assert slow["bound"] == "below its memory roofline"
    # no cache size known: no claim either way
    unknown = _bound("GET_ROWS", pin, DeviceInfo("x", 2994.0, None, "cuda copy", "cuda-x"))
    assert unknown is not None and "bytes_overcounted" not in unknown
