"""Judgements on one metric's recent points: trend, noise, spikes and zones. Pure numpy.

Every function takes plain arrays (NaN = no value) and the relevant rules, so it can be
tested on hand-made series with known answers. Costs are O(window): long windows are
reduced to bucket medians before smoothing, and Theil-Sen samples a bounded number of
pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from grpo_tui.health.rules import SpikeRules, TrendRules, ZoneBounds
from grpo_tui.vocabulary import Direction, Zone

#: MAD -> standard deviation for normally distributed noise
_MAD_TO_SIGMA = 1.4826
#: longer series use block statistics for spikes (see spike_mask)
_EXACT_SPIKE_POINTS = 5000
#: noise of longer series is estimated on a strided sample of this many points
_NOISE_SAMPLE = 20000


# -- noise and levels ----------------------------------------------------------------


def robust_sigma(values: np.ndarray) -> float:
    """Noise level as 1.4826 × the median absolute deviation (NaN when no finite value).
    Very long series are estimated from an evenly strided sample of `_NOISE_SAMPLE` points."""
    vals = np.asarray(values, dtype=float)
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return math.nan
    if vals.size > _NOISE_SAMPLE:
        vals = vals[:: -(-vals.size // _NOISE_SAMPLE)]
    return float(_MAD_TO_SIGMA * np.median(np.abs(vals - np.median(vals))))


def median_of(values: np.ndarray) -> float:
    """Median of finite values by one sort: judges take many medians of a few points, where
    np.median's call overhead is ten times the work."""
    ordered = np.sort(values, axis=None)
    n = ordered.size
    if n == 0:
        return math.nan
    half = n // 2
    return float(ordered[half]) if n % 2 else float((ordered[half - 1] + ordered[half]) / 2)


# -- smoothing and slope -------------------------------------------------------------


def smooth(
    steps: np.ndarray, values: np.ndarray, width: int, max_points: int
) -> tuple[np.ndarray, np.ndarray]:
    """A smoothed copy of a (finite) series: a centred rolling median of `width` points
    (edge values repeated at the ends), or, for series longer than `max_points`, the
    medians of at most `max_points` equal buckets (which smooths at least as much and keeps
    the cost linear; the few oldest points that do not fill a bucket are left out)."""
    n = values.size
    if n > max_points:
        size = -(-n // max_points)
        count = n // size
        start = n - count * size
        vals = values[start:].reshape(count, size)
        stps = steps[start:].reshape(count, size)
        return np.median(stps, axis=1), np.median(vals, axis=1)
    width = max(1, min(width, n))
    if width < 3:
        return steps, values
    half = width // 2
    # edge padding: the ends are smoothed towards their own values, not extrapolated
    windows = np.lib.stride_tricks.sliding_window_view(
        np.pad(values, half, mode="edge"), 2 * half + 1
    )
    return steps, np.median(windows, axis=1)


def theil_sen_slope(x: np.ndarray, y: np.ndarray, max_pairs: int) -> float:
    """Median of pairwise slopes. All pairs while there are at most `max_pairs`, else a fixed
    pseudo-random sample of that many pairs (same answer on every call)."""
    n = x.size
    if n < 2:
        return math.nan
    if n * (n - 1) // 2 <= max_pairs:
        i, j = np.triu_indices(n, k=1)
    else:
        rng = np.random.default_rng(0)
        i = rng.integers(0, n, max_pairs)
        j = rng.integers(0, n, max_pairs)
        keep = i != j
        i, j = np.minimum(i[keep], j[keep]), np.maximum(i[keep], j[keep])
    dx = x[j] - x[i]
    ok = dx != 0
    if not ok.any():
        return math.nan
    return float(np.median((y[j] - y[i])[ok] / dx[ok]))


# -- trend ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Trend:
    """The direction of a metric over a window, with the numbers behind it."""

    direction: Direction
    slope: float
    """Robust (Theil-Sen) slope of the smoothed series, per step."""
    noise: float
    """Robust sigma of the points around the fitted line."""
    points: int
    """Finite points judged."""


def classify_trend(steps: np.ndarray, values: np.ndarray, rules: TrendRules) -> Trend:
    """Rising / flat / falling / unknown for one window of a metric.

    A trend counts only when the fitted change across the window is clearly larger than
    the noise: above noise_multiple standard errors of the change (sigma × sqrt(12 / n))
    and above min_change × sigma, sigma being the robust noise of the points around the
    fitted line. Too few finite points → unknown.
    """
    steps = np.asarray(steps, dtype=float)
    values = np.asarray(values, dtype=float)
    ok = np.isfinite(values) & np.isfinite(steps)
    steps, values = steps[ok], values[ok]
    n = values.size
    if n < max(rules.min_points, 2):
        return Trend(Direction.UNKNOWN, math.nan, math.nan, n)
    x, y = smooth(steps, values, rules.smoothing, rules.max_points)
    slope = theil_sen_slope(x, y, rules.max_pairs)
    if not math.isfinite(slope):
        return Trend(Direction.UNKNOWN, math.nan, math.nan, n)
    intercept = median_of(y - slope * x)
    span = float(steps[-1] - steps[0])
    change = slope * span
    stride = max(1, -(-n // _NOISE_SAMPLE))
    noise = robust_sigma(values[::stride] - (intercept + slope * steps[::stride]))
    level_start = intercept + slope * float(steps[0])
    level_end = intercept + slope * float(steps[-1])
    # a noiseless series still needs a change above float rounding to count
    scale = max(abs(level_start), abs(level_end), 1e-12)
    threshold = max(
        rules.noise_multiple * noise * math.sqrt(12.0 / n),
        rules.min_change * noise,
        1e-9 * scale,
    )
    if abs(change) <= threshold:
        direction = Direction.FLAT
    else:
        direction = Direction.RISING if change > 0 else Direction.FALLING
    return Trend(direction, slope, noise, n)


# -- spikes --------------------------------------------------------------------------


def spike_mask(values: np.ndarray, rules: SpikeRules, *, ratio: float | None = None) -> np.ndarray:
    """Which points are spikes: more than `rules.z` robust sigmas from the median of the
    `rules.history` points before them (and, with `ratio`, also above ratio × that median).
    The sigma is the MAD of those points, floored by the whole series' point-to-point noise.
    NaN points are never spikes and are skipped as history. Series longer than
    `_EXACT_SPIKE_POINTS` compare each point with the previous block of `history` points
    instead of a sliding window, which keeps the cost linear."""
    values = np.asarray(values, dtype=float)
    mask = np.zeros(values.size, dtype=bool)
    ok = np.flatnonzero(np.isfinite(values))
    vals = values[ok]
    n = vals.size
    if n <= rules.min_history:
        return mask
    h = max(rules.history, rules.min_history)
    med = np.full(n, np.nan)
    mad = np.full(n, np.nan)
    if n > _EXACT_SPIKE_POINTS:
        blocks = n // h
        stats = vals[: blocks * h].reshape(blocks, h)
        block_med = np.median(stats, axis=1)
        block_mad = np.median(np.abs(stats - block_med[:, None]), axis=1)
        reference = np.arange(n) // h - 1  # the previous complete block
        has = reference >= 0
        med[has] = block_med[reference[has]]
        mad[has] = block_mad[reference[has]]
    elif n > h:
        windows = np.lib.stride_tricks.sliding_window_view(vals[:-1], h)  # row k = vals[k:k+h]
        m = np.median(windows, axis=1)
        med[h:] = m
        mad[h:] = np.median(np.abs(windows - m[:, None]), axis=1)
    # the first points have a shorter history (fewer than `h` of them: a short loop)
    for i in range(rules.min_history, min(h, n)):
        prev = vals[:i]
        med[i] = np.median(prev)
        mad[i] = np.median(np.abs(prev - med[i]))
    # a short history can have a tiny MAD by chance: the series' own point-to-point noise
    # (robust to trends) is a floor for the local scale
    global_noise = robust_sigma(np.diff(vals)) / math.sqrt(2.0)
    floor = np.maximum(1e-3 * np.abs(med), max(global_noise, 1e-12))
    scale = np.maximum(_MAD_TO_SIGMA * mad, floor)
    with np.errstate(invalid="ignore"):
        spikes = np.abs(vals - med) > rules.z * scale
        if ratio is not None:
            spikes &= vals > ratio * np.abs(med)
    mask[ok] = spikes
    return mask


# -- zones ---------------------------------------------------------------------------


def zone_codes(values: np.ndarray, bounds: ZoneBounds, scale: float | None = None) -> np.ndarray:
    """Zone code per value under `bounds` (multiplied by `scale` for relative bounds).
    NaN → unknown, ±Inf → bad. A relative bound without a scale → unknown."""
    values = np.asarray(values, dtype=float)
    codes = np.full(values.shape, Zone.UNKNOWN, dtype=np.int8)
    isfinite = np.isfinite(values)
    codes[np.isinf(values)] = Zone.BAD
    if bounds.relative_to is not None and (scale is None or not math.isfinite(scale) or scale <= 0):
        return codes
    factor = scale if bounds.relative_to is not None and scale is not None else 1.0
    codes[isfinite] = Zone.HEALTHY
    with np.errstate(invalid="ignore"):
        if bounds.caution_below is not None:
            codes[isfinite & (values < bounds.caution_below * factor)] = Zone.CAUTION
        if bounds.caution_above is not None:
            codes[isfinite & (values > bounds.caution_above * factor)] = Zone.CAUTION
        if bounds.bad_below is not None:
            codes[isfinite & (values < bounds.bad_below * factor)] = Zone.BAD
        if bounds.bad_above is not None:
            codes[isfinite & (values > bounds.bad_above * factor)] = Zone.BAD
    return codes


@dataclass(frozen=True, slots=True)
class WindowZone:
    """The zone of a window under the "sustained" rule, with the shares behind it."""

    zone: Zone
    """The window's zone."""
    bad_share: float
    """Share of judged points in the bad band."""
    caution_or_worse_share: float
    """Share of judged points in the caution or bad band."""


def sustained_zone(codes: np.ndarray, sustained: float) -> WindowZone:
    """Bad when bad points are at least `sustained` of the judged points; caution when
    caution-or-worse points are, or when bad points are a notable minority (at least
    1 - sustained: an excursion that is not sustained yet); healthy otherwise. Unknown
    points are ignored; a window of only n/a points is n/a; nothing judged → unknown."""
    codes = np.asarray(codes)
    judged_mask = (codes == Zone.HEALTHY) | (codes == Zone.CAUTION) | (codes == Zone.BAD)
    judged = int(judged_mask.sum())
    if judged == 0:  # every code is n/a or unknown
        na = bool(np.any(codes == Zone.NA))
        return WindowZone(Zone.NA if na else Zone.UNKNOWN, math.nan, math.nan)
    bad = float((codes == Zone.BAD).sum()) / judged
    worse = float(((codes == Zone.CAUTION) | (codes == Zone.BAD)).sum()) / judged
    if bad >= sustained:
        zone = Zone.BAD
    elif worse >= sustained or bad >= 1.0 - sustained:
        zone = Zone.CAUTION
    else:
        zone = Zone.HEALTHY
    return WindowZone(zone, bad, worse)


def rolling_share(flags: np.ndarray, width: int) -> np.ndarray:
    """For each point, the share of True among it and the up-to `width - 1` points before it."""
    flags = np.asarray(flags, dtype=np.int64)
    csum = np.concatenate([[0], np.cumsum(flags)])
    idx = np.arange(1, flags.size + 1)  # none for no flags: an empty share
    lo = np.maximum(idx - width, 0)
    shares: np.ndarray = (csum[idx] - csum[lo]) / (idx - lo)
    return shares


def onset_index(held: np.ndarray) -> int | None:
    """Index where the final stretch of True (running to the end) began; None if the last
    point is False."""
    held = np.asarray(held, dtype=bool)
    if held.size == 0 or not held[-1]:
        return None
    false = np.flatnonzero(~held)
    return int(false[-1]) + 1 if false.size else 0


def condition_onset(flags: np.ndarray, width: int, sustained: float) -> int | None:
    """Where a condition that holds now began: the latest stretch in which `flags` were
    True on a sustained share of a rolling `width`-point window, traced back to the start
    of the unbroken run of True flags it began with. None when it does not hold now."""
    flags = np.asarray(flags, dtype=bool)
    index = onset_index(rolling_share(flags, width) >= sustained)
    if index is None:
        return None
    flagged = np.flatnonzero(flags[: index + 1])
    if flagged.size == 0:
        return index
    return onset_index(flags[: int(flagged[-1]) + 1])
