"""A real model's kernels, recorded on the H200 under ncu (fixtures/h200-llama-model), mapped to
their ggml-cuda sources and ops (dispatch.py) with the real tree's sources: the ranking a user
gets for prefill and decode."""

from __future__ import annotations

import gzip
import tarfile
from pathlib import Path

import pytest
from kernelopt_llamacpp import dispatch

from kernelopt_core.api import ncu_kernels

pytestmark = pytest.mark.slow  # the real ggml-cuda.cu's op table: ~3 s to read

RECORDED = Path(__file__).parent / "fixtures" / "h200-llama-model"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> dispatch.Sources:
    root = tmp_path_factory.mktemp("llama.cpp")
    with tarfile.open(RECORDED / "ggml-cuda-src.tgz") as sources:
        sources.extractall(root, filter="data")
    return dispatch.Sources(root)


def _ranking(tree: dispatch.Sources, phase: str) -> list[dispatch.Row]:
    text = gzip.decompress((RECORDED / f"ncu-{phase}.csv.gz").read_bytes()).decode()
    kernels = ncu_kernels(text)
    return dispatch.ranking([(k.name, k.launches, k.total_us) for k in kernels], tree)


def test_prefill_ranking_adds_up_and_names_the_library_and_each_ops_kernel(tree: dispatch.Sources) -> None:
    rows = _ranking(tree, "prefill")
    assert sum(r.share for r in rows) == pytest.approx(1.0)
    assert sum(r.launches for r in rows) == 278  # every launch of pp512 and its warm-up
    ops = {op: share for op, _, share in dispatch.by_op(rows)}
    # the f16 GEMMs of a 512-token prompt go to cuBLAS (not edited): the largest share
    assert ops["cuBLAS"] == pytest.approx(0.4648, abs=1e-3)
    assert ops["SOFT_MAX"] == pytest.approx(0.0955, abs=1e-3)
    by_function = {r.attribution.kernel: r.attribution for r in rows}
    # norm.cu serves NORM too: ggml_cuda_op_rms_norm's calls reach rms_norm_f32, NORM's do not
    norm = by_function["rms_norm_f32"]
    assert (norm.kind, norm.file, norm.ops) == ("editable", "ggml/src/ggml-cuda/norm.cu", ("RMS_NORM",))
    # template kernels: the ops that pass their op argument (&op_add: ADD's and ADD1's
    # functions both do), then the one whose calls reach the gated kernel (SWIGLU, not SILU)
    assert by_function["k_bin_bcast"].ops == ("ADD", "ADD1")
    assert by_function["unary_gated_op_kernel"].ops == ("SWIGLU",)
    # convert.cu's kernels (the f16 casts around cuBLAS) are editable, of no op of their own
    convert = by_function["convert_unary_cont_vec4"]
    assert (convert.kind, convert.ops) == ("editable", ())
    assert ops["(convert.cu)"] == pytest.approx(0.1432, abs=1e-3)
    assert {a.library for a in by_function.values() if a.kind == "library"} == {"cuBLAS"}


def test_decode_ranking_is_the_matrix_vector_kernels(tree: dispatch.Sources) -> None:
    rows = _ranking(tree, "decode")
    assert sum(r.share for r in rows) == pytest.approx(1.0)
    ops = dispatch.by_op(rows)
    assert ops[0][0] == "MUL_MAT" and ops[0][2] == pytest.approx(0.8673, abs=1e-3)
    mmvf = [r for r in rows if r.attribution.kernel == "mul_mat_vec_f"]
    assert mmvf and all(r.attribution.file == "ggml/src/ggml-cuda/mmvf.cu" for r in mmvf)
    assert all(r.attribution.kind == "editable" for r in rows)  # no library kernel in decode


def test_kernel_names_as_profilers_print_them() -> None:
    assert dispatch.function_name("void rms_norm_f32<1024, 1, 0, 0>(const float *, float *)") \
        == "rms_norm_f32"
    assert dispatch.function_name("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>(T1::Params)") \
        == "Kernel2"
    assert dispatch.function_name("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT") \
        == "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT"
    assert dispatch.function_name("void k<(int)1>(float *)") == "k"


def test_the_whole_model_is_a_target_to_profile_in_two_phases(tmp_path: Path) -> None:
    """No --op and a model: the model target (nothing to edit), llama-bench's prompt and
    generation as the phases `kernelopt profile --engine` ranks apart; no op and no model: the
    refusal says how to find the ops worth a run."""
    from kernelopt_llamacpp.backend import LlamaCppBackend
    from llamacpp_fixture import copy_fixture, settings_with

    from kernelopt_core.errors import UsageError
    from kernelopt_core.target import Tree

    repo = copy_fixture(tmp_path / "repo")
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    [target] = LlamaCppBackend().discover(repo, settings_with(tmp_path / "s", e2e_model=str(model)))
    assert (target.name, target.editable) == ("model", ())
    tree = Tree("baseline", repo, tmp_path / "build")
    assert LlamaCppBackend().engine(target, tree) is not None  # the model: an engine to run
    phases = LlamaCppBackend().profile_phases(target, tree)
    assert phases is not None and list(phases) == ["prefill", "decode"]
    prompt, generation = phases["prefill"].argv, phases["decode"].argv
    assert prompt[0] == str(tmp_path / "build" / "bin" / "llama-bench")
    assert prompt[prompt.index("-p") + 1] == "512" and prompt[prompt.index("-n") + 1] == "0"
    assert generation[generation.index("-p") + 1] == "0" and generation[generation.index("-n") + 1] == "16"
    assert prompt[prompt.index("-m") + 1] == str(model) and prompt[prompt.index("-fa") + 1] == "off"
    build = LlamaCppBackend().build(target, tree)
    assert "llama-bench" in build[-1].argv and "test-backend-ops" not in build[-1].argv
    with pytest.raises(UsageError) as refused:
        LlamaCppBackend().discover(repo, settings_with(tmp_path / "s"))
    assert "--op" in str(refused.value) and "kernelopt profile" in (refused.value.hint or "")
    # --e2e: the model to profile is written by the build (once per state root), not by
    # discover, so a run that is refused (nothing to edit) writes nothing
    with pytest.raises(UsageError, match="--e2e needs .*ggml-vocab-llama-spm.gguf"):
        LlamaCppBackend().discover(repo, settings_with(tmp_path / "s", e2e=True))
    (repo / "models").mkdir()
    (repo / "models" / "ggml-vocab-llama-spm.gguf").write_bytes(b"GGUF")
    [generated] = LlamaCppBackend().discover(repo, settings_with(tmp_path / "s", e2e=True))
    written = tmp_path / "s" / "llamacpp" / "random-llama-4096x4-f16.gguf"
    assert generated.data.e2e_model == str(written.resolve()) and not written.exists()
    writer = LlamaCppBackend().build(generated, tree)[-1].argv
    assert writer[1:3] == ("-m", "kernelopt_llamacpp.gguf_model") and "--f16" in writer
    assert writer[writer.index("--n-embd") + 1] == "4096" and writer[-1] == str(written.resolve())


def test_each_profiled_kernel_is_labelled_with_its_op_or_library(tree: dispatch.Sources) -> None:
    from kernelopt_llamacpp.backend import LlamaCppBackend

    from kernelopt_core.target import Target, Tree

    text = gzip.decompress((RECORDED / "ncu-prefill.csv.gz").read_bytes()).decode()
    names = [k.name for k in ncu_kernels(text)]
    target = Target("llamacpp", "model", tree.repo, ())
    labels = LlamaCppBackend().kernel_labels(target, Tree("baseline", tree.repo, tree.repo), names)
    by_function = {dispatch.function_name(n): label for n, label in labels.items()}
    assert by_function["rms_norm_f32"] == "RMS_NORM · norm.cu"
    assert by_function["unary_gated_op_kernel"] == "SWIGLU · unary.cu"
    assert by_function["convert_unary_cont_vec4"] == "convert.cu (no op)"
    assert by_function["Kernel2"] == "cuBLAS (library)"
