"""``[llamacpp]`` in kernelopt.toml: the option table of the ``llamacpp`` backend and
``run-llamacpp``."""

from __future__ import annotations

import attrs

from kernelopt_core.api import option, option_table


@option_table("llamacpp")
@attrs.frozen
class LlamaCppOptions:
    """``[llamacpp]`` in kernelopt.toml; ``--op``, ``--case``, ``--e2e``, ``--e2e-model``,
    ``--device-backend``, ``--nodes`` (and ``--phase``), ``--top`` (with a model and no --op: its K heaviest
    ops, by its last ``kernelopt profile --engine``)."""

    op: str | None = option(None, "The ggml op to optimize (e.g. SOFT_MAX).")
    case: str | None = option(None, "The test-backend-ops perf case to time; the op's largest "
                              "us/run when unset.")
    e2e_model: str | None = option(None, "A GGUF model for the engine gate (llama-completion "
                                   "outputs + llama-bench tokens/s).")
    e2e: bool = option(False, "The engine gate with a generated random-weight GGUF.")
    device_backend: str | None = option(None, "The ggml backend test-backend-ops runs on; CUDA0 "
                                        "when unset.")
    nodes: str | None = option(None, "The model's graph nodes: llama-eval-callback's output, or "
                               "the GGUF model itself (llama family: its graph from its "
                               "header); time the op on its heaviest node's shape.")
    phase: str | None = option(None, "prefill or decode: with --nodes MODEL.gguf the batch an "
                               "op is timed at (a 512-token prompt, the default, or one token "
                               "after it); with --top the phase whose time ranks the ops "
                               "(default: every phase's).",
                               validator=attrs.validators.optional(
                                   attrs.validators.in_(("prefill", "decode"))))
    full_build: bool = option(False, "Build all of ggml-cuda for an op's runs. By default an op "
                              "other than MUL_MAT, MUL_MAT_ID and FLASH_ATTN_EXT is built "
                              "without the matrix multiplications' files and the template "
                              "instances of mul_mat_q, mul_mat_f and flash attention, which it "
                              "never calls (NORM's clean build: 99.9 s on an H100), and every "
                              "op's test-backend-ops links ggml alone (not libllama and "
                              "llama-common); the engine gate always builds all.")
    # the same type and default as kernelopt-triton's [triton] top: one --top sets both
    top: int = option(1, "A llama.cpp tree with --e2e or --e2e-model and no --op: optimize its "
                      "K ops with the largest share of GPU time.",
                      validator=attrs.validators.ge(1))
