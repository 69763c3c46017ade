"""Paired rounds, read as the engine gate and the model check read them: the baseline's time
over another's, round by round, its band and the rounds won, and whether the other is faster
by those rounds. Pure (no torch): model_compare.py and depthwise_timing.py read rounds so."""

from __future__ import annotations

import statistics
from typing import Any

from kernelopt_core.api import SIGN_ALPHA, sign_test_p

MIN_PAIRS = 3  # fewer paired rounds have no band to speak of: the compile asked for stays


def faster_by_rounds(paired_ratio: dict[str, Any]) -> bool:
    """A rival compile measured faster: over at least MIN_PAIRS paired rounds, its median ratio
    clears its band, or it won so many rounds that two equally fast compiles would do so with a
    chance of at most SIGN_ALPHA (the confirm gate's sign test: a host-bound own compile's wide
    band does not hide a rival that won every round)."""
    if paired_ratio["pairs"] < MIN_PAIRS or paired_ratio["vs_baseline"] <= 1:
        return False
    beyond_band = paired_ratio["vs_baseline"] * (1 - paired_ratio["vs_baseline_band_pct"] / 100) > 1
    won = paired_ratio.get("won")  # absent from lines written before the rounds were counted
    by_sign = won is not None and sign_test_p(won, paired_ratio["pairs"]) <= SIGN_ALPHA
    return beyond_band or by_sign


def undecided_rival(paired_ratio: dict[str, Any]) -> bool:
    """Faster than the own compile by its median but not by its rounds (faster_by_rounds): the
    model check times the two again, as many rounds once more, and decides on all of them (a
    host-bound own compile's band is wide; one more look, not rounds until it tips)."""
    return paired_ratio["vs_baseline"] > 1 and not faster_by_rounds(paired_ratio)


def paired(baseline: list[float], other: list[float], windows: int) -> dict[str, Any]:
    """The baseline's time over the other's, round by round (each round's median window; the
    two took turns within the round, so drift cancels): the median ratio (> 1: the other is
    faster), its band, half the ratios' interquartile range in % of the median, as the engine
    gate reads its rounds, and the rounds the other won (ratio > 1). Over the rounds both were
    timed in (a rival timed again with the own compile has more than the others)."""
    common = min(len(baseline), len(other)) // windows * windows  # rounds both were timed
    ratios = [statistics.median(baseline[i:i + windows]) / statistics.median(other[i:i + windows])
              for i in range(0, common, windows)]
    return {"vs_baseline": round(statistics.median(ratios), 4),
            "vs_baseline_band_pct": round(spread(ratios) / 2, 2), "pairs": len(ratios),
            "won": sum(r > 1 for r in ratios), "round_ratios": [round(r, 4) for r in ratios]}


def spread(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(values, n=4)
    return round(100.0 * (q[2] - q[0]) / statistics.median(values), 2)
