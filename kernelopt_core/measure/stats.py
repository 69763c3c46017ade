"""Statistics for the perf gates (scipy for the sign test)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import attrs


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def noise_pct(aa_ratios: Sequence[float], floor_pct: float) -> float:
    """Noise floor ε (%) from baseline-against-baseline ratios measured in the same session:
    the largest A/A deviation seen, never below ``floor_pct``."""
    if not aa_ratios:
        return floor_pct
    spread = max(abs(math.exp(abs(math.log(r))) - 1.0) for r in aa_ratios) * 100
    return max(floor_pct, spread)


@attrs.frozen
class ConfirmStats:
    ratios: tuple[float, ...]  # baseline / candidate per round
    wins: int
    rounds: int
    median_ratio: float
    noise_pct: float
    threshold: float  # the median ratio must exceed this
    sign_p: float

    @property
    def all_won(self) -> bool:
        return self.wins == self.rounds

    @property
    def faster(self) -> bool:
        return self.all_won and self.median_ratio > self.threshold


def confirm_stats(
    baseline_ms: Sequence[float],
    candidate_ms: Sequence[float],
    aa_ratios: Sequence[float],
    gamma: float,
    floor_pct: float,
) -> ConfirmStats:
    """Per-round ratios r = baseline/candidate; faster iff every round is won and the median
    ratio exceeds 1 + max(ε, γ−1). The one-sided sign-test p-value is reported alongside."""
    ratios = tuple(b / c for b, c in zip(baseline_ms, candidate_ms, strict=True))
    wins = sum(r > 1.0 for r in ratios)
    eps = noise_pct(aa_ratios, floor_pct)
    threshold = 1.0 + max(eps / 100.0, gamma - 1.0)
    from scipy.stats import binomtest  # imported here: scipy.stats costs ~1 s at start-up

    p = binomtest(wins, len(ratios), 0.5, alternative="greater").pvalue if ratios else 1.0
    return ConfirmStats(ratios, wins, len(ratios), median(ratios), eps, threshold, float(p))
