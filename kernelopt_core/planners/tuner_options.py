"""The built-in tuner's options, its own ``[tuner]`` table (options.py): how its screen of the
knob grid is spent, and how far a numeric knob's range grows past its ends (``extend_steps``).
``--screen-top``, ``KERNELOPT_SCREEN_TOP`` and ``[tuner] screen_top`` are the same option. The
agents planner screens through the tuner (``screened_frontier``) and the bench workers' sweep
bounds each configuration by ``screen_config_timeout_s``: both read it here."""

from __future__ import annotations

import attrs

from kernelopt_core.options import option, option_table

_positive = attrs.validators.gt(0)


@option_table("tuner")
@attrs.frozen
class TunerOptions:
    screen_top: int = option(3, "Tuner: best screened configurations sent through the gates.",
                             validator=attrs.validators.ge(1))
    screen_evaluations: int | None = option(
        None, "Tuner: most configurations to screen (unset: a grid <= 24 whole, else a quarter, "
              "12..256).", validator=attrs.validators.optional(attrs.validators.ge(1)))
    screen_gpu_seconds: float = option(120.0, "Tuner: GPU-lock seconds its screening may spend.",
                                       validator=_positive)
    screen_config_timeout_s: float = option(
        60.0, "Tuner: seconds one screened configuration may take (compile, check, time).",
        validator=_positive)
    extend_steps: int = option(
        8, "Tuner: values a numeric knob's range grows by at each end while the best sits there "
           "(0: never).", validator=attrs.validators.ge(0))
