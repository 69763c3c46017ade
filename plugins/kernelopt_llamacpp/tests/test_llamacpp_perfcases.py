"""Perf cases written from test-backend-ops' own test structs (perfcases.py), on the real
tool's source (llama.cpp vendored in llama_cpp_python 0.3.36), and discover's refusal of an
op that cannot be timed, in seconds and before any build."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from kernelopt_llamacpp import harness, perfcases
from kernelopt_llamacpp.backend import LlamaCppBackend
from llamacpp_fixture import copy_fixture, settings_with

from kernelopt_core.errors import UsageError

REAL = Path(__file__).parent / "fixtures" / "real-tbo" / "test-backend-ops.cpp.gz"


@pytest.fixture(scope="module")
def source() -> str:
    return gzip.decompress(REAL.read_bytes()).decode("utf-8")


def test_the_real_tools_structs_and_constructors_are_read(source: str) -> None:
    found = perfcases.structs(source)
    assert len(found) > 100
    norm = found["test_norm"]
    assert [(p.type, p.name, p.default) for p in norm.params] == [
        ("ggml_type", "type", "GGML_TYPE_F32"), ("std::array<int64_t, 4>", "ne", "{64, 5, 4, 3}"),
        ("bool", "v", "false"), ("float", "eps", "1e-6f"), ("bool", "noncontig_rows", "false")]
    assert found["test_bin_bcast"].params[0].type == "op_t"


@pytest.mark.parametrize(("op", "enum", "expected"), [
    # no perf case in this version: written from the op's struct, at a 7B-class prompt's shape
    ("NORM", "GGML_OP_NORM", "new test_norm(GGML_TYPE_F32, {4096, 512, 1, 1}, false, 1e-6f, false)"),
    ("RMS_NORM", "GGML_OP_RMS_NORM",
     "new test_rms_norm(GGML_TYPE_F32, {4096, 512, 1, 1}, false, 1e-6f, false)"),
    # a unary op the tool never spells out (it loops over the enum): the dispatch case names it
    ("GELU_ERF", "GGML_UNARY_OP_GELU_ERF",
     "new test_unary(GGML_UNARY_OP_GELU_ERF, GGML_TYPE_F32, {4096, 512, 1, 1}, 0)"),
    ("REGLU", "GGML_GLU_OP_REGLU",
     "new test_glu(GGML_GLU_OP_REGLU, GGML_TYPE_F32, {4096, 512, 1, 1}, 0, false)"),
    # a binary op: the struct that takes its function, with no broadcast
    ("MUL", "GGML_OP_MUL", "new test_bin_bcast(ggml_mul, GGML_TYPE_F32, {4096, 512, 1, 1}, "
                           "{1, 1, 1, 1}, 1, false, false, GGML_TYPE_COUNT)"),
    ("SCALE", "GGML_OP_SCALE", "new test_scale(GGML_TYPE_F32, {4096, 512, 1, 1}, 2.0f, 0.0f, false)"),
])
def test_a_perf_case_is_written_for_an_op_the_perf_set_lacks(source: str, op: str, enum: str,
                                                             expected: str) -> None:
    timing = perfcases.timing(source, op, enum)
    assert (timing.perf_set, timing.generated, timing.timable) == (False, expected, True)


@pytest.mark.parametrize("op", ["SOFT_MAX", "ROPE", "CPY", "SWIGLU", "MUL_MAT", "ADD"])
def test_an_op_the_perf_set_times_keeps_the_tools_cases(source: str, op: str) -> None:
    timing = perfcases.timing(source, op, f"GGML_OP_{op}" if op != "SWIGLU" else "GGML_GLU_OP_SWIGLU")
    assert timing.perf_set and timing.generated is None


def test_a_models_shape_adds_a_case_even_where_the_perf_set_has_some(source: str) -> None:
    timing = perfcases.timing(source, "SOFT_MAX", "GGML_OP_SOFT_MAX", perfcases.Shapes((512, 512, 32, 1)))
    assert timing.perf_set and timing.generated is not None
    assert timing.generated.startswith("new test_soft_max(GGML_TYPE_F32, {512, 512, 32, 1}")


@pytest.mark.parametrize(("op", "enum", "why"), [
    ("OUT_PROD", "GGML_OP_OUT_PROD", "test_out_prod takes no 4-d shape"),
    ("FILL", "GGML_OP_FILL", "test_fill's parameter `float c` has no default"),
    ("ADD1", "GGML_OP_ADD1", "no test struct that computes ADD1"),
])
def test_an_op_that_cannot_be_timed_says_why(source: str, op: str, enum: str, why: str) -> None:
    timing = perfcases.timing(source, op, enum)
    assert not timing.timable and why in timing.why


def test_the_harness_adds_the_generated_case_to_the_real_tools_perf_set(source: str) -> None:
    case = perfcases.generate(source, "NORM")
    patched = harness.patched(source, (case,))
    assert patched is not None and patched.count(harness.ENV) == 1
    start = patched.index("make_test_cases_perf() {")
    body = patched[start:patched.index("\n}\n", start)]
    assert body.count(case) == 1 and body.rindex(case) < body.rindex("return test_cases;")
    # nothing else changed: three marked additions (the test-mode selection, the case, the
    # seeded inputs' function), and without the case the rest is the harness alone
    added = [line for line in patched.splitlines() if "kernelopt-llamacpp's harness" in line]
    assert len(added) == 3
    assert patched.replace(f"    test_cases.emplace_back({case});  // kernelopt-llamacpp's harness\n",
                           "") == harness.patched(source)


def _tree_with_real_tool(tmp_path: Path, marker: bool) -> Path:
    repo = copy_fixture(tmp_path / "repo", marker=marker)
    (repo / harness.FILE).write_bytes(gzip.decompress(REAL.read_bytes()))
    return repo


def test_discover_refuses_an_op_that_cannot_be_timed_before_anything_else(tmp_path: Path) -> None:
    """A real tree (no stand-in marker) whose dispatch has FILL: the real tool has no perf case
    of it and its struct's `float c` has no default. Refused with exit 2 and why, from the
    source alone: before the GPU prerequisites (this machine has none: that would be exit 3)
    and any build."""
    repo = _tree_with_real_tool(tmp_path, marker=False)
    cuda = repo / "ggml/src/ggml-cuda/ggml-cuda.cu"
    cuda.write_text(cuda.read_text().replace("case GGML_OP_RMS_NORM:", "case GGML_OP_FILL:"))
    with pytest.raises(UsageError) as refused:
        LlamaCppBackend().discover(repo, settings_with(tmp_path / "state", op="FILL"))
    assert "FILL cannot be timed" in str(refused.value) and "float c" in str(refused.value)
    assert refused.value.hint and "make_test_cases_perf()" in refused.value.hint


def test_an_op_without_perf_cases_is_timed_on_the_written_case(tmp_path: Path) -> None:
    """RMS_NORM has no perf case in the real tool: the target's harness (the same file in every
    tree) carries the written one in the perf set; SOFT_MAX's perf set is left as it is."""
    repo = _tree_with_real_tool(tmp_path, marker=True)
    settings = settings_with(tmp_path / "state", op="RMS_NORM")
    [target] = LlamaCppBackend().discover(repo, settings)
    tool = target.harness[harness.FILE].decode()
    written = "new test_rms_norm(GGML_TYPE_F32, {4096, 512, 1, 1}, false, 1e-6f, false)"
    assert f"test_cases.emplace_back({written});" in tool and target.data.harness
    [softmax] = LlamaCppBackend().discover(repo, settings_with(tmp_path / "state", op="SOFT_MAX"))
    # only the test-mode addition and the seeded inputs (two marked lines), no perf case added
    assert softmax.harness[harness.FILE].decode().count("kernelopt-llamacpp's harness") == 2
    assert tool.count("kernelopt-llamacpp's harness") == 3
    # --case names the case to time: nothing is written
    [named] = LlamaCppBackend().discover(repo, settings_with(tmp_path / "state", op="RMS_NORM",
                                                             case="type=f32,ne=[64,5,4,3]"))
    assert written not in named.harness[harness.FILE].decode()


def test_a_quantized_weights_type_is_matched_as_the_tool_prints_it(source: str) -> None:
    """ggml_type_name spells K-quants q4_K: the pin and -p must too; the fragments follow the
    order the tool prints its parameters."""
    from kernelopt_llamacpp import tbo, tbo_output

    node = perfcases.Shapes((4096, 32000, 1, 1), "GGML_TYPE_F32", (4096, 1, 1, 1), (32000, 1, 1, 1),
                          ("GGML_TYPE_Q4_K", None))
    written = perfcases.write(source, "MUL_MAT", node)
    assert written.expr.startswith("new test_mul_mat(GGML_TYPE_Q4_K, GGML_TYPE_F32, 32000, 1, 4096,")
    assert written.match[:3] == ("type_a=q4_K", "type_b=f32", "m=32000")
    printed = "type_a=q4_K,type_b=f32,m=32000,n=1,k=4096,bs=[1,1],nr=[1,1],per=[0,1,2,3],k_v=0,o=1"
    assert tbo_output.prints_all(printed, written.match)
    import re
    assert re.search(tbo.params_filter(written.match)[1], printed)


def test_structs_of_another_layout_are_not_written_by_the_matrix_product_rule(source: str) -> None:
    """test_out_prod builds (m, k) × (n, k) and test_mul_mat_id takes experts: neither is the
    (k, m) × (k, n) layout, so no case is written from a node for them."""
    node = perfcases.Shapes((4096, 512, 1, 1), "GGML_TYPE_F32", (4096, 64, 1, 1), (512, 64, 1, 1))
    for op in ("OUT_PROD", "MUL_MAT_ID"):
        timing = perfcases.timing(source, op, f"GGML_OP_{op}", node)
        assert timing.generated is None and "ggml's layout" in timing.why, (op, timing)
