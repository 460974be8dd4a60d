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

# Zone codes (int8), shared with the UI's zone-coloured sparklines.
ZONE_UNKNOWN = 0
ZONE_HEALTHY = 1
ZONE_CAUTION = 2
ZONE_BAD = 3
ZONE_NA = 4
ZONE_NAMES: tuple[str, ...] = ("unknown", "healthy", "caution", "bad", "n/a")
ZONE_CODES: dict[str, int] = {name: code for code, name in enumerate(ZONE_NAMES)}

#: MAD -> standard deviation for normally distributed noise
_MAD_TO_SIGMA = 1.4826

RISING = "rising"
FLAT = "flat"
FALLING = "falling"
EXPLODING = "exploding"
UNKNOWN = "unknown"


# -- noise and levels ----------------------------------------------------------------


def finite(values: np.ndarray) -> np.ndarray:
    """The finite values of an array (NaN and ±Inf dropped)."""
    values = np.asarray(values, dtype=float)
    return values[np.isfinite(values)]


def robust_sigma(values: np.ndarray) -> float:
    """Noise level as 1.4826 × the median absolute deviation (NaN when no finite value)."""
    vals = finite(values)
    if vals.size == 0:
        return math.nan
    return float(_MAD_TO_SIGMA * np.median(np.abs(vals - np.median(vals))))


def median(values: np.ndarray) -> float:
    """NaN-aware median (NaN when no finite value)."""
    vals = finite(values)
    return float(np.median(vals)) if vals.size else math.nan


# -- smoothing and slope -------------------------------------------------------------


def smooth(steps: np.ndarray, values: np.ndarray, width: int, max_points: int) -> tuple[np.ndarray, np.ndarray]:
    """A smoothed copy of a (finite) series: a centred rolling median of `width` points, or,
    for series longer than `max_points`, the medians of `max_points` equal buckets (which
    smooths at least as much and keeps the cost linear)."""
    n = values.size
    if n > max_points:
        edges = np.linspace(0, n, max_points + 1).astype(np.int64)
        size = int(np.max(np.diff(edges)))
        # pad every bucket to the same length with NaN so one nanmedian call does them all
        index = edges[:-1, None] + np.arange(size)[None, :]
        valid = index < edges[1:, None]
        index = np.minimum(index, n - 1)
        vals = np.where(valid, values[index], np.nan)
        stps = np.where(valid, steps[index], np.nan)
        return np.nanmedian(stps, axis=1), np.nanmedian(vals, axis=1)
    width = max(1, min(width, n))
    if width < 3:
        return steps, values
    half = width // 2
    padded = np.concatenate([np.full(half, np.nan), values, np.full(half, np.nan)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1)
    return steps, np.nanmedian(windows, axis=1)


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

    direction: str
    """rising / flat / falling / exploding / unknown"""
    slope: float
    """Robust (Theil-Sen) slope of the smoothed series, per step."""
    change: float
    """slope × the window's step span: the fitted change across the window."""
    noise: float
    """Robust sigma of the points around the fitted line."""
    points: int
    """Finite points judged."""
    level_start: float
    """Fitted value at the window's first step."""
    level_end: float
    """Fitted value at the window's last step."""

    @property
    def known(self) -> bool:
        return self.direction != UNKNOWN

    @property
    def relative_change(self) -> float:
        """change / |level_start| (NaN when the start level is ~0)."""
        if not math.isfinite(self.level_start) or abs(self.level_start) < 1e-12:
            return math.nan
        return self.change / abs(self.level_start)


def unknown_trend(points: int = 0) -> Trend:
    return Trend(UNKNOWN, math.nan, math.nan, math.nan, points, math.nan, math.nan)


def classify_trend(
    steps: np.ndarray,
    values: np.ndarray,
    rules: TrendRules,
    *,
    reference: float | None = None,
    exploding_floor: float | None = None,
) -> Trend:
    """Rising / flat / falling / exploding / unknown for one window of a metric.

    A trend counts only when |fitted change across the window| > noise_multiple × noise.
    "Exploding" is rising with the recent level above exploding_factor × `reference`
    (the median of the previous window; the first half of this window when not given),
    and above `exploding_floor` when one is given (so growth from ~0 to a still-small
    value is not called an explosion). Too few finite points → unknown.
    """
    steps = np.asarray(steps, dtype=float)
    values = np.asarray(values, dtype=float)
    ok = np.isfinite(values) & np.isfinite(steps)
    steps, values = steps[ok], values[ok]
    n = values.size
    if n < max(rules.min_points, 2):
        return unknown_trend(n)
    x, y = smooth(steps, values, rules.smoothing, rules.max_points)
    slope = theil_sen_slope(x, y, rules.max_pairs)
    if not math.isfinite(slope):
        return unknown_trend(n)
    intercept = float(np.median(y - slope * x))
    span = float(steps[-1] - steps[0])
    change = slope * span
    noise = robust_sigma(values - (intercept + slope * steps))
    level_start = intercept + slope * float(steps[0])
    level_end = intercept + slope * float(steps[-1])
    # a noiseless series still needs a change above float rounding to count
    scale = max(abs(level_start), abs(level_end), 1e-12)
    threshold = max(rules.noise_multiple * noise, 1e-9 * scale)
    if abs(change) <= threshold:
        direction = FLAT
    elif change > 0:
        direction = RISING
        if reference is None:
            reference = median(values[: n // 2])
        recent = median(values[-max(1, n // 4) :])
        floor_ok = exploding_floor is None or recent > exploding_floor
        if floor_ok and math.isfinite(reference) and recent > rules.exploding_factor * abs(reference) and recent > 0:
            direction = EXPLODING
    else:
        direction = FALLING
    return Trend(direction, slope, change, noise, n, level_start, level_end)


def accelerating(steps: np.ndarray, values: np.ndarray, rules: TrendRules) -> bool:
    """True when a rising series rises faster than linearly: the second half's slope exceeds
    the first half's by `accelerating_ratio` (both halves need enough points)."""
    steps = np.asarray(steps, dtype=float)
    values = np.asarray(values, dtype=float)
    ok = np.isfinite(values) & np.isfinite(steps)
    steps, values = steps[ok], values[ok]
    half = values.size // 2
    if half < max(rules.min_points // 2, 3):
        return False
    first = theil_sen_slope(*smooth(steps[:half], values[:half], rules.smoothing, rules.max_points), rules.max_pairs)
    second = theil_sen_slope(*smooth(steps[half:], values[half:], rules.smoothing, rules.max_points), rules.max_pairs)
    if not (math.isfinite(first) and math.isfinite(second)) or second <= 0:
        return False
    overall = classify_trend(steps, values, rules)
    if overall.direction not in (RISING, EXPLODING):
        return False
    return second > rules.accelerating_ratio * max(first, 0.0) and (second - first) * (steps[-1] - steps[half]) > rules.noise_multiple * overall.noise


# -- spikes --------------------------------------------------------------------------


def spike_mask(values: np.ndarray, rules: SpikeRules, *, ratio: float | None = None) -> np.ndarray:
    """Which points are spikes: more than `rules.z` robust sigmas from the median of the
    `rules.history` points before them (and, with `ratio`, also above ratio × that median).
    NaN points are never spikes and are skipped as history."""
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
    # points with a full history: one vectorised pass over sliding windows
    if n > h:
        windows = np.lib.stride_tricks.sliding_window_view(vals[:-1], h)  # row k = vals[k:k+h]
        m = np.median(windows, axis=1)
        med[h:] = m
        mad[h:] = np.median(np.abs(windows - m[:, None]), axis=1)
    # the first points have a shorter history (at most `h` of them: a short loop)
    for i in range(rules.min_history, min(h, n)):
        prev = vals[:i]
        med[i] = np.median(prev)
        mad[i] = np.median(np.abs(prev - med[i]))
    scale = np.maximum(_MAD_TO_SIGMA * mad, np.maximum(1e-3 * np.abs(med), 1e-12))
    with np.errstate(invalid="ignore"):
        spikes = np.abs(vals - med) > rules.z * scale
        if ratio is not None:
            spikes &= vals > ratio * np.abs(med)
    mask[ok] = np.nan_to_num(spikes, nan=0).astype(bool)
    return mask


# -- zones ---------------------------------------------------------------------------


def zone_codes(values: np.ndarray, bounds: ZoneBounds, scale: float | None = None) -> np.ndarray:
    """Zone code per value under `bounds` (multiplied by `scale` for relative bounds).
    NaN → unknown, ±Inf → bad. A relative bound without a scale → unknown."""
    values = np.asarray(values, dtype=float)
    codes = np.full(values.shape, ZONE_UNKNOWN, dtype=np.int8)
    isfinite = np.isfinite(values)
    codes[np.isinf(values)] = ZONE_BAD
    if bounds.relative_to is not None and (scale is None or not math.isfinite(scale) or scale <= 0):
        return codes
    factor = scale if bounds.relative_to is not None and scale is not None else 1.0
    codes[isfinite] = ZONE_HEALTHY
    with np.errstate(invalid="ignore"):
        if bounds.caution_below is not None:
            codes[isfinite & (values < bounds.caution_below * factor)] = ZONE_CAUTION
        if bounds.caution_above is not None:
            codes[isfinite & (values > bounds.caution_above * factor)] = ZONE_CAUTION
        if bounds.bad_below is not None:
            codes[isfinite & (values < bounds.bad_below * factor)] = ZONE_BAD
        if bounds.bad_above is not None:
            codes[isfinite & (values > bounds.bad_above * factor)] = ZONE_BAD
    return codes


@dataclass(frozen=True, slots=True)
class WindowZone:
    """The zone of a window under the "sustained" rule, with the shares behind it."""

    zone: int
    """Zone code of the window."""
    judged: int
    """Points with a healthy / caution / bad code."""
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
    judged_mask = (codes == ZONE_HEALTHY) | (codes == ZONE_CAUTION) | (codes == ZONE_BAD)
    judged = int(judged_mask.sum())
    if judged == 0:
        na = bool(codes.size) and bool(np.all((codes == ZONE_NA) | (codes == ZONE_UNKNOWN))) and bool(
            np.any(codes == ZONE_NA)
        )
        return WindowZone(ZONE_NA if na else ZONE_UNKNOWN, 0, math.nan, math.nan)
    bad = float((codes == ZONE_BAD).sum()) / judged
    worse = float(((codes == ZONE_CAUTION) | (codes == ZONE_BAD)).sum()) / judged
    if bad >= sustained:
        zone = ZONE_BAD
    elif worse >= sustained or bad >= 1.0 - sustained:
        zone = ZONE_CAUTION
    else:
        zone = ZONE_HEALTHY
    return WindowZone(zone, judged, bad, worse)


def rolling_share(flags: np.ndarray, width: int) -> np.ndarray:
    """For each point, the share of True among it and the up-to `width - 1` points before it."""
    flags = np.asarray(flags, dtype=np.int64)
    n = flags.size
    if n == 0:
        return np.zeros(0)
    csum = np.concatenate([[0], np.cumsum(flags)])
    idx = np.arange(1, n + 1)
    lo = np.maximum(idx - width, 0)
    return (csum[idx] - csum[lo]) / (idx - lo)


def onset_index(held: np.ndarray) -> int | None:
    """Index where the final stretch of True (running to the end) began; None if the last
    point is False."""
    held = np.asarray(held, dtype=bool)
    if held.size == 0 or not held[-1]:
        return None
    false = np.flatnonzero(~held)
    return int(false[-1]) + 1 if false.size else 0
