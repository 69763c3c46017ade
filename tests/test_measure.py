"""Bench-output parsers and gate statistics."""

from __future__ import annotations

import pytest

from kernelopt_core.errors import BenchParseError
from kernelopt_core.measure.parsers import parse
from kernelopt_core.measure.stats import confirm_stats, noise_pct
from kernelopt_core.target import BenchSpec


def test_json_line_other_output_ignored_and_extras_kept() -> None:
    out = 'warming up\n{"note": 9}\n{"kernelopt_bench": 1, "time_ms": 0.5, "shape": "x"}\n'
    reading = parse(BenchSpec(), out, "b")
    assert reading.time_ms == 0.5 and reading.extra == {"shape": "x"}


def test_csv_median_column_with_unit() -> None:
    out = "name,median_us,min_us\nk,250,200\n"
    assert parse(BenchSpec("csv", "median_us", unit="us"), out, "b").time_ms == 0.25


def test_regex_with_ansi_colours_like_test_backend_ops() -> None:
    out = "\x1b[1;32m  SOFT_MAX(type=f32): 3536 runs - \x1b[0m283.24 us/run - 655360 kB/run\n"
    spec = BenchSpec("regex", regex=r"([\d.]+) us/run", unit="us")
    assert parse(spec, out, "b").time_ms == pytest.approx(0.28324)


@pytest.mark.parametrize("regex", [
    r"elapsed: (?P<ms>[0-9.]+) ms",  # a group named as the user likes: still the time
    r"elapsed: (?P<time>[0-9.]+) ms",
    r"(?P<checksum>[0-9.]+) sum, elapsed: ([0-9.]+) ms",  # checksum and shape are never it
])
def test_a_regex_benchs_time_is_its_time_group_else_its_first_other_group(regex: str) -> None:
    out = "0.75 sum, elapsed: 2.5 ms\n" if "sum" in regex else "elapsed: 2.5 ms\n"
    assert parse(BenchSpec("regex", regex=regex), out, "b").time_ms == 2.5


@pytest.mark.parametrize(
    ("spec", "out", "message"),
    [
        (BenchSpec(), "nothing here\n", 'no JSON line with a "time_ms"'),
        (BenchSpec(), '{"time_ms": 0}\n', "not a positive finite number"),
        (BenchSpec(), '{"time_ms": "fast"}\n', '"time_ms" is not a number'),
        (BenchSpec(), '{"time_ms": 1,,}\n', "invalid JSON"),
        (BenchSpec("csv", "median_ms"), "a,b\n1,2\n", "no CSV header"),
        (BenchSpec("regex", regex=r"t=(\d+)"), "x\n", "matched nothing"),
        # a second time line could be forged by the code under test (it shares stdout)
        (BenchSpec(), '{"time_ms": 9}\n{"time_ms": 0.5}\n', "exactly one per invocation"),
        (BenchSpec("regex", regex=r"t=(\d+)"), "t=9\nt=1\n", "matched 2 times"),
    ],
)
def test_unparseable_output_names_command_and_line(spec, out: str, message: str) -> None:
    with pytest.raises(BenchParseError) as info:
        parse(spec, out, "./bench --fast")
    assert "`./bench --fast`" in str(info.value) and message in str(info.value)


def test_noise_floor_is_the_largest_aa_deviation_never_below_the_floor() -> None:
    assert noise_pct([1.0, 1.0, 1.0], 1.0) == 1.0
    assert noise_pct([1.0, 1.1, 1 / 1.05], 1.0) == pytest.approx(10.0)


def test_confirm_needs_every_round_and_a_margin_above_noise() -> None:
    quiet = [1.0] * 6
    win = confirm_stats([2.0] * 6, [1.0] * 6, quiet, gamma=1.03, floor_pct=1.0)
    assert win.faster and win.wins == 6 and win.sign_p < 0.05
    one_loss = confirm_stats([2.0] * 5 + [1.0], [1.0] * 5 + [1.1], quiet, 1.03, 1.0)
    assert not one_loss.faster
    small = confirm_stats([1.02] * 6, [1.0] * 6, quiet, gamma=1.03, floor_pct=1.0)
    assert small.all_won and not small.faster  # 2 % is inside the 3 % margin
    noisy = confirm_stats([1.05] * 6, [1.0] * 6, [1.08] + [1.0] * 5, gamma=1.01, floor_pct=1.0)
    assert noisy.all_won and not noisy.faster  # 5 % is inside an 8 % noise floor


def test_from_ten_rounds_the_floor_bounds_the_median_by_a_bootstrap() -> None:
    # 18 quiet A/A ratios and two transient readings (5 % and 10 % off, as seen on the H200)
    aa = [1.002, 0.998] * 9 + [1.05, 1 / 1.10]
    eps = noise_pct(aa, 1.0)
    assert eps == noise_pct(list(aa), 1.0)  # a fixed-seed bootstrap: the same ratios, the same ε
    assert eps == 1.0  # the median of 20 barely moves: the floor holds
    assert noise_pct(aa[:8] + [1.05], 1.0) == pytest.approx(5.0)  # fewer than 10: the largest
    # a broad spread still widens it
    wide = [1.0 + 0.04 * ((i % 5) - 2) for i in range(20)]
    assert noise_pct(wide, 1.0) > 3.0


def test_from_ten_rounds_a_few_lost_rounds_do_not_veto_a_clear_win() -> None:
    quiet = [1.0] * 20
    base = [1.03] * 16 + [0.95] * 4  # four rounds hit by a transient
    stats = confirm_stats(base, [1.0] * 20, quiet, gamma=1.01, floor_pct=1.0)
    assert stats.wins == 16 and stats.sign_p <= 0.01 and stats.faster
    five_lost = confirm_stats([1.03] * 15 + [0.95] * 5, [1.0] * 20, quiet, 1.01, 1.0)
    assert not five_lost.faster  # 15 of 20: p = 0.021, not enough
    inside = confirm_stats([1.005] * 20, [1.0] * 20, quiet, gamma=1.01, floor_pct=1.0)
    assert inside.all_won and not inside.faster  # every round won, but inside the 1 % floor


@pytest.mark.parametrize("rounds", [1, 2, 5, 10, 20, 41])
def test_the_sign_test_is_scipy_stats_one_sided_binomial_test(rounds: int) -> None:
    """confirm_stats' p-value (scipy.special's survival function, imported without scipy.stats)
    is scipy.stats.binomtest's, for every count of won rounds."""
    from scipy.stats import binomtest

    for wins in range(rounds + 1):
        base = [1.1] * wins + [0.9] * (rounds - wins)
        got = confirm_stats(base, [1.0] * rounds, [1.0] * rounds, 1.01, 1.0).sign_p
        want = binomtest(wins, rounds, 0.5, alternative="greater").pvalue
        assert got == pytest.approx(want, rel=1e-12, abs=0.0), (rounds, wins)


def test_transient_limit_is_three_percent_or_five_robust_sigmas() -> None:
    from kernelopt_core.measure.stats import transient_limit, transient_rounds

    tight = [1.0, 1.001, 0.999, 1.002, 0.998] * 4
    assert transient_limit(tight) == pytest.approx(1.03)
    wide = [1.0, 1.05, 0.95, 1.1, 0.9] * 4  # MAD 0.05: 5 × 1.4826 × 5 % ≈ 37 %
    assert transient_limit(wide) == pytest.approx(1.0 + 5 * 1.4826 * 0.05)
    limit = transient_limit(tight)
    # a slow baseline reading on either side, or a slow candidate reading, marks its round
    assert transient_rounds([1.0, 1.06, 1.0, 1.0], [1.0, 1.0, 1.0, 1.12], [1.0, 1.0, 1.05, 1.0],
                            limit, limit) == [1, 2, 3]
    assert transient_rounds([1.0], [0.5], [1.0], limit, limit) == []  # fast is never transient


def test_candidate_only_transients_are_retaken_no_more_often_than_baseline_ones() -> None:
    from kernelopt_core.measure.stats import rounds_to_retake

    steady, slow = 1.0, 1.2
    first = [steady] * 6
    last = [steady, slow, steady, steady, steady, steady]  # one baseline transient: round 1
    middle = [slow, steady, slow, slow, steady, slow]  # candidate-only in rounds 0, 2, 3, 5
    assert rounds_to_retake(first, middle, last, 1.03, 1.03) == [0, 1]
    assert rounds_to_retake(first, middle, [steady] * 6, 1.03, 1.03) == []  # a quiet baseline
