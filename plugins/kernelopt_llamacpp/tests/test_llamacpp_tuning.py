"""Knob scan of an op's files: block-size defines, launch bounds, unroll factors."""

from __future__ import annotations

from kernelopt_llamacpp import ops
from kernelopt_llamacpp.tuning import scan
from llamacpp_fixture import FIXTURE

from kernelopt_core.knobs import apply, current_values


def _files(op: str) -> dict[str, bytes]:
    route = ops.op_table(FIXTURE)[op]
    return {f: (FIXTURE / f).read_bytes() for f in route.files}


def test_block_size_define_of_the_op():
    files = _files("SOFT_MAX")
    knobs = scan(files, "SOFT_MAX")
    assert [k.name for k in knobs] == ["CUDA_SOFT_MAX_BLOCK_SIZE"]
    assert current_values(tuple(knobs), files) == {"CUDA_SOFT_MAX_BLOCK_SIZE": "64"}
    assert "1024" in knobs[0].values and "32" in knobs[0].values
    edited = apply(tuple(knobs), files, {"CUDA_SOFT_MAX_BLOCK_SIZE": "256"})
    assert b"#define CUDA_SOFT_MAX_BLOCK_SIZE 256" in edited["ggml/src/ggml-cuda/softmax.cuh"]


def test_shared_header_keeps_only_the_ops_define():
    knobs = scan(_files("SILU"), "SILU")
    assert [k.name for k in knobs] == ["CUDA_SILU_BLOCK_SIZE"]  # not NEG, not SILU_BACK


def test_pragma_unroll_and_several_launch_bounds():
    files = _files("RMS_NORM")
    knobs = scan(files, "RMS_NORM")
    assert [k.name.split("@")[0] for k in knobs] == ["unroll#0"]
    assert current_values(tuple(knobs), files)[knobs[0].name] == "4"
    src = (b"__launch_bounds__(256, 1) static __global__ void a() {}\n"
           b"__launch_bounds__(128) static __global__ void b() {}\n"
           b"__launch_bounds__(8*WARP_SIZE, 1) static __global__ void c() {}\n")
    many = scan({"k.cu": src}, "X")
    assert len(many) == 2  # the WARP_SIZE expression is not a knob
    assert current_values(tuple(many), {"k.cu": src}) == {many[0].name: "256", many[1].name: "128"}
