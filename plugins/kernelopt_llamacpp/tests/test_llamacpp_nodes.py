"""The shapes a real model dispatches (llama-eval-callback's nodes, recorded on the H200:
fixtures/h200-llama-model) as the shape an op is timed on: ``--nodes FILE``."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest
from kernelopt_llamacpp import harness, nodes, tbo
from kernelopt_llamacpp.backend import LlamaCppBackend
from llamacpp_fixture import copy_fixture, settings_with

from kernelopt_core.errors import UsageError
from kernelopt_core.target import Tree

FIXTURES = Path(__file__).parent / "fixtures"
REAL_TOOL = FIXTURES / "real-tbo" / "test-backend-ops.cpp.gz"


def _nodes(tmp_path: Path, phase: str = "prefill") -> Path:
    path = tmp_path / f"nodes-{phase}.txt"
    path.write_bytes(gzip.decompress((FIXTURES / "h200-llama-model" / f"nodes-{phase}.txt.gz").read_bytes()))
    return path


def test_the_recorded_llama_graph_parses(tmp_path: Path) -> None:
    found = nodes.read(_nodes(tmp_path))
    assert len(found) == 300
    assert nodes.ops(found) == ["ADD", "CONT", "GET_ROWS", "MUL", "MUL_MAT", "PERMUTE", "RESHAPE",
                                "RMS_NORM", "ROPE", "SET_ROWS", "SOFT_MAX", "SWIGLU", "VIEW"]
    softmax = nodes.heaviest(found, "SOFT_MAX")
    assert softmax is not None and (softmax.name, softmax.type) == ("kq_soft_max-0", "f32")
    assert (softmax.src0, softmax.src1, softmax.ne) == ((512, 512, 32, 1), (512, 512, 1, 1),
                                                       (512, 512, 32, 1))
    mul = nodes.heaviest(found, "MUL")  # the norm's weight, broadcast over 512 tokens
    assert mul is not None and (mul.src0, mul.src1) == ((4096, 512, 1, 1), (4096, 1, 1, 1))
    decode = nodes.heaviest(nodes.read(_nodes(tmp_path, "decode")), "ROPE")
    assert decode is not None and decode.src0 == (128, 32, 2, 1)
    with pytest.raises(ValueError, match="no `common_debug_cb_eval"):
        nodes.read(Path(__file__))


def _repo(tmp_path: Path) -> Path:
    repo = copy_fixture(tmp_path / "repo")
    (repo / harness.FILE).write_bytes(gzip.decompress(REAL_TOOL.read_bytes()))
    return repo


def test_an_op_is_timed_on_the_models_heaviest_node(tmp_path: Path) -> None:
    repo, recorded = _repo(tmp_path), _nodes(tmp_path)
    [target] = LlamaCppBackend().discover(
        repo, settings_with(tmp_path / "state", op="SOFT_MAX", nodes=str(recorded)))
    assert target.data.match == ("type=f32", "ne=[512,512,32,1]", "m_prec=f32")
    assert "model's node type=f32,ne=[512,512,32,1],m_prec=f32 (kq_soft_max-0" in target.shape
    # the written case is in the perf set although the tool has SOFT_MAX perf cases of its own
    tool = target.harness[harness.FILE].decode()
    assert "test_cases.emplace_back(new test_soft_max(GGML_TYPE_F32, {512, 512, 32, 1}," in tool
    argv = LlamaCppBackend().bench(target, Tree("baseline", repo, tmp_path / "b")).argv
    assert [argv[i + 1] for i, x in enumerate(argv) if x == "--match"] == list(target.data.match)
    [norm] = LlamaCppBackend().discover(
        repo, settings_with(tmp_path / "state", op="RMS_NORM", nodes=str(recorded)))
    assert norm.data.match == ("type=f32", "ne=[4096,512,1,1]")


def test_an_op_the_model_does_not_run_is_refused_with_the_models_ops(tmp_path: Path) -> None:
    repo, recorded = _repo(tmp_path), _nodes(tmp_path)
    with pytest.raises(UsageError) as refused:  # a Llama's MLP gate is SWIGLU, not SILU
        LlamaCppBackend().discover(repo, settings_with(tmp_path / "s", op="SILU", nodes=str(recorded)))
    assert "runs no SILU node" in str(refused.value) and "SWIGLU" in str(refused.value)
    with pytest.raises(UsageError, match="--nodes .*no `common_debug_cb_eval"):
        LlamaCppBackend().discover(repo, settings_with(tmp_path / "s", op="SILU",
                                                       nodes=str(repo / "CMakeLists.txt")))


def test_a_broadcast_binary_op_is_written_with_its_repeats(tmp_path: Path) -> None:
    from kernelopt_llamacpp import perfcases

    mul = nodes.heaviest(nodes.read(_nodes(tmp_path)), "MUL")
    assert mul is not None
    timing = perfcases.timing(gzip.decompress(REAL_TOOL.read_bytes()).decode(), "MUL", "GGML_OP_MUL",
                              nodes.case_node(mul))
    assert timing.generated == ("new test_bin_bcast(ggml_mul, GGML_TYPE_F32, {4096, 1, 1, 1}, "
                                "{1, 512, 1, 1}, 1, false, false, GGML_TYPE_COUNT)")
    assert timing.match == ("type=f32", "ne=[4096,1,1,1]", "nr=[1,512,1,1]")


def test_the_pin_takes_the_models_shape(tmp_path: Path) -> None:
    cases = tbo.parse_perf(
        "  SOFT_MAX(type=f32,ne=[4096,4096,5,1],mask=0):  100 runs -  283.00 us/run - 655360 kB/run\n"
        "  SOFT_MAX(type=f32,ne=[512,512,32,1],mask=0):  900 runs -   30.00 us/run - 65536 kB/run\n")
    assert tbo.choose(cases, "SOFT_MAX").params.startswith("type=f32,ne=[4096")  # type: ignore[union-attr]
    model = ("type=f32", "ne=[512,512,32,1]")
    chosen = tbo.choose(cases, "SOFT_MAX", match=model)
    assert chosen is not None and "ne=[512,512,32,1]" in chosen.params
    assert tbo.choose(cases, "SOFT_MAX", match=("ne=[1,2,3,4]",)) is None
    assert tbo.choose(cases, "SOFT_MAX", match=("ne=[512,512,32",)) is None  # whole values only
    assert tbo.chosen_by(True, model) != tbo.chosen_by(True)  # another pin
    # the bench wrapper end to end on a stand-in tool: the model's case is pinned and timed
    tool = tmp_path / "test-backend-ops"
    perf = ("  SOFT_MAX(type=f32,ne=[4096,4096,5,1],mask=0):  100 runs -  283.00 us/run - 655360 kB/run\n"
            "  SOFT_MAX(type=f32,ne=[512,512,32,1],mask=0):  900 runs -   30.00 us/run - 65536 kB/run")
    # the stand-in honours -p as the tool does (a regex searched in each case's params)
    tool.write_text(f"#!{sys.executable}\nimport re, sys\nlines = {perf!r}.splitlines()\n"
                    f"open({str(tmp_path / 'argv.txt')!r}, 'a').write(repr(sys.argv[1:]) + '\\n')\n"
                    "if '-p' in sys.argv:\n"
                    "    rx = sys.argv[sys.argv.index('-p') + 1]\n"
                    "    lines = [x for x in lines if re.search(rx, x.split('(', 1)[1].split(')')[0])]\n"
                    "print('\\n'.join(lines))\n"
                    "if sys.argv[1] == 'test': print('  SOFT_MAX(type=f32,ne=[512,512,32,1],mask=0): OK')\n")
    tool.chmod(0o755)
    pin = tmp_path / "pin.json"
    assert tbo.main(["bench", "--tool", str(tool), "--op", "SOFT_MAX", "--pin", str(pin),
                     "--harness", "--match", model[0], "--match", model[1]]) == 0
    saved = json.loads(pin.read_text())
    assert saved["case"] == "SOFT_MAX(type=f32,ne=[512,512,32,1],mask=0)" and saved["checkable"]
    # the op's perf list was asked for the node's case alone (-p), once
    calls = (tmp_path / "argv.txt").read_text().splitlines()
    assert sum("'-p'" in c for c in calls) == 1 and sum("'perf', '-o', 'SOFT_MAX'," in c for c in calls) == 1
    assert tbo.usable_pin(pin, "SOFT_MAX", None, True, model) is not None
    assert tbo.usable_pin(pin, "SOFT_MAX", None, True) is None  # without the shape: pinned again
    assert tbo.main(["bench", "--tool", str(tool), "--op", "SOFT_MAX", "--pin", str(pin),
                     "--match", "4096"]) == 2


def test_ops_whose_structs_take_sizes_are_written_by_ggmls_layout(tmp_path: Path) -> None:
    """MUL_MAT (test_mul_mat's m/n/k), GET_ROWS (n/m/r) and SET_ROWS (the result's shape and r)
    run in the model but take no source shape: their sizes are read from the node by ggml's
    layout; the weights' types from the model's GGUF where one is given."""
    repo, recorded = _repo(tmp_path), _nodes(tmp_path)
    cuda = repo / "ggml/src/ggml-cuda/ggml-cuda.cu"
    cuda.write_text(cuda.read_text().replace("case GGML_OP_RMS_NORM:", "case GGML_OP_GET_ROWS:")
                    .replace("case GGML_OP_SOFT_MAX:", "case GGML_OP_SET_ROWS:"))
    [rows] = LlamaCppBackend().discover(repo, settings_with(tmp_path / "s", op="GET_ROWS",
                                                            nodes=str(recorded)))
    assert rows.data.match == ("type=f32", "n=4096", "m=32000", "r=512", "be1=1", "be2=1")
    assert "new test_get_rows(GGML_TYPE_F32, 4096, 32000, 512, 1, 1, false, false, 0)" in \
        rows.harness[harness.FILE].decode()
    [kv] = LlamaCppBackend().discover(repo, settings_with(tmp_path / "s", op="SET_ROWS",
                                                          nodes=str(recorded)))
    assert kv.data.match == ("type_src=f32", "type_dst=f16", "type_idx=i64", "ne=[1,4194304,1,1]",
                             "nr23=[1,1]", "r=2097152")  # the V cache's transposed write
    # the model's heaviest MUL_MAT: the output projection of the last token, a GEMV
    [matmul] = LlamaCppBackend().discover(repo, settings_with(tmp_path / "s", op="MUL_MAT",
                                                              nodes=str(recorded)))
    assert matmul.data.match == ("type_a=f32", "type_b=f32", "m=32000", "n=1", "k=4096",
                                 "bs=[1,1]", "nr=[1,1]")
    gguf = pytest.importorskip("gguf")
    from kernelopt_llamacpp.gguf_model import write_model

    model = write_model(tmp_path / "m.gguf", None, n_embd=32, n_layer=1, n_head=2, n_ff=64,
                        n_vocab=50, f16=True)
    assert gguf.GGUFReader(str(model)) is not None
    [typed] = LlamaCppBackend().discover(repo, settings_with(tmp_path / "s", op="MUL_MAT",
                                                             nodes=str(recorded),
                                                             e2e_model=str(model)))
    assert typed.data.match[:2] == ("type_a=f16", "type_b=f32")  # output.weight is f16 there
    with pytest.raises(UsageError, match="--case and --nodes both name the case"):
        LlamaCppBackend().discover(repo, settings_with(tmp_path / "s", op="ADD", case="x",
                                                       nodes=str(recorded)))


def test_a_permuted_source_is_written_as_the_models_permute(tmp_path: Path) -> None:
    """kqv_out is CONT of `kqv-0 (permuted)`: the case starts from the tensor before the
    PERMUTE node and permutes it as the graph did. Without that, test_cont transposes its
    source and times `cpy_scalar_transpose`, a kernel the model never launches (H200,
    2026-12-04: bench/results/2026-12-04-h200-llamacpp-model)."""
    from kernelopt_llamacpp import perfcases

    cont = nodes.heaviest(nodes.read(_nodes(tmp_path)), "CONT")
    assert cont is not None and cont.src0_name == "kqv-0 (permuted)"
    assert (cont.src0_unpermuted, cont.src0_permute) == ((128, 512, 32, 1), (0, 2, 1, 3))
    source = gzip.decompress(REAL_TOOL.read_bytes()).decode()
    written = perfcases.write(source, "CONT", nodes.case_node(cont))
    assert written.expr == "new test_cont(GGML_TYPE_F32, {128, 512, 32, 1}, false, {0, 2, 1, 3})"
    assert written.match == ("type=f32", "ne=[128,512,32,1]", "permute=[0,2,1,3]")
    # the axes only where the shapes say them
    assert nodes.permutation((4, 8, 2, 1), (8, 4, 2, 1)) == (1, 0, 2, 3)
    assert nodes.permutation((4, 4, 2, 1), (4, 4, 2, 1)) is None  # which 4 went where: unknown
