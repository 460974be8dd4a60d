"""Trend, noise, spike and zone judgements on hand-made series with known answers."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_tui.health import trends as tr
from grpo_tui.health.rules import SpikeRules, TrendRules, ZoneBounds
from grpo_tui.vocabulary import Direction, Zone

TREND = TrendRules()
SPIKE = SpikeRules()


def noisy(
    n: int, slope: float, sigma: float, seed: int = 0, start: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    steps = np.arange(1, n + 1, dtype=float)
    return steps, start + slope * steps + rng.normal(0.0, sigma, n)


# -- noise -------------------------------------------------------------------------------


def test_robust_sigma_of_normal_noise_is_its_sigma() -> None:
    values = np.random.default_rng(1).normal(5.0, 2.0, 20_000)
    assert tr.robust_sigma(values) == pytest.approx(2.0, rel=0.05)


def test_robust_sigma_ignores_a_few_outliers_and_nan() -> None:
    values = np.random.default_rng(2).normal(0.0, 1.0, 1000)
    values[::50] = 1e6
    values[1::50] = np.nan
    assert tr.robust_sigma(values) == pytest.approx(1.0, rel=0.15)


def test_robust_sigma_edge_cases() -> None:
    assert tr.robust_sigma(np.full(10, 3.0)) == 0.0
    assert math.isnan(tr.robust_sigma(np.array([np.nan, np.inf])))
    assert math.isnan(tr.robust_sigma(np.empty(0)))


# -- slope and smoothing ------------------------------------------------------------------


def test_theil_sen_is_exact_on_a_line_and_robust_to_outliers() -> None:
    x = np.arange(50, dtype=float)
    y = 3.0 * x + 1.0
    assert tr.theil_sen_slope(x, y, TREND.max_pairs) == pytest.approx(3.0)
    y[::4] = -1000.0  # a quarter of the points wild
    assert tr.theil_sen_slope(x, y, TREND.max_pairs) == pytest.approx(3.0)


def test_theil_sen_samples_pairs_on_long_series_and_is_deterministic() -> None:
    x = np.arange(100_000, dtype=float)
    y = 0.5 * x + np.random.default_rng(3).normal(0, 10, x.size)
    first = tr.theil_sen_slope(x, y, 2000)
    assert first == pytest.approx(0.5, rel=0.01)
    assert tr.theil_sen_slope(x, y, 2000) == first


def test_smooth_removes_single_spikes_and_reduces_long_series() -> None:
    steps = np.arange(30, dtype=float)
    values = np.ones(30)
    values[10] = 50.0
    _, smoothed = tr.smooth(steps, values, 5, 1000)
    assert np.all(smoothed == 1.0)
    steps = np.arange(10_001, dtype=float)
    x, y = tr.smooth(steps, steps * 2, 5, 1000)
    assert x.size <= 1000 and y.size == x.size
    assert np.allclose(y, 2 * x)


# -- trend ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slope", "expected"),
    [(0.01, Direction.RISING), (-0.01, Direction.FALLING), (0.0, Direction.FLAT)],
)
def test_trend_direction_of_noisy_lines(slope: float, expected: Direction) -> None:
    steps, values = noisy(100, slope, sigma=0.1, seed=4)
    trend = tr.classify_trend(steps, values, TREND)
    assert trend.direction == expected
    assert trend.points == 100
    assert trend.noise == pytest.approx(0.1, rel=0.3)


def test_a_change_within_the_noise_is_flat() -> None:
    # 0.02 total rise under noise of sigma 0.5: not a trend
    steps, values = noisy(40, 0.0005, sigma=0.5, seed=5)
    assert tr.classify_trend(steps, values, TREND).direction == Direction.FLAT


def test_constant_series_is_flat_and_noiseless_line_is_rising() -> None:
    steps = np.arange(20, dtype=float)
    assert tr.classify_trend(steps, np.full(20, 0.7), TREND).direction == Direction.FLAT
    assert tr.classify_trend(steps, 1e-6 * steps, TREND).direction == Direction.RISING


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_too_few_points_is_unknown(n: int) -> None:
    steps, values = noisy(n, 1.0, 0.0)
    trend = tr.classify_trend(steps, values, TREND)
    assert trend.direction == Direction.UNKNOWN
    assert trend.points == n


def test_nan_gaps_are_skipped() -> None:
    steps, values = noisy(90, 0.02, sigma=0.1, seed=6)
    values[::3] = np.nan  # a third not logged
    trend = tr.classify_trend(steps, values, TREND)
    assert trend.direction == Direction.RISING
    assert trend.points == 60
    only_nan = tr.classify_trend(steps, np.full(90, np.nan), TREND)
    assert only_nan.direction == Direction.UNKNOWN


def test_step_change_counts_as_a_trend() -> None:
    steps = np.arange(40, dtype=float)
    values = np.where(steps < 20, 0.2, 0.6) + np.random.default_rng(7).normal(0, 0.02, 40)
    assert tr.classify_trend(steps, values, TREND).direction == Direction.RISING


def test_exponential_growth_is_rising() -> None:
    steps = np.arange(40, dtype=float)
    values = 0.01 * np.exp(steps / 6.0)  # 0.01 → ~6.6
    assert tr.classify_trend(steps, values, TREND).direction == Direction.RISING


def test_a_falling_line_is_falling() -> None:
    steps = np.arange(1, 21, dtype=float)
    assert tr.classify_trend(steps, 10.0 - 0.25 * steps, TREND).direction == Direction.FALLING


@settings(max_examples=60, deadline=None)
@given(
    slope=st.sampled_from([-0.05, 0.0, 0.05]),
    scale=st.floats(0.1, 100.0),
    offset=st.floats(-100.0, 100.0),
    seed=st.integers(0, 1000),
)
def test_trend_is_invariant_to_units(slope: float, scale: float, offset: float, seed: int) -> None:
    steps, values = noisy(60, slope, sigma=0.2, seed=seed)
    base = tr.classify_trend(steps, values, TREND).direction
    assert tr.classify_trend(steps, values * scale + offset, TREND).direction == base
    flipped = {Direction.RISING: Direction.FALLING, Direction.FALLING: Direction.RISING}.get(
        base, base
    )
    assert tr.classify_trend(steps, -values * scale, TREND).direction == flipped


# -- spikes ------------------------------------------------------------------------------


def test_a_single_spike_is_found() -> None:
    values = np.random.default_rng(8).normal(1.0, 0.05, 200)
    values[120] = 15.0
    assert np.flatnonzero(tr.spike_mask(values, SPIKE)).tolist() == [120]
    assert np.flatnonzero(tr.spike_mask(values, SPIKE, ratio=10.0)).tolist() == [120]
    assert not tr.spike_mask(values, SPIKE, ratio=20.0).any()  # 15 is not 20× the median


def test_plain_noise_has_no_spikes() -> None:
    values = np.random.default_rng(9).normal(0.0, 1.0, 3000)
    assert not tr.spike_mask(values, SPIKE).any()


def test_spikes_skip_nan_and_short_series() -> None:
    values = np.ones(40)
    values[5:10] = np.nan
    values[30] = 9.0
    mask = tr.spike_mask(values, SPIKE)
    assert mask.tolist().count(True) == 1 and mask[30]
    assert not tr.spike_mask(np.array([1.0, 100.0, 1.0]), SPIKE).any()


def test_spikes_on_long_series_use_blocks() -> None:
    values = np.random.default_rng(10).normal(1.0, 0.05, 50_000)
    values[[1234, 40_000]] = 30.0
    assert np.flatnonzero(tr.spike_mask(values, SPIKE, ratio=10.0)).tolist() == [
        1234,
        40_000,
    ]


# -- zones -------------------------------------------------------------------------------

CLIP = ZoneBounds(caution_below=0.001, caution_above=0.2, bad_above=0.3, spike_above=0.5)


def test_zone_codes_follow_the_bands() -> None:
    values = np.array([0.0, 0.05, 0.25, 0.35, np.nan, np.inf])
    assert tr.zone_codes(values, CLIP).tolist() == [
        Zone.CAUTION,
        Zone.HEALTHY,
        Zone.CAUTION,
        Zone.BAD,
        Zone.UNKNOWN,
        Zone.BAD,
    ]


def test_relative_bands_need_their_scale() -> None:
    length = ZoneBounds(
        caution_below=0.05,
        caution_above=0.9,
        bad_above=0.97,
        relative_to="max_completion_length",
    )
    values = np.array([10.0, 500.0, 950.0, 1000.0])
    assert tr.zone_codes(values, length).tolist() == [Zone.UNKNOWN] * 4
    assert tr.zone_codes(values, length, 1024.0).tolist() == [
        Zone.CAUTION,
        Zone.HEALTHY,
        Zone.CAUTION,
        Zone.BAD,
    ]


def zone_of(codes: Sequence[int], sustained: float = 0.7) -> int:
    return tr.sustained_zone(np.array(codes, dtype=np.int8), sustained).zone


H, C, B, U, N = (
    Zone.HEALTHY,
    Zone.CAUTION,
    Zone.BAD,
    Zone.UNKNOWN,
    Zone.NA,
)


def test_sustained_zone_shares() -> None:
    assert zone_of([B] * 15 + [H] * 5) == B  # 75% bad: sustained
    assert zone_of([B] * 10 + [H] * 10) == C  # 50% bad: a notable excursion, not sustained
    assert zone_of([B] * 5 + [C] * 10 + [H] * 5) == C  # 75% caution or worse
    assert zone_of([B] * 4 + [C] * 4 + [H] * 12) == H  # 20% bad, 40% caution-or-worse
    assert zone_of([H] * 20) == H


def test_sustained_zone_ignores_unknown_and_handles_empty() -> None:
    assert zone_of([B] * 7 + [U] * 13 + [H] * 3) == B  # 7 of 10 judged
    assert zone_of([N] * 5) == N
    assert zone_of([U] * 5) == U
    assert zone_of([]) == U
    window = tr.sustained_zone(np.array([B, B, H, H], dtype=np.int8), 0.7)
    assert window.bad_share == 0.5


def test_rolling_share_and_onset() -> None:
    flags = np.array([0, 1, 1, 0, 1, 1, 1, 1], dtype=bool)
    assert tr.rolling_share(flags, 2).tolist() == [
        0.0,
        0.5,
        1.0,
        0.5,
        0.5,
        1.0,
        1.0,
        1.0,
    ]
    assert tr.onset_index(np.array([0, 1, 0, 1, 1], dtype=bool)) == 3
    assert tr.onset_index(np.array([1, 1], dtype=bool)) == 0
    assert tr.onset_index(np.array([1, 0], dtype=bool)) is None
    assert tr.onset_index(np.array([], dtype=bool)) is None


def test_condition_onset_finds_the_start_of_the_run_that_made_it_hold() -> None:
    # an isolated early flag, then the condition switches on for good at index 10
    flags = np.zeros(30, dtype=bool)
    flags[1] = True
    flags[10:] = True
    assert tr.condition_onset(flags, 20, 0.7) == 10
    # held for the whole series
    assert tr.condition_onset(np.ones(5, dtype=bool), 20, 0.7) == 0
    # does not hold at the end
    assert tr.condition_onset(np.array([1, 1, 1, 0, 0, 0], dtype=bool), 2, 0.7) is None
