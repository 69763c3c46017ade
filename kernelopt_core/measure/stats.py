"""Statistics for the perf gates (scipy for the sign test)."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

import attrs


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


SIGN_ALPHA = 0.01  # with ROBUST_FROM rounds or more: the sign test's level instead of "all won"
ROBUST_FROM = 10
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_QUANTILE = 0.99


def noise_pct(aa_ratios: Sequence[float], floor_pct: float) -> float:
    """Noise floor ε (%) from baseline-against-baseline ratios measured in the same session,
    never below ``floor_pct``.

    With ``ROBUST_FROM`` (10) or more ratios, ε bounds the statistic the gate thresholds — a
    median over the rounds — by a bootstrap: the 99th percentile of |median − 1| over 2,000
    resamples of the A/A ratios (a fixed-seed generator: the same ratios give the same ε). An
    A/A ratio compares two single readings, a round's ratio a reading with the geometric mean
    of two, so ε errs on the wide side; one transient reading among 20 rounds moves it little.
    With fewer ratios (six fresh-process rounds) a bootstrap says nothing: the largest A/A
    deviation, as before."""
    if not aa_ratios:
        return floor_pct
    logs = [math.log(r) for r in aa_ratios]
    if len(logs) < ROBUST_FROM:
        return max(floor_pct, (math.exp(max(abs(x) for x in logs)) - 1.0) * 100)
    rng = random.Random(0)
    medians = sorted(abs(statistics.median(rng.choices(logs, k=len(logs))))
                     for _ in range(BOOTSTRAP_SAMPLES))
    spread = medians[min(len(medians) - 1, int(BOOTSTRAP_QUANTILE * len(medians)))]
    return max(floor_pct, (math.exp(spread) - 1.0) * 100)


TRANSIENT_MIN_PCT = 3.0  # a reading this far above its tree's median (or 5 robust σ) ...
TRANSIENT_SIGMAS = 5.0
RETAKE_TRIES = 2  # ... has its round taken again, at most twice, and at most rounds // 2 in all


def transient_limit(readings: Sequence[float]) -> float:
    """The slowest reading of one tree that is still its steady state: its median plus
    max(TRANSIENT_MIN_PCT %, TRANSIENT_SIGMAS robust σ (1.4826 × MAD)). Seen on the H200: in
    some sessions single readings sit 5-17 % above an otherwise 0.2-0.5 % tight tree, in steps,
    on either tree; a tree whose own readings are wide gets a wide limit."""
    center = median(readings)
    sigma = 1.4826 * median([abs(x - center) for x in readings])
    return center * (1.0 + max(TRANSIENT_MIN_PCT / 100.0, TRANSIENT_SIGMAS * sigma / center))


def transient_rounds(first: Sequence[float], middle: Sequence[float], last: Sequence[float],
                     base_limit: float, cand_limit: float) -> list[int]:
    """Rounds (indices) with a reading above its tree's transient limit."""
    return [i for i, (a, c, b) in enumerate(zip(first, middle, last, strict=True))
            if a > base_limit or b > base_limit or c > cand_limit]


def rounds_to_retake(first: Sequence[float], middle: Sequence[float], last: Sequence[float],
                     base_limit: float, cand_limit: float) -> list[int]:
    """The transient rounds to take again: every round with a transient *baseline* reading,
    and rounds where only the candidate's reading is transient, at most as many as the
    former. A GPU-wide transient hits the baseline's two readings a round at least as often
    as the candidate's one; a candidate slow on its own (bimodal, or slow on purpose in the
    readings it would lose) is not re-drawn beyond what the baseline shows the GPU doing."""
    hit = transient_rounds(first, middle, last, base_limit, cand_limit)
    by_base = [i for i in hit if first[i] > base_limit or last[i] > base_limit]
    by_cand_only = [i for i in hit if i not in by_base]
    return sorted(by_base + by_cand_only[:len(by_base)])


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
        ROBUST_FROM on, the one-sided sign test at SIGN_ALPHA (20 rounds: 16 won, p = 0.006),
        so a few rounds hit by a transient (seen on the H200: single readings 5-13 % slow)
        do not veto a win the others show; the median must still clear the threshold."""
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
    return ConfirmStats(ratios, wins, len(ratios), median(ratios), eps, threshold,
                        sign_test_p(wins, len(ratios)))


def sign_test_p(wins: int, rounds: int) -> float:
    """The one-sided sign test: the chance that one of two equally fast programs wins at least
    ``wins`` of ``rounds`` paired rounds, P(X >= wins) for X ~ Binomial(rounds, 1/2). A side
    whose p is at most SIGN_ALPHA is faster by the rounds, whatever the size of the gain."""
    if rounds <= 0 or wins <= 0:
        return 1.0
    # scipy.special's survival function, as scipy.stats.binomtest computes it (to 3e-15),
    # without scipy.stats' ~1 s import
    from scipy.special import bdtrc

    return float(bdtrc(wins - 1, rounds, 0.5))
