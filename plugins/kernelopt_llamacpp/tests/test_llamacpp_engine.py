"""The engine gate's pieces that run without a GPU: the random-weight GGUF and the plugin's switch."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelopt_llamacpp.plugin import LlamaCppBackend

from kernelopt_core.settings import Settings


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


def test_engine_only_when_asked(repo: Path, tmp_path: Path):
    backend = LlamaCppBackend()
    [plain] = backend.discover(repo, Settings(state_root=tmp_path / "s", options={"op": "SOFT_MAX"}))
    assert backend.engine(plain, None) is None  # type: ignore[arg-type]
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    [e2e] = backend.discover(repo, Settings(state_root=tmp_path / "s",
                                            options={"op": "SOFT_MAX", "e2e_model": str(model)}))
    assert e2e.has_engine
    from kernelopt_core.target import Tree

    tree = Tree("baseline", tmp_path / "src", tmp_path / "build")
    command = backend.engine(e2e, tree)
    assert command is not None and "kernelopt_llamacpp.engine" in command.argv
    assert str(model) in command.argv
    assert "llama-bench" in backend.build(e2e, tree)[-1].argv
