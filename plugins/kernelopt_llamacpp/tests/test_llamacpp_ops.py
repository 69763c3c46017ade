"""The op table, derived from the fixture's ggml-cuda.cu dispatch (same parser as for a real tree)."""

from __future__ import annotations

from pathlib import Path

from kernelopt_llamacpp import ops
from llamacpp_fixture import FIXTURE


def test_dispatch_cases_follow_nested_switches():
    cases = dict(ops.dispatch_cases((FIXTURE / ops.DISPATCH).read_text()))
    assert cases["GGML_OP_SOFT_MAX"] == "ggml_cuda_op_soft_max"
    assert cases["GGML_UNARY_OP_SILU"] == "ggml_cuda_op_silu"  # from the nested unary switch
    assert "GGML_OP_UNARY" not in cases  # a container, not an op test-backend-ops names
    assert cases["GGML_OP_RESHAPE"] is None and cases["GGML_OP_NONE"] is None


def test_op_table_maps_ops_to_their_files():
    table = ops.op_table(FIXTURE)
    assert table["SOFT_MAX"].files == ("ggml/src/ggml-cuda/softmax.cu", "ggml/src/ggml-cuda/softmax.cuh")
    assert table["RMS_NORM"].files[0].endswith("norm.cu")
    assert table["ADD"].files[0].endswith("binbcast.cu")
    assert table["SILU"].kind == "kernel" and table["SILU"].files[0].endswith("unary.cu")


def test_library_ops_are_reported_not_edited():
    table = ops.op_table(FIXTURE)
    out_prod = table["OUT_PROD"]
    assert (out_prod.kind, out_prod.library, out_prod.files) == ("library", "cuBLAS", ())
    mul_mat = table["MUL_MAT"]  # routed at run time between custom kernels and cuBLAS
    assert mul_mat.kind == "mixed" and mul_mat.library == "cuBLAS"
    assert table["RESHAPE"].kind == "none"
    assert "OUT_PROD" not in ops.editable_ops(table) and "SOFT_MAX" in ops.editable_ops(table)
    assert "library: cuBLAS, not editable" in ops.markdown(table)


def test_function_body_skips_declarations(tmp_path: Path):
    text = "void f(int a);\nint g() { return f(1); }\nvoid f(int a) {\n  if (a) { g(); }\n}\n"
    assert ops.function_body(text, "f") == "{\n  if (a) { g(); }\n}"
