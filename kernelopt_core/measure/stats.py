"""Statistics for the perf gates (scipy for the sign test)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import attrs


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


SIGN_ALPHA = 0.001  # with ROBUST_FROM rounds or more: the sign test's level instead of "all won"
NOISE_QUANTILE = 0.9  # of |A/A deviation|, once there are ROBUST_FROM ratios or more
ROBUST_FROM = 10


def noise_pct(aa_ratios: Sequence[float], floor_pct: float) -> float:
    """Noise floor ε (%) from baseline-against-baseline ratios measured in the same session,
    never below ``floor_pct``.

    With ``ROBUST_FROM`` (10) or more ratios: the 90th percentile of the A/A deviations
    |r − 1| (r folded to ≥ 1), interpolated between order statistics, so one or two outliers
    among 20 rounds do not set the floor while a broad spread still does. With fewer (six
    fresh-process rounds), a quantile is not estimable: the largest deviation, as before."""
    if not aa_ratios:
        return floor_pct
    deviations = sorted(math.exp(abs(math.log(r))) - 1.0 for r in aa_ratios)
    if len(deviations) < ROBUST_FROM:
        spread = deviations[-1]
    else:
        position = NOISE_QUANTILE * (len(deviations) - 1)
        low = math.floor(position)
        high = min(low + 1, len(deviations) - 1)
        spread = deviations[low] + (position - low) * (deviations[high] - deviations[low])
    return max(floor_pct, spread * 100)


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
    def won_enough(self) -> bool:
        """Every round won below ROBUST_FROM rounds (six won of six: p = 0.016); from
        ROBUST_FROM on, the one-sided sign test at SIGN_ALPHA (20 rounds: 18 won), so one
        or two rounds hit by a transient (a clock dip, a housekeeping kernel) do not veto a
        win that the other 18 show."""
        if self.rounds < ROBUST_FROM:
            return self.all_won
        return self.sign_p <= SIGN_ALPHA

    @property
    def faster(self) -> bool:
        return self.won_enough and self.median_ratio > self.threshold


def confirm_stats(
    baseline_ms: Sequence[float],
    candidate_ms: Sequence[float],
    aa_ratios: Sequence[float],
    gamma: float,
    floor_pct: float,
) -> ConfirmStats:
    """Per-round ratios r = baseline/candidate; faster iff enough rounds are won (every one
    below ROBUST_FROM rounds, else the sign test at SIGN_ALPHA) and the median ratio exceeds
    1 + max(ε, γ−1)."""
    ratios = tuple(b / c for b, c in zip(baseline_ms, candidate_ms, strict=True))
    wins = sum(r > 1.0 for r in ratios)
    eps = noise_pct(aa_ratios, floor_pct)
    threshold = 1.0 + max(eps / 100.0, gamma - 1.0)
    from scipy.stats import binomtest  # imported here: scipy.stats costs ~1 s at start-up

    p = binomtest(wins, len(ratios), 0.5, alternative="greater").pvalue if ratios else 1.0
    return ConfirmStats(ratios, wins, len(ratios), median(ratios), eps, threshold, float(p))
