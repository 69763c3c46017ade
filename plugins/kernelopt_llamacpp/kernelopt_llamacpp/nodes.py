"""A model's graph nodes as llama.cpp's own ``llama-eval-callback`` prints them: the op each node
computes, its result's type and shape, and its sources' shapes. One line per node::

    common_debug_cb_eval:  kq_soft_max-0 = (f32)  SOFT_MAX(kq-0{512, 512, 32, 1}, mask{512, 512, 1,
    1}}) = {512, 512, 32, 1}           (one line)

``kernelopt run-llamacpp --op OP --nodes FILE`` times OP on the heaviest node of that op the
model runs (its first source's shape, its result's type): the shape the model dispatches, not
test-backend-ops' perf list. Record the file with
``llama-eval-callback -m MODEL.gguf -p PROMPT -ngl 99 > FILE`` (bench/h200_llamacpp_model.sh).
"""

from __future__ import annotations

import functools
import itertools
import re
from pathlib import Path

import attrs

from kernelopt_llamacpp import perfcases

_NODE = re.compile(
    r"^common_debug_cb_eval:\s+(?P<name>.+?) = \((?P<type>\w+)\)\s+(?P<op>[A-Z0-9_]+)\("
    r"(?P<src0>.*?)\{(?P<ne0>[\d, ]+)\}, (?:(?P<src1>.*?)\{(?P<ne1>[\d, ]+)\})?\}\) = "
    r"\{(?P<ne>[\d, ]+)\}\s*$")


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split(","))


@attrs.frozen
class Node:
    name: str
    op: str
    type: str  # the result's ggml type name: f32, f16, ...
    ne: tuple[int, ...]  # the result's shape
    src0: tuple[int, ...]
    src1: tuple[int, ...] | None = None
    src0_name: str = ""  # a model's weight is named as in its GGUF: blk.0.attn_q.weight
    src1_name: str = ""
    # the first source is a PERMUTE node's result (`kqv-0 (permuted)`): that node's source
    # shape and ggml_permute's axes, where the shapes say them unambiguously
    src0_unpermuted: tuple[int, ...] | None = None
    src0_permute: tuple[int, ...] | None = None

    @property
    def elements(self) -> int:
        """Elements read and written (the sources' and the result's): the node's weight."""
        total = 0
        for shape in (self.ne, self.src0, self.src1 or ()):
            size = 1
            for n in shape:
                size *= n
            total += size if shape else 0
        return total


def parse(text: str) -> list[Node]:
    out: list[Node] = []
    permutes: dict[tuple[str, tuple[int, ...]], Node] = {}  # the latest PERMUTE by name, shape
    for line in text.splitlines():
        m = _NODE.match(line.strip("\r"))
        if m:
            node = Node(m["name"].strip(), m["op"], m["type"], _shape(m["ne"]), _shape(m["ne0"]),
                        _shape(m["ne1"]) if m["ne1"] else None, m["src0"].strip(),
                        (m["src1"] or "").strip())
            made = permutes.get((node.src0_name, node.src0))
            axes = permutation(made.src0, made.ne) if made is not None else None
            if made is not None and axes is not None:
                node = attrs.evolve(node, src0_unpermuted=made.src0, src0_permute=axes)
            if node.op == "PERMUTE":
                permutes[(node.name, node.ne)] = node
            out.append(node)
    return out


def permutation(source: tuple[int, ...], result: tuple[int, ...]) -> tuple[int, ...] | None:
    """ggml_permute's axes that make ``result`` of ``source`` (``result[axes[i]] ==
    source[i]``), or None when the shapes allow none or more than one (two axes of one size:
    which went where is not printed)."""
    found = [axes for axes in itertools.permutations(range(len(source)))
             if all(result[a] == n for a, n in zip(axes, source, strict=True))]
    return found[0] if len(found) == 1 else None


def read(path: Path) -> list[Node]:
    """The nodes in ``path``; ValueError when it holds none (not llama-eval-callback's output).
    A GGUF model's nodes: model_nodes.read_any."""
    found = parse(path.read_text(encoding="utf-8", errors="replace"))
    if not found:
        raise ValueError("no `common_debug_cb_eval: NAME = (TYPE) OP(...)` line in it")
    return found


def heaviest(found: list[Node], op: str) -> Node | None:
    """The op's node that reads and writes the most elements (the first of equals)."""
    mine = [n for n in found if n.op == op]
    return max(mine, key=lambda n: n.elements) if mine else None


def weight_types(model: str) -> dict[str, str]:
    """``_weight_types`` of the model file as it is now (a model not written yet: none)."""
    try:
        stamp = Path(model).stat().st_mtime_ns
    except OSError:
        return {}
    return _weight_types(model, stamp)


@functools.lru_cache(maxsize=4)
def _weight_types(model: str, stamp: int) -> dict[str, str]:
    """The model's tensors' types by name (``blk.0.attn_q.weight`` → ``GGML_TYPE_F16``), read
    from its GGUF: the one source type a node line does not print. Empty without the gguf
    package or the file (the sources then take the result's type, perfcases._types)."""
    try:
        from gguf import GGUFReader  # kernelopt-llamacpp[gguf]
    except ImportError:
        return {}
    try:
        reader = GGUFReader(model)
    except Exception:  # the reader raises IndexError, ValueError... on a non-GGUF file
        return {}
    return {t.name: f"GGML_TYPE_{t.tensor_type.name}" for t in reader.tensors}


def case_node(node: Node, model: str | None = None) -> perfcases.Shapes:
    """What a perf case at ``node``'s shapes is written from (perfcases.write)."""
    types = weight_types(model) if model else {}
    return perfcases.Shapes(node.src0, f"GGML_TYPE_{node.type.upper()}", node.src1, node.ne,
                          (types.get(node.src0_name), types.get(node.src1_name)),
                          node.src0_unpermuted, node.src0_permute)


def ops(found: list[Node]) -> list[str]:
    return sorted({n.op for n in found})
