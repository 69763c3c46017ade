"""A model's graph nodes from its GGUF header, no run: ``--nodes MODEL.gguf``.

llama-eval-callback prints the nodes a model computes (nodes.py), but it needs a build of that
tool and the model run on the GPU. For the llama family (llama, mistral, qwen2, ...: separate
``attn_q``/``attn_k``/``attn_v``/``attn_output`` and ``ffn_gate``/``ffn_up``/``ffn_down``
matrices per block, RMSNorm, RoPE) the graph follows from the header: the tensors' shapes and
types and the head counts. ``graph`` writes the nodes llama.cpp's ``llm_build_llama`` builds
for one batch (flash attention off, as the engine gate runs the model), in the order and with
the shapes llama-eval-callback prints them; the views (VIEW, RESHAPE, PERMUTE) that compute
nothing are left out, except that the KV cache's permuted views are kept on the attention
products as ``src0_unpermuted``. Checked against the graph recorded on the H200 for the same
model (tests/fixtures/h200-llama-model).

Two phases (``phase_batch``): ``prefill``, a prompt of ``tokens`` (512, llama-bench's pp512);
``decode``, one token after that prompt. The KV cache's length in the attention is the used
cells padded to 256 (llama.cpp's KV cache padding), the cache itself ``context`` cells.
Architectures laid out otherwise (a fused ``attn_qkv``, experts, GPT-2's LayerNorm) are refused
with a ValueError that says to record the nodes with llama-eval-callback instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from kernelopt_llamacpp import nodes
from kernelopt_llamacpp.nodes import Node, permutation

KV_PAD = 256  # llama.cpp's KV cache: the cells an attention reads, padded to a multiple
PER_BLOCK = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
             "ffn_up", "ffn_down")


@attrs.frozen
class Header:
    """What the graph's shapes follow from: a GGUF's architecture, head counts and tensors
    (name -> (ggml ne, ggml type name: F16, Q4_K, ...))."""

    arch: str
    n_head: int
    n_head_kv: int
    n_layer: int
    tensors: Mapping[str, tuple[tuple[int, ...], str]]

    def ne(self, name: str) -> tuple[int, ...]:
        return self.tensors[name][0]


def read_header(path: Path) -> Header:
    """The GGUF's header (the gguf package: kernelopt-llamacpp[gguf]); ValueError when the file
    is not a GGUF or lacks what the graph needs."""
    try:
        from gguf import GGUFReader
    except ImportError as exc:
        raise ValueError("reading a GGUF needs the gguf package: pip install "
                         "'kernelopt-llamacpp[gguf]'") from exc
    try:
        reader = GGUFReader(str(path))
    except Exception as exc:  # the reader raises IndexError, ValueError... on a non-GGUF file
        raise ValueError(f"not a GGUF file ({type(exc).__name__}: {exc})") from exc

    def field(key: str) -> object:
        found = reader.fields.get(key)
        return None if found is None else found.contents()

    arch = str(field("general.architecture") or "")
    head, layers = field(f"{arch}.attention.head_count"), field(f"{arch}.block_count")
    if not isinstance(head, int) or not isinstance(layers, int):
        raise ValueError(f"no {arch}.attention.head_count or {arch}.block_count in its header")
    kv = field(f"{arch}.attention.head_count_kv")
    tensors = {t.name: (tuple(int(n) for n in t.shape), t.tensor_type.name) for t in reader.tensors}
    return Header(arch, head, kv if isinstance(kv, int) else head, layers, tensors)


def phase_batch(phase: str, tokens: int = 512) -> tuple[int, int]:
    """(tokens in the batch, tokens in the KV cache after it) of ``phase``."""
    if phase == "prefill":
        return tokens, tokens
    if phase == "decode":
        return 1, tokens + 1
    raise ValueError(f"unknown phase {phase!r}: prefill or decode")


def _pad(n: int, to: int = KV_PAD) -> int:
    return -(-n // to) * to


def _four(*shape: int) -> tuple[int, ...]:
    return (*shape, *(1,) * (4 - len(shape)))


def check_layout(header: Header) -> None:
    """ValueError unless the model's blocks are laid out as the llama family's."""
    missing = [f"blk.{i}.{w}.weight" for i in range(header.n_layer) for w in PER_BLOCK
               if f"blk.{i}.{w}.weight" not in header.tensors]
    if missing or "token_embd.weight" not in header.tensors:
        shown = ", ".join(missing[:3]) or "token_embd.weight"
        raise ValueError(f"its {header.arch or 'unnamed'} architecture is not laid out as the "
                         f"llama family's (no {shown}): its graph cannot be read from the "
                         "header; record it: llama-eval-callback -m MODEL.gguf -p PROMPT -ngl 99 "
                         "> FILE, then --nodes FILE")


def graph(header: Header, n_tokens: int, n_cached: int, context: int = 0,
          n_outputs: int = 1) -> list[Node]:
    """The compute nodes of one batch of ``n_tokens`` with ``n_cached`` tokens in a KV cache of
    ``context`` cells (0: the least padded size that holds them), ``n_outputs`` rows of logits
    (the last layer's FFN and the output run on those rows only, as llama.cpp does)."""
    check_layout(header)
    hn, hkv, T = header.n_head, header.n_head_kv, n_tokens
    embd = header.ne("token_embd.weight")[0]
    q_rows = header.ne("blk.0.attn_q.weight")[1]
    dim = q_rows // hn  # a head's size
    kv_width = header.ne("blk.0.attn_k.weight")[1]
    K = _pad(n_cached)
    cells = context or K
    vocab = header.ne("output.weight" if "output.weight" in header.tensors
                      else "token_embd.weight")[1]
    out: list[Node] = []

    def add(name: str, op: str, ne: tuple[int, ...], src0: tuple[int, ...],
            src1: tuple[int, ...] | None = None, src0_name: str = "", src1_name: str = "",
            dtype: str = "f32", unpermuted: tuple[int, ...] | None = None) -> None:
        axes = permutation(_four(*unpermuted), _four(*src0)) if unpermuted else None
        out.append(Node(name, op, dtype, _four(*ne), _four(*src0),
                        _four(*src1) if src1 is not None else None, src0_name, src1_name,
                        _four(*unpermuted) if unpermuted and axes else None, axes))

    def matmul(name: str, weight: str, n: int, inp: str) -> None:
        ne = header.ne(weight)
        add(name, "MUL_MAT", (ne[1], n), ne, (ne[0], n), weight, inp)

    def biased(name: str, layer: int, what: str, width: int, n: int) -> None:
        bias = f"blk.{layer}.{what}.bias"
        if bias in header.tensors:  # qwen2's q/k/v biases
            add(name, "ADD", (width, n), (width, n), (width,), name, bias)

    def norm(name: str, weight: str, n: int, after: str) -> None:
        add(f"norm{name}", "RMS_NORM", (embd, n), (embd, n), None, after)
        add(f"{weight.split('.')[-2] if weight.startswith('blk') else 'result_norm'}{name}",
            "MUL", (embd, n), (embd, n), (embd,), f"norm{name}", weight)

    add("embd", "GET_ROWS", (embd, T), header.ne("token_embd.weight"), (T,),
        "token_embd.weight", "inp_tokens")
    for i in range(header.n_layer):
        s = f"-{i}"
        last = i == header.n_layer - 1
        n = n_outputs if last else T  # the last block's rows after its attention
        norm(s, f"blk.{i}.attn_norm.weight", T, "embd" if i == 0 else f"l_out-{i - 1}")
        matmul(f"Qcur{s}", f"blk.{i}.attn_q.weight", T, f"attn_norm{s}")
        biased(f"Qcur{s}", i, "attn_q", q_rows, T)
        add(f"Qcur{s}", "ROPE", (dim, hn, T), (dim, hn, T), (T,), f"Qcur{s}", "inp_pos")
        for w, cur in (("attn_v", "Vcur"), ("attn_k", "Kcur")):
            matmul(f"{cur}{s}", f"blk.{i}.{w}.weight", T, f"attn_norm{s}")
            biased(f"{cur}{s}", i, w, kv_width, T)
        add(f"Kcur{s}", "ROPE", (dim, hkv, T), (dim, hkv, T), (T,), f"Kcur{s}", "inp_pos")
        add(f"cache_k_l{i} (view)", "SET_ROWS", (kv_width, cells), (kv_width, T), (T,),
            f"Kcur{s} (view)", "attn_inp_k_idxs", "f16")
        # the V cache is transposed without flash attention: one value a row
        add(f"cache_v_l{i} (reshaped) (view)", "SET_ROWS", (1, kv_width * cells),
            (1, kv_width * T), (kv_width * T,), f"Vcur{s} (reshaped) (reshaped)",
            "attn_inp_v_idxs", "f16")
        add(f"kq{s}", "MUL_MAT", (K, T, hn), (dim, K, hkv), (dim, T, hn),
            f"cache_k_l{i} (view) (permuted)", f"Qcur{s} (view) (permuted)",
            unpermuted=(dim, hkv, K))
        add(f"kq_soft_max{s}", "SOFT_MAX", (K, T, hn), (K, T, hn), (K, T), f"kq{s}",
            "attn_inp_kq_mask")
        add(f"kqv{s}", "MUL_MAT", (dim, T, hn), (K, dim, hkv), (K, T, hn),
            f"cache_v_l{i} (view) (permuted)", f"kq_soft_max{s}", unpermuted=(K, hkv, dim))
        add(f"kqv_out{s}", "CONT", (q_rows, T), (dim, hn, T), None, f"kqv{s} (permuted)",
            unpermuted=(dim, T, hn))
        matmul(f"attn_out{s}", f"blk.{i}.attn_output.weight", T, f"kqv_out{s}")
        residual = "embd" if i == 0 else f"l_out-{i - 1}"
        if last and n != T:  # only the rows whose logits are wanted go on
            # llama-eval-callback names these node_N, N counting the views too
            add(f"attn_out{s} (out_ids)", "GET_ROWS", (embd, n), (embd, T), (n,), f"attn_out{s}",
                "out_ids")
            add(f"{residual} (out_ids)", "GET_ROWS", (embd, n), (embd, T), (n,), residual,
                "out_ids")
        add(f"ffn_inp{s}", "ADD", (embd, n), (embd, n), (embd, n), f"attn_out{s}", residual)
        norm(s, f"blk.{i}.ffn_norm.weight", n, f"ffn_inp{s}")
        matmul(f"ffn_gate{s}", f"blk.{i}.ffn_gate.weight", n, f"ffn_norm{s}")
        matmul(f"ffn_up{s}", f"blk.{i}.ffn_up.weight", n, f"ffn_norm{s}")
        ff = header.ne(f"blk.{i}.ffn_gate.weight")[1]
        add(f"ffn_swiglu{s}", "SWIGLU", (ff, n), (ff, n), (ff, n), f"ffn_gate{s}", f"ffn_up{s}")
        matmul(f"ffn_out{s}", f"blk.{i}.ffn_down.weight", n, f"ffn_swiglu{s}")
        add(f"l_out{s}", "ADD", (embd, n), (embd, n), (embd, n), f"ffn_out{s}", f"ffn_inp{s}")
    norm("", "output_norm.weight", n_outputs, f"l_out-{header.n_layer - 1}")
    output = "output.weight" if "output.weight" in header.tensors else "token_embd.weight"
    add("result_output", "MUL_MAT", (vocab, n_outputs), header.ne(output), (embd, n_outputs),
        output, "result_norm")
    return out


def read(path: Path, phase: str = "prefill", tokens: int = 512) -> list[Node]:
    """The nodes of ``phase`` of the GGUF model at ``path`` (ValueError as read_header's, or
    when its layout is not the llama family's)."""
    n_tokens, n_cached = phase_batch(phase, tokens)
    return graph(read_header(path), n_tokens, n_cached)


def read_any(path: Path, phase: str = "prefill") -> list[Node]:
    """What ``--nodes`` names: llama-eval-callback's output (nodes.read), or a GGUF model whose
    graph follows from its header (``phase``'s batch); ValueError as those give."""
    return read(path, phase) if is_gguf(path) else nodes.read(path)


def is_gguf(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(4) == b"GGUF"
    except OSError:
        return False
