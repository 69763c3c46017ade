"""A random-weight llama (or GPT-2-style: ``--arch gpt2``) GGUF for the engine gate and for
profiling a model (models cannot be downloaded here).

``python -m kernelopt_llamacpp.gguf_model --vocab models/ggml-vocab-llama-spm.gguf --out m.gguf``

The tokenizer (every ``tokenizer.*`` key) is copied from a vocab-only GGUF of the llama.cpp
tree (``models/ggml-vocab-llama-spm.gguf``); the weights are seeded random f32 tensors of a
small llama (2 layers, width 256 by default), so generation is deterministic for a given file
and exercises the same ops (RMS_NORM, ROPE, SOFT_MAX or flash attention, MUL_MAT, SILU/SWIGLU,
GET_ROWS) as a real model. Outputs are gibberish; what the gate compares is that the candidate's
greedy tokens equal the baseline's. Needs ``pip install kernelopt-llamacpp[gguf]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _copy_tokenizer(writer, vocab: Path) -> int:
    import gguf

    try:
        reader = gguf.GGUFReader(str(vocab))
    except (OSError, ValueError) as exc:  # the gguf package's own "not a GGUF file" and I/O
        raise ValueError(f"{vocab} cannot be read as a GGUF file: {exc}") from exc
    n_vocab = 0
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            values = field.contents()
            writer.add_array(name, values)
            if name == "tokenizer.ggml.tokens":
                n_vocab = len(values)
        else:
            writer.add_key_value(name, field.contents(), vtype)
    if not n_vocab:
        raise ValueError(f"{vocab} has no tokenizer.ggml.tokens: not a vocab GGUF")
    return n_vocab


def write_model(out: Path, vocab: Path | None, *, n_embd: int = 256, n_layer: int = 2, n_head: int = 4,
                n_ff: int = 512, n_vocab: int = 0, seed: int = 0, f16: bool = False,
                arch: str = "llama") -> Path:
    """A random-weight Llama-style GGUF. ``f16``: the matrices in f16 (a real model's usual
    type, so MUL_MAT takes the f16 paths: cuBLAS for prompts, mmvf for generation); the norm
    weights stay f32 as in converted models."""
    import gguf
    import numpy as np

    if arch not in ("llama", "gpt2"):
        raise ValueError(f"unknown architecture {arch!r}: llama or gpt2")
    if arch == "gpt2":
        return _write_gpt2(out, vocab, n_embd=n_embd, n_layer=n_layer, n_head=n_head, n_ff=n_ff,
                           n_vocab=n_vocab, seed=seed, f16=f16)
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_name("kernelopt random llama")
    if vocab is not None:
        n_vocab = _copy_tokenizer(writer, vocab)
    elif not n_vocab:
        raise ValueError("give --vocab (a vocab-only GGUF) or --n-vocab")
    writer.add_context_length(512)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if f16 else gguf.LlamaFileType.ALL_F32)
    matrix_type = np.float16 if f16 else np.float32

    def tensor(name: str, *shape: int, scale: float = 0.02) -> None:
        # numpy shape is (rows, cols): GGUF's ne is reversed, so (n_out, n_in) gives ne=[n_in, n_out]
        writer.add_tensor(name, (rng.standard_normal(shape) * scale).astype(matrix_type))

    tensor("token_embd.weight", n_vocab, n_embd)
    for i in range(n_layer):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        for w in ("attn_q", "attn_k", "attn_v", "attn_output"):
            tensor(f"blk.{i}.{w}.weight", n_embd, n_embd)
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        tensor(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
        tensor(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        tensor(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    writer.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    tensor("output.weight", n_vocab, n_embd)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def _write_gpt2(out: Path, vocab: Path | None, *, n_embd: int, n_layer: int, n_head: int,
                n_ff: int, n_vocab: int, seed: int, f16: bool) -> Path:
    """A GPT-2-style model (llama.cpp's ``gpt2`` architecture: learned positions, LayerNorm
    with bias, fused QKV, GELU MLP), whose norms are NORM, not RMS_NORM."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(out), "gpt2")
    writer.add_name("kernelopt random gpt2")
    if vocab is not None:
        n_vocab = _copy_tokenizer(writer, vocab)
    elif not n_vocab:
        raise ValueError("give --vocab (a vocab-only GGUF) or --n-vocab")
    n_ctx = 1024
    writer.add_context_length(n_ctx)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_layer_norm_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if f16 else gguf.LlamaFileType.ALL_F32)
    matrix_type = np.float16 if f16 else np.float32

    def tensor(name: str, *shape: int, scale: float = 0.02) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * scale).astype(matrix_type))

    def norm(name: str) -> None:  # LayerNorm: weight 1, bias 0, f32 as in converted models
        writer.add_tensor(f"{name}.weight", np.ones(n_embd, dtype=np.float32))
        writer.add_tensor(f"{name}.bias", np.zeros(n_embd, dtype=np.float32))

    def bias(name: str, n: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(n) * 0.02).astype(np.float32))

    tensor("token_embd.weight", n_vocab, n_embd)
    tensor("position_embd.weight", n_ctx, n_embd)
    for i in range(n_layer):
        norm(f"blk.{i}.attn_norm")
        tensor(f"blk.{i}.attn_qkv.weight", 3 * n_embd, n_embd)
        bias(f"blk.{i}.attn_qkv.bias", 3 * n_embd)
        tensor(f"blk.{i}.attn_output.weight", n_embd, n_embd)
        bias(f"blk.{i}.attn_output.bias", n_embd)
        norm(f"blk.{i}.ffn_norm")
        tensor(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        bias(f"blk.{i}.ffn_up.bias", n_ff)
        tensor(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
        bias(f"blk.{i}.ffn_down.bias", n_embd)
    norm("output_norm")
    tensor("output.weight", n_vocab, n_embd)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_llamacpp.gguf_model")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--vocab", type=Path, help="a vocab-only GGUF (models/ggml-vocab-llama-spm.gguf)")
    parser.add_argument("--n-vocab", type=int, default=0, help="without --vocab: no tokenizer (tests)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-embd", type=int, default=256,
                        help="width (an op's path can depend on it: rms_norm takes another "
                             "launch from 1024 columns on)")
    parser.add_argument("--n-ff", type=int, default=0, help="feed-forward width (default 2 × width)")
    parser.add_argument("--n-head", type=int, default=0, help="heads (default width / 64, at least 4)")
    parser.add_argument("--n-layer", type=int, default=2, help="blocks (default 2)")
    parser.add_argument("--f16", action="store_true", help="matrices in f16 (default f32)")
    parser.add_argument("--arch", default="llama", choices=("llama", "gpt2"),
                        help="llama (RMS_NORM, RoPE, SwiGLU) or gpt2 (NORM, learned positions, "
                             "GELU); gpt2 wants models/ggml-vocab-gpt-2.gguf as --vocab")
    a = parser.parse_args(argv)
    partial = a.out.with_name(a.out.name + ".part")  # never a half-written model under its name
    # a fresh state root has no llamacpp/ yet (kernelopt profile --e2e writes its model there)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        write_model(partial, a.vocab, n_vocab=a.n_vocab, seed=a.seed, n_embd=a.n_embd,
                    n_ff=a.n_ff or 2 * a.n_embd, n_head=a.n_head or max(4, a.n_embd // 64),
                    n_layer=a.n_layer, f16=a.f16, arch=a.arch)
    except ValueError as exc:
        print(f"kernelopt-llamacpp: {exc}", file=sys.stderr)
        return 2
    partial.replace(a.out)
    print(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
