"""Beam + UCB search over candidate chains, shared by every planner.

Each accepted candidate becomes a node. The beam keeps the ``width`` best nodes by measured
speedup; the next parent to expand is the beam node with the highest upper confidence bound
``speedup + c·sqrt(ln(N+1)/(n+1))`` (N expansions so far, n of this node), so a strong node is
expanded often but an under-explored one still gets its turn. A node whose planner has nothing
left to offer is marked exhausted and leaves the choice.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping

import attrs


@attrs.define(eq=False)
class Node:
    id: str  # the candidate's id ("c7"), "root" for the baseline
    edits: dict[str, bytes]  # full content of each changed file, relative to the baseline
    knobs: dict[str, str] = attrs.field(factory=dict)  # its knob assignment (the baseline's values left out)
    description: str = "baseline"  # the proposal's line
    parent: str | None = None  # the node it was proposed from
    speedup: float = 1.0  # screen speedup over the baseline
    visits: int = 0  # times the search expanded it
    exhausted: bool = False  # its planner had nothing more to offer from it


@attrs.define
class BeamSearch:
    root: Node
    width: int = 4
    exploration: float = 0.5
    nodes: dict[str, Node] = attrs.field(factory=dict)
    expansions: int = 0

    def __attrs_post_init__(self) -> None:
        self.nodes[self.root.id] = self.root

    def add(self, node: Node) -> None:
        self.nodes[node.id] = node

    def beam(self) -> list[Node]:
        live = [n for n in self.nodes.values() if not n.exhausted]
        return sorted(live, key=lambda n: n.speedup, reverse=True)[: self.width]

    def select(self) -> Node | None:
        beam = self.beam()
        if not beam:
            return None
        total = math.log(self.expansions + 1)

        def ucb(node: Node) -> float:
            return node.speedup + self.exploration * math.sqrt(total / (node.visits + 1))

        chosen = max(beam, key=ucb)
        chosen.visits += 1
        self.expansions += 1
        return chosen

    def best(self) -> Node:
        return max(self.nodes.values(), key=lambda n: n.speedup)


def content_key(edits: Mapping[str, bytes]) -> str:
    """What a proposal's edits hold, as one key (their paths and bytes)."""
    return hashlib.sha256(
        b"\0".join(p.encode() + b"\0" + edits[p] for p in sorted(edits))).hexdigest()


class SeenContent:
    """Content keys of the proposals a run has evaluated: the same content is never evaluated
    twice (planners may repeat themselves), nor content equal to the baseline."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    def first_time(self, edits: dict[str, bytes], baseline: dict[str, bytes]) -> bool:
        key = content_key(edits)
        if key in self.keys or all(baseline.get(p) == d for p, d in edits.items()):
            return False
        self.keys.add(key)
        return True
