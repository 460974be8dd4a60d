"""The zone sparkline: one bar per pre-bucketed value, coloured per bucket by its zone.

It draws what the store already reduced to the screen width (`MetricStore.buckets`), so a
frame costs O(width) whatever the run's length. NaN (a bucket with nothing logged) is a
gap; ±inf is treated the same (the store never buckets non-finite values, but a caller
might). A constant series draws a flat middle bar.
"""

from __future__ import annotations

import numpy as np
from rich.segment import Segment
from rich.style import Style

from grpo_tui.presentation import BARS, GAP, bar_levels
from grpo_tui.ui.themes import ZonePalette

#: the cell for each level; index -1 (a gap) is the last entry
_CELLS = np.array([*BARS, GAP])


def sparkline_segments(
    values: np.ndarray, zones: np.ndarray, palette: ZonePalette, base: Style | None = None
) -> list[Segment]:
    """One Segment per run of buckets that share a style (few segments, cheap to diff),
    `zones` one per value. Vectorised: Python only loops over those runs, not the cells."""
    levels = bar_levels(values)
    if levels.size == 0:
        return []
    text = "".join(_CELLS[levels].tolist())
    keys = np.where(levels < 0, -1, zones)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(keys)) + 1))
    stops = np.concatenate((starts[1:], [levels.size]))
    return [
        _segment(text[start:stop], int(keys[start]), palette, base)
        for start, stop in zip(starts.tolist(), stops.tolist())
    ]


def _segment(text: str, zone: int, palette: ZonePalette, base: Style | None) -> Segment:
    if zone < 0:
        return Segment(text, base)
    style = palette.style(zone)
    return Segment(text, base + style if base is not None else style)
