"""Knobs found by name in launchers and kernels, each matching exactly once."""

from __future__ import annotations

import re
from pathlib import Path

from kernelopt_ninfer import layout
from kernelopt_ninfer.tuning import scan, size_range

LAUNCHER = b"""#define RMSNORM_BLOCK_SIZE 128
#define RMSNORM_ROWS_PER_BLOCK 2
#define RMSNORM_VEC 4
#define RMSNORM_EPS_DIGITS 6
#define HIDDEN 5120
namespace x {
constexpr int kBlock = 256;
static constexpr int kRowsPerBlock = 4;
constexpr int kWarpSize = 32;
constexpr int kMaxPairsPerThread = 8;
constexpr int kHidden = 5120;
}
"""

KERNEL = b"""template <int Block>
__launch_bounds__(Block) __global__ void generic(float* y) {}
__launch_bounds__(256) __global__ void a(float* y) {
#pragma unroll 4
    for (int i = 0; i < 4; ++i) y[i] = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) y[i] = 1;
}
__launch_bounds__(256) __global__ void b(float* y) {
#pragma unroll 4
    for (int k = 0; k < 4; ++k) y[k] = 0;
}
"""


def test_names_decide_what_is_a_knob_and_its_range() -> None:
    assert size_range("RMSNORM_BLOCK_SIZE") == (32, 1024)
    assert size_range("kBlock") == (32, 1024)
    assert size_range("kRowsPerBlock") == (1, 32)  # rows, though it speaks of a block
    assert size_range("RMSNORM_VEC") == (1, 32)
    assert size_range("kMaxPairsPerThread") == (1, 32)
    assert size_range("TILE_M") == (1, 1024)
    assert size_range("kWarpSize") is None  # hardware
    assert size_range("HIDDEN") is None and size_range("kEps") is None


def test_scan_finds_defines_constexprs_bounds_and_unrolls() -> None:
    knobs = {k.name: k for k in scan({"src/ops/launcher/x.cu": LAUNCHER,
                                      "src/ops/kernel/x.cuh": KERNEL})}
    assert {"RMSNORM_BLOCK_SIZE", "RMSNORM_ROWS_PER_BLOCK", "RMSNORM_VEC", "kBlock",
            "kRowsPerBlock", "kMaxPairsPerThread"} <= set(knobs)
    assert not {"HIDDEN", "kWarpSize", "kHidden", "RMSNORM_EPS_DIGITS"} & set(knobs)
    assert knobs["RMSNORM_BLOCK_SIZE"].values == ("32", "64", "128", "256", "512", "1024")
    assert knobs["RMSNORM_VEC"].values == ("1", "2", "4", "8", "16", "32")
    # the two launch bounds and the two unrolls read alike on their own line: each is kept
    # only when the text after it makes its pattern unique
    positional = [k for k in knobs if "#" in k]
    assert positional == ["launch_bounds#0@src/ops/kernel/x.cuh",
                          "launch_bounds#1@src/ops/kernel/x.cuh",
                          "unroll#0@src/ops/kernel/x.cuh", "unroll#1@src/ops/kernel/x.cuh"]
    text = {"src/ops/launcher/x.cu": LAUNCHER.decode(), "src/ops/kernel/x.cuh": KERNEL.decode()}
    for knob in knobs.values():  # the core's tuner needs exactly one match per pattern
        assert len(re.findall(knob.pattern, text[knob.file], re.M)) == 1, knob.name


def test_one_name_in_two_files_is_two_knobs() -> None:
    knobs = scan({"a.cu": b"constexpr int kBlock = 128;\n", "b.cu": b"constexpr int kBlock = 64;\n"})
    assert [k.name for k in knobs] == ["kBlock@a.cu", "kBlock@b.cu"]


def test_fixture_ops_have_knobs(fixture_root: Path) -> None:
    table = layout.op_table(fixture_root)
    for name in layout.optimizable(table):
        files = {f: (fixture_root / f).read_bytes() for f in table[name].editable}
        assert scan(files), name
