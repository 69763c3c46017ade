"""The capture's first step on a model with depthwise convolutions: kernelopt's kernel or the
library's for each shape (depthwise_timing.py), written beside the capture, and the line the
capture and the run print about it. Pure at import (the choice imports torch when it runs):
models.py reads the names and the line in the kernelopt process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DEPTHWISE_FILE = "depthwise.json"  # the capture's per-shape choice (choose_depthwise)
DEPTHWISE_KERNEL = "depthwise_conv2d_kernel"  # kernelopt's kernel (depthwise.py), by its name


def choose_depthwise(model: Any, args: tuple[Any, ...], device: str, out: Path,
                     form: str) -> dict[str, Any]:
    """Before the compile: kernelopt's depthwise kernel or the library for each depthwise
    convolution of the model, on the GPU's time (depthwise_timing.choose_for_model, written to
    ``out/depthwise.json`` with ``form``, lowerings.form_for); the capture's compiles then run
    the chosen shapes so (lowerings.as_chosen), as the engine and the model check will — the
    kernels captured, tuned and checked are those of the model kernelopt returns (the
    convolution's bias add no longer sits in the kernel after it). kernels.json's summary: the
    shapes, those chosen, the form, or why none was tried. A failed choice is said and the
    library kept; a compile that fails with the chosen shapes fails the capture, which then
    says how to capture without them."""
    from kernelopt_triton.lowerings import swappable

    if not any(swappable(m) for m in model.modules()):
        return {"shapes": 0}
    if not device.startswith("cuda"):
        return {"skipped": "the kernel runs on CUDA GPUs (here the library's convolution)"}
    try:
        from kernelopt_triton.depthwise_timing import choose_for_model

        record = {**choose_for_model(model, args, device), "form": form}
    except Exception as exc:  # an extra, as the reduction forms are
        record = {"error": f"{type(exc).__name__}: {exc}"[:500], "launches": {}}
    (out / DEPTHWISE_FILE).write_text(json.dumps(record, indent=1) + "\n")
    summary = {"file": DEPTHWISE_FILE, "shapes": len(record.get("shapes", [])),
               "chosen": len(record["launches"]), "form": form,
               "search_s": record.get("search_s")}
    return {**summary, "error": record["error"]} if "error" in record else summary


def depthwise_line(summary: dict[str, Any] | None) -> str:
    """One line on the capture's depthwise choice, or "" where the model has none to make."""
    if not summary or not summary.get("file"):
        return ""
    how = f", compiled {summary['form']}" if summary.get("chosen") and summary.get("form") else ""
    line = (f"depthwise convolutions: kernelopt's kernel for {summary['chosen']} of "
            f"{summary['shapes']} shapes{how} ({summary.get('search_s')} s on the GPU; "
            f"{summary['file']})")
    return line + (f"; the choice failed: {summary['error']}" if summary.get("error") else "")
