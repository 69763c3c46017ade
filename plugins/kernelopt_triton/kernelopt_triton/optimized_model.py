"""kernelopt's model in the user's own process: the compile a model check chose, made again.

    import kernelopt_triton
    fast = kernelopt_triton.optimized(model, "cn")  # a campaign, a model check's folder or file
    out = fast(*inputs)                             # the first call compiles, as torch.compile

The model check (model_compare.py) timed the model every way in one process and named what
kernelopt returns (model_compare.json's ``kernelopt``): the model's own compile with the runs'
winners and the capture's depthwise choice, or another compile it measured faster. This
compiles the user's model that way: the chosen compile's keywords (``compiles``), and for
kernelopt's own model each winning kernel file in place of the kernel whose code is the
captured one (engine_switch: found by its code, whatever this compile numbers it) and the
depthwise convolutions the capture chose as kernelopt's kernel (lowerings.as_chosen). A winner
this compile does not hold (another model, other input shapes, another torch) is an error, not
a silent library kernel, as is a depthwise choice that reached no convolution at all (a shape
of it that does not match keeps the library, unsaid).

As the check measured it: inference, the model in eval mode and every call under
``torch.no_grad()`` (a kernel's code
differs with autograd on), the kernels' modules written as the capture's
(``benchmark_kernel``: Inductor merges and numbers kernels otherwise). The winners and the
opaque depthwise op are in place for the first call's compile only: a later recompile (new
shapes) compiles without them. The inlined form swaps the model's depthwise ``nn.Conv2d``s
in place, for good (lowerings.swap_depthwise), as the check swapped its copy.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from kernelopt_triton.engine_switch import Compiling

CHECK_FILE = "model_compare.json"
KERNELOPT = "kernelopt"  # the check's label of kernelopt's own model


class CheckError(ValueError):
    """A model check that cannot be compiled again: what, where, and how to fix it."""


class NotApplied(RuntimeError):
    """The compile did not hold what the check measured: a winner's kernel not found, or the
    depthwise choice reaching no convolution."""


@attrs.frozen
class Choice:
    """What a model check chose, read from its model_compare.json."""

    file: Path
    label: str  # the compile kernelopt returns: "kernelopt" (its own model) or a mode's label
    kwargs: Mapping[str, Any]  # torch.compile's keywords for it
    winners: Mapping[str, Path]  # kernel name -> winning kernel file (kernelopt's model only)
    captured: Mapping[str, Path]  # kernel name -> the capture's source (the winner found by code)
    depthwise: Path | None  # the capture's depthwise.json, where the chosen side had it
    why: str  # the check's words where it returned another compile than kernelopt's model
    versus: Mapping[str, float]  # the chosen compile's speedup: default, max_autotune, ...
    torch: str  # the torch the check ran (a kernel's code can differ under another)


def find_check(where: str | os.PathLike[str], state_root: Path | None = None) -> Path:
    """The model_compare.json ``where`` names: that file, a folder holding it (a model check's
    own), a campaign's folder with one model check (``model-*``), or a campaign's or model
    check's name under ``state_root`` (KERNELOPT_HOME, else ./.kernelopt)."""
    path = Path(where).expanduser()
    if not path.exists() and not path.is_absolute() and len(path.parts) == 1:
        root = state_root or Path(os.environ.get("KERNELOPT_HOME") or ".kernelopt")
        path = next((p for p in (root / "campaigns" / path, root / "models" / path)
                     if p.exists()), path)
    if path.is_file():
        return path
    if (path / CHECK_FILE).is_file():
        return path / CHECK_FILE
    found = sorted(path.glob(f"model-*/{CHECK_FILE}")) if path.is_dir() else []
    if len(found) == 1:
        return found[0]
    if found:
        names = ", ".join(f.parent.name for f in found)
        raise CheckError(f"{path} holds {len(found)} model checks ({names}): pass the folder of "
                         "the one for this model")
    raise CheckError(f"no model check at {where!r} ({path}): pass a campaign's name or folder, "
                     f"a model check's folder or its {CHECK_FILE} (`kernelopt campaign MODEL.py` "
                     "or `kernelopt run MODEL.py` makes one, unless --no-model-check)")


def read_choice(file: Path) -> Choice:
    """The compile a model check's file chose, with what it needs (each file checked)."""
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise CheckError(f"{file}: not a model check's JSON ({exc})") from exc
    if not isinstance(data, dict) or data.get("kernelopt_model") != 1:
        raise CheckError(f"{file}: not a model check's result (no \"kernelopt_model\": 1)")
    if data.get("error"):
        raise CheckError(f"{file}: the model check failed: {data['error']}")
    label = data.get("kernelopt")
    compiles = data.get("compiles")
    if not isinstance(compiles, dict):
        raise CheckError(f"{file}: made before kernelopt could hand its model back (no "
                         "\"compiles\"): run the model check again (`kernelopt campaign` again)")
    if label not in compiles or not isinstance(compiles[label], dict):
        raise CheckError(f"{file}: its choice {label!r} is not one of the compiles it made "
                         f"({', '.join(compiles)}): the file was edited or cut; run the model "
                         "check again")
    swaps, captured_files, lowering = (data.get(k) or {} for k in ("swaps", "captured",
                                                                    "depthwise"))
    if not all(isinstance(v, dict) for v in (swaps, captured_files, lowering)):
        raise CheckError(f"{file}: \"swaps\", \"captured\" and \"depthwise\" must be objects: "
                         "the file was edited; run the model check again")
    ours = label == KERNELOPT
    winners = {name: Path(f) for name, f in swaps.items()} if ours else {}
    captured = {name: Path(f) for name, f in captured_files.items()}
    if uncaptured := sorted(set(winners) - set(captured)):
        raise CheckError(f"{file}: no captured code for {', '.join(uncaptured)} (a check run "
                         "by hand without --capture-source): a winner found by name could land "
                         "on another kernel; run it with --capture-source NAME=FILE")
    # the capture's race compiled every side with the depthwise choice, the model check only
    # kernelopt's own model
    depthwise = lowering.get("file") if ours or lowering.get("sides") == "every compile" else None
    for what, path in [*(("winner " + n, f) for n, f in winners.items()),
                       *(("capture's source of " + n, captured[n]) for n in winners),
                       *((("depthwise choice", Path(depthwise)),) if depthwise else ())]:
        if not path.is_absolute():
            raise CheckError(f"{file}: the {what}, {path}, is a relative path (a check run by "
                             "hand before paths were resolved): run the model check again")
        if not path.is_file():
            raise CheckError(f"{file}: the {what}, {path}, is gone (a new capture or a cleaned "
                             "state folder): run the campaign again")
    versus = {key.removeprefix("kernelopt_vs_"): float(value) for key, value in data.items()
              if key.startswith("kernelopt_vs_") and isinstance(value, (int, float))}
    choice = data.get("choice")
    why = choice.get("why", "") if isinstance(choice, dict) else ""
    return Choice(file, str(label), dict(compiles[label]), winners, captured,
                  Path(depthwise) if depthwise else None, str(why), versus,
                  str(data.get("torch", "")))


class OptimizedModel:
    """A model compiled as its check chose (``choice``); called like the model, for inference
    (each call under torch.no_grad()). Not an nn.Module: ``model`` is the module. ``how`` says
    what went into the compile once the first call made it."""

    def __init__(self, model: Any, choice: Choice) -> None:
        self.model = model
        self.choice = choice
        self.how = ""
        self._compiled: Any = None
        self._failed: NotApplied | None = None  # the first call's, raised again

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        with torch.no_grad():  # as the check ran it: one compile, the captured kernels' code
            if self._compiled is not None:
                return self._compiled(*args, **kwargs)
            if self._failed is not None:
                raise self._failed
            try:
                return self._first_call(args, kwargs)
            except NotApplied as exc:  # kept: compiling again would give the same compile
                self._failed = exc
                raise

    def _first_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        import torch
        from torch._inductor import config as inductor_config

        from kernelopt_triton.depthwise import interpreted
        from kernelopt_triton.engine import compile_apart, swap_kernel_source
        from kernelopt_triton.engine_switch import CapturedCode, KernelSwitch, UniqueKernelNames
        from kernelopt_triton.lowerings import as_chosen

        choice = self.choice
        switch = None
        if choice.winners:
            switch = KernelSwitch({name: {KERNELOPT: file.read_text()}
                                   for name, file in choice.winners.items()},
                                  swap_kernel_source,
                                  CapturedCode({n: choice.captured[n] for n in choice.winners}))
        self.model.eval()  # as the check built it (inductor.build_model): inference
        compiled = compile_apart(torch, self.model, dict(choice.kwargs), "optimized")
        hook = _hook()
        hook.names, hook.switch, hook.seen, hook.enabled = UniqueKernelNames(), switch, 0, True
        try:
            with inductor_config.patch(benchmark_kernel=True), \
                    as_chosen(self.model, choice.depthwise) as chosen:
                out = compiled(*args, **kwargs)
        finally:  # the user's later compiles are Inductor's own
            hook.names, hook.switch, hook.enabled = UniqueKernelNames(), None, False
        torch_note = (f" (the check ran torch {choice.torch}, this is {torch.__version__})"
                      if choice.torch and choice.torch != torch.__version__ else "")
        if switch is not None and (missing := switch.missing()):
            raise NotApplied(f"kernelopt's model ({choice.file}): no kernel of this compile has "
                             f"the code of {', '.join(missing)}: the model or its input shapes "
                             f"differ from the check's{torch_note}")
        on_gpu = any(getattr(a, "is_cuda", False) for a in (*args, *kwargs.values()))
        traced = chosen.lowered.ops if chosen.lowered is not None else chosen.swapped
        if chosen and traced == 0 and on_gpu and not interpreted():
            raise NotApplied(f"kernelopt's model ({choice.file}): the depthwise choice "
                             f"({choice.depthwise}) matched no convolution of this compile: its "
                             f"modules, input shapes, dtype or layout differ from the check's"
                             f"{torch_note}")
        parts = [f"compiled as {choice.label!r}"]
        if switch is not None:
            parts.append(f"{len(switch.kernels)} winner(s) found {switch.identity()}")
        if chosen:
            ops = f", {chosen.lowered.ops} op call(s) traced" if chosen.lowered else ""
            parts.append(f"depthwise: {chosen}{ops}")
        self.how = "; ".join(parts)
        self._compiled = compiled
        return out


_HOOK: Compiling | None = None  # the one wrap of Inductor's AsyncCompile.triton in this process


def _hook() -> Compiling:
    global _HOOK
    if _HOOK is None:
        from kernelopt_triton.engine_switch import UniqueKernelNames, install

        _HOOK = install(UniqueKernelNames())
    return _HOOK


def optimized(model: Any, check: str | os.PathLike[str],
              state_root: Path | None = None) -> OptimizedModel:
    """``model`` (the nn.Module the check measured, with its weights) compiled as the model check
    ``check`` chose (find_check: a campaign's name or folder, a model check's folder or its
    model_compare.json): call it as the model; the first call compiles. CheckError where the
    check cannot be compiled again (exit 2's kind: what, where, how to fix); NotApplied where
    the first call's compile did not hold a winner."""
    return OptimizedModel(model, read_choice(find_check(check, state_root)))
