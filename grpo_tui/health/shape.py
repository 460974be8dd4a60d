"""The shape of a whole series: did it rise, level off, decline, or never move?

A trend fitted to the last half of a run against raw per-step noise calls a reward that
rose and then levelled off "flat", and one noisy small-batch run "not learning". The shape
is read instead from the whole series:

- the noise of one point is estimated from first differences (1.4826 × their median
  absolute deviation / √2), which a trend does not inflate;
- the series is cut into up to ten consecutive stretches, each summarised by its median
  (the level: an observed value's neighbourhood, robust to spikes, never a fitted line);
- two levels differ clearly when they are apart by more than `noise_multiple` standard
  errors of the difference (a median of k points has a standard error ≈ 1.25 σ / √k);
- the latest third of the points gives the recent direction (Theil–Sen on a smoothed
  series against the noise around it, trends.classify_trend).

From those: `rose` (a later level clearly above the first), `declined` (the last level
clearly below the peak level after it), and a phase: warming up, rising, plateau (flat
after a clear rise), declining (down from a peak), flat (never moved), falling.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace

import numpy as np

from grpo_tui.health import trends as tr
from grpo_tui.health.rules import TrendRules
from grpo_tui.health.verdict import Window, num
from grpo_tui.vocabulary import Direction

#: a median of k normal points has a standard error of about this × σ / √k
_MEDIAN_EFFICIENCY = 1.2533
#: the series is read in at most this many stretches (levels: where its peak and trough were)
MAX_STRETCHES = 8
#: points per stretch at the least (fewer points: fewer stretches)
MIN_STRETCH_POINTS = 5
#: the start and end levels are medians of this share of the points (at least 3)
END_SHARE = 0.25
#: a plateau's flat stretch has at least this many points...
PLATEAU_POINTS = 10


class Phase(enum.Enum):
    """Where a series is in its course."""

    WARMUP = "warming up"
    RISING = "rising"
    #: flat, after a clear rise, at about its peak level
    PLATEAU = "plateau"
    #: rose, then wandered below its peak without clearly declining
    UNSTEADY = "unsteady"
    DECLINING = "declining"
    FLAT = "flat"
    FALLING = "falling"


@dataclass(frozen=True, slots=True)
class Level:
    """The median of a stretch of points: an observed level, with where it was seen."""

    value: float
    first_step: float
    last_step: float
    points: int
    #: standard error of `value` as an estimate of the stretch's level
    error: float

    @property
    def window(self) -> Window:
        return Window(self.first_step, self.last_step, self.points)


def point_noise(values: np.ndarray) -> float:
    """σ of one point around its neighbours, from first differences: robust to a trend (a
    trend moves every difference alike) and to spikes (the median ignores them). When most
    differences are exactly 0 (a pinned series), the mean absolute deviation stands in."""
    if values.size < 3:
        return math.nan
    diffs = np.diff(values)
    centred = np.abs(diffs - tr.median_of(diffs))
    mad = 1.4826 * tr.median_of(centred)
    mean_ad = _MEDIAN_EFFICIENCY * float(np.mean(centred))
    return max(mad, mean_ad) / math.sqrt(2.0)


@dataclass(frozen=True, slots=True)
class Shape:
    """What a whole series did."""

    points: int
    noise: float
    stretches: tuple[Level, ...]
    start: Level
    end: Level
    peak: Level
    #: a later level clearly above the first one
    rose: bool
    #: a later level clearly below the first one
    fell: bool
    #: the last level clearly below the peak that came before it
    declined: bool
    #: direction over the latest third of the points
    recent: Direction
    recent_window: Window
    phase: Phase
    threshold_multiple: float

    def apart(self, a: Level, b: Level) -> float:
        """How far apart two levels must be to differ clearly."""
        error = (
            math.hypot(a.error, b.error)
            if math.isfinite(a.error) and math.isfinite(b.error)
            else 0.0
        )
        scale = max(abs(a.value), abs(b.value), 1e-12)
        return max(self.threshold_multiple * error, 1e-9 * scale)

    def above(self, a: Level, b: Level) -> bool:
        """`a` clearly above `b`."""
        return a.value - b.value > self.apart(a, b)

    @property
    def change(self) -> float:
        """Last level minus first (observed medians)."""
        return self.end.value - self.start.value

    def describe(self) -> str:
        """The course in words: levels and where they were seen (medians of observed
        points, not the ends of a fitted line); how they were read is `detail`."""
        if self.end.first_step <= self.start.last_step or not math.isfinite(self.noise):
            # too few points for a start and an end apart: one level, said as what it is
            return (
                f"{num(self.end.value)} at {self.end.window.span} (median of {self.points} points)"
            )
        parts = [f"{num(self.start.value)} at {self.start.window.span}"]
        # the peak when it came before the end, not when the end is where it peaked
        peak_is_start = self.peak.first_step <= self.start.last_step
        if (
            (self.rose or self.declined)
            and self.peak.last_step < self.end.first_step
            and not peak_is_start
        ):
            parts.append(f"peak {num(self.peak.value)} at {self.peak.window.span}")
        parts.append(f"{num(self.end.value)} at {self.end.window.span}")
        return " → ".join(parts)

    @property
    def detail(self) -> str:
        """How the levels of `describe` were read (for `check --verbose`, not the headline)."""
        if not math.isfinite(self.noise):
            return f"median of {self.points} points"
        return (
            f"levels are medians of stretches of the {self.points} points (start and end: "
            f"{self.start.points} each); noise {num(self.noise)} per point; two levels differ "
            f"clearly beyond {num(self.threshold_multiple)} standard errors"
        )


def _level(steps: np.ndarray, values: np.ndarray, noise: float) -> Level:
    error = _MEDIAN_EFFICIENCY * noise / math.sqrt(values.size) if math.isfinite(noise) else 0.0
    return Level(tr.median_of(values), float(steps[0]), float(steps[-1]), int(values.size), error)


def analyse(
    steps: np.ndarray, values: np.ndarray, rules: TrendRules, *, warmup: int
) -> Shape | None:
    """The shape of a series (finite points, oldest first); None without points."""
    steps = np.asarray(steps, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    n = int(values.size)
    if n == 0:
        return None
    noise = point_noise(values)
    usable_noise = noise if math.isfinite(noise) else 0.0
    q = min(n, max(3, round(END_SHARE * n)))
    start = _level(steps[:q], values[:q], usable_noise)
    end = _level(steps[-q:], values[-q:], usable_noise)
    # at least two stretches from 4 points (a short eval series still has a course)
    count = max(2 if n >= 4 else 1, min(MAX_STRETCHES, n // MIN_STRETCH_POINTS))
    # their medians: consecutive stretches of about equal size
    parts = np.array_split(np.arange(n), count)
    stretches = [_level(steps[idx], values[idx], usable_noise) for idx in parts if idx.size]
    peak = max(stretches, key=lambda s: s.value)
    recent_n = min(n, max(rules.min_points, n // 3))
    recent_trend = tr.classify_trend(steps[-recent_n:], values[-recent_n:], rules)
    recent_window = Window(float(steps[-recent_n]), float(steps[-1]), recent_n)
    shape = Shape(
        n, noise, tuple(stretches), start, end, peak, False, False, False,
        recent_trend.direction, recent_window, Phase.WARMUP, rules.noise_multiple,
    )  # fmt: skip
    if n < 2 * q or len(stretches) < 2:
        return shape
    # the start against the end, and against every stretch (the peak may be mid-run)
    # the first stretch too: a rise done within the first tenth hides in the start's median
    first = stretches[0]
    rose = (
        shape.above(end, start)
        or shape.above(end, first)
        or any(shape.above(s, start) for s in stretches[1:])
    )
    fell = shape.above(start, end) or shape.above(first, end)
    peak_before_end = peak.last_step < end.first_step
    declined = peak_before_end and shape.above(peak, end)
    # at about its peak: within two standard errors of the difference (the highest of up
    # to eight noisy stretch medians sits about 1.4 of its errors above its true level)
    near_peak = peak.value - end.value <= 2.0 * math.hypot(peak.error, end.error)
    slowed = _slowed(shape, recent_trend, rules.plateau_multiple)
    shape = replace(shape, rose=rose, fell=fell, declined=declined)
    return replace(shape, phase=_phase(shape, warmup, near_peak, slowed))


def _slowed(shape: Shape, recent: tr.Trend, multiple: float) -> bool:
    """The rise has clearly slowed: the recent slope is below the average pace the series
    rose at before the recent window, by more than `multiple` standard errors. A steady
    slow rise leaves its latest third too short to show a significant rise on its own;
    "flat" there is a lack of evidence, not a plateau.

    The earlier pace is read from levels (the first stretch to the stretch just before the
    recent window), not from a fitted slope: a robust slope ignores a rise that took only
    the first tenth of the run, which is exactly the run that has levelled off longest."""
    window = shape.recent_window
    if window.first_step is None or window.last_step is None:
        return False
    start = window.first_step
    before = [s for s in shape.stretches if s.last_step < start]
    if (
        len(before) < 2
        or recent.points < 2
        or not math.isfinite(recent.slope)
        or not math.isfinite(recent.noise)
    ):
        return False
    first, last = before[0], before[-1]
    distance = _middle(last) - _middle(first)
    span = window.last_step - start
    if distance <= 0 or span <= 0:
        return False
    expected = (last.value - first.value) / distance * span
    observed = recent.slope * span
    se_recent = recent.noise * math.sqrt(12.0 / recent.points)
    se_before = (
        math.hypot(first.error, last.error) * span / distance if math.isfinite(first.error) else 0.0
    )
    return expected - observed > multiple * math.hypot(se_recent, se_before)


def _middle(level: Level) -> float:
    return (level.first_step + level.last_step) / 2


def _phase(shape: Shape, warmup: int, near_peak: bool, slowed: bool) -> Phase:
    recent = shape.recent
    if shape.points < warmup:
        return Phase.WARMUP
    if shape.rose and shape.declined:
        return Phase.DECLINING
    if shape.rose:
        if recent.up or (near_peak and not slowed):
            return Phase.RISING
        if near_peak and shape.recent_window.points >= PLATEAU_POINTS:
            return Phase.PLATEAU
        return Phase.UNSTEADY if not near_peak else Phase.RISING
    if shape.fell:
        return Phase.FALLING
    # a recent rise with no rise of the whole course to show for it: only a start (a short
    # window's slope is rising by chance often enough that it needs the end level above too)
    return Phase.RISING if recent.up and shape.end.value > shape.start.value else Phase.FLAT
