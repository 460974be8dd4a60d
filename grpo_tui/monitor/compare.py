"""Runs side by side: each metric with one row per run on one step axis, the settings that
differ, each run's task reward against the first run's (beyond noise or not), and each
run's points of one metric for a chart that overlays them.

What a sweep is for: eight runs that differ in a learning rate or a β, compared where
they differ. The step axis is shared (the span from the first run's first step to the
last run's last, cut into equal cells), so a row's cell is the same steps in every run;
a run that is behind simply ends earlier. Settings are the run context as the adapters
read it (args.json, trainer_state / verl configs), and only those that differ are shown.

Textual-free: the board app draws it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from grpo_tui.context import RunContext
from grpo_tui.health.difference import Reading, compare_rewards
from grpo_tui.health.rules import Rules
from grpo_tui.health.series import snapshot
from grpo_tui.health.verdict import Diagnosis
from grpo_tui.health.zones import zone_of_values
from grpo_tui.numbers import format_value
from grpo_tui.run.live import Run
from grpo_tui.untrusted import printable
from grpo_tui.views.presentation import VerdictLine, order_metrics, verdict_line

#: context fields that are no setting of the run (where a value came from)
_NOT_SETTINGS = frozenset({"given_on_command_line"})
#: what a run whose files do not say a setting shows for it
UNKNOWN_SETTING = "—"


@dataclass(frozen=True)
class RunToCompare:
    """One run of the comparison: its name, its Run and its steady diagnosis."""

    name: str
    run: Run
    diagnosis: Diagnosis | None


@dataclass(frozen=True)
class ComparedRun:
    name: str
    #: its verdict line (its status is the line's)
    verdict: VerdictLine


@dataclass(frozen=True)
class MetricLine:
    """One run's row under a metric: its latest value and its cells on the shared axis."""

    run: str
    last: float | None
    #: the mean of the run's points in each cell (NaN: none there)
    levels: np.ndarray
    #: each cell's zone (grpo_tui.vocabulary.Zone codes), as the grid colours them
    zones: np.ndarray


@dataclass(frozen=True)
class ComparedMetric:
    metric: str
    lines: tuple[MetricLine, ...]


@dataclass(frozen=True)
class SettingDifference:
    """A setting whose value differs between the runs: one value per run, in their order."""

    name: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class RewardComparison:
    """One run's task reward (and eval) against the first run's (health/difference.py)."""

    #: the run compared, and the run it is compared with (the first), by index and name
    index: int
    run: str
    against: str
    readings: tuple[Reading, ...]


@dataclass(frozen=True)
class Comparison:
    runs: tuple[ComparedRun, ...]
    #: the steps the shared axis spans (None when no run has a step yet)
    first_step: float | None
    last_step: float | None
    metrics: tuple[ComparedMetric, ...]
    differences: tuple[SettingDifference, ...]
    #: every run after the first against the first: is it better, or is that seed noise
    rewards: tuple[RewardComparison, ...] = ()


def logging_stride(run: Run) -> float:
    """Steps between two of the run's train lines (the median; 1 when unknown)."""
    steps = np.unique(run.store.steps[np.isfinite(run.store.steps)])
    if steps.size < 2:
        return 1.0
    return float(np.median(np.diff(steps)))


def step_edges(runs: Sequence[Run], cells: int) -> np.ndarray:
    """Edges of equal step spans from the earliest first step of the runs to their latest
    last step, at most `cells` spans and none narrower than the sparsest run's logging
    interval (a run logging every 5 steps would be a dashed line in 1-step cells); empty
    when no run has a step."""
    firsts = [float(run.store.steps[0]) for run in runs if len(run.store)]
    lasts = [step for run in runs if (step := run.store.last_step()) is not None]
    if not firsts or not lasts:
        return np.empty(0)
    lo, hi = min(firsts), max(lasts)
    if hi <= lo:
        hi = lo + 1.0
    stride = max(logging_stride(run) for run in runs if len(run.store))
    spans = int(min(max(1, cells), max(1.0, np.floor((hi - lo) / stride))))
    return np.linspace(lo, hi, spans + 1)


def levels_on(steps: np.ndarray, values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The mean of the values in each span of `edges` (NaN where none); the last span
    includes its right edge."""
    cells = max(0, edges.size - 1)
    if cells == 0 or values.size == 0:
        return np.full(cells, np.nan)
    at = np.clip(np.searchsorted(edges, steps, side="right") - 1, 0, cells - 1)
    counts = np.bincount(at, minlength=cells)
    sums = np.bincount(at, weights=values, minlength=cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _setting_text(value: object) -> str:
    if value is None or value == []:
        return UNKNOWN_SETTING
    if isinstance(value, float):
        return format_value(value)
    if isinstance(value, list):
        return ", ".join(_setting_text(v) for v in value)
    return printable(str(value))


def setting_differences(contexts: Sequence[RunContext]) -> list[SettingDifference]:
    """The settings (as the adapters read them) whose values are not the same in every
    run, in the context's field order."""
    differences: list[SettingDifference] = []
    for spec in fields(RunContext):
        if spec.name in _NOT_SETTINGS:
            continue
        values = tuple(_setting_text(getattr(context, spec.name)) for context in contexts)
        if len(set(values)) > 1:
            differences.append(SettingDifference(spec.name, values))
    return differences


def reward_comparisons(runs: Sequence[RunToCompare], rules: Rules) -> tuple[RewardComparison, ...]:
    """Each run after the first against the first (the baseline: the run marked first on
    the board, the first PATH of `check --compare`), on its task reward and its eval."""
    if len(runs) < 2:
        return ()
    snaps = [snapshot(r.run) for r in runs]
    first = runs[0].name
    return tuple(
        RewardComparison(
            index, r.name, first, tuple(compare_rewards(snaps[0], snap, (first, r.name), rules))
        )
        for index, (r, snap) in enumerate(zip(runs, snaps, strict=True))
        if index > 0
    )


def compare_runs(runs: Sequence[RunToCompare], rules: Rules, cells: int) -> Comparison:
    """The runs side by side in `cells` cells per row: every metric any of them logs, in
    the grid's order, one line per run that logs it."""
    edges = step_edges([r.run for r in runs], cells)
    # first appearance, then the grid's order (a set's order changes from run to run)
    names = order_metrics(dict.fromkeys(name for r in runs for name in r.run.store.names()))
    metrics: list[ComparedMetric] = []
    for name in names:
        lines: list[MetricLine] = []
        for r in runs:
            if name not in r.run.store:
                continue
            points = r.run.store.points(name)
            levels = levels_on(points.steps, points.values, edges)
            zones = zone_of_values(name, levels, rules, r.run.context).astype(np.int8)
            latest = r.run.store.latest(name)
            lines.append(MetricLine(r.name, None if latest is None else latest[1], levels, zones))
        metrics.append(ComparedMetric(name, tuple(lines)))
    return Comparison(
        runs=tuple(ComparedRun(r.name, verdict_line(r.diagnosis)) for r in runs),
        first_step=float(edges[0]) if edges.size else None,
        last_step=float(edges[-1]) if edges.size else None,
        metrics=tuple(metrics),
        differences=tuple(setting_differences([r.run.context for r in runs])),
        rewards=reward_comparisons(runs, rules),
    )


@dataclass(frozen=True)
class OverlaySeries:
    """One run's points of a metric for the overlay chart (bucketed to the chart's width)."""

    run: str
    #: the run's place in the comparison (its colour and mark)
    index: int
    steps: np.ndarray
    values: np.ndarray


def overlay_series(runs: Sequence[RunToCompare], metric: str, cells: int) -> list[OverlaySeries]:
    """Each run's `metric` as cell means on the shared step axis (at the cells' middles),
    runs that do not log it left out: a chart of a thousand steps costs `cells` points."""
    edges = step_edges([r.run for r in runs], cells)
    if edges.size == 0:
        return []
    middles = (edges[:-1] + edges[1:]) / 2
    series: list[OverlaySeries] = []
    for index, r in enumerate(runs):
        if metric not in r.run.store:
            continue
        points = r.run.store.points(metric)
        levels = levels_on(points.steps, points.values, edges)
        held = np.isfinite(levels)
        if held.any():
            series.append(OverlaySeries(r.name, index, middles[held], levels[held]))
    return series
