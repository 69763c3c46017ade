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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from kernelopt_core.api import Knob
from kernelopt_triton import inductor_rules
from kernelopt_triton.compile_mode import caches_off
from kernelopt_triton.engine_switch import Compiling, UniqueKernelNames, renamed_source
from kernelopt_triton.inductor_parse import KernelSource

if TYPE_CHECKING:
    from kernelopt_triton.capture_kernels import Found

PERSISTENT_UP_TO = 1024 * 16  # Inductor's inner-reduction bound (1024) times multi-kernel's 16
FORMS_DIR = "forms"
PREFIXES = ("triton_per_", "triton_red_")
# kernels.json's forms error while the second compile runs (left there if it never ends)
PENDING = "the second compile did not finish"
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

    return OtherReductionForm()


def compile_other_forms(model: Any, args: tuple[Any, ...], compile_kwargs: dict[str, Any],
                        sync: Callable[[], None], compiling: Compiling) -> float:
    """Compile and run the model once with every reduction in its other form; returns the
    seconds it took. The choices handler is in no cache key, so the FX graph and AOT caches
    (local and remote) are off: a hit would hand back the first compile's code; Inductor's
    autotune cache stays (a kernel of the same code keeps its config, max-autotune's GEMM
    choices are not benchmarked again). The handler is this thread's: Inductor's codegen
    runs here (its worker processes only compile Triton). ``compiling``: engine_switch.install's,
    given fresh kernel names for this compile."""
    import torch
    from torch._inductor.virtualized import V

    torch._dynamo.reset()
    compiling.names = UniqueKernelNames()
    t0 = time.perf_counter()
    with V.set_choices_handler(other_reduction_form()), caches_off(), \
            torch._inductor.config.patch({"triton.multi_kernel": 0}), torch.no_grad():
        torch.compile(model, **compile_kwargs)(*args)
        sync()
    return time.perf_counter() - t0


def pair_forms(first: list[Found], first_order: list[str], second: list[Found],
               second_order: list[str], out: Path) -> tuple[int, int]:
    """Each reduction kernel of the first compile with its other form from the second: the
    graph at the same place in the second compile's load order, Inductor's own name there with
    the prefix swapped, the same arguments, the other heuristic (anything else: not the same
    kernel, e.g. a fusion that differs). The form is written to ``out/forms/NAME.py`` under
    the first's name with the prefix swapped (a graph's ``_gK`` suffix can differ between the
    compiles: it counts name clashes) and recorded as the first's entry's ``form``. Returns
    (paired, reduction kernels left without a form)."""
    by_place = {(second_order.index(f.graph), f.inductor_name): f for f in second
                if f.graph in second_order}
    paired = unpaired = 0
    for f in first:
        wanted = other_name(f.inductor_name)
        if wanted is None:
            continue
        place = first_order.index(f.graph) if f.graph in first_order else -1
        match = by_place.get((place, wanted))
        if match is None or match.entry["args"] != f.entry["args"] \
                or match.entry["heuristic"] == f.entry["heuristic"]:
            unpaired += 1
            continue
        name = other_name(f.name) or wanted
        source = renamed_source(match.source, match.name, name) if match.name != name else match.source
        (out / FORMS_DIR).mkdir(exist_ok=True)
        (out / FORMS_DIR / f"{f.name}.py").write_text(source)
        f.entry["form"] = {"name": name, "file": f"{FORMS_DIR}/{f.name}.py",
                           "heuristic": match.entry["heuristic"], "launch": match.entry["launch"]}
        paired += 1
    return paired, unpaired


def forms_line(forms: dict[str, Any] | None) -> str:
    """What the capture's second compile gave, for the run's preface ("" when not tried)."""
    if not forms or not (forms.get("paired") or forms.get("unpaired") or forms.get("error")):
        return ""
    if forms.get("error"):
        return f"reduction forms: Inductor's alone ({forms['error']})\n"
    return (f"reduction forms: {forms['paired']} reduction kernels with their other form too "
            f"({forms['compile_s']} s of a second compile; {forms.get('unpaired', 0)} without)\n")


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
