"""The other form of each reduction kernel, from Inductor itself (issue 53, item 3).

Inductor writes a reduction either persistent (one program holds a whole row: R0_BLOCK is the
row, read once) or looped (a loop over the row in R0_BLOCK steps; a normalization reads its row
twice). It chooses by a size rule (``InductorChoices.should_use_persistent_reduction``: an
inner reduction of at most 1024 elements is persistent), not by timing. The capture compiles
the model once more with that choice reversed (``OtherReductionForm``: persistent becomes
looped; a looped inner reduction of at most ``PERSISTENT_UP_TO`` elements, the bound Inductor's
own multi-kernel mode uses, becomes persistent), runs it once (its autotuning picks the
other form's launch config) and keeps, per captured reduction kernel, the same kernel in the
other form: same graph, same fusion, the name's ``triton_per_``/``triton_red_`` swapped, the
same arguments. The standalone file then holds both forms and a ``REDUCTION_FORM`` knob
(inductor_gen.py); the engine swaps in the chosen one (engine_swap.py).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core.api import Knob
from kernelopt_triton import inductor_rules
from kernelopt_triton.inductor_parse import KernelSource

PERSISTENT_UP_TO = 1024 * 16  # Inductor's inner-reduction bound (1024) times multi-kernel's 16
FORMS_DIR = "forms"
PREFIXES = ("triton_per_", "triton_red_")
SWITCH_NAME = "REDUCTION_FORM"  # the standalone file's switch: 0 Inductor's form, 1 the other
SWITCH = re.compile(rf"^{SWITCH_NAME} = (\d)$", re.M)


def other_name(name: str) -> str | None:
    """The kernel's name in the other form (Inductor's prefix says the form), else None."""
    for prefix, other in zip(PREFIXES, reversed(PREFIXES), strict=True):
        if name.startswith(prefix):
            return other + name[len(prefix):]
    return None


def other_reduction_form() -> Any:
    """An InductorChoices whose every reduction takes the form Inductor would not choose."""
    from torch._inductor.choices import InductorChoices
    from torch._inductor.runtime.hints import ReductionHint
    from torch._inductor.virtualized import V

    class OtherReductionForm(InductorChoices):
        @staticmethod
        def should_use_persistent_reduction(features: Any, cooperative_reduction: bool) -> bool:
            if InductorChoices.should_use_persistent_reduction(features, cooperative_reduction):
                return False
            if cooperative_reduction or features.get_reduction_hint() != ReductionHint.INNER:
                return False  # a looped outer reduction coalesces along x: it stays looped
            return bool(V.graph.sizevars.statically_known_leq(features.reduction_numel,
                                                              PERSISTENT_UP_TO))

        def uuid(self) -> str:  # Inductor's cache key for a choices class
            return "kernelopt-other-reduction-form"

    return OtherReductionForm()


def compile_other_forms(model: Any, args: tuple[Any, ...], compile_kwargs: dict[str, Any],
                        sync: Any, compiling: Any) -> float:
    """Compile and run the model once with every reduction in its other form (no FX graph or
    AOT cache: those would hand back the first compile); returns the seconds it took.
    ``compiling``: engine_switch.install's, given fresh kernel names for this compile."""
    import torch
    from torch._inductor.virtualized import V

    from kernelopt_triton.engine_switch import UniqueKernelNames

    torch._dynamo.reset()
    compiling.names = UniqueKernelNames()  # the same graph order: the same _gK suffixes
    t0 = time.perf_counter()
    with V.set_choices_handler(other_reduction_form()), \
            torch._inductor.config.patch({"fx_graph_cache": False, "triton.multi_kernel": 0}), \
            torch._functorch.config.patch(enable_autograd_cache=False), torch.no_grad():
        torch.compile(model, **compile_kwargs)(*args)
        sync()
    return time.perf_counter() - t0


def pair_forms(kernels: list[dict[str, Any]], other: dict[str, tuple[str, dict[str, Any]]],
               out: Path) -> int:
    """Each captured reduction kernel's other form (``other``: that compile's kernels, name ->
    (source, its kernels.json entry)), written to ``out/forms/NAME.py`` and recorded as the
    kernel's ``form``: same arguments, the other heuristic. Returns how many were paired."""
    paired = 0
    for k in kernels:
        name = other_name(k["name"])
        found = other.get(name) if name else None
        if found is None:
            continue
        source, entry = found
        if entry["args"] != k["args"] or entry["heuristic"] == k["heuristic"]:
            continue  # not the same kernel in the other form (a fusion that differs)
        (out / FORMS_DIR).mkdir(exist_ok=True)
        (out / FORMS_DIR / f"{k['name']}.py").write_text(source)
        k["form"] = {"name": name, "file": f"{FORMS_DIR}/{k['name']}.py",
                     "heuristic": entry["heuristic"], "launch": entry["launch"]}
        paired += 1
    return paired


def form_knobs(path: str, knobs: tuple[Knob, ...], ks: KernelSource, form: KernelSource,
               baseline: dict[str, str]) -> tuple[Knob, ...]:
    """The knobs of a file with both forms: the switch, and each form's launch keywords within
    Inductor's limits for that form (inductor_rules.py), each matters only while its form runs
    (Knob.when)."""
    out = [Knob(SWITCH_NAME, path, ("0", "1"), SWITCH.pattern, maximum=1)]
    for value, source in (("0", ks), ("1", form)):
        own = tuple(k for k in knobs if k.launch == source.name)
        for knob in inductor_rules.constrain(own, source.heuristic, source.size_hints, baseline):
            out.append(attrs.evolve(knob, when=(SWITCH_NAME, value)))
    return tuple(out)
