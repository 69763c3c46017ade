"""The engine gate's pieces that run without a GPU: the random-weight GGUF and the plugin's switch."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelopt_llamacpp.backend import LlamaCppBackend
from llamacpp_fixture import settings_with


def test_random_gguf_parses_with_the_expected_tensors(tmp_path: Path):
    gguf = pytest.importorskip("gguf")
    from kernelopt_llamacpp.gguf_model import write_model

    out = write_model(tmp_path / "m.gguf", None, n_embd=32, n_layer=1, n_head=2, n_ff=64, n_vocab=50)
    reader = gguf.GGUFReader(str(out))
    names = {t.name: [int(x) for x in t.shape] for t in reader.tensors}
    assert names["token_embd.weight"] == [32, 50]
    assert names["blk.0.ffn_gate.weight"] == [32, 64] and "output.weight" in names
    assert reader.fields["general.architecture"].contents() == "llama"
    assert reader.fields["llama.block_count"].contents() == 1
    # f16 matrices (a real model's type), norms f32
    half = gguf.GGUFReader(str(write_model(tmp_path / "h.gguf", None, n_embd=32, n_layer=1,
                                           n_head=2, n_ff=64, n_vocab=50, f16=True)))
    types = {t.name: t.tensor_type.name for t in half.tensors}
    assert types["blk.0.attn_q.weight"] == "F16" and types["blk.0.attn_norm.weight"] == "F32"


def test_the_model_writer_makes_its_folder(tmp_path: Path):
    """kernelopt profile --e2e on a fresh state root: the build's last step writes the model to
    STATE/llamacpp/, which does not exist yet (on the H200 this step exited 1, 2026-12-03)."""
    pytest.importorskip("gguf")
    from kernelopt_llamacpp.gguf_model import main

    out = tmp_path / "fresh-state" / "llamacpp" / "m.gguf"
    assert main(["--out", str(out), "--n-vocab", "50", "--n-embd", "32", "--n-layer", "1"]) == 0
    assert out.is_file() and not out.with_name("m.gguf.part").exists()


def test_a_gpt2_style_gguf_has_the_tensors_llamas_gpt2_loader_creates(tmp_path: Path):
    """The names and ne of src/models/gpt2.cpp's create_tensor calls (a llama.cpp CPU build
    loaded such a file and ran its NORM nodes: docs/llamacpp.md)."""
    gguf = pytest.importorskip("gguf")
    from kernelopt_llamacpp.gguf_model import write_model

    out = write_model(tmp_path / "g.gguf", None, n_embd=32, n_layer=2, n_head=2, n_ff=128,
                      n_vocab=50, arch="gpt2")
    reader = gguf.GGUFReader(str(out))
    names = {t.name: [int(x) for x in t.shape] for t in reader.tensors}
    assert names["position_embd.weight"] == [32, 1024] and names["output_norm.bias"] == [32]
    assert names["blk.1.attn_qkv.weight"] == [32, 96] and names["blk.1.attn_qkv.bias"] == [96]
    assert names["blk.1.ffn_up.weight"] == [32, 128] and names["blk.1.ffn_down.weight"] == [128, 32]
    assert reader.fields["general.architecture"].contents() == "gpt2"
    assert reader.fields["gpt2.attention.layer_norm_epsilon"].contents() == pytest.approx(1e-5)
    with pytest.raises(ValueError, match="unknown architecture"):
        write_model(tmp_path / "x.gguf", None, n_vocab=50, arch="mamba")


def test_engine_only_when_asked(repo: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("KERNELOPT_NO_CUDA_LEDGER", "1")  # the commands of the tree alone, here
    backend = LlamaCppBackend()
    [plain] = backend.discover(repo, settings_with(tmp_path / "s", op="SOFT_MAX"))
    assert backend.engine(plain, None) is None  # type: ignore[arg-type]
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    [e2e] = backend.discover(repo, settings_with(tmp_path / "s", op="SOFT_MAX",
                                                      e2e_model=str(model)))
    from kernelopt_core.target import Tree

    tree = Tree("baseline", tmp_path / "src", tmp_path / "build")
    command = backend.engine(e2e, tree)
    assert command is not None and "kernelopt_llamacpp.engine" in command.argv
    assert str(model) in command.argv
    # attention must reach SOFT_MAX: flash attention off, in the build and in the model's run
    flag = command.argv.index("--flash-attn")
    assert command.argv[flag + 1] == "off"
    configure = backend.build(e2e, tree)[0].argv
    assert "-DGGML_CUDA_FA=OFF" in configure and "-DLLAMA_BUILD_TOOLS=ON" in configure
    assert "llama-bench" in backend.build(e2e, tree)[-1].argv


def test_a_vocab_that_is_not_gguf_is_a_usage_error(repo: Path, tmp_path: Path):
    pytest.importorskip("gguf")
    from kernelopt_core.errors import UsageError

    vocab = repo / "models" / "ggml-vocab-llama-spm.gguf"
    vocab.parent.mkdir(parents=True, exist_ok=True)
    vocab.write_bytes(b"not a gguf file at all")
    with pytest.raises(UsageError, match="cannot be read as a GGUF file"):
        LlamaCppBackend().discover(repo, settings_with(tmp_path / "s", op="SOFT_MAX", e2e=True))
