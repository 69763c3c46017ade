"""``--top K`` with a model and no ``--op``: the K ops the model spends the most device time in,
from its last ``kernelopt profile TREE --backend llamacpp --engine`` (every kernel of its
prompt and of its generation, dispatch.py mapping each to its op), that kernelopt can edit and
time. An op the source already shows it cannot time (at the model's shape, with ``--nodes``)
is passed over with why, before any build; the selection is written beside the pins
(``<digest>-top.json``) for the campaign's coverage (coverage.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import attrs

from kernelopt_core.api import RecordedProfile, UsageError
from kernelopt_llamacpp.dispatch import Sources, attribute
from kernelopt_llamacpp.nodes import Node
from kernelopt_llamacpp.ops import Route


@attrs.frozen
class Ranked:
    op: str  # an op, or what the kernels belong to when no op ("cuBLAS", "(convert.cu)")
    total_us: float  # over every phase of the profile
    share: float  # of the profile's summed kernel time
    kernels: tuple[str, ...]  # their function names, heaviest first
    chosen: bool = False
    why: str = ""  # why an op was passed over
    # each profiled phase's share that is this op's (prefill, decode: a decode-bound op shows)
    phases: dict[str, float] = attrs.field(factory=dict)


def ranked_ops(profile: RecordedProfile, sources: Sources, model_ops: set[str] | None,
               phase: str | None = None) -> list[Ranked]:
    """The profile's kernels summed per op (a kernel several ops may own: the one the model
    runs, when its nodes are known, else the first), heaviest first; ``phase``: ranked by that
    phase's time alone (decode, what a chat user waits on), else by every phase's."""
    sums: dict[str, float] = {}
    names: dict[str, dict[str, float]] = {}
    per_phase: dict[str, dict[str, float]] = {}
    for name, kernels in profile.phases.items():
        for kernel in kernels:
            a = attribute(str(kernel.get("name", "")), sources)
            us = float(kernel.get("total_us") or 0.0)
            if a.kind == "library":
                key = a.library
            elif not a.ops:
                key = f"({Path(a.file).name})"
            else:
                run = [op for op in a.ops if model_ops is None or op in model_ops]
                if not run and model_ops is not None:  # the source names the kernel another
                    # op's (cpy.cu's: CPY), the model runs it as one of its own (CONT)
                    run = sorted(op for op in model_ops if op in sources.table
                                 and a.file in sources.table[op].files
                                 and a.kernel in sources.reached(op))
                key = (run or list(a.ops))[0]
            per_phase.setdefault(name, {})[key] = per_phase.get(name, {}).get(key, 0.0) + us
            if phase is not None and name != phase:
                continue
            sums[key] = sums.get(key, 0.0) + us
            names.setdefault(key, {})
            names[key][a.kernel] = names[key].get(a.kernel, 0.0) + us
    total = sum(sums.values()) or 1.0
    phase_totals = {name: sum(ops.values()) or 1.0 for name, ops in per_phase.items()}
    return [Ranked(key, us, us / total, tuple(sorted(names[key], key=lambda k: -names[key][k])),
                   phases={name: round(ops.get(key, 0.0) / phase_totals[name], 5)
                           for name, ops in per_phase.items()})
            for key, us in sorted(sums.items(), key=lambda kv: -kv[1])]


def choose(ranking: list[Ranked], table: dict[str, Route], top: int,
           timable: Callable[[Route], None]) -> list[Ranked]:
    """The ranking with the first ``top`` editable, timable ops marked chosen and every op
    above the last chosen one that was passed over given its reason. ``timable(route)``
    raises UsageError when the op cannot be timed (timing.py)."""
    out: list[Ranked] = []
    chosen = 0
    for row in ranking:
        route = table.get(row.op)
        if chosen >= top:
            out.append(row)
            continue
        if route is None:
            why = ("a library's kernels: not edited" if not row.op.startswith("(") else
                   "kernels of a ggml-cuda file that no op dispatches")
        elif route.kind not in ("kernel", "mixed"):
            why = f"{route.library or 'no kernel'}: not edited"
        elif shared := [r.op for r in out if r.chosen and set(table[r.op].files) & set(route.files)]:
            # one winner per file: the model check lays each op's winning files over the tree
            why = f"shares {', '.join(sorted(set(table[shared[0]].files) & set(route.files)))} " \
                  f"with {shared[0]}, chosen above"
        else:
            try:
                timable(route)
                why = ""
            except UsageError as exc:
                why = str(exc.args[0]) if exc.args else str(exc)
        if not why:
            chosen += 1
        out.append(attrs.evolve(row, chosen=not why, why=why))
    return out


def write(path: Path, profile: RecordedProfile, rows: list[Ranked], nodes: str | None,
          model: str | None = None) -> None:
    """Whole or not at all (a campaign's jobs each write it at their discovery)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    part.write_text(json.dumps({
        "profile": profile.run_id, "nodes": nodes, "model": model,
        "ops": [attrs.asdict(r) for r in rows]}, indent=1) + "\n", encoding="utf-8")
    part.replace(path)


def preface(rows: list[Ranked], profile: RecordedProfile, top: int,
            phase: str | None = None) -> str:
    """What the console shows once before the runs: the ranking down to the last chosen op."""
    ranked_by = f"{phase}'s device time" if phase else "its device time"
    lines = [f"the model's ops by share of {ranked_by} (profile {profile.run_id}, "
             f"phases {', '.join(profile.phases)}); --top {top}:"]
    last = max((i for i, r in enumerate(rows) if r.chosen), default=-1)
    for row in rows[:last + 1]:
        mark = "optimize" if row.chosen else f"passed over: {row.why}"
        apart = ", ".join(f"{name} {share * 100:.1f} %" for name, share in row.phases.items())
        lines.append(f"  {row.share * 100:5.1f} %  {row.op:<14} {mark}"
                     + (f"  ({apart})" if len(row.phases) > 1 else ""))
    return "\n".join(lines)


def model_ops(found: list[Node] | None) -> set[str] | None:
    return {n.op for n in found} if found is not None else None
