"""Dispatch-aware knobs: a knob value that changes none of the kernels the pinned case launches
is not a candidate (reach.py), read on the real ggml-cuda sources; the pin's dispatch profile
(ncu, replayed from an H200 recording) and the compile probe's rejection."""

from __future__ import annotations

import gzip
import json
import os
import re
import tarfile
from pathlib import Path

import pytest
from kernelopt_llamacpp import ops, probe, tbo, tuning
from kernelopt_llamacpp.reach import Reach, dispatched_instance, split_instance

RECORDED = Path(__file__).parent / "fixtures" / "h200-llama-model"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("llama.cpp")
    with tarfile.open(RECORDED / "ggml-cuda-src.tgz") as sources:
        sources.extractall(root, filter="data")
    return root


@pytest.fixture(scope="module")
def table(tree: Path) -> dict[str, ops.Route]:
    return ops.op_table(tree)  # ~1.5 s: read once


def _knob_edit(tree: Path, op: str, function: str, files: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """knob name → (file, the file with the knob at another value)."""
    texts = {f: (tree / f).read_text() for f in files}
    out = {}
    for knob in tuning.scan({f: t.encode() for f, t in texts.items()}, op, function):
        text = texts[knob.file]
        m = re.search(knob.pattern, text, re.M)
        assert m is not None
        other = "64" if m.group(1) != "64" else "128"
        out[knob.name] = (knob.file, text[:m.start(1)] + other + text[m.end(1):])
    return out


@pytest.mark.parametrize(("op", "knob", "kernels"), [
    # cpy.cu's block size sizes the scalar copies' launches, not the transposed copy's tiles
    ("CPY", "CUDA_CPY_BLOCK_SIZE", {"cpy_f32_q", "cpy_q_f32", "cpy_scalar", "cpy_scalar_contiguous"}),
    ("NORM", "norm_f32_block@ggml/src/ggml-cuda/norm.cu:292", {"norm_f32"}),
    ("SOFT_MAX", "CUDA_SOFT_MAX_BLOCK_SIZE", {"soft_max_f32"}),
    # unary.cu's SILU block size sizes only silu_back's launch: SILU's own kernel
    # (unary_op_kernel) takes CUDA_NEG_BLOCK_SIZE like every unary op
    ("SILU", "CUDA_SILU_BLOCK_SIZE", {"silu_back_kernel"}),
])
def test_the_kernels_a_knob_reaches(tree: Path, table: dict[str, ops.Route], op: str, knob: str,
                                    kernels: set[str]) -> None:
    route = table[op]
    edits = _knob_edit(tree, op, route.function, route.files)
    reach = Reach({f: (tree / f).read_text() for f in route.files})
    path, edited = edits[knob]
    touched = reach.touched(path, edited)
    assert touched is not None and {split_instance(t)[0] for t in touched} == kernels
    if op == "CPY":  # the transposed copy's tile constants are knobs too, and reach it alone
        for name in ("CUDA_CPY_TILE_DIM_2D", "CUDA_CPY_BLOCK_ROWS", "CUDA_CPY_BLOCK_NM"):
            path, edited = edits[name]
            touched = reach.touched(path, edited)
            assert touched is not None, name
            assert {split_instance(t)[0] for t in touched} == {"cpy_scalar_transpose"}, name
        knobs = {k.name: k for k in tuning.scan({f: (tree / f).read_bytes() for f in route.files},
                                                op, route.function)}
        assert knobs["CUDA_CPY_TILE_DIM_2D"].values == ("8", "16", "32", "64", "128")


def test_the_probe_rejects_values_that_reach_no_dispatched_kernel(
        tree: Path, table: dict[str, ops.Route], tmp_path: Path) -> None:
    route = table["CPY"]
    path, edited = _knob_edit(tree, "CPY", route.function, route.files)["CUDA_CPY_BLOCK_SIZE"]
    (tmp_path / "v1" / path).parent.mkdir(parents=True)
    (tmp_path / "v1" / path).write_text(edited)
    variants = [{"id": "v1", "knob": "CUDA_CPY_BLOCK_SIZE", "value": "64", "files": [path]}]
    tus = [f for f in route.files if f.endswith(".cu")]
    pin = tmp_path / "pin.json"
    pin.write_text(json.dumps({"dispatched": [{"kernel": "void cpy_scalar_transpose<float>(...)",
                                               "function": "cpy_scalar_transpose"}]}))
    [(vid, result)] = probe.unreached(tree, tmp_path, variants, pin, tus).items()
    assert vid == "v1" and result["ok"] is False
    assert "the pinned case launches cpy_scalar_transpose" in result["error"]
    # the scalar copy is what the case launches: the value is a candidate (compiled as before)
    pin.write_text(json.dumps({"dispatched": [{"kernel": "cpy_scalar", "function": "cpy_scalar"}]}))
    assert probe.unreached(tree, tmp_path, variants, pin, tus) == {}
    # no dispatch profile (no ncu where the pin was made): nothing is rejected
    pin.write_text(json.dumps({"dispatched": None}))
    assert probe.unreached(tree, tmp_path, variants, pin, tus) == {}
    assert probe.unreached(tree, tmp_path, variants, tmp_path / "missing.json", tus) == {}


def test_a_launch_of_another_template_instance_is_not_reached(
        tree: Path, table: dict[str, ops.Route], tmp_path: Path) -> None:
    """NORM at the GPT-2-style model's [768,512] (H200, 2026-12-03): ncu saw ``norm_f32<32>``
    (block 32) while norm.cu's one knob sizes the ``norm_f32<1024>`` launch of rows of 1024 or
    more columns; compared by name the value was compiled and timed for nothing."""
    route = table["NORM"]
    path, edited = _knob_edit(tree, "NORM", route.function, route.files)[
        "norm_f32_block@ggml/src/ggml-cuda/norm.cu:292"]
    reach = Reach({f: (tree / f).read_text() for f in route.files})
    assert reach.touched(path, edited) == {"norm_f32<1024>"}
    recorded = json.loads((Path(__file__).parent / "fixtures" / "h200-norm-pin" /
                           "9f24bd3721-NORM.pin.json").read_text())["dispatched"]
    [launched] = [dispatched_instance(k["kernel"], k["function"]) for k in recorded]
    assert launched == "norm_f32<32>"
    assert not reach.may_run("norm_f32<1024>", launched)
    (tmp_path / "v1" / path).parent.mkdir(parents=True)
    (tmp_path / "v1" / path).write_text(edited)
    variants = [{"id": "v1", "knob": "norm_f32_block", "value": "64", "files": [path]}]
    pin = tmp_path / "pin.json"
    pin.write_text(json.dumps({"dispatched": recorded}))
    tus = [f for f in route.files if f.endswith(".cu")]
    [(vid, result)] = probe.unreached(tree, tmp_path, variants, pin, tus).items()
    assert "changes only norm_f32<1024>; the pinned case launches norm_f32<32>" in result["error"]
    # a row of 4096 columns dispatches norm_f32<1024>: the same value is a candidate there
    pin.write_text(json.dumps({"dispatched": [{"kernel": "void norm_f32<1024>(const float *)",
                                               "function": "norm_f32"}]}))
    assert probe.unreached(tree, tmp_path, variants, pin, tus) == {}
    # what the source cannot tell (an argument it does not define here) may be any instance;
    # ncu's 1/0 are the source's true/false; a kernel reached through its body is every one
    assert reach.may_run("norm_f32<WARP_SIZE>", "norm_f32<32>")
    assert reach.may_run("rms_norm_f32<256, true>", "rms_norm_f32<256, 1, 0, 0>")
    assert not reach.may_run("rms_norm_f32<256, false>", "rms_norm_f32<256, 1, 0, 0>")
    assert not reach.may_run("rms_norm_f32<256, false>", "rms_norm_f32<1024, 0, 0, 0>")
    assert reach.may_run("norm_f32", "norm_f32<32>") and not reach.may_run("norm_f32", "l2_norm_f32")
    assert split_instance("cpy_scalar<cpy_1_scalar<float, float>>") == (
        "cpy_scalar", ["cpy_1_scalar<float, float>"])


def test_a_template_parameter_is_not_read_as_a_constant(tree: Path) -> None:
    """mmvq.cu's switch declares ``constexpr int c_ncols_dst = 1;`` … ``= 8;`` case by case,
    and ``c_ncols_dst`` is also its kernels' template parameter: read as a file-wide constant
    (the last case's 8), an edit in ``case 2:`` would be judged unable to reach the
    ``mul_mat_vec_q<…, 2, …>`` that ran, and a real candidate dropped."""
    files = ("ggml/src/ggml-cuda/mmvq.cu", "ggml/src/ggml-cuda/mmvq.cuh")
    reach = Reach({f: (tree / f).read_text() for f in files})
    assert "c_ncols_dst" not in reach.constants
    path = "ggml/src/ggml-cuda/mmvq.cu"
    text = (tree / path).read_text()
    line = "            constexpr int c_ncols_dst = 2;\n"
    assert line in text
    touched = reach.touched(path, text.replace(line, line + "            // edited\n"))
    assert touched is not None and any(t.startswith("mul_mat_vec_q") for t in touched)
    ran = "mul_mat_vec_q<(ggml_type)12, 2, 0, 0, 0>"
    assert any(reach.may_run(t, ran) for t in touched)


def test_the_pin_records_the_kernels_its_case_launches(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """ncu replayed: a stand-in `ncu` on PATH writes the H200 recording of SOFT_MAX's first
    perf case to its --log-file; without ncu the pin says so and keeps every knob."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    recording = tmp_path / "recorded.csv"
    recording.write_bytes(gzip.decompress((RECORDED / "ncu-tbo-SOFT_MAX.csv.gz").read_bytes()))
    (bin_dir / "ncu").write_text(
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --log-file ] && cp "
        f"{recording} \"$2\"; shift; done\n")
    (bin_dir / "ncu").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    got = tbo.dispatch_profile("test-backend-ops", "SOFT_MAX(type=f32)", "CUDA0", tmp_path)
    [kernel] = got["dispatched"]
    assert kernel["function"] == "soft_max_f32" and kernel["launches"] == 60
    assert (kernel["block"], kernel["grid"]) == (1024, 20480) and kernel["registers"] > 0
    monkeypatch.setenv("PATH", "/nonexistent")
    assert tbo.dispatch_profile("tool", "SOFT_MAX(x)", "CUDA0", tmp_path) == {
        "dispatched": None, "dispatch_note": "ncu is not on PATH: every knob is kept"}


def test_a_kernels_name_is_read_past_its_template_head(tree: Path) -> None:
    """``template <float (*op)(const float, const float), …> static __global__ void
    k_bin_bcast(…)``: the name before the parameter list, not the template's function type."""
    from kernelopt_llamacpp.reach import _declared_name

    files = ("ggml/src/ggml-cuda/binbcast.cu", "ggml/src/ggml-cuda/unary.cu")
    reach = Reach({f: (tree / f).read_text() for f in files})
    assert {"k_bin_bcast", "unary_op_kernel", "unary_gated_op_kernel"} <= reach.kernels
    assert not {"float", "void", "defined"} & reach.kernels
    assert _declared_name("template <float (*op)(float), typename T>\nstatic __global__ void "
                          "k(const T * x, int n) ") == "k"
    assert _declared_name("if (n > 0) ") == "" and _declared_name("struct s ") == ""
