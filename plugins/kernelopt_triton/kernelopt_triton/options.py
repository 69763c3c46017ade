"""``[triton]`` in kernelopt.toml: the option table both backends read (backend.py's
``triton``, models.py's ``inductor``)."""

from __future__ import annotations

import attrs

from kernelopt_core.api import option, option_table
from kernelopt_triton.compile_mode import MODES as COMPILE_MODES


@option_table("triton")
@attrs.frozen
class TritonOptions:
    """``[triton]`` in kernelopt.toml; ``--top`` (the same type and default as
    kernelopt-llamacpp's ``[llamacpp] top``: one flag sets both), ``--kernel``."""

    top: int = option(1, "A Triton model file: optimize its K kernels with the largest share "
                      "of GPU time.", validator=attrs.validators.ge(1))
    kernel: str | None = option(None, "Model files: optimize this kernel (a name from "
                                "ranking.txt).")
    compile_mode: str | None = option(
        None, "Model files: torch.compile's mode the model is captured, tuned, checked and "
        "timed in (default, reduce-overhead, max-autotune, max-autotune-no-cudagraphs), in place "
        "of the model file's COMPILE; unset: the file's COMPILE, else the default compile.",
        validator=attrs.validators.optional(attrs.validators.in_(COMPILE_MODES)))
    reduction_forms: bool = option(
        True, "Model files: the capture compiles the model once more with Inductor's "
        "persistent-or-looped choice reversed, and each reduction kernel's file holds both forms "
        "(a REDUCTION_FORM knob); false: Inductor's form alone, no second compile.")
    depthwise: bool = option(
        True, "Model files: before the capture, each depthwise convolution (channels-last) "
        "runs kernelopt's Triton kernel where its fastest launch beat the library's call on the "
        "GPU's time, and the library's elsewhere (depthwise.json beside the capture); false: "
        "the library's everywhere.")
