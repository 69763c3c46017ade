"""The built-in gates' own option tables (options.py), registered by gates/builtin.py through
``kernelopt_option_tables`` as any plugin's: ``[screen]``, ``[confirm]``, ``[shape]`` and
``[roofline]`` in kernelopt.toml. Their keys keep the names they had as core settings:
``--final-rounds``, ``KERNELOPT_FINAL_ROUNDS``, ``-o final_rounds=`` (also
``-o confirm.final_rounds=``); a ``[run]`` key of that name is still read, with a note naming
the table (settings.py). A plugin's option of the same name is namespaced, as one named like
a core setting is.

``gamma`` belongs to ``[confirm]``: it is the margin a win is declared by, and the confirm gate
declares wins; the screen, the tuner and gate-selftest read the same margin so that the screen
never passes what confirm must refuse. ``min_noise_pct`` too: confirm's noise floor, which the
engine gate also holds to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from kernelopt_core.options import option, option_table, table_name


def at_least(bound: float, why: str = "") -> Callable[[Any, attrs.Attribute, Any], None]:
    """A validator whose complaint reads as the old settings check's ("must be at least 2")."""
    def check(_instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if not value >= bound:  # NaN too
            raise ValueError(f"must be at least {bound:g}{why}", attribute, bound, value)
    return check


def positive(_instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and not value > 0:
        raise ValueError("must be positive", attribute, 0, value)


@option_table("screen")
@attrs.frozen
class ScreenOptions:
    screen_runs: int = option(3, "Bench invocations per side in the screen (and of the baseline).",
                              validator=at_least(1))


@option_table("confirm")
@attrs.frozen
class ConfirmOptions:
    gamma: float = option(1.03, "The least speedup a win needs, screen and confirm (γ).",
                          validator=at_least(1.0, " (1.03 = a 3 % margin)"))
    final_rounds: int = option(6, "Interleaved confirmation rounds.", validator=at_least(2))
    worker_rounds: int = option(20, "Confirmation rounds when the bench is served by persistent "
                                    "workers.", validator=at_least(2))
    min_noise_pct: float = option(1.0, "The noise floor (%) of confirm and engine, never lower.",
                                  validator=at_least(1.0, " (a noise floor is never below 1 %)"))


@option_table("shape")
@attrs.frozen
class ShapeOptions:
    checksum_rtol: float = option(1e-5, "Shape gate: bench checksums must agree this closely.",
                                  validator=at_least(0.0, " (non-negative)"))


@option_table("roofline")
@attrs.frozen
class RooflineOptions:
    kappa: float = option(1.3, "Roofline: reject above κ × peak.", validator=at_least(1.0))
    peak_gbps: float | None = option(None, "Use this peak bandwidth, not a measured one.",
                                     validator=positive)


GATE_TABLES: tuple[type, ...] = (ScreenOptions, ConfirmOptions, ShapeOptions, RooflineOptions)
# each option's flat name (its old [run] key, flag and variable) -> its table's class
TABLE_OF: dict[str, type] = {f.name: cls for cls in GATE_TABLES for f in attrs.fields(cls)}
# the order they had in the run header's settings (Settings.flat), which stays as it was
FLAT_ORDER = ("gamma", "screen_runs", "final_rounds", "worker_rounds", "min_noise_pct", "kappa",
              "peak_gbps", "checksum_rtol")
GATE_TABLE_NAMES = frozenset(table_name(cls) for cls in GATE_TABLES)
