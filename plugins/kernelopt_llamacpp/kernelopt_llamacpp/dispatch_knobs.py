"""Knobs at the site that launches a dispatched kernel, where the kernel's size is a template
argument: the built-in tuner cannot give a template argument a value, but it can change the
expression the launcher picks it from.

* a selection cap: a local integer initialised from a literal (``int64_t max_block_size =
  256;``) that bounds a loop (``for (block_size = …; block_size <= max_block_size; …)``) whose
  variable is kept (``block_size_best = block_size;``) and then switched over, one template
  instance per ``case`` (mmvf.cu's ``launch_mul_mat_vec_f_cuda``: ``case 32: … case 256:``,
  each launching ``mul_mat_vec_f<…, 32, …>`` …). Its values are the switch's cases: a cap past
  the last case would reach the switch's abort, so the knob's ``maximum`` is the last case.
  The loop then picks among block sizes up to the cap, so the cap decides the block size the
  op's GEMV launches with on large rows (every such row picks the largest block the cap allows).

Which kernel each value reaches is the reach check's (reach.py) and, on the GPU, the dispatch
profile's; a value whose instance the pinned case never runs is dropped there. Every value
compiles (each case is compiled in every build), so the compile probe judges a cap by reach
alone (cap_names, probe.py's ``--compiles``).
"""

from __future__ import annotations

import re
from pathlib import Path

from kernelopt_core.api import Knob

_TYPES = r"(?:int|int64_t|int32_t|long|size_t|unsigned)"
_LOCAL = re.compile(rf"^([ \t]+){_TYPES}[ \t]+(\w+)[ \t]*=[ \t]*(\d+)[ \t]*;", re.M)
_FUNCTION_END = re.compile(r"^}", re.M)


def _switch_cases(body: str, variable: str) -> tuple[int, ...]:
    """The integer case labels of ``switch (variable)`` in ``body`` (brace-matched), or ()."""
    found = re.search(rf"\bswitch[ \t]*\([ \t]*{re.escape(variable)}[ \t]*\)[ \t\n]*\{{", body)
    if found is None:
        return ()
    depth, i = 1, found.end()
    while i < len(body) and depth:
        depth += {"{": 1, "}": -1}.get(body[i], 0)
        i += 1
    return tuple(sorted({int(c) for c in re.findall(r"\bcase[ \t]+(\d+)[ \t]*:", body[found.end():i])}))


def selection_caps(path: str, text: str) -> list[Knob]:
    """The selection caps in ``text`` (the docstring): one knob each, unique in the file."""
    knobs = []
    for decl in _LOCAL.finditer(text):
        name, value = decl.group(2), int(decl.group(3))
        end = _FUNCTION_END.search(text, decl.end())
        body = text[decl.end():end.start() if end else len(text)]
        loop = re.search(rf"\bfor[ \t]*\([^;]*?\b(\w+)[ \t]*=[^;]*;[ \t]*\1[ \t]*<=?[ \t]*"
                         rf"{re.escape(name)}[ \t]*;", body)
        if loop is None:
            continue
        kept = re.search(rf"\b(\w+)[ \t]*=[ \t]*{re.escape(loop.group(1))}[ \t]*;", body[loop.end():])
        cases = _switch_cases(body, kept.group(1)) if kept else ()
        if len(cases) < 2 or value < cases[0]:
            continue
        pattern = rf"^[ \t]+{_TYPES}[ \t]+{re.escape(name)}[ \t]*=[ \t]*(\d+)[ \t]*;"
        if len(re.findall(pattern, text, re.M)) != 1:
            continue  # the core's tuner needs a pattern that matches once
        values = tuple(str(c) for c in cases if c <= max(value, cases[-1]))
        if str(value) not in values:
            values = tuple(sorted({*values, str(value)}, key=int))
        knobs.append(Knob(name, path, values, pattern, maximum=cases[-1]))
    return knobs


def cap_names(src: Path, files: list[str]) -> list[str]:
    """The selection caps' names in ``files`` (relative to ``src``): knobs whose every value
    compiles in every build (the switch compiles each case), so the compile probe skips them."""
    names = []
    for rel in files:
        path = src / rel
        if path.is_file():
            names += [k.name for k in selection_caps(rel, path.read_text(encoding="utf-8",
                                                                          errors="replace"))]
    return names
