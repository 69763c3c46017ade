"""Which case an op is timed on, decided from the source before any build: the tool's own
perf cases, a case written from the op's test struct (perfcases.py), at the model's shape when
its graph's nodes are given (nodes.py); or a refusal that says why the op cannot be timed."""

from __future__ import annotations

from pathlib import Path

from kernelopt_core.api import UsageError
from kernelopt_llamacpp.nodes import Node
from kernelopt_llamacpp.ops import Route


def model_node(route: Route, nodes_file: str | None, found: list[Node] | None = None,
               phase: str = "prefill") -> Node | None:
    """--nodes: the op's heaviest node in the model's graph (``found``: the graph when the
    caller has read it, else read_nodes'); refused when the model runs no node of the op."""
    from kernelopt_llamacpp import nodes

    if not nodes_file:
        return None
    path = Path(nodes_file).expanduser()
    found = read_nodes(nodes_file, phase) if found is None else found
    node = nodes.heaviest(found, route.op)
    if node is None:
        raise UsageError(f"the model in {path} runs no {route.op} node, so its shape cannot "
                         f"come from it; the model's ops: {', '.join(nodes.ops(found))}",
                         hint="pick one of the model's ops, or drop --nodes")
    return node


def read_nodes(nodes_file: str, phase: str = "prefill") -> list[Node]:
    """--nodes' graph: llama-eval-callback's output, or a GGUF model's ``phase`` batch from its
    header (model_nodes.py); a usage error when it is neither."""
    from kernelopt_llamacpp import model_nodes

    path = Path(nodes_file).expanduser()
    try:
        return model_nodes.read_any(path, phase)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--nodes {path}: {exc}",
                         hint="give the GGUF model (llama family) or llama-eval-callback's output "
                              "for it: llama-eval-callback -m MODEL.gguf -p PROMPT -ngl 99 > "
                              "FILE") from exc


def gguf_model(nodes_file: str | None) -> str | None:
    """--nodes' file when it is the GGUF model itself: its weights' types come from it too."""
    from kernelopt_llamacpp import model_nodes

    if nodes_file and model_nodes.is_gguf(Path(nodes_file).expanduser()):
        return str(Path(nodes_file).expanduser())
    return None


def timed_cases(route: Route, test_source: bytes, case: str | None, node: Node | None,
                model: str | None = None) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """The perf cases the harness must add for ``route.op`` to be timed (none when the
    tool's perf set has the op and no model shape is asked for, or --case names a case)
    and what the pinned case must print of the model's node (``ne=[4096,512,1,1]``,
    ``m=32000``: perfcases.Written); refused before any build when the op cannot be timed
    (perfcases.py reads that from test-backend-ops.cpp). ``model``: its GGUF gives the
    node's weights' types."""
    from kernelopt_llamacpp import harness, nodes, perfcases

    text = test_source.decode("utf-8", errors="replace")
    if case and node is not None:
        raise UsageError("--case and --nodes both name the case to time",
                         hint="give one of them: --case for a case of the tool's perf set, "
                              "--nodes for the model's shape")
    if node is not None and not perfcases.structs(text):
        raise UsageError(f"--nodes needs a test-backend-ops.cpp whose test structs kernelopt "
                         f"reads (a case at the model's shape is written from {route.op}'s); "
                         f"{harness.FILE} has none it can read", hint="drop --nodes")
    if case or not perfcases.structs(text):
        return (), None  # a --case, or a tool kernelopt cannot read: the bench says
    timing = perfcases.timing(text, route.op, route.enum,
                              nodes.case_node(node, model) if node else None)
    if node is not None:  # the model's shape was asked for
        why = timing.why or "the harness cannot add a case to this tool's perf set"
        if timing.generated is None or harness.patched_source(test_source, (timing.generated,)) is None:
            raise UsageError(f"{route.op} cannot be timed at the model's shape "
                             f"{list(node.src0)}: {why}",
                             hint="drop --nodes to time the tool's own perf cases")
        return (timing.generated,), timing.match
    if timing.perf_set:
        return (), None
    fix = (f"add a perf case of {route.op} to make_test_cases_perf() in {harness.FILE}, "
           "or pick another op")
    if timing.generated is None:
        raise UsageError(f"{route.op} cannot be timed: {harness.FILE} has no perf case of it "
                         f"and kernelopt cannot write one: {timing.why}", hint=fix)
    if harness.patched_source(test_source, (timing.generated,)) is None:
        raise UsageError(f"{route.op} cannot be timed: {harness.FILE} has no perf case of it, "
                         "and its case selection or perf set is not the one kernelopt's "
                         "harness adds a case to", hint=fix)
    return (timing.generated,), None
