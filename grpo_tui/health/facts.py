"""Per-metric facts: what the scenarios, the checklist and the metric table read.

A `Series` is a metric's judged window (its latest points) with its zone, reason and
trend; `Facts` computes them once per diagnosis, lazily, with the context rules (clip
ratio, KL scale, length). Then the reward functions (their role, level and spread), the
logged samples (early vs recent) and why groups have zero reward spread.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from grpo_tui.health import trends as tr
from grpo_tui.health.rules import Rules, ZoneBounds
from grpo_tui.health.trends import Trend, WindowZone
from grpo_tui.health.verdict import Evidence, Window, finite_or_none, num, pct
from grpo_tui.health.zones import relative_scale
from grpo_tui.numbers import format_step
from grpo_tui.run.completion_stats import CompletionsSummary, StepSampleStats
from grpo_tui.run.live import Run
from grpo_tui.run.metrics import MetricStore
from grpo_tui.vocabulary import Direction, LineKind, Zone

# -- per-metric facts ----------------------------------------------------------------


@dataclass(slots=True)
class Series:
    """One metric's judged window (its latest points) and what was found there."""

    name: str
    steps: np.ndarray
    values: np.ndarray
    previous: np.ndarray
    """The values of the window before this one (reference for "exploding")."""
    trend_steps: np.ndarray
    trend_values: np.ndarray
    """The (usually longer) latest stretch the trend is judged on."""
    logged: int
    nonfinite_steps: np.ndarray
    """Steps inside the window (or after it) where NaN/Inf was logged."""
    latest_nonfinite: bool
    """The most recent logged value is NaN or ±Inf."""
    trend: Trend
    zone: Zone = Zone.UNKNOWN
    reason: str = ""
    window_points: int | None = None
    """Points the window spans when `values` is a strided sample of it."""
    trend_points: int | None = None
    """Points the trend window spans when `trend_values` is a strided sample of it."""

    @property
    def sampled(self) -> bool:
        return self.window_points is not None

    @property
    def window(self) -> Window:
        if self.values.size == 0:
            steps = self.nonfinite_steps
            if steps.size:
                return Window(float(steps[0]), float(steps[-1]), 0)
            return Window(None, None, 0)
        points = self.window_points if self.window_points is not None else int(self.values.size)
        return Window(float(self.steps[0]), float(self.steps[-1]), points)

    @property
    def trend_window(self) -> Window:
        if self.trend_values.size == 0:
            return Window(None, None, 0)
        points = self.trend_points if self.trend_points is not None else int(self.trend_values.size)
        return Window(float(self.trend_steps[0]), float(self.trend_steps[-1]), points)

    @property
    def last(self) -> float | None:
        if self.latest_nonfinite:
            return math.nan
        return float(self.values[-1]) if self.values.size else None

    @property
    def recent_level(self) -> float:
        """Median of the latest quarter of the window (at least 3 points when there are)."""
        n = self.values.size
        return tr.median(self.values[-max(min(3, n), n // 4) :]) if n else math.nan

    def share(self, flags: np.ndarray) -> float:
        return float(flags.mean()) if flags.size else math.nan

    def evidence(self, numbers: dict[str, float | None], text: str) -> Evidence:
        return Evidence(
            self.name,
            self.window,
            {k: finite_or_none(v) for k, v in numbers.items()},
            text,
        )


def _load_series(store: MetricStore, name: str, rules: Rules) -> Series | None:
    """The latest window of a metric (None when it was never logged)."""
    logged = store.count(name)
    bad_steps = store.nonfinite_steps(name)
    if logged == 0 and bad_steps.size == 0:
        return None
    n = rules.window_size(logged)
    n_trend = rules.trend_window_size(logged)
    fetch = max(2 * n, n_trend)
    limit = rules.window.max_samples
    recent_steps, recent_values = sample_window(store, name, fetch, limit)
    # a strided sample holds proportionally fewer points per window
    scale = min(1.0, recent_values.size / fetch) if fetch > limit else 1.0
    k, k_trend = max(1, round(n * scale)), max(1, round(n_trend * scale))
    steps, values = recent_steps[-k:], recent_values[-k:]
    previous = recent_values[-2 * k : -k] if recent_values.size > k else np.empty(0)
    trend_steps, trend_values = recent_steps[-k_trend:], recent_values[-k_trend:]
    last = store.last(name)
    latest_nonfinite = bool(bad_steps.size) and (last is None or float(bad_steps.max()) > last[0])
    if bad_steps.size and steps.size:
        bad_steps = bad_steps[bad_steps >= steps[0]]
    trend_rules = rules.trend
    if name.startswith("eval_"):
        trend_rules = replace(
            trend_rules,
            min_points=min(trend_rules.min_points, trend_rules.eval_min_points),
        )
    trend = tr.classify_trend(trend_steps, trend_values, trend_rules)
    series = Series(
        name,
        steps,
        values,
        previous,
        trend_steps,
        trend_values,
        logged,
        np.sort(bad_steps),
        latest_nonfinite,
        trend,
    )
    if fetch > limit:
        series.window_points, series.trend_points = min(n, logged), min(n_trend, logged)
    return series


def judge_bands(
    series: Series, bounds: ZoneBounds, rules: Rules, scale: float | None = None
) -> WindowZone:
    codes = tr.zone_codes(series.values, bounds, scale)
    return tr.sustained_zone(codes, rules.window.sustained)


def _worse(a: Zone, b: Zone) -> Zone:
    """The worse of two zones (unknown and n/a say nothing, so count as least)."""
    return a if a.badness >= b.badness else b


def band_reason(
    series: Series,
    wz: WindowZone,
    bounds: ZoneBounds,
    scale: float | None,
    sustained: float,
) -> str:
    """Words for a window zone: the band crossed (only the sides actually crossed), on how
    many of the window's points."""
    factor = scale or 1.0
    values = series.values

    def crossed(below: float | None, above: float | None) -> str:
        sides = []
        if below is not None and np.any(values < below * factor):
            sides.append(f"< {num(below * factor)}")
        if above is not None and np.any(values > above * factor):
            sides.append(f"> {num(above * factor)}")
        return " or ".join(sides)

    if wz.zone == Zone.BAD:
        return (
            f"{crossed(bounds.bad_below, bounds.bad_above)} on {series.window.share(wz.bad_share)}"
        )
    if wz.zone == Zone.CAUTION and wz.caution_or_worse_share < sustained:
        bad = crossed(bounds.bad_below, bounds.bad_above)
        return f"{bad} on {series.window.share(wz.bad_share)}, not sustained yet"
    if wz.zone == Zone.CAUTION:
        where = crossed(bounds.caution_below, bounds.caution_above)
        return f"{where} on {series.window.share(wz.caution_or_worse_share)}"
    if wz.zone == Zone.HEALTHY:
        return f"in the healthy band ({series.window})"
    return "no finite values"


class Facts:
    """Everything the scenarios read, computed once per diagnosis (lazily, so metrics no
    scenario asks for cost nothing)."""

    def __init__(self, run: Run, rules: Rules) -> None:
        self.run = run
        self.store = run.store
        self.rules = rules
        self.context = run.context
        self._series: dict[str, Series | None] = {}

    def series(self, name: str) -> Series | None:
        if name not in self._series:
            self._series[name] = _load_series(self.store, name, self.rules)
        return self._series[name]

    # -- reward, spread -----------------------------------------------------------
    @cached_property
    def reward(self) -> Series | None:
        series = self.series("reward")
        if series is not None:
            series.zone, series.reason = _no_band_zone(series)
        return series

    @cached_property
    def reward_range(self) -> tuple[float, float] | None:
        """(lo, hi) of every logged reward value, from the bucket summaries (cheap)."""
        return _run_range(self.store, "reward")

    @cached_property
    def warming_up(self) -> bool:
        logged = self.store.count("reward")
        if logged == 0:
            train_rows = int(np.count_nonzero(self.store.kinds == LineKind.TRAIN))
            return train_rows < self.rules.window.warmup_points
        return logged < self.rules.window.warmup_points

    @cached_property
    def reward_std(self) -> Series | None:
        series = self.series("reward_std")
        if series is None:
            return None
        bounds = self.rules.zone_bounds("reward_std") or ZoneBounds()
        rng = self.reward_range
        if rng is not None and rng[1] - rng[0] > 0:
            span = max(rng[1], 0.0) - min(rng[0], 0.0)
            small = self.rules.rewards.small_std_fraction * span
            if bounds.caution_below is None or small > bounds.caution_below:
                bounds = replace(bounds, caution_below=small)
        wz = judge_bands(series, bounds, self.rules)
        series.zone = wz.zone
        zero = bounds.bad_below if bounds.bad_below is not None else 0.0
        if wz.zone == Zone.BAD:
            series.reason = f"≈0 (< {num(zero)}) on {series.window.share(wz.bad_share)}"
        elif wz.zone == Zone.CAUTION and bounds.caution_below is not None:
            series.reason = (
                f"small: < {num(bounds.caution_below)} ({pct(self.rules.rewards.small_std_fraction)} of the "
                f"reward range) on {series.window.share(wz.caution_or_worse_share)}"
            )
        else:
            series.reason = band_reason(series, wz, bounds, None, self.rules.window.sustained)
        return series

    @cached_property
    def frac_zero_std(self) -> Series | None:
        return self._banded("frac_reward_zero_std")

    def _banded(self, name: str) -> Series | None:
        """A metric judged on its own value bands (with context scale when relative)."""
        series = self.series(name)
        if series is None:
            return None
        bounds = self.rules.zone_bounds(name)
        if bounds is None:
            series.zone, series.reason = _no_band_zone(series)
            return series
        scale = relative_scale(bounds, self.context)
        if bounds.relative_to is not None and scale is None:
            series.zone, series.reason = Zone.UNKNOWN, f"{bounds.relative_to} unknown"
            return series
        wz = judge_bands(series, bounds, self.rules, scale)
        series.zone = wz.zone
        series.reason = band_reason(series, wz, bounds, scale, self.rules.window.sustained)
        if bounds.spike_above is not None and series.zone == Zone.HEALTHY:
            _mark_spike_above(self.store, series, bounds.spike_above * (scale or 1.0), self.rules)
        if series.latest_nonfinite:
            series.zone = Zone.BAD
            series.reason = (
                f"latest value non-finite (step {format_step(series.nonfinite_steps[-1])})"
            )
        return series

    # -- clip ratio (context rule) ---------------------------------------------------
    @cached_property
    def clip(self) -> Series | None:
        """clip_ratio judged per the context rule: n/a on-policy, unknown when the context
        does not say and every value is 0, judged on the re-use rows when off-policy."""
        store = self.store
        if "clip_ratio" not in store:
            return None
        base = self.series("clip_ratio")
        if base is None:
            return None
        if base.values.size == 0:
            base.zone = Zone.UNKNOWN
            base.reason = f"only NaN/Inf logged ({base.nonfinite_steps.size} in the window)"
            return base
        off_policy = self.context.off_policy
        nonzero = self.clip_nonzero
        if not nonzero:
            if off_policy is False:
                base.zone = Zone.NA
                base.reason = "on-policy (num_iterations 1): 0 by construction"
                return base
            if off_policy is None:
                base.zone = Zone.UNKNOWN
                base.reason = "all 0: expected on-policy, but num_iterations is not known"
                return base
        series = self._clip_reuse_window() or base
        bounds = self.rules.zone_bounds("clip_ratio") or ZoneBounds()
        wz = judge_bands(series, bounds, self.rules)
        series.zone = wz.zone
        series.reason = band_reason(series, wz, bounds, None, self.rules.window.sustained)
        if bounds.spike_above is not None and series.zone == Zone.HEALTHY:
            _mark_spike_above(self.store, series, bounds.spike_above, self.rules)
        if series is not base:
            series.reason += " (re-use steps only)"
        if nonzero and off_policy is not True:
            series.reason += "; non-zero values prove some updates are off-policy"
        return series

    @cached_property
    def clip_nonzero(self) -> bool:
        for name in ("clip_ratio", "clip_ratio_low", "clip_ratio_high"):
            if name in self.store:
                column = self.store.column(name)
                finite = column[np.isfinite(column)]
                if finite.size and bool(np.any(finite != 0)):
                    return True
        return False

    def _clip_reuse_window(self) -> Series | None:
        """clip_ratio on the train rows that logged it without a reward (the re-use passes
        of a rollout batch), latest window; None when there are no such rows."""
        store = self.store
        if "reward" not in store:
            return None
        clip = store.column("clip_ratio")
        reward = store.column("reward")
        kinds = store.kinds
        steps = store.steps
        total = clip.shape[0]
        want = self.rules.window_size(store.count("clip_ratio"))
        span = max(4 * want, 256)
        while True:
            start = max(0, total - span)
            rows = (
                np.isfinite(clip[start:])
                & np.isnan(reward[start:])
                & (kinds[start:] == LineKind.TRAIN)
            )
            found = int(rows.sum())
            if found >= want or start == 0:
                break
            span *= 4
        if found == 0:
            return None
        index = np.flatnonzero(rows)[-want:] + start
        values = clip[index]
        trend = tr.classify_trend(steps[index], values, self.rules.trend)
        return Series(
            "clip_ratio",
            steps[index],
            values,
            np.empty(0),
            steps[index],
            values,
            found,
            np.empty(0),
            False,
            trend,
        )

    # -- KL (scale rule) ---------------------------------------------------------------
    @cached_property
    def kl(self) -> Series | None:
        series = self.series("kl")
        if series is None:
            return None
        rules = self.rules
        if series.values.size == 0:
            series.zone = Zone.UNKNOWN
            series.reason = f"only NaN/Inf logged ({series.nonfinite_steps.size} in the window)"
            return series
        if self.context.beta == 0 and not np.any(series.values != 0):
            series.zone, series.reason = Zone.NA, "beta 0: no KL penalty"
            return series
        reference = (
            tr.median(series.previous)
            if series.previous.size >= rules.trend.min_points
            else tr.median(series.values[: series.values.size // 2])
        )
        bounds = rules.zone_bounds("kl") or ZoneBounds()
        source = self.store.source_key("kl")
        own_scale = (
            source in rules.kl.own_scale_keys
            or float(np.max(np.abs(series.values))) > rules.kl.per_token_max
        )
        floor = None if own_scale else bounds.caution_above
        series.trend = tr.classify_trend(
            series.trend_steps,
            series.trend_values,
            rules.trend,
            exploding_reference=reference,
            exploding_floor=floor,
        )
        if own_scale:
            why = (
                f"{source}: not a per-token KL to the reference"
                if source in rules.kl.own_scale_keys
                else (
                    f"values above {num(rules.kl.per_token_max)}: a per-sequence sum, not per-token"
                )
            )
            series.zone = (
                Zone.BAD if series.trend.direction == Direction.EXPLODING else Zone.HEALTHY
            )
            series.reason = f"{why}; judged on its own history"
        else:
            wz = judge_bands(series, bounds, rules)
            series.zone = wz.zone
            series.reason = band_reason(series, wz, bounds, None, self.rules.window.sustained)
            if series.zone == Zone.HEALTHY and tr.accelerating(
                series.trend_steps, series.trend_values, rules.trend
            ):
                series.zone = Zone.CAUTION
                series.reason = (
                    f"rising faster than linear over the latest {series.trend_values.size} points"
                )
        if series.trend.direction == Direction.EXPLODING:
            series.zone = Zone.BAD
            series.reason = (
                f"exploding: recent {num(series.recent_level)} > {num(rules.trend.exploding_factor)}× "
                f"the previous median {num(reference)}"
            )
        if series.nonfinite_steps.size:
            share = series.nonfinite_steps.size / (series.nonfinite_steps.size + series.values.size)
            if series.latest_nonfinite and share >= rules.window.sustained:
                series.zone = Zone.BAD
                series.reason = f"non-finite on {pct(share)} of the recent logged values"
            else:
                series.reason += (
                    f"; NaN/Inf logged at {series.nonfinite_steps.size} step(s), ignored"
                )
        return series

    # -- length -------------------------------------------------------------------------
    @cached_property
    def clipped(self) -> Series | None:
        return self._banded("clipped_ratio")

    @cached_property
    def length(self) -> Series | None:
        """completion_length against max_completion_length when known, else from
        clipped_ratio alone; plus the collapse check against its early level."""
        series = self.series("completion_length")
        clipped = self.clipped
        if series is None:
            return None
        max_len = self.context.max_completion_length
        bounds = self.rules.zone_bounds("completion_length") or ZoneBounds()
        if max_len:
            wz = judge_bands(series, bounds, self.rules, float(max_len))
            series.zone = wz.zone
            series.reason = (
                band_reason(series, wz, bounds, float(max_len), self.rules.window.sustained)
                + f" (max {max_len})"
            )
        else:
            series.zone, series.reason = Zone.UNKNOWN, "max_completion_length unknown"
        if (
            clipped is not None
            and clipped.zone in (Zone.CAUTION, Zone.BAD)
            and _worse(clipped.zone, series.zone) != series.zone
        ):
            series.zone = clipped.zone
            series.reason = f"from clipped_ratio: {clipped.reason}"
        elif not max_len and clipped is not None and clipped.zone == Zone.HEALTHY:
            series.zone = Zone.HEALTHY
            series.reason = f"max_completion_length unknown; from clipped_ratio: {clipped.reason}"
        collapse = self.length_collapse
        if collapse is not None and _worse(collapse[0], series.zone) != series.zone:
            series.zone, series.reason = collapse[0], collapse[1]
        return series

    @cached_property
    def length_early(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The first window of completion_length (its early level)."""
        if "completion_length" not in self.store:
            return None
        n = self.rules.window_size(self.store.count("completion_length"))
        return _head(self.store, "completion_length", n, self.rules.window.max_samples)

    @cached_property
    def length_collapse(self) -> tuple[Zone, str, float, float] | None:
        """(zone, reason, early level, recent level) when length fell far below its early
        level; None when it did not or there are too few points to compare."""
        series = self.series("completion_length")
        early = self.length_early
        if series is None or early is None:
            return None
        rules = self.rules
        n = series.values.size
        if series.logged < 2 * rules.trend.min_points or n == 0:
            return None
        early_steps, early_values = early
        # compare non-overlapping stretches: the early window ends before the recent one starts
        keep = early_steps < series.steps[0]
        early_values = early_values[keep]
        if early_values.size < rules.trend.min_points // 2:
            half = series.logged // 2
            early_values = early[1][: max(1, min(early[1].size, half))]
        early_level = tr.median(early_values)
        recent = series.recent_level
        if not (math.isfinite(early_level) and early_level > 0 and math.isfinite(recent)):
            return None
        drop = 1.0 - recent / early_level
        noise = tr.robust_sigma(series.values)
        if early_level - recent <= rules.trend.noise_multiple * (
            noise if math.isfinite(noise) else 0.0
        ):
            return None
        max_len = self.context.max_completion_length
        short = recent < rules.length.collapse_short_fraction * max_len if max_len else True
        text = f"down {pct(drop)} from its early level {num(early_level)} to {num(recent)}"
        if drop > rules.length.collapse_bad_drop and short:
            return (
                Zone.BAD,
                text
                + (
                    f" (< {pct(rules.length.collapse_short_fraction)} of max {max_len})"
                    if max_len
                    else ""
                ),
                early_level,
                recent,
            )
        if drop > rules.length.collapse_caution_drop:
            return Zone.CAUTION, text, early_level, recent
        return None

    # -- optimiser ----------------------------------------------------------------------
    @cached_property
    def grad_norm_zero(self) -> bool:
        """grad_norm ≈ 0 on a sustained share of its window: no update reaches the weights."""
        series = self.series("grad_norm")
        if series is None or series.values.size == 0 or series.latest_nonfinite:
            return False
        zero = series.values < self.rules.optimiser.zero_grad_norm
        return series.share(zero) >= self.rules.window.sustained

    @cached_property
    def grad_norm(self) -> Series | None:
        series = self._banded("grad_norm")
        if series is None or series.zone == Zone.BAD:
            return series
        rules = self.rules
        if self.grad_norm_zero:
            share = series.share(series.values < rules.optimiser.zero_grad_norm)
            series.zone = Zone.BAD
            series.reason = (
                f"≈0 (< {num(rules.optimiser.zero_grad_norm)}) on {series.window.share(share)}: "
                "no update reaches the weights"
            )
            return series
        if series.sampled:  # spikes are single points: look at every one
            exact = self.store.window("grad_norm", rules.window_size(series.logged))
            steps, values = exact.steps, exact.values
        else:
            steps, values = series.steps, series.values
        spikes = tr.spike_mask(values, rules.spike, ratio=rules.optimiser.grad_norm_spike_factor)
        if spikes.any():
            i = int(np.flatnonzero(spikes)[-1])
            series.zone = _worse(series.zone, Zone.CAUTION)
            series.reason = (
                f"{int(spikes.sum())} spike(s) > {num(rules.optimiser.grad_norm_spike_factor)}× the rolling median, "
                f"latest {num(values[i])} at step {format_step(steps[i])}"
            )
        elif series.nonfinite_steps.size and series.zone == Zone.HEALTHY:
            series.zone = Zone.CAUTION
            series.reason = (
                f"NaN/Inf at {series.nonfinite_steps.size} step(s) in the window, finite since"
            )
        return series

    @cached_property
    def loss(self) -> Series | None:
        series = self._banded("loss")
        if series is not None and series.zone == Zone.HEALTHY and series.nonfinite_steps.size:
            series.zone = Zone.CAUTION
            series.reason = (
                f"NaN/Inf at {series.nonfinite_steps.size} step(s) in the window, finite since"
            )
        elif series is not None and series.zone == Zone.HEALTHY:
            series.reason = "finite"
        return series

    @cached_property
    def entropy(self) -> Series | None:
        series = self._banded("entropy")
        if series is None or series.zone != Zone.HEALTHY:
            return series
        trend = series.trend
        fall = -trend.relative_change if trend.direction == Direction.FALLING else math.nan
        if math.isfinite(fall) and fall > self.rules.optimiser.entropy_fast_fall:
            series.zone = Zone.CAUTION
            series.reason = f"falling fast: {num(trend.level_start)} → {num(trend.level_end)} over {series.window}"
        return series

    @cached_property
    def eval_reward(self) -> Series | None:
        series = self.series("eval_reward")
        if series is not None:
            series.zone, series.reason = _no_band_zone(series)
        return series

    # -- reward functions and samples --------------------------------------------------
    @cached_property
    def reward_functions(self) -> list[_RewardFunction]:
        return _reward_functions(self)

    @cached_property
    def samples(self) -> _Samples | None:
        summary = self.run.samples
        if summary is None or not summary.steps:
            return None
        return _Samples.from_summary(summary, self.rules)

    @cached_property
    def zero_spread_kind(self) -> tuple[str, str]:
        return _zero_spread_kind(self)

    def all_series(self) -> dict[str, Series | None]:
        """Every judged metric, in display order."""
        judged: dict[str, Series | None] = {
            "reward": self.reward,
            "reward_std": self.reward_std,
            "frac_reward_zero_std": self.frac_zero_std,
            "clip_ratio": self.clip,
            "kl": self.kl,
            "entropy": self.entropy,
            "completion_length": self.length,
            "clipped_ratio": self.clipped,
        }
        for fn in self.reward_functions:
            judged[fn.key] = fn.series
        judged["eval_reward"] = self.eval_reward
        judged["loss"] = self.loss
        judged["grad_norm"] = self.grad_norm
        learning_rate = self.series("learning_rate")
        if learning_rate is not None:
            learning_rate.zone, learning_rate.reason = _no_band_zone(learning_rate)
        judged["learning_rate"] = learning_rate
        for name in self.rules.zones:
            if name not in judged and name in self.store:
                judged[name] = self._banded(name)
        return judged


def _mark_spike_above(store: MetricStore, series: Series, limit: float, rules: Rules) -> None:
    """Any single point above `limit` in the window makes a healthy zone caution (a spike)."""
    if series.sampled:
        points = store.window(series.name, rules.window_size(series.logged))
        steps, values = points.steps, points.values
    else:
        steps, values = series.steps, series.values
    above = np.flatnonzero(values > limit)
    if above.size:
        i = int(above[-1])
        series.zone = Zone.CAUTION
        series.reason = f"spike {num(values[i])} at step {format_step(steps[i])} (> {num(limit)})"


def _no_band_zone(series: Series) -> tuple[Zone, str]:
    """Metrics without value bands: n/a while finite, bad when the latest value is not."""
    if series.latest_nonfinite:
        return (
            Zone.BAD,
            f"latest value non-finite (step {format_step(series.nonfinite_steps[-1])})",
        )
    if series.values.size == 0:
        return Zone.UNKNOWN, "no finite values"
    return Zone.NA, "no value bands: judged by its trend"


def _run_range(store: MetricStore, name: str) -> tuple[float, float] | None:
    if name not in store or store.count(name) == 0:
        return None
    buckets = store.buckets(name, 64)
    return float(np.nanmin(buckets.min)), float(np.nanmax(buckets.max))


def _head(store: MetricStore, name: str, n: int, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The first `n` finite points of a metric (strided down to about `limit` points)."""
    return sample_window(store, name, n, limit, from_start=True)


def sample_window(
    store: MetricStore, name: str, n: int, limit: int, *, from_start: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The latest (or first) `n` finite points of a metric as (steps, values). Up to `limit`
    points this is exact; a longer window is read as an evenly strided sample of the rows
    it spans (estimated from the metric's logging density), which keeps the cost O(limit)."""
    if n <= limit:
        if not from_start:
            points = store.window(name, n)
            return points.steps, points.values
        column = store.column(name)
        span = max(4 * n, 256)
        while True:
            stop = min(column.shape[0], span)
            mask = np.isfinite(column[:stop])
            if int(mask.sum()) >= n or stop == column.shape[0]:
                return store.steps[:stop][mask][:n], column[:stop][mask][:n]
            span *= 4
    rows = len(store)
    span = min(rows, math.ceil(n * rows / max(store.count(name), 1)))
    stride = -(-span // limit)
    section = slice(0, span) if from_start else slice(rows - span, rows)
    values = store.column(name)[section][::stride]
    steps = store.steps[section][::stride]
    mask = np.isfinite(values)
    return steps[mask], values[mask]


# -- reward functions ----------------------------------------------------------------


#: per-function reward means (adapters map legacy `rewards/<fn>` onto this)
_REWARD_FN = re.compile(r"^rewards/(?P<fn>[^/]+)/mean$")


def _words(name: str) -> list[str]:
    """Lower-case words of a name: split at _ - / . and camelCase humps."""
    return [w.lower() for w in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", name)]


def reward_role(name: str, rules: Rules) -> str:
    """The role of a reward function (task, aux or other) from its name and the rules'
    patterns."""
    joined = "_".join(_words(name))

    def matches(patterns: Iterable[str]) -> bool:
        for pattern in patterns:
            words = "_".join(_words(pattern))
            if words and re.search(r"(?:^|_)" + re.escape(words), joined):
                return True
        return False

    if matches(rules.rewards.task_patterns):
        return "task"
    if matches(rules.rewards.aux_patterns):
        return "aux"
    return "other"


@dataclass(slots=True)
class _RewardFunction:
    """One reward function's recent behaviour."""

    fn: str
    key: str
    role: str
    series: Series
    zero_spread: bool
    """Every completion got the same score on most of the window."""
    spread_window: Window
    lo: float
    hi: float
    position: float | None
    """Recent level within the function's own logged range (0 = lowest, 1 = highest)."""
    early_position: float | None
    state: str
    """floor / ceiling / constant / varied"""
    saturated: bool
    improved: bool
    """Its recent level is clearly above its early level (it was learned, at least partly)."""

    @property
    def level(self) -> float:
        return self.series.recent_level

    @property
    def stalled(self) -> bool:
        """Not rising now and never clearly improved over the run (or stuck at its floor)."""
        if self.state == "floor":
            return True
        return (
            self.series.trend.direction in (Direction.FLAT, Direction.FALLING) and not self.improved
        )

    @property
    def trend_word(self) -> str:
        return "at its floor" if self.state == "floor" else self.series.trend.direction.word


def _reward_functions(facts: Facts) -> list[_RewardFunction]:
    store, rules = facts.store, facts.rules
    found: list[_RewardFunction] = []
    for key in store.names():
        match = _REWARD_FN.match(key)
        if match is None or store.count(key) == 0:
            continue
        fn = match.group("fn")
        series = facts.series(key)
        if series is None or series.values.size == 0:
            continue
        std_key = f"rewards/{fn}/std"
        std = facts.series(std_key) if std_key in store else None
        if std is not None and std.values.size:
            zero_flags = std.values < rules.rewards.function_zero_std
            zero_spread = std.share(zero_flags) >= rules.window.sustained
            spread_window = std.window
        else:
            # no std logged: an unchanging mean is the best sign every completion scored alike
            zero_spread = series.values.size >= 2 and float(np.ptp(series.values)) <= 1e-12
            spread_window = series.window
        lo, hi = _run_range(store, key) or (math.nan, math.nan)
        level = series.recent_level
        span = hi - lo
        position = (level - lo) / span if span > 1e-12 else None
        early = _head(store, key, rules.window_size(series.logged), rules.window.max_samples)[1]
        early_level = tr.median(early)
        early_position = (early_level - lo) / span if span > 1e-12 and early.size else None
        noise = tr.robust_sigma(series.values)
        improved = series.logged >= 2 * rules.trend.min_points and level - early_level > max(
            rules.trend.noise_multiple * (noise if math.isfinite(noise) else 0.0),
            1e-12,
        )
        if zero_spread and (
            (position is not None and position <= rules.rewards.floor_position)
            or (position is None and level <= 1e-12)
        ):
            state = "floor"
        elif zero_spread and position is not None and position >= rules.rewards.top_position:
            state = "ceiling"
        elif zero_spread:
            state = "constant"
        else:
            state = "varied"
        small_spread = zero_spread or (
            std is not None
            and std.values.size > 0
            and span > 0
            and tr.median(std.values) <= rules.rewards.saturation_spread * span
        )
        saturated = (
            position is not None
            and position >= rules.rewards.saturation_position
            and early_position is not None
            and early_position <= rules.rewards.saturation_rise_from
            and small_spread
        )
        series.zone, series.reason = _no_band_zone(series)
        if state == "floor":
            series.zone = Zone.BAD
            series.reason = (
                f"{num(level)} on every completion ({spread_window}): no learning signal"
            )
        elif state == "constant":
            series.zone = Zone.CAUTION
            series.reason = (
                f"{num(level)} on every completion ({spread_window}): no learning signal"
            )
        elif saturated:
            series.reason = f"saturated at {num(level)} (top of its range, little spread)"
        found.append(
            _RewardFunction(
                fn,
                key,
                reward_role(fn, rules),
                series,
                zero_spread,
                spread_window,
                lo,
                hi,
                position,
                early_position,
                state,
                saturated,
                improved,
            )
        )
    return found


# -- samples -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Samples:
    """Early vs recent logged completions."""

    stats: tuple[StepSampleStats, ...]
    window: Window
    early: tuple[StepSampleStats, ...]
    recent: tuple[StepSampleStats, ...]
    rules: Rules

    @staticmethod
    def from_summary(summary: CompletionsSummary, rules: Rules) -> _Samples:
        stats = summary.steps
        k = min(rules.samples.compare_steps, max(1, len(stats) // 2))
        window = Window(stats[0].step, stats[-1].step, len(stats))
        return _Samples(stats, window, tuple(stats[:k]), tuple(stats[-k:]), rules)

    @property
    def steps(self) -> int:
        return len(self.stats)

    def onset(self, held: Callable[[StepSampleStats], bool]) -> float | None:
        """First sample step of the latest stretch where `held` was true on a sustained
        share of a rolling window of logged sample steps (searched as far back as `_onset`
        searches a metric)."""
        rules = self.rules
        lookback = rules.trend_window_size(self.steps) + rules.window_size(self.steps)
        recent = self.stats[-lookback:]
        flags = np.array([held(s) for s in recent], dtype=bool)
        steps = [s.step for s in recent]
        width = rules.window_size(self.steps)
        index = tr.condition_onset(flags, width, self.rules.window.sustained)
        return None if index is None else float(steps[index])

    @staticmethod
    def _mean(
        stats: Iterable[StepSampleStats], get: Callable[[StepSampleStats], float | None]
    ) -> float | None:
        values = [v for v in (get(s) for s in stats) if v is not None and math.isfinite(v)]
        return float(np.mean(values)) if values else None

    @property
    def comparable(self) -> bool:
        return self.steps >= 2

    def recent_mean(self, get: Callable[[StepSampleStats], float | None]) -> float | None:
        return self._mean(self.recent, get)

    def early_mean(self, get: Callable[[StepSampleStats], float | None]) -> float | None:
        return self._mean(self.early, get)

    def evidence(self, numbers: dict[str, float | None], text: str) -> Evidence:
        return Evidence(
            "samples",
            self.window,
            {k: finite_or_none(v) for k, v in numbers.items()},
            text,
        )


def overlap(s: StepSampleStats) -> float:
    return s.pairwise_overlap


def format_rate(s: StepSampleStats) -> float | None:
    return s.format_rate


# -- zero spread: all fail or all pass ------------------------------------------------


def _zero_spread_kind(facts: Facts) -> tuple[str, str]:
    """Why groups have no reward spread: ("all_fail" | "all_pass" | "mixed" | "unknown", why).
    From the logged groups first, then the reward functions, then the reward's position in
    its logged range, then a reward of exactly 0."""
    rules = facts.rules
    samples = facts.samples
    if samples is not None:
        fail = samples.recent_mean(lambda s: s.zero_spread_all_fail) or 0.0
        passed = samples.recent_mean(lambda s: s.zero_spread_all_pass) or 0.0
        if fail + passed > 0:
            why = f"logged groups: {pct(fail)} all fail, {pct(passed)} all pass"
            dominance = rules.samples.zero_spread_dominance
            if fail >= dominance * passed:
                return "all_fail", why
            if passed >= dominance * fail:
                return "all_pass", why
            return "mixed", why
    functions = facts.reward_functions
    judged = [f for f in functions if f.role == "task"] or functions
    if judged and all(f.state == "floor" for f in judged):
        return "all_fail", "every " + (
            "task " if judged is not functions else ""
        ) + "reward function is at its floor"
    if judged and all(f.state == "ceiling" for f in judged):
        return "all_pass", "every " + (
            "task " if judged is not functions else ""
        ) + "reward function is at its ceiling"
    reward = facts.reward
    rng = facts.reward_range
    if reward is not None and rng is not None and reward.values.size:
        lo, hi = rng
        level = reward.recent_level
        noise = tr.robust_sigma(reward.values)
        moved = hi - lo > max(
            rules.trend.noise_multiple * (noise if math.isfinite(noise) else 0.0), 1e-12
        )
        if moved and reward.logged >= rules.trend.min_points:
            position = (level - lo) / (hi - lo)
            why = f"reward {num(level)} at {pct(position)} of its logged range {num(lo)}–{num(hi)}"
            if position <= rules.rewards.floor_position:
                return "all_fail", why
            if position >= rules.rewards.top_position:
                return "all_pass", why
            return "mixed", why
        if abs(level) <= 1e-12:
            return "all_fail", "reward is exactly 0"
    return "unknown", "whether groups all fail or all pass is not known"
