"""Inductor's own limits on a generated kernel's launch knobs, so the tuner never screens a
configuration Inductor would refuse (torch/_inductor/runtime/coordinate_descent_tuner.py,
hints.py):

- a block size at most ``min(TRITON_MAX_BLOCK[prefix], size_hints[prefix])`` (XBLOCK ≤ 4096 and
  the x size hint, R0_BLOCK ≤ 65536 and the reduction's size hint, Y/ZBLOCK ≤ 1024);
- a persistent reduction's R0_BLOCK covers the whole reduction: not a knob, and the launch's
  threads are not checked against its knobs' elements (the row is not among them);
- ``num_stages`` only where there is a loop to pipeline (a looped reduction, a GEMM
  template's loop over K): Inductor's pointwise and persistent kernels have none;
- a GEMM template's (``heuristic == "template"``, inductor_template.py) BLOCK_M/BLOCK_N/BLOCK_K
  from 16 (``tl.dot``'s smallest side) to 256 (the largest tile side of Inductor's mm configs,
  torch/_inductor/template_heuristics), and no larger than the problem's side rounded up to a
  power of two (``size_hints`` then holds M, N and K).

The knob keeps its baseline value even when that breaks a limit (it is what Inductor chose).
"""

from __future__ import annotations

import re

import attrs

from kernelopt_core.api import Knob

# torch/_inductor/runtime/hints.py (CUDA)
TRITON_MAX_BLOCK = {"X": 4096, "Y": 1024, "Z": 1024, "R0_": 4096 * 16, "R1_": 2048 * 16}
BLOCK_NAME = re.compile(r"([XYZ]|R[01]_|R)BLOCK")
TEMPLATE_BLOCK = re.compile(r"BLOCK_([MNK])")
DOT_MIN, GEMM_MAX_TILE = 16, 256


def _template_limits(base: str, sizes: dict[str, int]) -> tuple[int, int] | None:
    m = TEMPLATE_BLOCK.fullmatch(base)
    if m is None:
        return None
    side = sizes.get(m.group(1))
    top = GEMM_MAX_TILE if side is None else min(GEMM_MAX_TILE, max(DOT_MIN, 1 << (side - 1).bit_length()))
    return DOT_MIN, top


def _block_prefix(knob: Knob) -> str | None:
    m = BLOCK_NAME.fullmatch(knob.name.split("@", 1)[0])
    if m is None:
        return None
    return "R0_" if m.group(1) == "R" else m.group(1)


def constrain(knobs: tuple[Knob, ...], heuristic: str, size_hints: dict[str, int],
              baseline: dict[str, str]) -> tuple[Knob, ...]:
    out: list[Knob] = []
    fixed: set[str] = set()  # launches that lose a block-size knob: their geometry is partial
    for knob in knobs:
        base = knob.name.split("@", 1)[0]
        prefix = _block_prefix(knob)
        if heuristic == "persistent_reduction":
            # its program's elements are XBLOCK times the whole row, a constant of its body
            # where Inductor's own file has no R0_BLOCK keyword: never the knobs' product
            fixed.add(knob.launch)
        if prefix is not None and prefix.startswith("R") and heuristic == "persistent_reduction":
            continue
        if base == "num_stages" and heuristic not in ("reduction", "template"):
            continue
        limits = _template_limits(base, size_hints) if heuristic == "template" else None
        if limits is not None:
            keep = tuple(v for v in knob.values if limits[0] <= int(v) <= limits[1]
                         or v == baseline.get(knob.name))
            out.append(attrs.evolve(knob, values=keep or knob.values, maximum=limits[1]))
            continue
        if prefix is not None:
            hint = size_hints.get(prefix.lower())
            limit = min(TRITON_MAX_BLOCK[prefix], hint) if hint else TRITON_MAX_BLOCK[prefix]
            keep = tuple(v for v in knob.values
                         if int(v) <= limit or v == baseline.get(knob.name))
            # never a knob without values (the baseline's value not found); the tuner's growth
            # of the range stops at the limit too
            knob = attrs.evolve(knob, values=keep or knob.values, maximum=limit)
        out.append(knob)
    # the removed R0_BLOCK still sizes each program: the thread rule cannot count without it
    return tuple(attrs.evolve(k, geometry="") if k.launch in fixed and k.geometry else k
                 for k in out)
