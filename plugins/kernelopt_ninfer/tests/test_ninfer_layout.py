"""The layout and the op table, on a tree with NInfer's real file and target names."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelopt_ninfer import cmakelists, layout
from kernelopt_ninfer.backend import NInferBackend
from kernelopt_ninfer.options import NInferOptions

from kernelopt_core.api import Settings, Tree, UsageError


def settings_with(tmp_path: Path, **options: object) -> Settings:
    return Settings(state_root=tmp_path / "state", tables={"ninfer": NInferOptions(**options)})


def test_detect_scores_the_layout(upstream_tree: Path, fixture_root: Path, tmp_path: Path) -> None:
    backend = NInferBackend()
    assert backend.detect(upstream_tree) >= 0.9
    assert backend.detect(fixture_root) >= 0.9
    assert backend.detect(tmp_path) == 0.0  # nothing there
    (tmp_path / "CMakeLists.txt").write_text("project(x)\n")
    assert backend.detect(tmp_path) == 0.0  # a CMake project, no include/ninfer/ops
    (tmp_path / "include" / "ninfer" / "ops").mkdir(parents=True)
    assert 0.0 < backend.detect(tmp_path) < 0.5  # the contract folder alone: barely


@pytest.mark.parametrize("later", [False, True], ids=["foreach-in-tests", "tests.cmake-include"])
def test_op_table_from_real_names(tmp_path: Path, make_upstream, later: bool) -> None:
    root = make_upstream(tmp_path / "ninfer", later_layout=later)
    table = layout.op_table(root)
    assert sorted(table) == ["gated_delta_rule", "gdn_layer", "gqa_attention", "residual_add",
                             "rmsnorm", "silu_mul"]  # ninfer_device_test is no op test

    rms = table["rmsnorm"]
    assert (rms.test, rms.bench) == ("ninfer_rmsnorm_test", "ninfer_rmsnorm_bench")
    assert rms.editable == ("src/ops/launcher/rmsnorm.h", "src/ops/launcher/rmsnorm.cu",
                            "src/ops/kernel/rmsnorm.cuh")  # not rmsnorm_rope.cu
    assert rms.wrappers == ("src/ops/wrapper/rmsnorm.cpp",)
    assert set(rms.context) == {"src/ops/wrapper/rmsnorm.cpp", "src/ops/common/math.cuh",
                                "src/ops/common/warp.cuh", "src/ops/common/math.h",
                                "src/ops/common/device_sm_count.h"}
    assert rms.contract == ("include/ninfer/ops/rmsnorm.h", "include/ninfer/ops/gated_rmsnorm.h",
                            "tests/ops/test_rmsnorm.cpp", "bench/ops/rmsnorm_bench.cu")

    # silu_mul: the wrapper's launcher and kernel are named silu_and_mul
    silu = table["silu_mul"]
    assert silu.editable == ("src/ops/launcher/silu_and_mul.h", "src/ops/launcher/silu_and_mul.cu",
                             "src/ops/kernel/silu_and_mul.cuh")
    assert silu.wrappers == ("src/ops/wrapper/silu_mul.cpp",)

    # one launcher header, two .cu implementing it; a kernel's own include comes along
    gdn = table["gated_delta_rule"]
    assert gdn.launchers == ("src/ops/launcher/gated_delta_rule.h",
                             "src/ops/launcher/gated_delta_rule_chunked.cu",
                             "src/ops/launcher/gated_delta_rule_recurrent.cu")
    assert set(gdn.kernels) == {"src/ops/kernel/gdn_chunk_output.cuh",
                                "src/ops/kernel/gdn_common.cuh",
                                "src/ops/kernel/gated_delta_rule_recurrent.cuh"}
    gqa = table["gqa_attention"]
    assert "src/ops/kernel/gqa_attention_decode_bf16.cuh" in gqa.editable
    assert "src/ops/launcher/gqa_attention_prefill.cu" in gqa.editable

    # no wrapper of its own: the launcher of the op's name, the kernel it includes
    add = table["residual_add"]
    assert add.wrappers == ()
    assert add.editable == ("src/ops/launcher/residual_add.cu", "src/ops/kernel/residual_add.cuh")

    # a bench with no test cannot be optimized, and says why
    assert table["gdn_layer"].test is None
    assert "no test program" in (layout.why_not(table["gdn_layer"]) or "")
    assert layout.optimizable(table) == ["gated_delta_rule", "gqa_attention", "residual_add",
                                         "rmsnorm", "silu_mul"]


def test_a_wrapper_serving_another_op_is_found_by_its_includes(upstream_tree: Path) -> None:
    # gated_rmsnorm has its own test but no wrapper of its name: rmsnorm.cpp includes its header
    (upstream_tree / "tests" / "ops" / "test_gated_rmsnorm.cpp").write_text(
        '#include "ninfer/ops/gated_rmsnorm.h"\n')
    cmake = upstream_tree / "tests" / "CMakeLists.txt"
    cmake.write_text(cmake.read_text().replace("  rmsnorm\n", "  rmsnorm\n  gated_rmsnorm\n"))
    op = layout.op_table(upstream_tree)["gated_rmsnorm"]
    assert op.wrappers == ("src/ops/wrapper/rmsnorm.cpp",)
    assert op.editable == layout.op_table(upstream_tree)["rmsnorm"].editable


def test_the_fixture_table_matches_its_layout(fixture_root: Path) -> None:
    table = layout.op_table(fixture_root)
    assert layout.optimizable(table) == ["residual_add", "rmsnorm", "silu_mul"]
    assert table["silu_mul"].kernels == ("src/ops/kernel/silu_and_mul.cuh",)
    # residual_add's wrapper includes a shared elementwise launcher, not one of its own name
    assert "src/ops/launcher/elementwise.cu" in table["residual_add"].editable


def test_cmake_reader_expands_loops_variables_and_comments(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "CMakeLists.txt").write_text(
        "set(a x y) # comment (with a paren\n"
        "list(APPEND a z)\n"
        "#[[ ninfer_add_test(ninfer_commented_test SOURCES no.cpp) ]]\n"
        "foreach(op IN ITEMS p ${a})\n"
        '  ninfer_add_test("ninfer_${op}_test" SOURCES ops/test_${op}.cpp LIBRARIES l)\n'
        "endforeach()\n"
        "foreach(op q r)\n  ninfer_add_test(ninfer_${op}_test SOURCES ops/t.cpp)\nendforeach()\n")
    tests, benches = cmakelists.registrations(tmp_path)
    assert [r.target for r in tests] == ["ninfer_p_test", "ninfer_x_test", "ninfer_y_test",
                                         "ninfer_z_test", "ninfer_q_test", "ninfer_r_test"]
    assert tests[1].sources == ("tests/ops/test_x.cpp",) and tests[1].line == 5
    assert benches == []


def test_discover_overrides_and_refusals(upstream_tree: Path, tmp_path: Path,
                                         fake_tools, only_path) -> None:
    backend = NInferBackend()
    with pytest.raises(UsageError) as unknown:
        backend.discover(upstream_tree, settings_with(tmp_path, ninfer_op="nope"))
    assert "unknown op 'nope'" in str(unknown.value) and "rmsnorm" in (unknown.value.hint or "")
    with pytest.raises(UsageError) as missing:
        backend.discover(upstream_tree, settings_with(tmp_path))
    assert "run-ninfer --op OP" in str(missing.value) and "silu_mul" in (missing.value.hint or "")
    with pytest.raises(UsageError, match="not a file inside"):
        backend.discover(upstream_tree, settings_with(tmp_path, ninfer_op="rmsnorm",
                                                      editable=("../elsewhere.cu",)))
    with pytest.raises(UsageError, match="is contract"):  # the test judges; never editable
        backend.discover(upstream_tree, settings_with(tmp_path, ninfer_op="rmsnorm",
                                                      editable=("tests/ops/test_rmsnorm.cpp",)))
    # a GPU this tree accepts: the override is the target's editable set
    only_path(fake_tools(nvcc="13.1", gpu="NVIDIA GeForce RTX 5090, 12.0"))
    (target,) = backend.discover(upstream_tree, settings_with(
        tmp_path, ninfer_op="rmsnorm", editable=("src/ops/kernel/rmsnorm.cuh",),
        context=("src/ops/wrapper/rmsnorm.cpp",)))
    assert target.editable == ("src/ops/kernel/rmsnorm.cuh",)
    assert target.context == ("src/ops/wrapper/rmsnorm.cpp",)
    assert target.data.arch == "120a" and target.device == "cuda"
    assert "editable files given by the user" in target.preface


def test_the_engine_gate_needs_an_artifact_and_a_ninfer_bench(upstream_tree: Path, fixture_root: Path,
                                                             tmp_path: Path, fake_tools,
                                                             only_path) -> None:
    only_path(fake_tools(nvcc="13.1", gpu="NVIDIA GeForce RTX 5090, 12.0"))
    backend = NInferBackend()
    artifact = tmp_path / "qwen.ninfer"
    with pytest.raises(UsageError, match="no such file"):
        backend.discover(upstream_tree, settings_with(tmp_path, ninfer_op="rmsnorm",
                                                      artifact=str(artifact)))
    artifact.write_text("weights")
    (target,) = backend.discover(upstream_tree, settings_with(tmp_path, ninfer_op="rmsnorm",
                                                              artifact=str(artifact)))
    assert "engine gate: ninfer_bench --weights" in target.preface
    build = tmp_path / "build"
    tree = Tree("baseline", upstream_tree, build)
    assert backend.engine(target, tree) is not None  # the artifact given: an engine to run
    [*_, compile_] = backend.build(target, tree)
    assert compile_.argv[-3:] == ("ninfer_rmsnorm_test", "ninfer_rmsnorm_bench", "ninfer_bench")
    configure = (build / "kernelopt-configure.txt").read_text()
    assert "-DCMAKE_CUDA_ARCHITECTURES=120a" in configure and "-DNINFER_BUILD_APPS=OFF" in configure
    engine = backend.engine(target, tree)
    assert engine is not None and engine.argv[-2:] == ("--artifact", str(artifact))
    with pytest.raises(UsageError, match="builds no ninfer_bench"):  # the fixture has none
        backend.discover(fixture_root, settings_with(tmp_path, ninfer_op="rmsnorm",
                                                     artifact=str(artifact)))
