"""A model's graph from its GGUF header (model_nodes.py): the nodes llama.cpp builds, checked
node by node against the graph llama-eval-callback printed for the same model on the H200
(fixtures/h200-llama-model), and read from a real GGUF file."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from kernelopt_llamacpp import model_nodes, nodes

FIXTURES = Path(__file__).parent / "fixtures" / "h200-llama-model"
VIEWS = {"VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE"}  # compute nothing: not in the derived graph


def recorded_model_header() -> model_nodes.Header:
    """The recorded model's header: gguf_model --n-embd 4096 --n-ff 11008 --n-head 32
    --n-layer 4 --f16 with the llama-spm vocab (32000), as its GGUF lists its tensors."""
    tensors = {"token_embd.weight": ((4096, 32000), "F16"), "output.weight": ((4096, 32000), "F16"),
               "output_norm.weight": ((4096,), "F32")}
    for i in range(4):
        tensors |= {f"blk.{i}.{w}.weight": ((4096, 4096), "F16")
                    for w in ("attn_q", "attn_k", "attn_v", "attn_output")}
        tensors |= {f"blk.{i}.{w}.weight": ((4096,), "F32") for w in ("attn_norm", "ffn_norm")}
        tensors |= {f"blk.{i}.ffn_gate.weight": ((4096, 11008), "F16"),
                    f"blk.{i}.ffn_up.weight": ((4096, 11008), "F16"),
                    f"blk.{i}.ffn_down.weight": ((11008, 4096), "F16")}
    return model_nodes.Header("llama", 32, 32, 4, tensors)


def _key(node: nodes.Node) -> tuple:
    weight = [n if "weight" in n else "" for n in (node.src0_name, node.src1_name)]
    name = "" if node.op == "GET_ROWS" and "out_ids" in node.src1_name + node.name else node.name
    return (name, node.op, node.type, node.ne, node.src0, node.src1, node.src0_unpermuted,
            node.src0_permute, *weight)


def _recorded(phase: str) -> list[nodes.Node]:
    text = gzip.decompress((FIXTURES / f"nodes-{phase}.txt.gz").read_bytes()).decode()
    return [n for n in nodes.parse(text) if n.op not in VIEWS]


def test_the_header_gives_the_graph_llama_eval_callback_printed_node_by_node() -> None:
    """The recording ran `-c 1024`: a prompt of 606 tokens went as a batch of 512 (no logits)
    then one of 94 with 606 cached; and a prompt of 2 tokens. Every compute node, in order,
    with its shapes, the KV cache's permuted views and the weights' names."""
    header = recorded_model_header()
    prefill = (model_nodes.graph(header, 512, 512, context=1024, n_outputs=0)
               + model_nodes.graph(header, 94, 606, context=1024))
    assert [_key(n) for n in prefill] == [_key(n) for n in _recorded("prefill")]
    two = model_nodes.graph(header, 2, 2, context=1024)
    assert [_key(n) for n in two] == [_key(n) for n in _recorded("decode")]
    # so the heaviest node of each op, what an op is timed at, is the recorded one
    for op in ("SOFT_MAX", "MUL_MAT", "ROPE", "RMS_NORM", "SWIGLU", "CONT", "ADD"):
        mine = nodes.heaviest(two, op)
        theirs = nodes.heaviest(_recorded("decode"), op)
        assert mine is not None and theirs is not None and _key(mine) == _key(theirs), op


def test_the_phases_batches() -> None:
    assert model_nodes.phase_batch("prefill") == (512, 512)
    assert model_nodes.phase_batch("decode", 512) == (1, 513)  # one token after the prompt
    header = recorded_model_header()
    decode = model_nodes.graph(header, *model_nodes.phase_batch("decode"))
    softmax = nodes.heaviest(decode, "SOFT_MAX")
    assert softmax is not None and softmax.src0 == (768, 1, 32, 1)  # 513 cells padded to 256
    gemv = [n for n in decode if n.op == "MUL_MAT" and n.src0_name == "blk.0.attn_q.weight"]
    assert gemv[0].src1 == (4096, 1, 1, 1)  # decode's MUL_MAT is a matrix-vector product
    with pytest.raises(ValueError, match="unknown phase"):
        model_nodes.phase_batch("generate")


def test_a_real_gguf_file_is_read_and_other_layouts_are_refused(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    from kernelopt_llamacpp.gguf_model import write_model

    llama = write_model(tmp_path / "llama.gguf", None, n_vocab=300, n_head=4, f16=True)
    found = model_nodes.read_any(llama)  # what --nodes MODEL.gguf reads: its prefill of 512 tokens
    assert model_nodes.is_gguf(llama) and not model_nodes.is_gguf(Path(__file__))
    output = found[-1]  # the logits of the prompt's last token
    assert (output.op, output.src0_name, output.src0, output.src1) == (
        "MUL_MAT", "output.weight", (256, 300, 1, 1), (256, 1, 1, 1))
    kq = nodes.heaviest(found, "MUL_MAT")  # a small model's heaviest product is attention's
    assert kq is not None and (kq.name, kq.ne) == ("kq-0", (512, 512, 4, 1))
    ffn = next(n for n in found if n.src0_name == "blk.0.ffn_gate.weight")
    assert (ffn.src0, ffn.src1, ffn.ne) == ((256, 512, 1, 1), (256, 512, 1, 1), (512, 512, 1, 1))
    assert nodes.weight_types(str(llama))["blk.0.ffn_gate.weight"] == "GGML_TYPE_F16"
    decode = model_nodes.read_any(llama, "decode")
    assert nodes.heaviest(decode, "ROPE").src0 == (64, 4, 1, 1)  # type: ignore[union-attr]
    gpt2 = write_model(tmp_path / "gpt2.gguf", None, n_vocab=300, arch="gpt2")
    with pytest.raises(ValueError, match="not laid out as the llama family's.*llama-eval-callback"):
        model_nodes.read_any(gpt2)
    (tmp_path / "bad.gguf").write_bytes(b"GGUF\x03\x00\x00\x00garbage")
    with pytest.raises(ValueError, match="not a GGUF file"):
        model_nodes.read_any(tmp_path / "bad.gguf")


def test_an_op_is_timed_at_the_gguf_models_own_node(tmp_path: Path) -> None:
    """`run-llamacpp --op SOFT_MAX --nodes MODEL.gguf [--phase decode]`: the op's heaviest node
    of the model's graph read from its header, the case written at that shape, no profiling."""
    pytest.importorskip("gguf")
    from kernelopt_llamacpp import harness
    from kernelopt_llamacpp.backend import LlamaCppBackend
    from kernelopt_llamacpp.gguf_model import write_model
    from llamacpp_fixture import copy_fixture, settings_with

    repo = copy_fixture(tmp_path / "repo")
    tool = Path(__file__).parent / "fixtures" / "real-tbo" / "test-backend-ops.cpp.gz"
    (repo / harness.FILE).write_bytes(gzip.decompress(tool.read_bytes()))
    model = write_model(tmp_path / "m.gguf", None, n_vocab=300, n_head=4, f16=True)
    [prefill] = LlamaCppBackend().discover(
        repo, settings_with(tmp_path / "state", op="SOFT_MAX", nodes=str(model)))
    assert prefill.data.match == ("type=f32", "ne=[512,512,4,1]", "m_prec=f32")
    assert "(kq_soft_max-0 of m.gguf's prefill graph, read from its header;" in prefill.shape
    [decode] = LlamaCppBackend().discover(
        repo, settings_with(tmp_path / "state", op="SOFT_MAX", nodes=str(model), phase="decode"))
    assert decode.data.match == ("type=f32", "ne=[768,1,4,1]", "m_prec=f32")  # 513 cells, padded
    assert "m.gguf's decode graph" in decode.shape
