"""Knobs at a dispatch site (dispatch_knobs.py) on the real ggml-cuda sources the H200 built
(fixtures/h200-llama-model/ggml-cuda-src.tgz): MUL_MAT's GEMV block size, a template
argument, reached through the cap of the loop that picks it."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from kernelopt_llamacpp import ops, tuning
from kernelopt_llamacpp.dispatch_knobs import cap_names, selection_caps
from kernelopt_llamacpp.reach import Reach

from kernelopt_core.api import apply_knobs

SOURCES = Path(__file__).parent / "fixtures" / "h200-llama-model" / "ggml-cuda-src.tgz"
MMVF = "ggml/src/ggml-cuda/mmvf.cu"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ggml")
    with tarfile.open(fileobj=io.BytesIO(SOURCES.read_bytes())) as tar:
        tar.extractall(root, filter="data")
    return root


def test_mul_mat_has_a_knob_that_reaches_its_gemv(tree: Path) -> None:
    route = ops.op_table(tree)["MUL_MAT"]
    files = {f: (tree / f).read_bytes() for f in route.files}
    [cap] = [k for k in tuning.scan(files, "MUL_MAT", route.function) if k.file == MMVF]
    assert (cap.name, cap.maximum) == ("max_block_size", 256)
    assert cap.values == ("32", "64", "96", "128", "160", "192", "224", "256")  # the switch's cases
    edited = apply_knobs((cap,), files, {"max_block_size": "128"})[MMVF].decode()
    assert "    int64_t max_block_size  = 128;" in edited
    assert "        max_block_size = 128;" in edited  # the AMD branch's own assignment untouched
    texts = {f: b.decode() for f, b in files.items()}
    reached = Reach(texts).touched(MMVF, edited)
    assert reached and all(k.startswith("mul_mat_vec_f<") for k in reached)
    # every value is a case its switch compiles: the compile probe judges it by reach alone
    assert cap_names(tree, [f for f in route.files if f.endswith(".cu")]) == ["max_block_size"]


def test_only_a_cap_of_a_loop_whose_pick_is_switched_over_is_a_knob() -> None:
    launcher = """
void launch(int n) {
    int64_t best = 32;
    int64_t cap  = 256;
    int64_t other = 7;
    for (int64_t b = 64; b <= cap; b += 32) {
        if (n % b == 0) {
            best = b;
        }
    }
    switch (best) {
        case 32: k<32><<<1, 32>>>(); break;
        case 128: k<128><<<1, 128>>>(); break;
        case 256: k<256><<<1, 256>>>(); break;
        default: abort();
    }
}
"""
    [cap] = selection_caps("k.cu", launcher)
    assert (cap.name, cap.values, cap.maximum) == ("cap", ("32", "128", "256"), 256)
    unswitched = launcher.replace("switch (best)", "switch (n)")
    assert selection_caps("k.cu", unswitched) == []
    assert selection_caps("k.cu", launcher.replace("b <= cap", "b <= 512")) == []
