"""Inductor's limits on a generated kernel's launch knobs (inductor_rules.constrain)."""

from __future__ import annotations

from kernelopt_triton.inductor_rules import constrain

from kernelopt_core.api import Knob

BLOCKS = tuple(str(1 << k) for k in range(4, 14))  # 16 .. 8192


def knob(name: str, values: tuple[str, ...]) -> Knob:
    return Knob(f"{name}@k", "k.py", values, rf"{name}=(\d+)")


def test_blocks_capped_by_size_hints_and_triton_max_block() -> None:
    knobs = (knob("XBLOCK", ("1", "2", "4", "8", "16")), knob("R0_BLOCK", BLOCKS),
             knob("num_warps", ("1", "2", "4", "8", "16", "32")), knob("num_stages", ("1", "2")))
    out = {k.name: k.values for k in constrain(knobs, "reduction", {"x": 16384, "r0_": 4096},
                                               {"R0_BLOCK@k": "1024"})}
    assert out["R0_BLOCK@k"] == BLOCKS[:9]  # <= 4096, the reduction's size hint
    assert out["XBLOCK@k"] == ("1", "2", "4", "8", "16")
    assert out["num_stages@k"] == ("1", "2")  # a looped reduction: stages can pipeline its loads
    pointwise = {k.name: k.values for k in constrain(
        (knob("XBLOCK", BLOCKS), knob("num_stages", ("1", "2"))), "pointwise", {"x": 1 << 24},
        {"XBLOCK@k": "1024"})}
    assert pointwise == {"XBLOCK@k": BLOCKS[:9]}  # TRITON_MAX_BLOCK["X"] = 4096; no stages


def test_persistent_reduction_keeps_its_whole_row_block_and_the_baseline_value_stays() -> None:
    knobs = (knob("XBLOCK", ("1", "2", "4", "8", "16", "32", "64")), knob("R0_BLOCK", ("2048",)))
    out = constrain(knobs, "persistent_reduction", {"x": 8, "r0_": 2048}, {"XBLOCK@k": "32"})
    assert [k.name for k in out] == ["XBLOCK@k"]
    assert out[0].values == ("1", "2", "4", "8", "32")  # <= the hint 8, and the baseline 32


def test_a_persistent_reductions_launch_loses_its_thread_rule() -> None:
    """R0_BLOCK (the whole row) is no knob of a persistent reduction, so XBLOCK alone is not the
    program's elements: the launch's geometry is cleared (XBLOCK=1 with 8 warps is Inductor's
    own choice, not a wasteful one)."""
    from kernelopt_core.planners.joint import threads_fit

    knobs = (Knob("XBLOCK@k", "k.py", ("1", "2", "4"), r"XBLOCK=(\d+)", "elements", "k"),
             Knob("R0_BLOCK@k", "k.py", ("2048",), r"R0_BLOCK=(\d+)", "elements", "k"),
             Knob("num_warps@k", "k.py", ("4", "8"), r"num_warps=(\d+)", "warps", "k"))
    assert not threads_fit(knobs[::2])({"XBLOCK@k": "1", "num_warps@k": "8"})  # the fault
    out = constrain(knobs, "persistent_reduction", {"x": 8, "r0_": 2048}, {})
    assert [(k.name, k.geometry) for k in out] == [("XBLOCK@k", ""), ("num_warps@k", "")]
    assert threads_fit(out)({"XBLOCK@k": "1", "num_warps@k": "8"})
    looped = constrain(knobs, "reduction", {"x": 8, "r0_": 2048}, {})
    assert [k.geometry for k in looped] == ["elements", "elements", "warps"]


def test_a_gemm_templates_tiles_stay_within_inductors_mm_configs_and_its_problem() -> None:
    """BLOCK_M/N/K from tl.dot's 16 to 256 and the problem's side (M=4096, N=48 -> 64, K=1024);
    num_stages pipelines the loop over K; GROUP_M is left as found."""
    knobs = (knob("BLOCK_M", BLOCKS), knob("BLOCK_N", BLOCKS), knob("BLOCK_K", BLOCKS),
             knob("GROUP_M", ("1", "2", "4", "8", "16")), knob("num_stages", ("1", "2", "3")))
    out = {k.name: k.values for k in constrain(knobs, "template", {"M": 4096, "N": 48, "K": 1024},
                                               {"BLOCK_M@k": "128"})}
    assert out["BLOCK_M@k"] == BLOCKS[:5]  # 16 .. 256
    assert out["BLOCK_N@k"] == ("16", "32", "64")
    assert out["BLOCK_K@k"] == BLOCKS[:5]
    assert out["GROUP_M@k"] == ("1", "2", "4", "8", "16")
    assert out["num_stages@k"] == ("1", "2", "3")
    # the tuner's growth of a range at its end stops at the same limits (Knob.maximum)
    limits = {k.name: k.maximum for k in constrain(
        knobs, "template", {"M": 4096, "N": 48, "K": 1024}, {})}
    assert limits == {"BLOCK_M@k": 256, "BLOCK_N@k": 64, "BLOCK_K@k": 256, "GROUP_M@k": None,
                      "num_stages@k": None}
    pointwise = constrain((knob("XBLOCK", ("16", "32")),), "pointwise", {"x": 1024}, {})
    assert pointwise[0].maximum == 1024
