"""The diagnosis: is this GRPO run learning? Scenarios, checklist and per-metric health.

`diagnose(run, rules)` reads the run's metric store (recent windows only, so it stays cheap
on a million rows), its context (args) and, when a completions file was read, the sample
statistics, and returns a `Diagnosis`: the scenarios of HEALTH.md that hold (worst first,
each with the evidence that fired and advice), the 8-question checklist, and a zone /
trend per metric. `zone_of_values` and `zone_bands` give the same zones to the UI.

Reading order: public types, the per-metric facts (windows, zones, trends), the reward
functions, the samples, then one builder per scenario, the checklist, and `diagnose`.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from grpo_tui.health import trends as tr
from grpo_tui.health.rules import Rules, ZoneBounds
from grpo_tui.health.trends import Trend, WindowZone
from grpo_tui.run.completion_stats import CompletionsSummary, StepSampleStats
from grpo_tui.run.live import Run
from grpo_tui.run.metrics import MetricStore
from grpo_tui.sources.context import RunContext
from grpo_tui.sources.records import LineKind

GLYPHS: dict[str, str] = {
    "healthy": "✓",
    "caution": "!",
    "bad": "✗",
    "unknown": "?",
    "n/a": "·",
}

SEVERITIES = ("problem", "caution", "info", "ok")
SCENARIO_IDS = (
    "not_learning",
    "too_aggressive",
    "reward_hacking",
    "truncation",
    "length_collapse",
    "low_diversity",
    "saturated",
    "warming_up",
    "healthy",
)
TITLES = {
    "healthy": "Healthy",
    "not_learning": "Not learning",
    "too_aggressive": "Too aggressive / unstable",
    "reward_hacking": "Reward hacking",
    "truncation": "Truncation",
    "length_collapse": "Length collapse",
    "low_diversity": "Low diversity",
    "saturated": "Saturated (late stage)",
    "warming_up": "Warming up",
}

#: metrics shown first, in this order (GRPO signals, then optimiser state)
KEY_METRICS = (
    "reward",
    "reward_std",
    "frac_reward_zero_std",
    "clip_ratio",
    "kl",
    "entropy",
    "completion_length",
    "clipped_ratio",
)
OPTIMISER_METRICS = ("eval_reward", "loss", "grad_norm", "learning_rate")

#: per-function reward means (adapters map legacy `rewards/<fn>` onto this)
_REWARD_FN = re.compile(r"^rewards/(?P<fn>[^/]+)/mean$")


# -- public result types -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    """The points a verdict was judged on."""

    first_step: float | None
    last_step: float | None
    points: int

    @property
    def span(self) -> str:
        """The steps in words: steps a–b (or step a)."""
        if self.first_step is None or self.last_step is None:
            return "no steps"
        if self.first_step == self.last_step:
            return f"step {format_step(self.first_step)}"
        return f"steps {format_step(self.first_step)}–{format_step(self.last_step)}"

    def share(self, fraction: float) -> str:
        """A fraction of the window's points in words: k/n points (steps a–b)."""
        return f"{round(fraction * self.points)}/{self.points} points ({self.span})"

    def __str__(self) -> str:
        if self.points == 0 or self.first_step is None:
            return "no points"
        return f"{self.span}, {self.points} point{'s' if self.points != 1 else ''}"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One fact behind a verdict: which metric, over which window, the numbers, in words."""

    metric: str
    window: Window
    numbers: dict[str, float | None]
    text: str


@dataclass(slots=True)
class Scenario:
    """A named situation of HEALTH.md that holds for the run."""

    id: str
    title: str
    severity: str
    """problem / caution / info / ok"""
    onset_step: float | None
    """First step at which it held (the start of the latest stretch), None when unknown."""
    evidence: list[Evidence]
    advice: list[str]


@dataclass(frozen=True, slots=True)
class CheckItem:
    """One checklist question with its answer (yes / no / unknown) and the evidence."""

    id: int
    question: str
    answer: str
    evidence: str


@dataclass(frozen=True, slots=True)
class MetricHealth:
    """A metric's zone on its recent window, latest value, trend and why."""

    zone: str
    """healthy / caution / bad / n/a / unknown"""
    last: float | None
    trend: str
    """rising / flat / falling / exploding / unknown"""
    reason: str


@dataclass(slots=True)
class Diagnosis:
    """Everything `diagnose` found: what `check` prints and the diagnosis panel shows."""

    status: str
    """healthy / caution / problem / unknown"""
    scenarios: list[Scenario]
    """Worst first."""
    checklist: list[CheckItem]
    metrics: dict[str, MetricHealth]

    def scenario(self, scenario_id: str) -> Scenario | None:
        return next((s for s in self.scenarios if s.id == scenario_id), None)

    @property
    def ids(self) -> list[str]:
        return [s.id for s in self.scenarios]


# -- number formatting (evidence text) -----------------------------------------------


def _num(value: float | None) -> str:
    """A number for evidence text: 3 significant digits, no exponent for common sizes."""
    if value is None or not math.isfinite(value):
        return "NaN" if value is not None and math.isnan(value) else str(value)
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1e5 or magnitude < 1e-3:
        return f"{value:.2e}"
    if magnitude >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def format_step(step: float) -> str:
    """A step as text: 120, or 12.5 for fractional steps."""
    return str(int(step)) if float(step).is_integer() else f"{step:g}"


def _finite_or_none(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


# -- zones for the UI ----------------------------------------------------------------


def _context_adjusted(
    name: str, codes: np.ndarray, values: np.ndarray, rules: Rules, context: RunContext
) -> np.ndarray:
    """Context rules applied to value zones: on-policy clip_ratio and beta 0 KL are n/a,
    a clip_ratio floor is only a warning when the run is known to be off-policy."""
    base = name.removeprefix("eval_")
    if base == "clip_ratio":
        bounds = rules.zone_bounds(name)
        floor = bounds.caution_below if bounds is not None else None
        low = (
            np.isfinite(values) & (values < floor)
            if floor is not None
            else np.zeros(values.shape, bool)
        )
        if context.off_policy is False:
            codes = np.where(low, tr.ZONE_NA, codes).astype(np.int8)
        elif context.off_policy is None:
            codes = np.where(low, tr.ZONE_UNKNOWN, codes).astype(np.int8)
    elif base == "kl" and context.beta == 0:
        codes = np.where(np.isfinite(values), tr.ZONE_NA, codes).astype(np.int8)
    return codes


def zone_of_values(
    name: str, values: np.ndarray, rules: Rules, context: RunContext
) -> np.ndarray:
    """Zone code per value (e.g. per sparkline bucket): 0 unknown, 1 healthy, 2 caution,
    3 bad, 4 n/a. Value bands and context rules only; verdicts that need other metrics
    (the reward range for reward_std, re-use rows for clip_ratio) live in `diagnose`.
    Metrics without bands are n/a where finite."""
    values = np.asarray(values, dtype=float)
    bounds = rules.zone_bounds(name)
    if bounds is None:
        codes = np.full(values.shape, tr.ZONE_UNKNOWN, dtype=np.int8)
        codes[np.isfinite(values)] = tr.ZONE_NA
        return codes
    scale = _relative_scale(bounds, context)
    codes = tr.zone_codes(values, bounds, scale)
    return _context_adjusted(name, codes, values, rules, context)


def zone_bands(
    name: str, rules: Rules, context: RunContext
) -> list[tuple[float, float, str]]:
    """The value bands of a metric as (lo, hi, zone) from -inf to +inf, for a chart.
    Empty when the metric has no bands (or they are relative to an unknown context value)."""
    bounds = rules.zone_bounds(name)
    if bounds is None:
        return []
    scale = _relative_scale(bounds, context)
    if bounds.relative_to is not None and scale is None:
        return []
    factor = scale if scale is not None else 1.0
    cuts = sorted(
        {
            b * factor
            for b in (
                bounds.caution_below,
                bounds.bad_below,
                bounds.caution_above,
                bounds.bad_above,
            )
            if b is not None
        }
    )
    edges = [-math.inf, *cuts, math.inf]
    bands: list[tuple[float, float, str]] = []
    for lo, hi in itertools.pairwise(edges):
        if math.isinf(lo) and math.isinf(hi):
            probe = 0.0
        elif math.isinf(lo):
            probe = hi - max(1.0, abs(hi))
        elif math.isinf(hi):
            probe = lo + max(1.0, abs(lo))
        else:
            probe = (lo + hi) / 2
        zone = tr.ZONE_NAMES[
            int(zone_of_values(name, np.array([probe]), rules, context)[0])
        ]
        if bands and bands[-1][2] == zone:
            bands[-1] = (bands[-1][0], hi, zone)
        else:
            bands.append((lo, hi, zone))
    return bands


def _relative_scale(bounds: ZoneBounds, context: RunContext) -> float | None:
    if bounds.relative_to is None:
        return None
    value = getattr(context, bounds.relative_to, None)
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


# -- per-metric facts ----------------------------------------------------------------


@dataclass(slots=True)
class _Series:
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
    zone: str = "unknown"
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
        points = (
            self.window_points
            if self.window_points is not None
            else int(self.values.size)
        )
        return Window(float(self.steps[0]), float(self.steps[-1]), points)

    @property
    def trend_window(self) -> Window:
        if self.trend_values.size == 0:
            return Window(None, None, 0)
        points = (
            self.trend_points
            if self.trend_points is not None
            else int(self.trend_values.size)
        )
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
            {k: _finite_or_none(v) for k, v in numbers.items()},
            text,
        )


def _load_series(store: MetricStore, name: str, rules: Rules) -> _Series | None:
    """The latest window of a metric (None when it was never logged)."""
    logged = store.count(name)
    bad_steps = store.nonfinite_steps(name)
    if logged == 0 and bad_steps.size == 0:
        return None
    n = rules.window_size(logged)
    n_trend = rules.trend_window_size(logged)
    fetch = max(2 * n, n_trend)
    limit = rules.window.max_samples
    recent_steps, recent_values = _sample_window(store, name, fetch, limit)
    # a strided sample holds proportionally fewer points per window
    scale = min(1.0, recent_values.size / fetch) if fetch > limit else 1.0
    k, k_trend = max(1, round(n * scale)), max(1, round(n_trend * scale))
    steps, values = recent_steps[-k:], recent_values[-k:]
    previous = recent_values[-2 * k : -k] if recent_values.size > k else np.empty(0)
    trend_steps, trend_values = recent_steps[-k_trend:], recent_values[-k_trend:]
    last = store.last(name)
    latest_nonfinite = bool(bad_steps.size) and (
        last is None or float(bad_steps.max()) > last[0]
    )
    if bad_steps.size and steps.size:
        bad_steps = bad_steps[bad_steps >= steps[0]]
    trend_rules = rules.trend
    if name.startswith("eval_"):
        trend_rules = replace(
            trend_rules,
            min_points=min(trend_rules.min_points, trend_rules.eval_min_points),
        )
    trend = tr.classify_trend(trend_steps, trend_values, trend_rules)
    series = _Series(
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


def _judge_bands(
    series: _Series, bounds: ZoneBounds, rules: Rules, scale: float | None = None
) -> WindowZone:
    codes = tr.zone_codes(series.values, bounds, scale)
    return tr.sustained_zone(codes, rules.window.sustained)


def _zone_name(code: int) -> str:
    return tr.ZONE_NAMES[code]


def _worse(a: str, b: str) -> str:
    rank = {"n/a": 0, "unknown": 0, "healthy": 1, "caution": 2, "bad": 3}
    return a if rank[a] >= rank[b] else b


def _band_reason(
    series: _Series,
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
            sides.append(f"< {_num(below * factor)}")
        if above is not None and np.any(values > above * factor):
            sides.append(f"> {_num(above * factor)}")
        return " or ".join(sides)

    if wz.zone == tr.ZONE_BAD:
        return f"{crossed(bounds.bad_below, bounds.bad_above)} on {series.window.share(wz.bad_share)}"
    if wz.zone == tr.ZONE_CAUTION and wz.caution_or_worse_share < sustained:
        bad = crossed(bounds.bad_below, bounds.bad_above)
        return f"{bad} on {series.window.share(wz.bad_share)}, not sustained yet"
    if wz.zone == tr.ZONE_CAUTION:
        where = crossed(bounds.caution_below, bounds.caution_above)
        return f"{where} on {series.window.share(wz.caution_or_worse_share)}"
    if wz.zone == tr.ZONE_HEALTHY:
        return f"in the healthy band ({series.window})"
    return "no finite values"


class _Facts:
    """Everything the scenarios read, computed once per diagnosis (lazily, so metrics no
    scenario asks for cost nothing)."""

    def __init__(self, run: Run, rules: Rules) -> None:
        self.run = run
        self.store = run.store
        self.rules = rules
        self.context = run.context
        self._series: dict[str, _Series | None] = {}

    def series(self, name: str) -> _Series | None:
        if name not in self._series:
            self._series[name] = _load_series(self.store, name, self.rules)
        return self._series[name]

    # -- reward, spread -----------------------------------------------------------
    @cached_property
    def reward(self) -> _Series | None:
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
    def reward_std(self) -> _Series | None:
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
        wz = _judge_bands(series, bounds, self.rules)
        series.zone = _zone_name(wz.zone)
        zero = bounds.bad_below if bounds.bad_below is not None else 0.0
        if wz.zone == tr.ZONE_BAD:
            series.reason = (
                f"≈0 (< {_num(zero)}) on {series.window.share(wz.bad_share)}"
            )
        elif wz.zone == tr.ZONE_CAUTION and bounds.caution_below is not None:
            series.reason = (
                f"small: < {_num(bounds.caution_below)} ({_pct(self.rules.rewards.small_std_fraction)} of the "
                f"reward range) on {series.window.share(wz.caution_or_worse_share)}"
            )
        else:
            series.reason = _band_reason(
                series, wz, bounds, None, self.rules.window.sustained
            )
        return series

    @cached_property
    def frac_zero_std(self) -> _Series | None:
        return self._banded("frac_reward_zero_std")

    def _banded(self, name: str) -> _Series | None:
        """A metric judged on its own value bands (with context scale when relative)."""
        series = self.series(name)
        if series is None:
            return None
        bounds = self.rules.zone_bounds(name)
        if bounds is None:
            series.zone, series.reason = _no_band_zone(series)
            return series
        scale = _relative_scale(bounds, self.context)
        if bounds.relative_to is not None and scale is None:
            series.zone, series.reason = "unknown", f"{bounds.relative_to} unknown"
            return series
        wz = _judge_bands(series, bounds, self.rules, scale)
        series.zone = _zone_name(wz.zone)
        series.reason = _band_reason(
            series, wz, bounds, scale, self.rules.window.sustained
        )
        if bounds.spike_above is not None and series.zone == "healthy":
            _mark_spike_above(
                self.store, series, bounds.spike_above * (scale or 1.0), self.rules
            )
        if series.latest_nonfinite:
            series.zone = "bad"
            series.reason = f"latest value non-finite (step {format_step(series.nonfinite_steps[-1])})"
        return series

    # -- clip ratio (context rule) ---------------------------------------------------
    @cached_property
    def clip(self) -> _Series | None:
        """clip_ratio judged per the context rule: n/a on-policy, unknown when the context
        does not say and every value is 0, judged on the re-use rows when off-policy."""
        store = self.store
        if "clip_ratio" not in store:
            return None
        base = self.series("clip_ratio")
        if base is None:
            return None
        if base.values.size == 0:
            base.zone = "unknown"
            base.reason = (
                f"only NaN/Inf logged ({base.nonfinite_steps.size} in the window)"
            )
            return base
        off_policy = self.context.off_policy
        nonzero = self.clip_nonzero
        if not nonzero:
            if off_policy is False:
                base.zone = "n/a"
                base.reason = "on-policy (num_iterations 1): 0 by construction"
                return base
            if off_policy is None:
                base.zone = "unknown"
                base.reason = (
                    "all 0: expected on-policy, but num_iterations is not known"
                )
                return base
        series = self._clip_reuse_window() or base
        bounds = self.rules.zone_bounds("clip_ratio") or ZoneBounds()
        wz = _judge_bands(series, bounds, self.rules)
        series.zone = _zone_name(wz.zone)
        series.reason = _band_reason(
            series, wz, bounds, None, self.rules.window.sustained
        )
        if bounds.spike_above is not None and series.zone == "healthy":
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

    def _clip_reuse_window(self) -> _Series | None:
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
        return _Series(
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
    def kl(self) -> _Series | None:
        series = self.series("kl")
        if series is None:
            return None
        rules = self.rules
        if series.values.size == 0:
            series.zone = "unknown"
            series.reason = (
                f"only NaN/Inf logged ({series.nonfinite_steps.size} in the window)"
            )
            return series
        if self.context.beta == 0 and not np.any(series.values != 0):
            series.zone, series.reason = "n/a", "beta 0: no KL penalty"
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
                    f"values above {_num(rules.kl.per_token_max)}: a per-sequence sum, not per-token"
                )
            )
            series.zone = "bad" if series.trend.direction == tr.EXPLODING else "healthy"
            series.reason = f"{why}; judged on its own history"
        else:
            wz = _judge_bands(series, bounds, rules)
            series.zone = _zone_name(wz.zone)
            series.reason = _band_reason(
                series, wz, bounds, None, self.rules.window.sustained
            )
            if series.zone == "healthy" and tr.accelerating(
                series.trend_steps, series.trend_values, rules.trend
            ):
                series.zone = "caution"
                series.reason = f"rising faster than linear over the latest {series.trend_values.size} points"
        if series.trend.direction == tr.EXPLODING:
            series.zone = "bad"
            series.reason = (
                f"exploding: recent {_num(series.recent_level)} > {_num(rules.trend.exploding_factor)}× "
                f"the previous median {_num(reference)}"
            )
        if series.nonfinite_steps.size:
            share = series.nonfinite_steps.size / (
                series.nonfinite_steps.size + series.values.size
            )
            if series.latest_nonfinite and share >= rules.window.sustained:
                series.zone = "bad"
                series.reason = (
                    f"non-finite on {_pct(share)} of the recent logged values"
                )
            else:
                series.reason += f"; NaN/Inf logged at {series.nonfinite_steps.size} step(s), ignored"
        return series

    # -- length -------------------------------------------------------------------------
    @cached_property
    def clipped(self) -> _Series | None:
        return self._banded("clipped_ratio")

    @cached_property
    def length(self) -> _Series | None:
        """completion_length against max_completion_length when known, else from
        clipped_ratio alone; plus the collapse check against its early level."""
        series = self.series("completion_length")
        clipped = self.clipped
        if series is None:
            return None
        max_len = self.context.max_completion_length
        bounds = self.rules.zone_bounds("completion_length") or ZoneBounds()
        if max_len:
            wz = _judge_bands(series, bounds, self.rules, float(max_len))
            series.zone = _zone_name(wz.zone)
            series.reason = (
                _band_reason(
                    series, wz, bounds, float(max_len), self.rules.window.sustained
                )
                + f" (max {max_len})"
            )
        else:
            series.zone, series.reason = "unknown", "max_completion_length unknown"
        if (
            clipped is not None
            and clipped.zone in ("caution", "bad")
            and _worse(clipped.zone, series.zone) != series.zone
        ):
            series.zone = clipped.zone
            series.reason = f"from clipped_ratio: {clipped.reason}"
        elif not max_len and clipped is not None and clipped.zone == "healthy":
            series.zone = "healthy"
            series.reason = (
                f"max_completion_length unknown; from clipped_ratio: {clipped.reason}"
            )
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
    def length_collapse(self) -> tuple[str, str, float, float] | None:
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
        if not (
            math.isfinite(early_level) and early_level > 0 and math.isfinite(recent)
        ):
            return None
        drop = 1.0 - recent / early_level
        noise = tr.robust_sigma(series.values)
        if early_level - recent <= rules.trend.noise_multiple * (
            noise if math.isfinite(noise) else 0.0
        ):
            return None
        max_len = self.context.max_completion_length
        short = (
            recent < rules.length.collapse_short_fraction * max_len if max_len else True
        )
        text = f"down {_pct(drop)} from its early level {_num(early_level)} to {_num(recent)}"
        if drop > rules.length.collapse_bad_drop and short:
            return (
                "bad",
                text
                + (
                    f" (< {_pct(rules.length.collapse_short_fraction)} of max {max_len})"
                    if max_len
                    else ""
                ),
                early_level,
                recent,
            )
        if drop > rules.length.collapse_caution_drop:
            return "caution", text, early_level, recent
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
    def grad_norm(self) -> _Series | None:
        series = self._banded("grad_norm")
        if series is None or series.zone == "bad":
            return series
        rules = self.rules
        if self.grad_norm_zero:
            share = series.share(series.values < rules.optimiser.zero_grad_norm)
            series.zone = "bad"
            series.reason = (
                f"≈0 (< {_num(rules.optimiser.zero_grad_norm)}) on {series.window.share(share)}: "
                "no update reaches the weights"
            )
            return series
        if series.sampled:  # spikes are single points: look at every one
            exact = self.store.window("grad_norm", rules.window_size(series.logged))
            steps, values = exact.steps, exact.values
        else:
            steps, values = series.steps, series.values
        spikes = tr.spike_mask(
            values, rules.spike, ratio=rules.optimiser.grad_norm_spike_factor
        )
        if spikes.any():
            i = int(np.flatnonzero(spikes)[-1])
            series.zone = _worse(series.zone, "caution")
            series.reason = (
                f"{int(spikes.sum())} spike(s) > {_num(rules.optimiser.grad_norm_spike_factor)}× the rolling median, "
                f"latest {_num(values[i])} at step {format_step(steps[i])}"
            )
        elif series.nonfinite_steps.size and series.zone == "healthy":
            series.zone = "caution"
            series.reason = f"NaN/Inf at {series.nonfinite_steps.size} step(s) in the window, finite since"
        return series

    @cached_property
    def loss(self) -> _Series | None:
        series = self._banded("loss")
        if (
            series is not None
            and series.zone == "healthy"
            and series.nonfinite_steps.size
        ):
            series.zone = "caution"
            series.reason = f"NaN/Inf at {series.nonfinite_steps.size} step(s) in the window, finite since"
        elif series is not None and series.zone == "healthy":
            series.reason = "finite"
        return series

    @cached_property
    def entropy(self) -> _Series | None:
        series = self._banded("entropy")
        if series is None or series.zone != "healthy":
            return series
        trend = series.trend
        fall = -trend.relative_change if trend.direction == tr.FALLING else math.nan
        if math.isfinite(fall) and fall > self.rules.optimiser.entropy_fast_fall:
            series.zone = "caution"
            series.reason = f"falling fast: {_num(trend.level_start)} → {_num(trend.level_end)} over {series.window}"
        return series

    @cached_property
    def eval_reward(self) -> _Series | None:
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

    @cached_property
    def saturated(self) -> Scenario | None:
        """The saturation scenario (other scenarios ask whether it holds)."""
        return _saturated(self)

    def all_series(self) -> dict[str, _Series | None]:
        """Every judged metric, in display order."""
        judged: dict[str, _Series | None] = {
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


def _mark_spike_above(
    store: MetricStore, series: _Series, limit: float, rules: Rules
) -> None:
    """Any single point above `limit` in the window makes a healthy zone caution (a spike)."""
    if series.sampled:
        points = store.window(series.name, rules.window_size(series.logged))
        steps, values = points.steps, points.values
    else:
        steps, values = series.steps, series.values
    above = np.flatnonzero(values > limit)
    if above.size:
        i = int(above[-1])
        series.zone = "caution"
        series.reason = (
            f"spike {_num(values[i])} at step {format_step(steps[i])} (> {_num(limit)})"
        )


def _no_band_zone(series: _Series) -> tuple[str, str]:
    """Metrics without value bands: n/a while finite, bad when the latest value is not."""
    if series.latest_nonfinite:
        return (
            "bad",
            f"latest value non-finite (step {format_step(series.nonfinite_steps[-1])})",
        )
    if series.values.size == 0:
        return "unknown", "no finite values"
    return "n/a", "no value bands: judged by its trend"


def _run_range(store: MetricStore, name: str) -> tuple[float, float] | None:
    if name not in store or store.count(name) == 0:
        return None
    buckets = store.buckets(name, 64)
    return float(np.nanmin(buckets.min)), float(np.nanmax(buckets.max))


def _head(
    store: MetricStore, name: str, n: int, limit: int
) -> tuple[np.ndarray, np.ndarray]:
    """The first `n` finite points of a metric (strided down to about `limit` points)."""
    return _sample_window(store, name, n, limit, from_start=True)


def _sample_window(
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


def _words(name: str) -> list[str]:
    """Lower-case words of a name: split at _ - / . and camelCase humps."""
    return [
        w.lower()
        for w in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", name)
    ]


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
    series: _Series
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
            self.series.trend.direction in (tr.FLAT, tr.FALLING) and not self.improved
        )

    @property
    def trend_word(self) -> str:
        return "at its floor" if self.state == "floor" else self.series.trend.direction


def _reward_functions(facts: _Facts) -> list[_RewardFunction]:
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
            zero_spread = (
                series.values.size >= 2 and float(np.ptp(series.values)) <= 1e-12
            )
            spread_window = series.window
        lo, hi = _run_range(store, key) or (math.nan, math.nan)
        level = series.recent_level
        span = hi - lo
        position = (level - lo) / span if span > 1e-12 else None
        early = _head(
            store, key, rules.window_size(series.logged), rules.window.max_samples
        )[1]
        early_level = tr.median(early)
        early_position = (
            (early_level - lo) / span if span > 1e-12 and early.size else None
        )
        noise = tr.robust_sigma(series.values)
        improved = (
            series.logged >= 2 * rules.trend.min_points
            and level - early_level
            > max(
                rules.trend.noise_multiple * (noise if math.isfinite(noise) else 0.0),
                1e-12,
            )
        )
        if zero_spread and (
            position is not None
            and position <= rules.rewards.floor_position
            or position is None
            and level <= 1e-12
        ):
            state = "floor"
        elif (
            zero_spread
            and position is not None
            and position >= rules.rewards.top_position
        ):
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
            series.zone = "bad"
            series.reason = f"{_num(level)} on every completion ({spread_window}): no learning signal"
        elif state == "constant":
            series.zone = "caution"
            series.reason = f"{_num(level)} on every completion ({spread_window}): no learning signal"
        elif saturated:
            series.reason = (
                f"saturated at {_num(level)} (top of its range, little spread)"
            )
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
        values = [
            v for v in (get(s) for s in stats) if v is not None and math.isfinite(v)
        ]
        return float(np.mean(values)) if values else None

    @property
    def comparable(self) -> bool:
        return self.steps >= 2

    def recent_mean(
        self, get: Callable[[StepSampleStats], float | None]
    ) -> float | None:
        return self._mean(self.recent, get)

    def early_mean(
        self, get: Callable[[StepSampleStats], float | None]
    ) -> float | None:
        return self._mean(self.early, get)

    def evidence(self, numbers: dict[str, float | None], text: str) -> Evidence:
        return Evidence(
            "samples",
            self.window,
            {k: _finite_or_none(v) for k, v in numbers.items()},
            text,
        )


def _overlap(s: StepSampleStats) -> float:
    return s.pairwise_overlap


def _format_rate(s: StepSampleStats) -> float | None:
    return s.format_rate


# -- zero spread: all fail or all pass ------------------------------------------------


def _zero_spread_kind(facts: _Facts) -> tuple[str, str]:
    """Why groups have no reward spread: ("all_fail" | "all_pass" | "mixed" | "unknown", why).
    From the logged groups first, then the reward functions, then the reward's position in
    its logged range, then a reward of exactly 0."""
    rules = facts.rules
    samples = facts.samples
    if samples is not None:
        fail = samples.recent_mean(lambda s: s.zero_spread_all_fail) or 0.0
        passed = samples.recent_mean(lambda s: s.zero_spread_all_pass) or 0.0
        if fail + passed > 0:
            why = f"logged groups: {_pct(fail)} all fail, {_pct(passed)} all pass"
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
            why = f"reward {_num(level)} at {_pct(position)} of its logged range {_num(lo)}–{_num(hi)}"
            if position <= rules.rewards.floor_position:
                return "all_fail", why
            if position >= rules.rewards.top_position:
                return "all_pass", why
            return "mixed", why
        if abs(level) <= 1e-12:
            return "all_fail", "reward is exactly 0"
    return "unknown", "whether groups all fail or all pass is not known"


# -- scenario building ----------------------------------------------------------------


@dataclass(slots=True)
class _Finding:
    """One trigger of a scenario."""

    severity: str
    evidence: Evidence
    onset: float | None = None


@dataclass(slots=True)
class _Builder:
    """Collects the findings of one scenario."""

    id: str
    findings: list[_Finding] = field(default_factory=list)
    supporting: list[Evidence] = field(default_factory=list)

    def add(
        self, severity: str, evidence: Evidence, onset: float | None = None
    ) -> None:
        self.findings.append(_Finding(severity, evidence, onset))

    def support(self, evidence: Evidence | None) -> None:
        if evidence is not None:
            self.supporting.append(evidence)

    def build(self, advice: list[str]) -> Scenario | None:
        if not self.findings:
            return None
        severity = min((f.severity for f in self.findings), key=SEVERITIES.index)
        onsets = [f.onset for f in self.findings if f.onset is not None]
        if not onsets:
            onsets = [
                f.evidence.window.first_step
                for f in self.findings
                if f.evidence.window.first_step is not None
            ]
        findings = sorted(self.findings, key=lambda f: SEVERITIES.index(f.severity))
        evidence = [f.evidence for f in findings] + self.supporting
        return Scenario(
            self.id,
            TITLES[self.id],
            severity,
            min(onsets) if onsets else None,
            evidence,
            advice,
        )


def _onset(
    facts: _Facts, name: str, flag: Callable[[np.ndarray], np.ndarray]
) -> float | None:
    """First step of the latest stretch in which `flag` held on a sustained share of a
    rolling zone window. Searched within the metric's trend window plus one zone window
    (vectorised): a condition that held all along reports the start of that stretch."""
    store = facts.store
    logged = store.count(name)
    if logged == 0:
        return None
    rules = facts.rules
    width = rules.window_size(logged)
    fetch = rules.trend_window_size(logged) + width
    steps, values = _sample_window(store, name, fetch, rules.window.max_samples)
    if fetch > rules.window.max_samples:
        width = max(1, round(width * values.size / fetch))
    index = tr.condition_onset(flag(values), width, rules.window.sustained)
    return None if index is None else float(steps[index])


def _trend_text(name: str, series: _Series) -> str:
    t = series.trend
    if not t.known:
        return f"{name}: trend unknown ({t.points} point{'s' if t.points != 1 else ''})"
    return (
        f"{name} {t.direction}: {_num(t.level_start)} → {_num(t.level_end)} over {series.trend_window} "
        f"(noise {_num(t.noise)})"
    )


def _trend_evidence(name: str, series: _Series) -> Evidence:
    t = series.trend
    numbers = {
        "start": t.level_start,
        "end": t.level_end,
        "change": t.change,
        "noise": t.noise,
    }
    return Evidence(
        name,
        series.trend_window,
        {k: _finite_or_none(v) for k, v in numbers.items()},
        _trend_text(name, series),
    )


def _zone_evidence(series: _Series) -> Evidence:
    return series.evidence(
        {"last": series.last, "recent": series.recent_level},
        f"{series.name} {series.reason}",
    )


ADVICE_NOT_LEARNING = [
    "Inspect the reward distribution: are the reward functions scoring what you expect?",
    "Raise num_generations so more groups contain both successes and failures.",
    "Raise the sampling temperature.",
    "Add partial-credit rewards (a sparse 0/1 reward gives no spread on hard prompts).",
    "Lower the KL penalty (beta) or raise the learning rate moderately.",
    "Check that LoRA / the parameters are actually training (grad_norm > 0).",
]
ADVICE_ALL_FAIL = [
    "Every completion in most groups fails: the task is too hard or the reward too sparse.",
    "Use easier prompts or a curriculum, add partial-credit rewards, raise num_generations.",
]
ADVICE_TOO_AGGRESSIVE = [
    "Lower the learning rate.",
    "Use a larger batch / more generations per prompt.",
    "Strengthen the KL penalty (beta).",
    "Use fewer update passes per batch (num_iterations).",
    "Check for a reward loophole.",
]
ADVICE_REWARD_HACKING = [
    "Add a correctness reward (or weight it up).",
    "Add quality rewards beyond format.",
    "Add an eval set and evaluate checkpoints for real.",
    "Read the completions.",
]
ADVICE_TRUNCATION = [
    "Raise max_completion_length.",
    "Penalise pointless length (e.g. an overlong penalty).",
    "Check the prompt and the EOS handling.",
    "Lower the temperature.",
]
ADVICE_LENGTH_COLLAPSE = [
    "Look for a reward that pays for short outputs (or a length penalty that is too strong).",
    "Read recent completions: early EOS or a fixed short template?",
]
ADVICE_LOW_DIVERSITY = [
    "Raise num_generations.",
    "Raise temperature / top_p.",
    "Check for mode collapse (entropy, identical completions).",
    "Make the reward more discriminative.",
]
ADVICE_SATURATED = [
    "Not a failure by itself: most groups are all-correct.",
    "If eval has stopped improving, training has stalled: use harder data or a finer reward.",
]
ADVICE_WARMING_UP = ["Wait for more steps: trends need more points before a verdict."]
ADVICE_HEALTHY = [
    "Keep watching reward_std, frac_reward_zero_std and the samples as the run goes on."
]


def _not_learning(facts: _Facts) -> Scenario | None:
    b = _Builder("not_learning")
    rules = facts.rules
    kind, kind_why = facts.zero_spread_kind
    all_pass = kind == "all_pass"
    std = facts.reward_std
    frac = facts.frac_zero_std
    zero = (rules.zone_bounds("reward_std") or ZoneBounds()).bad_below or 0.0
    frac_bad = (rules.zone_bounds("frac_reward_zero_std") or ZoneBounds()).bad_above
    spread_dead = False
    if std is not None and std.zone == "bad" and not all_pass:
        spread_dead = True
        b.add(
            "problem",
            _zone_evidence(std),
            _onset(facts, "reward_std", lambda v: v < zero),
        )
    if (
        frac is not None
        and frac.zone == "bad"
        and not all_pass
        and frac_bad is not None
    ):
        spread_dead = True
        b.add(
            "problem",
            _zone_evidence(frac),
            _onset(facts, "frac_reward_zero_std", lambda v: v > frac_bad),
        )
    if spread_dead:
        b.support(
            Evidence(
                "reward",
                facts.reward.window if facts.reward else Window(None, None, 0),
                {},
                f"zero spread: {kind_why}",
            )
        )
    grad = facts.grad_norm
    if grad is not None and facts.grad_norm_zero:
        b.add(
            "problem",
            _zone_evidence(grad),
            _onset(facts, "grad_norm", lambda v: v < rules.optimiser.zero_grad_norm),
        )
    functions = facts.reward_functions
    task = [f for f in functions if f.role == "task"]
    for f in functions:
        if f.state != "floor":
            continue
        severity = (
            "problem"
            if f.role == "task" and all(t.state == "floor" for t in task)
            else "caution"
        )
        b.add(
            severity,
            Evidence(
                f.key,
                f.spread_window,
                {"level": _finite_or_none(f.level)},
                f"{f.fn}: {_num(f.level)} on every completion ({f.spread_window}): it gives no learning signal",
            ),
        )
    reward = facts.reward
    # a flat reward at the top of its range is explained by saturation, not a failure to learn
    if (
        reward is not None
        and not facts.warming_up
        and reward.trend.direction in (tr.FLAT, tr.FALLING)
        and facts.saturated is None
    ):
        b.add("caution", _trend_evidence("reward", reward))
    for series in (std, frac):
        if series is not None and series.zone == "caution" and not all_pass:
            falling_frac = series is frac and series.trend.direction == tr.FALLING
            if not falling_frac:
                b.add("caution", _zone_evidence(series))
    aux_only = _aux_only_rise(facts)
    if aux_only is not None and not any(
        f.saturated and f.role == "aux" for f in functions
    ):
        b.add("caution", aux_only)
    clip = facts.clip
    if (
        clip is not None
        and clip.zone == "caution"
        and clip.recent_level
        < ((rules.zone_bounds("clip_ratio") or ZoneBounds()).caution_below or 0)
    ):
        b.add("caution", _zone_evidence(clip))
    if not b.findings:
        return None
    if clip is not None and clip.zone == "n/a":
        b.support(_zone_evidence(clip))
    samples = facts.samples
    if samples is not None and samples.comparable:
        early, recent = samples.early_mean(_overlap), samples.recent_mean(_overlap)
        if (
            early is not None
            and recent is not None
            and abs(recent - early) < rules.samples.diversity_drop
        ):
            b.support(
                samples.evidence(
                    {"early_overlap": early, "recent_overlap": recent},
                    "completions look unchanged (overlap steady)",
                )
            )
    advice = (ADVICE_ALL_FAIL if kind == "all_fail" else []) + ADVICE_NOT_LEARNING
    return b.build(advice)


def _aux_only_rise(facts: _Facts) -> Evidence | None:
    """Evidence that the reward rises only through auxiliary rewards while every task reward
    stalls; None otherwise or when no task reward is recognised."""
    reward = facts.reward
    if reward is None or reward.trend.direction not in (tr.RISING, tr.EXPLODING):
        return None
    functions = facts.reward_functions
    task = [f for f in functions if f.role == "task"]
    aux = [f for f in functions if f.role == "aux"]
    if not task or not aux or not all(f.stalled for f in task):
        return None
    rising = [
        f
        for f in aux
        if f.series.trend.direction in (tr.RISING, tr.EXPLODING) or f.saturated
    ]
    if not rising:
        return None
    task_text = ", ".join(f"{f.fn} {f.trend_word}" for f in task)
    aux_text = ", ".join(
        f"{f.fn} {'saturated' if f.saturated else f.series.trend.direction}"
        for f in rising
    )
    return Evidence(
        "rewards",
        reward.trend_window,
        {"reward_change": _finite_or_none(reward.trend.change)},
        f"reward rises only through auxiliary rewards ({aux_text}) while task rewards do not ({task_text})",
    )


def _too_aggressive(facts: _Facts) -> Scenario | None:
    b = _Builder("too_aggressive")
    rules = facts.rules
    clip = facts.clip
    clip_bounds = rules.zone_bounds("clip_ratio") or ZoneBounds()
    if clip is not None and clip.zone in ("caution", "bad"):
        low = (
            clip_bounds.caution_below is not None
            and clip.recent_level < clip_bounds.caution_below
        )
        if not low:
            high = (
                clip_bounds.bad_above
                if clip.zone == "bad"
                else clip_bounds.caution_above
            )
            onset = (
                _onset(facts, "clip_ratio", lambda v: v > high)
                if high is not None
                else None
            )
            b.add(
                "problem" if clip.zone == "bad" else "caution",
                _zone_evidence(clip),
                onset,
            )
    kl = facts.kl
    if kl is not None and kl.zone in ("caution", "bad"):
        kl_bounds = rules.zone_bounds("kl") or ZoneBounds()
        level = kl_bounds.bad_above if kl.zone == "bad" else kl_bounds.caution_above
        onset = _onset(facts, "kl", lambda v: v > level) if level is not None else None
        b.add("problem" if kl.zone == "bad" else "caution", _zone_evidence(kl), onset)
    for series in (facts.loss, facts.grad_norm):
        if series is None:
            continue
        if series.latest_nonfinite:
            b.add(
                "problem",
                _zone_evidence(series),
                float(series.nonfinite_steps[0])
                if series.nonfinite_steps.size
                else None,
            )
        elif series.zone == "caution":
            b.add("caution", _zone_evidence(series))
    reward, eval_reward = facts.reward, facts.eval_reward
    if (
        reward is not None
        and eval_reward is not None
        and reward.trend.direction in (tr.RISING, tr.EXPLODING)
        and eval_reward.trend.direction == tr.FALLING
    ):
        b.add("caution", _trend_evidence("eval_reward", eval_reward))
    if not b.findings:
        return None
    if reward is not None and reward.trend.known:
        b.support(_trend_evidence("reward", reward))
    return b.build(ADVICE_TOO_AGGRESSIVE)


def _reward_hacking(facts: _Facts) -> Scenario | None:
    b = _Builder("reward_hacking")
    rules = facts.rules
    functions = facts.reward_functions
    task = [f for f in functions if f.role == "task"]
    saturated_aux = [f for f in functions if f.role == "aux" and f.saturated]
    reward = facts.reward
    reward_up = reward is not None and reward.trend.direction in (
        tr.RISING,
        tr.EXPLODING,
    )
    task_stalled = bool(task) and all(f.stalled for f in task)
    for f in saturated_aux:
        text = f"{f.fn} saturated at {_num(f.level)} (top of its range {_num(f.lo)}–{_num(f.hi)})"
        if task_stalled:
            flat = ", ".join(
                f"{t.fn} {t.trend_word}, never clearly improved" for t in task
            )
            top = f.lo + rules.rewards.saturation_position * (f.hi - f.lo)
            b.add(
                "problem",
                Evidence(
                    f.key,
                    f.series.window,
                    {"level": _finite_or_none(f.level)},
                    f"{text} while task rewards stall ({flat})",
                ),
                _onset(facts, f.key, lambda v, top=top: v >= top),
            )
        elif not task and reward_up:
            b.add(
                "caution",
                Evidence(
                    f.key,
                    f.series.window,
                    {"level": _finite_or_none(f.level)},
                    f"{text}; no task (correctness) reward is recognised",
                ),
            )
    samples = facts.samples
    if reward_up and samples is not None and samples.comparable:
        # "only #1 ✓ while the samples get worse": the reward says more than the samples
        early, recent = samples.early_mean(_overlap), samples.recent_mean(_overlap)
        if (
            early is not None
            and recent is not None
            and recent - early > rules.samples.diversity_drop
        ):
            b.add(
                "caution",
                samples.evidence(
                    {"early_overlap": early, "recent_overlap": recent},
                    f"reward rising while completions grow alike: overlap {_num(early)} → {_num(recent)}",
                ),
            )
        early_format = samples.early_mean(_format_rate)
        recent_format = samples.recent_mean(_format_rate)
        if (
            early_format is not None
            and recent_format is not None
            and early_format - recent_format > rules.samples.format_drop
        ):
            b.add(
                "caution",
                samples.evidence(
                    {"early_format": early_format, "recent_format": recent_format},
                    f"reward rising while format compliance falls: {_pct(early_format)} → {_pct(recent_format)}",
                ),
            )
    eval_reward = facts.eval_reward
    if reward_up and eval_reward is not None and eval_reward.trend.direction == tr.FLAT:
        b.add(
            "caution",
            Evidence(
                "eval_reward",
                eval_reward.window,
                {"change": _finite_or_none(eval_reward.trend.change)},
                f"reward rising while {_trend_text('eval_reward', eval_reward)}",
            ),
        )
    if not b.findings:
        return None
    if reward is not None:
        b.support(_trend_evidence("reward", reward))
    return b.build(ADVICE_REWARD_HACKING)


def _truncation(facts: _Facts) -> Scenario | None:
    b = _Builder("truncation")
    rules = facts.rules
    clipped = facts.clipped
    if clipped is not None and clipped.zone in ("caution", "bad"):
        bounds = rules.zone_bounds("clipped_ratio") or ZoneBounds()
        level = bounds.bad_above if clipped.zone == "bad" else bounds.caution_above
        onset = (
            _onset(facts, "clipped_ratio", lambda v: v > level)
            if level is not None
            else None
        )
        b.add(
            "problem" if clipped.zone == "bad" else "caution",
            _zone_evidence(clipped),
            onset,
        )
    max_len = facts.context.max_completion_length
    length = facts.series("completion_length")
    if length is not None and max_len:
        # only the upper bands: pinned at the cap (short outputs are length_collapse's business)
        bounds = replace(
            rules.zone_bounds("completion_length") or ZoneBounds(),
            caution_below=None,
            bad_below=None,
        )
        wz = _judge_bands(length, bounds, rules, float(max_len))
        if wz.zone in (tr.ZONE_CAUTION, tr.ZONE_BAD):
            level = (
                bounds.bad_above if wz.zone == tr.ZONE_BAD else bounds.caution_above
            ) or 1.0
            onset = _onset(facts, "completion_length", lambda v: v > level * max_len)
            reason = _band_reason(
                length, wz, bounds, float(max_len), rules.window.sustained
            )
            text = f"completion_length {_num(length.recent_level)} of max {max_len}: {reason}"
            b.add(
                "problem" if wz.zone == tr.ZONE_BAD else "caution",
                length.evidence({"recent": length.recent_level, "max": max_len}, text),
                onset,
            )
    return b.build(ADVICE_TRUNCATION)


def _length_collapse(facts: _Facts) -> Scenario | None:
    collapse = facts.length_collapse
    series = facts.series("completion_length")
    if collapse is None or series is None:
        return None
    zone, text, early, recent = collapse
    b = _Builder("length_collapse")
    limit = early * (1 - facts.rules.length.collapse_caution_drop)
    b.add(
        "problem" if zone == "bad" else "caution",
        series.evidence(
            {"early": early, "recent": recent}, f"completion_length {text}"
        ),
        _onset(facts, "completion_length", lambda v: v < limit),
    )
    reward = facts.reward
    if reward is not None and reward.trend.known:
        b.support(_trend_evidence("reward", reward))
    return b.build(ADVICE_LENGTH_COLLAPSE)


def _low_diversity(facts: _Facts) -> Scenario | None:
    b = _Builder("low_diversity")
    rules = facts.rules
    samples = facts.samples
    if samples is not None:
        recent = samples.recent_mean(_overlap)
        early = samples.early_mean(_overlap)
        bad, caution = rules.samples.overlap_bad, rules.samples.overlap_caution
        if recent is not None and recent >= bad:
            b.add(
                "problem",
                samples.evidence(
                    {"recent_overlap": recent},
                    f"completions in a group nearly identical: mean pairwise overlap {_num(recent)}",
                ),
                samples.onset(lambda st: st.pairwise_overlap >= bad),
            )
        elif recent is not None and recent >= caution:
            b.add(
                "caution",
                samples.evidence(
                    {"recent_overlap": recent},
                    f"completions in a group alike: mean pairwise overlap {_num(recent)}",
                ),
                samples.onset(lambda st: st.pairwise_overlap >= caution),
            )
        elif (
            samples.comparable
            and early is not None
            and recent is not None
            and recent - early > rules.samples.diversity_drop
        ):
            limit = early + rules.samples.diversity_drop
            b.add(
                "caution",
                samples.evidence(
                    {"early_overlap": early, "recent_overlap": recent},
                    f"diversity falling: overlap {_num(early)} → {_num(recent)}",
                ),
                samples.onset(lambda st: st.pairwise_overlap > limit),
            )
    entropy = facts.entropy
    if entropy is not None and entropy.zone in ("caution", "bad"):
        bad_below = (rules.zone_bounds("entropy") or ZoneBounds()).bad_below
        onset = (
            _onset(facts, "entropy", lambda v: v < bad_below)
            if entropy.zone == "bad" and bad_below is not None
            else None
        )
        b.add(
            "problem" if entropy.zone == "bad" else "caution",
            _zone_evidence(entropy),
            onset,
        )
    identical = _identical_lengths(facts)
    if identical is not None:
        b.add(*identical)
    return b.build(ADVICE_LOW_DIVERSITY)


def _identical_lengths(facts: _Facts) -> tuple[str, Evidence] | None:
    """Every completion of the step has the same length (min == max), sustained, while not
    truncated: identical outputs. A problem when the groups also have no reward spread."""
    lo = facts.series("completion_length_min")
    hi = facts.series("completion_length_max")
    if lo is None or hi is None or lo.values.size == 0 or hi.values.size == 0:
        return None
    n = min(lo.values.size, hi.values.size)
    spread = hi.values[-n:] - lo.values[-n:]
    same = spread <= facts.rules.length.identical_spread
    # all cut at the cap is truncation, not identical outputs
    max_len = facts.context.max_completion_length
    pinned = (facts.rules.zone_bounds("completion_length") or ZoneBounds()).bad_above
    if max_len and pinned is not None:
        same &= hi.values[-n:] < pinned * max_len
    clipped = facts.clipped
    if clipped is not None and clipped.zone == "bad":
        return None
    share = float(same.mean())
    if share < facts.rules.window.sustained:
        return None
    frac = facts.frac_zero_std
    severity = (
        "problem" if frac is not None and frac.zone in ("caution", "bad") else "caution"
    )
    text = f"every completion has the same length ({_num(lo.values[-1])} tokens) on {hi.window.share(share)}"
    return severity, hi.evidence({"min": lo.values[-1], "max": hi.values[-1]}, text)


def _saturated(facts: _Facts) -> Scenario | None:
    b = _Builder("saturated")
    rules = facts.rules
    kind, why = facts.zero_spread_kind
    frac, std, reward = facts.frac_zero_std, facts.reward_std, facts.reward
    eval_reward = facts.eval_reward
    eval_stalled = eval_reward is not None and eval_reward.trend.direction in (
        tr.FLAT,
        tr.FALLING,
    )
    if kind == "all_pass":
        dead = [
            s for s in (frac, std) if s is not None and s.zone in ("caution", "bad")
        ]
        if dead:
            severity = (
                "caution"
                if any(s.zone == "bad" for s in dead) or eval_stalled
                else "info"
            )
            high = (
                rules.zone_bounds("frac_reward_zero_std") or ZoneBounds()
            ).caution_above
            for s in dead:
                onset = (
                    _onset(facts, s.name, lambda v: v > high)
                    if s is frac and high is not None
                    else None
                )
                b.add(severity, _zone_evidence(s), onset)
            b.support(
                Evidence(
                    "reward",
                    reward.window if reward else Window(None, None, 0),
                    {},
                    f"zero spread because groups all pass: {why}",
                )
            )
    if not b.findings and reward is not None and std is not None and frac is not None:
        rng = facts.reward_range
        if (
            rng is not None
            and rng[1] > rng[0]
            and reward.logged >= rules.trend.min_points
        ):
            position = (reward.recent_level - rng[0]) / (rng[1] - rng[0])
            if (
                position >= rules.rewards.top_position
                and std.trend.direction == tr.FALLING
                and frac.trend.direction in (tr.RISING, tr.EXPLODING)
            ):
                b.add(
                    "caution" if eval_stalled else "info",
                    reward.evidence(
                        {"position": position},
                        f"reward high ({_pct(position)} of its range) while reward_std falls and frac_reward_zero_std rises",
                    ),
                )
    if not b.findings:
        return None
    if eval_reward is not None and eval_reward.trend.known:
        b.support(_trend_evidence("eval_reward", eval_reward))
    return b.build(ADVICE_SATURATED)


def _warming_up(facts: _Facts) -> Scenario | None:
    if not facts.warming_up:
        return None
    store = facts.store
    reward = facts.reward
    logged = store.count("reward")
    first = float(store.steps[0]) if len(store) else None
    window = (
        reward.window
        if reward is not None
        else Window(first, store.last_step(), len(store))
    )
    b = _Builder("warming_up")
    b.add(
        "info",
        Evidence(
            "reward",
            window,
            {"points": float(logged)},
            f"{logged} train point{'s' if logged != 1 else ''} with a reward; verdicts on trends need {facts.rules.window.warmup_points}",
        ),
        first,
    )
    return b.build(ADVICE_WARMING_UP)


def _healthy(facts: _Facts, others: list[Scenario]) -> Scenario | None:
    if facts.warming_up or any(s.severity in ("problem", "caution") for s in others):
        return None
    reward = facts.reward
    if reward is None or reward.trend.direction != tr.RISING:
        return None
    std = facts.reward_std
    if std is None or std.zone != "healthy":
        return None
    checks: list[tuple[_Series | None, tuple[str, ...]]] = [
        (facts.frac_zero_std, ("healthy", "caution")),
        (facts.clip, ("healthy", "n/a", "unknown")),
        (facts.length, ("healthy", "unknown")),
        (facts.kl, ("healthy", "n/a", "unknown")),
    ]
    for series, allowed in checks:
        if series is not None and series.zone not in allowed:
            return None
    if _aux_only_rise(facts) is not None:
        return None
    b = _Builder("healthy")
    b.add("ok", _trend_evidence("reward", reward), reward.trend_window.first_step)
    for series in (std, facts.frac_zero_std, facts.clip, facts.length, facts.kl):
        if series is not None:
            b.support(_zone_evidence(series))
    return b.build(ADVICE_HEALTHY)


# -- checklist --------------------------------------------------------------------------


QUESTIONS = (
    "Is reward rising?",
    "Is reward_std persistently > 0?",
    "Is frac_reward_zero_std not persistently high?",
    "Is clip_ratio neither persistently 0 (when applicable) nor persistently high?",
    "Is completion length normal (not near 0, not near the max)?",
    "Are the samples actually getting better?",
    "Is eval improving?",
    "Is KL under control?",
)


#: checklist answers from a zone; healthy and n/a (nothing wrong) answer "yes"
_ZONE_ANSWERS = {"bad": "no", "caution": "no", "unknown": "unknown"}


def _zone_answer(
    label: str, series: _Series | None, *, caution: str = "no"
) -> tuple[str, str]:
    if series is None:
        return "unknown", f"{label} not logged"
    answer = (
        caution if series.zone == "caution" else _ZONE_ANSWERS.get(series.zone, "yes")
    )
    return answer, f"{label} {series.reason}"


def _rising_answer(label: str, series: _Series | None, missing: str) -> tuple[str, str]:
    if series is None:
        return "unknown", missing
    if not series.trend.known:
        return "unknown", _trend_text(label, series)
    rising = series.trend.direction in (tr.RISING, tr.EXPLODING)
    return ("yes" if rising else "no"), _trend_text(label, series)


def _checklist(facts: _Facts) -> list[CheckItem]:
    """The 8 questions of HEALTH.md, each answered from the facts with its evidence."""
    frac = facts.frac_zero_std
    # high but falling is the healthy early shape, not "persistently high"
    frac_falling = frac is not None and frac.trend.direction == tr.FALLING
    length = facts.length if facts.length is not None else facts.clipped
    kl: tuple[str, str] = (
        ("yes", "beta 0: no KL penalty")
        if facts.kl is None and facts.context.beta == 0
        else _zone_answer("kl", facts.kl)
    )
    answers = [
        _rising_answer("reward", facts.reward, "reward not logged"),
        _zone_answer("reward_std", facts.reward_std, caution="yes"),
        _zone_answer(
            "frac_reward_zero_std", frac, caution="yes" if frac_falling else "no"
        ),
        _zone_answer("clip_ratio", facts.clip),
        _zone_answer(
            "completion_length" if facts.length is not None else "clipped_ratio", length
        ),
        _samples_answer(facts),
        _rising_answer("eval_reward", facts.eval_reward, "no eval logged"),
        kl,
    ]
    return [
        CheckItem(number, question, answer, evidence)
        for number, (question, (answer, evidence)) in enumerate(
            zip(QUESTIONS, answers), start=1
        )
    ]


def _samples_answer(facts: _Facts) -> tuple[str, str]:
    """Samples get better: format compliance not falling (and known), diversity kept."""
    samples = facts.samples
    rules = facts.rules
    if samples is None:
        return "unknown", "no completions logged: look at the samples yourself"
    recent_overlap = samples.recent_mean(_overlap)
    if not samples.comparable:
        return (
            "unknown",
            f"one logged sample step (overlap {_num(recent_overlap)}): too few to compare",
        )
    early_overlap = samples.early_mean(_overlap)
    early_format, recent_format = (
        samples.early_mean(_format_rate),
        samples.recent_mean(_format_rate),
    )
    problems: list[str] = []
    found: list[str] = []
    if early_overlap is not None and recent_overlap is not None:
        found.append(f"overlap {_num(early_overlap)} → {_num(recent_overlap)}")
        if (
            recent_overlap >= rules.samples.overlap_caution
            or recent_overlap - early_overlap > rules.samples.diversity_drop
        ):
            problems.append("completions growing alike")
    if early_format is not None and recent_format is not None:
        found.append(f"format {_pct(early_format)} → {_pct(recent_format)}")
        if early_format - recent_format > rules.samples.format_drop:
            problems.append("format compliance falling")
    text = ", ".join(found) + f" over {samples.window}"
    if problems:
        return "no", "; ".join(problems) + ": " + text
    if early_format is None or recent_format is None:
        return (
            "unknown",
            f"diversity kept ({text}); no recognisable format to score: read the samples",
        )
    return "yes", text


# -- the diagnosis ---------------------------------------------------------------------


def _metric_health(facts: _Facts) -> dict[str, MetricHealth]:
    metrics: dict[str, MetricHealth] = {}
    for name, series in facts.all_series().items():
        if series is None:
            continue
        last = series.last
        metrics[name] = MetricHealth(
            series.zone, last, series.trend.direction, series.reason
        )
    return metrics


def diagnose(run: Run, rules: Rules) -> Diagnosis:
    """Judge a run: scenarios (worst first), the checklist and per-metric health."""
    facts = _Facts(run, rules)
    if len(run.store) == 0:
        checklist = [
            CheckItem(i + 1, q, "unknown", "nothing readable yet")
            for i, q in enumerate(QUESTIONS)
        ]
        return Diagnosis("unknown", [], checklist, {})
    found = [
        builder(facts)
        for builder in (
            _not_learning,
            _too_aggressive,
            _reward_hacking,
            _truncation,
            _length_collapse,
            _low_diversity,
            _warming_up,
        )
    ]
    found.append(facts.saturated)
    scenarios = [s for s in found if s is not None]
    healthy = _healthy(facts, scenarios)
    if healthy is not None:
        scenarios.append(healthy)
    scenarios.sort(
        key=lambda s: (SEVERITIES.index(s.severity), SCENARIO_IDS.index(s.id))
    )
    severities = {s.severity for s in scenarios}
    if "problem" in severities:
        status = "problem"
    elif "caution" in severities:
        status = "caution"
    elif any(s.id in ("healthy", "saturated") for s in scenarios):
        status = "healthy"
    else:
        status = "unknown"
    return Diagnosis(status, scenarios, _checklist(facts), _metric_health(facts))
