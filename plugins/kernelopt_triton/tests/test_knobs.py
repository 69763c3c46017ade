"""Knobs found by the AST in kernel files: names, values, and patterns that match once."""

from __future__ import annotations

import itertools
import re

import pytest
from kernelopt_triton.knobs import detect, geometry
from kernelopt_triton_testpaths import EXAMPLES

from kernelopt_core.knobs import apply, current_values


def knobs_of(name: str, text: str) -> dict[str, object]:
    return {k.name: k for k in detect(name, text)}


@pytest.mark.parametrize(("example", "kernel", "block"), [
    ("softmax.py", "softmax_kernel", "128"), ("layernorm.py", "layernorm_kernel", "256"),
    ("vecadd.py", "add_kernel", "64")])
def test_examples_expose_block_size_and_num_warps(example: str, kernel: str, block: str) -> None:
    text = (EXAMPLES / example).read_text()
    knobs = detect(example, text)
    by_name = {k.name: k for k in knobs}
    assert set(by_name) == {f"BLOCK_SIZE@{kernel}", f"num_warps@{kernel}"}
    values = by_name[f"BLOCK_SIZE@{kernel}"].values
    assert values == ("16", "32", "64", "128", "256", "512", "1024", "2048", "4096", "8192")
    assert block in values
    assert by_name[f"num_warps@{kernel}"].values == ("1", "2", "4", "8", "16", "32")
    files = {example: text.encode()}
    assert current_values(tuple(knobs), files) == {f"BLOCK_SIZE@{kernel}": block,
                                                   f"num_warps@{kernel}": "1"}
    # every combination rewrites exactly the launch's digits and leaves the patterns valid
    for b, w in itertools.product(values[:3], ("4", "32")):
        edited = apply(tuple(knobs), files, {f"BLOCK_SIZE@{kernel}": b, f"num_warps@{kernel}": w})
        new = edited[example].decode()
        assert f"BLOCK_SIZE={b}" in new and f"num_warps={w}" in new
        assert current_values(tuple(knobs), {example: new.encode()}) == {
            f"BLOCK_SIZE@{kernel}": b, f"num_warps@{kernel}": w}
        assert len(new.splitlines()) == len(text.splitlines())


SOURCE = '''
import triton
import triton.language as tl

BLOCK = 1024
WARPS = 4


@triton.autotune(configs=[
    triton.Config({"BLOCK_M": 64, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 128, "GROUP_SIZE_M": 8}, num_warps=8, num_stages=4),
], key=["n"])
@triton.jit
def tuned(x, n, BLOCK_M: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    pass


@triton.jit
def plain(x, n, BLOCK_SIZE: tl.constexpr, ACTIVATION: tl.constexpr, N_COLS: tl.constexpr,
          TILE: tl.constexpr = 32):
    pass


def launch(x, n):
    tuned[(1,)](x, n)
    plain[(triton.cdiv(n, BLOCK),)](x, n, BLOCK_SIZE=BLOCK, ACTIVATION=1, N_COLS=1000,
                                    num_warps=WARPS, num_stages=2)
    plain[(1,)](x, n, BLOCK_SIZE=256, ACTIVATION=0, N_COLS=1000, num_warps=2)
'''


def test_variables_defaults_autotune_configs_and_repeated_tokens() -> None:
    knobs = knobs_of("k.py", SOURCE)
    assert set(knobs) == {
        "BLOCK", "WARPS", "num_stages@plain", "BLOCK_SIZE@plain", "num_warps@plain", "TILE@plain",
        "BLOCK_M@tuned.configs[0]", "GROUP_SIZE_M@tuned.configs[0]", "num_warps@tuned.configs[0]",
        "num_stages@tuned.configs[0]", "BLOCK_M@tuned.configs[1]", "GROUP_SIZE_M@tuned.configs[1]",
        "num_warps@tuned.configs[1]", "num_stages@tuned.configs[1]",
    }
    # not knobs: a flag (ACTIVATION=1) and a problem size (N_COLS=1000)
    assert knobs["GROUP_SIZE_M@tuned.configs[0]"].values == ("1", "2", "4", "8", "16", "32", "64")
    assert knobs["num_stages@plain"].values == ("1", "2", "3", "4", "5")
    files = {"k.py": SOURCE.encode()}
    values = current_values(tuple(knobs.values()), files)  # every pattern matches exactly once
    assert values["BLOCK"] == "1024" and values["WARPS"] == "4" and values["TILE@plain"] == "32"
    assert values["num_warps@tuned.configs[1]"] == "8" and values["BLOCK_SIZE@plain"] == "256"
    assert values["num_warps@plain"] == "2"
    # rewriting one repeated token leaves the others in place
    edited = apply(tuple(knobs.values()), files, {"num_warps@tuned.configs[0]": "16",
                                                  "num_warps@plain": "32", "BLOCK": "2048"})
    new = edited["k.py"].decode()
    assert re.findall(r"num_warps=(\w+)", new) == ["16", "8", "WARPS", "32"]
    assert "BLOCK = 2048" in new
    after = current_values(tuple(knobs.values()), {"k.py": new.encode()})
    assert after == {**values, "num_warps@tuned.configs[0]": "16", "num_warps@plain": "32",
                     "BLOCK": "2048"}


def test_no_knobs_in_unparsable_or_kernel_free_text() -> None:
    assert detect("k.py", "def launch(:\n") == []
    assert detect("k.py", "def launch(x):\n    f[1](x, BLOCK_SIZE=128)\n") == []


def test_block_sizes_and_warps_say_their_launch_geometry() -> None:
    text = (EXAMPLES / "softmax.py").read_text()
    found = {k.name: (k.geometry, k.launch) for k in detect("softmax.py", text)}
    assert found == {"BLOCK_SIZE@softmax_kernel": ("elements", "softmax_kernel"),
                     "num_warps@softmax_kernel": ("warps", "softmax_kernel")}
    assert [geometry(k) for k in ("XBLOCK", "R0_BLOCK", "BLOCK_M", "BLOCK_SIZE_N",
                                        "NUM_BLOCKS", "BLOCKS_PER_SM", "num_stages")] == [
        "elements", "elements", "elements", "elements", "", "", ""]


def test_no_thread_rule_for_a_launch_whose_block_the_code_fixes() -> None:
    """BLOCK_N computed at launch (a whole row) is no knob: BLOCK_M alone is not the program's
    elements, so that launch gets no geometry; the second launch site, all literals, keeps it."""
    text = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def row_kernel(x, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):\n    pass\n\n\n"
        "def launch(x, n):\n"
        "    row_kernel[(1,)](x, BLOCK_M=1, BLOCK_N=triton.next_power_of_2(n), num_warps=8)\n"
        "    row_kernel[(1,)](x, BLOCK_M=4, BLOCK_N=64, num_warps=2)\n")
    found = [(k.name, k.geometry, k.launch) for k in detect("k.py", text)]
    assert found == [("BLOCK_M@row_kernel", "", "row_kernel"),
                     ("num_warps@row_kernel", "", "row_kernel"),
                     ("BLOCK_M@row_kernel#2", "elements", "row_kernel#2"),
                     ("BLOCK_N@row_kernel", "elements", "row_kernel#2"),
                     ("num_warps@row_kernel#2", "warps", "row_kernel#2")]
