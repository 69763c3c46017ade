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


NORM_CU = """static void norm_f32_cuda(const float * x, float * dst, const int ncols) {
    if (ncols < 1024) {
        const dim3 block_dims(WARP_SIZE, 1, 1);
        norm_f32<WARP_SIZE><<<blocks_num, block_dims, 0, stream>>>(x, dst, ncols);
    } else {
        const dim3 block_dims(1024, 1, 1);
        norm_f32<1024><<<blocks_num, block_dims, 0, stream>>>(x, dst, ncols);
    }
}

template <bool do_scale = false>
static void rms_norm_f32_cuda(const float * x, float * dst, const int ncols) {
    if (ncols < 1024) {
        const dim3 block_dims(256, 1, 1);
        const ggml_cuda_kernel_launch_params launch_params = {blocks_num, block_dims};
        ggml_cuda_kernel_launch(rms_norm_f32<256, false, false, do_scale>, launch_params,
            x, dst, ncols);
    } else {
        const dim3 block_dims(1024, 1, 1);
        const ggml_cuda_kernel_launch_params launch_params = {blocks_num, block_dims};
        ggml_cuda_kernel_launch(rms_norm_f32<1024, false, false, do_scale>, launch_params, x, dst);
    }
}

static void rms_norm_mul_f32_cuda(const float * x, float * dst, const int ncols) {
    const dim3 block_dims(256, 1, 1);
    ggml_cuda_kernel_launch(rms_norm_f32<256, true>, launch_params, x, dst, ncols);
}

void ggml_cuda_op_rms_norm(ggml_backend_cuda_context & ctx, ggml_tensor * dst) {
    rms_norm_f32_cuda(src0_d, dst_d, ne00);
}
"""


def test_a_block_size_written_twice_is_one_knob_of_the_ops_own_launches() -> None:
    """norm.cu's pattern in the vendored tree: the dim3 and the template argument must agree;
    only rms_norm_f32_cuda's launches (what ggml_cuda_op_rms_norm calls) are RMS_NORM's."""
    files = {"norm.cu": NORM_CU.encode()}
    knobs = tuple(scan(files, "RMS_NORM", "ggml_cuda_op_rms_norm"))
    assert [k.name for k in knobs] == ["rms_norm_f32_block@norm.cu:14", "rms_norm_f32_block@norm.cu:19"]
    assert current_values(knobs, files) == {knobs[0].name: "256", knobs[1].name: "1024"}
    edited = apply(knobs, files, {knobs[0].name: "128", knobs[1].name: "512"})["norm.cu"].decode()
    assert "block_dims(128, 1, 1)" in edited and "rms_norm_f32<128, false, false" in edited
    assert "block_dims(512, 1, 1)" in edited and "rms_norm_f32<512, false, false" in edited
    assert "norm_f32<1024><<<" in edited and "rms_norm_f32<256, true>" in edited  # not the op's
    # the patterns still match once after the edit: the next proposal can be applied
    again = current_values(knobs, {"norm.cu": edited.encode()})
    assert again == {knobs[0].name: "128", knobs[1].name: "512"}
    # NORM's own function calls norm_f32_cuda, whose 1024 launch is NORM's; not RMS_NORM's
    norm = NORM_CU + ("void ggml_cuda_op_norm(ggml_backend_cuda_context & ctx) {\n"
                      "    norm_f32_cuda(x, d, n);\n}\n")
    assert [k.name for k in scan({"norm.cu": norm.encode()}, "NORM", "ggml_cuda_op_norm")] == [
        "norm_f32_block@norm.cu:6"]
    # a prototype of the op's function is not its body
    proto = "void ggml_cuda_op_rms_norm(ggml_backend_cuda_context & ctx, ggml_tensor * dst);\n"
    assert len(scan({"norm.cu": (proto + NORM_CU).encode()}, "RMS_NORM", "ggml_cuda_op_rms_norm")) == 2


SOFTMAX_CUH = b"#pragma once\n#define CUDA_SOFT_MAX_BLOCK_SIZE 1024\n"
SOFTMAX_CU = b"""template<int... Ns> static void launch(const params & p) {
    auto launch_kernel = [=](auto I) -> bool {
        constexpr int ncols = decltype(I)::value;
        constexpr int block = (ncols > 1024 ? 1024 : ncols);
        return p.ncols == ncols && go<ncols, block>(p);
    };
}
static void soft_max_f32_cuda(const params & p) {
    int nth = WARP_SIZE;
    while (nth < p.ncols && nth < CUDA_SOFT_MAX_BLOCK_SIZE) nth *= 2;
    const int big = (n1024 > 1024 ? 1024 : ncols);
    static_assert(CUDA_SOFT_MAX_BLOCK_SIZE == 1024, "These values need to be adjusted.");
    launch<32, 64, 128, 256, 512, 1024, 2048, 4096>(p);
}
"""


def test_a_define_pinned_by_a_static_assert_changes_with_what_the_assert_guards() -> None:
    """llama.cpp's softmax.cu asserts CUDA_SOFT_MAX_BLOCK_SIZE == 1024 because its template
    block size clamps to 1024 too: the knob writes the define, the assert and that clamp
    together, and nothing else (not the list of column counts, not a clamp of an expression
    whose two sides differ)."""
    files = {"softmax.cuh": SOFTMAX_CUH, "softmax.cu": SOFTMAX_CU}
    [knob] = scan(files, "SOFT_MAX")
    assert knob.name == "CUDA_SOFT_MAX_BLOCK_SIZE" and [f for f, _ in knob.also] == [
        "softmax.cu", "softmax.cu"]
    assert current_values((knob,), files) == {knob.name: "1024"}
    edited = apply((knob,), files, {knob.name: "256"})
    assert edited["softmax.cuh"] == SOFTMAX_CUH.replace(b"1024", b"256")
    assert edited["softmax.cu"] == SOFTMAX_CU.replace(
        b"(ncols > 1024 ? 1024 : ncols)", b"(ncols > 256 ? 256 : ncols)").replace(
        b"== 1024,", b"== 256,")
    # the edited files are a parent a later candidate starts from: the same places again
    assert current_values((knob,), edited) == {knob.name: "256"}
    again = apply((knob,), edited, {knob.name: "512"})
    assert current_values((knob,), again) == {knob.name: "512"}
    # without the assert, or asserting another value, the define is free alone
    unpinned = b"".join(line for line in SOFTMAX_CU.splitlines(True) if b"static_assert" not in line)
    assert scan({"softmax.cuh": SOFTMAX_CUH, "softmax.cu": unpinned}, "SOFT_MAX")[0].also == ()
    other = SOFTMAX_CU.replace(b"== 1024,", b"== 512,")
    assert scan({"softmax.cuh": SOFTMAX_CUH, "softmax.cu": other}, "SOFT_MAX")[0].also == ()
    # the value inside a name is not the clamp's: only the numbers are written
    named = SOFTMAX_CU.replace(b"(ncols > 1024 ? 1024 : ncols)", b"(n1024 > 1024 ? 1024 : n1024)")
    files = {"softmax.cuh": SOFTMAX_CUH, "softmax.cu": named}
    [knob] = scan(files, "SOFT_MAX")
    assert b"(n1024 > 128 ? 128 : n1024)" in apply((knob,), files, {knob.name: "128"})["softmax.cu"]
    # a clamp written twice alike cannot be told apart: nothing is coupled, the define stays
    # pinned (the compile probe then drops its values)
    twice = SOFTMAX_CU.replace(b"        return p.ncols",
                               b"        int c = (ncols > 1024 ? 1024 : ncols);\n        return p.ncols")
    assert scan({"softmax.cuh": SOFTMAX_CUH, "softmax.cu": twice}, "SOFT_MAX")[0].also == ()
