"""Zones for the UI: a metric's value bands and context rules, per value.

`zone_of_values` and `zone_bands` give the charts and sparklines the same zones `diagnose`
judges on (value bands only; verdicts that need other metrics live in the facts).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from grpo_tui.context import RunContext
from grpo_tui.health import trends as tr
from grpo_tui.health.rules import Rules, ZoneBounds
from grpo_tui.vocabulary import Zone


def _context_adjusted(
    name: str, codes: np.ndarray, values: np.ndarray, bounds: ZoneBounds, context: RunContext
) -> np.ndarray:
    """Context rules applied to value zones: on-policy clip_ratio and beta 0 KL are n/a,
    a clip_ratio floor is only a warning when the run is known to be off-policy."""
    base = name.removeprefix("eval_")
    if base == "clip_ratio":
        floor = bounds.caution_below
        # below the floor: n/a on-policy, unknown when the run does not say
        low_zone = {False: Zone.NA, None: Zone.UNKNOWN}.get(context.off_policy)
        if floor is not None and low_zone is not None:
            low = np.isfinite(values) & (values < floor)
            codes = np.where(low, low_zone, codes).astype(np.int8)
    elif base == "kl" and context.beta == 0:
        codes = np.where(np.isfinite(values), Zone.NA, codes).astype(np.int8)
    return codes


def zone_of_values(name: str, values: np.ndarray, rules: Rules, context: RunContext) -> np.ndarray:
    """Zone code per value (e.g. per sparkline bucket): 0 unknown, 1 healthy, 2 caution,
    3 bad, 4 n/a. Value bands and context rules only; verdicts that need other metrics
    (the reward range for reward_std, re-use rows for clip_ratio) live in `diagnose`.
    Metrics without bands are n/a where finite."""
    values = np.asarray(values, dtype=float)
    bounds = rules.zone_bounds(name)
    if bounds is None:
        codes = np.full(values.shape, Zone.UNKNOWN, dtype=np.int8)
        codes[np.isfinite(values)] = Zone.NA
        return codes
    scale = relative_scale(bounds, context)
    codes = tr.zone_codes(values, bounds, scale)
    return _context_adjusted(name, codes, values, bounds, context)


def zone_bands(name: str, rules: Rules, context: RunContext) -> list[tuple[float, float, Zone]]:
    """The value bands of a metric as (lo, hi, zone) from -inf to +inf, for a chart.
    Empty when the metric has no bands (or they are relative to an unknown context value)."""
    bounds = rules.zone_bounds(name)
    if bounds is None:
        return []
    scale = relative_scale(bounds, context)
    if bounds.relative_to is not None and scale is None:
        return []
    factor = scale if scale is not None else 1.0
    limits = (bounds.caution_below, bounds.bad_below, bounds.caution_above, bounds.bad_above)
    cuts = sorted({b * factor for b in limits if b is not None})
    edges = [-math.inf, *cuts, math.inf]
    bands: list[tuple[float, float, Zone]] = []
    for lo, hi in itertools.pairwise(edges):
        if math.isinf(lo) and math.isinf(hi):
            probe = 0.0
        elif math.isinf(lo):
            probe = hi - max(1.0, abs(hi))
        elif math.isinf(hi):
            probe = lo + max(1.0, abs(lo))
        else:
            probe = (lo + hi) / 2
        zone = Zone(int(zone_of_values(name, np.array([probe]), rules, context)[0]))
        if bands and bands[-1][2] == zone:
            bands[-1] = (bands[-1][0], hi, zone)
        else:
            bands.append((lo, hi, zone))
    return bands


def relative_scale(bounds: ZoneBounds, context: RunContext) -> float | None:
    if bounds.relative_to is None:
        return None
    value = getattr(context, bounds.relative_to, None)
    return float(value) if isinstance(value, (int, float)) and value > 0 else None
