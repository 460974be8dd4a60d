"""The zone sparkline: one bar per pre-bucketed value, coloured per bucket by its zone.

It draws what the store already reduced to the screen width (`MetricStore.buckets`), so a
frame costs O(width) whatever the run's length. NaN (a bucket with nothing logged) is a
gap; ±inf is treated the same (the store never buckets non-finite values, but a caller
might). A constant series draws a flat middle bar.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style

from grpo_tui.presentation import BARS, GAP, bar_levels
from grpo_tui.run.metrics import Buckets
from grpo_tui.ui.themes import ZonePalette

#: the cell for each level; index -1 (a gap) is the last entry
_CELLS = np.array([*BARS, GAP])


def sparkline_segments(
    values: np.ndarray, zones: np.ndarray, palette: ZonePalette, base: Style | None = None
) -> list[Segment]:
    """One Segment per run of buckets that share a style (few segments, cheap to diff).
    Vectorised: Python only loops over those runs, not over the cells."""
    levels = bar_levels(values)
    if levels.size == 0:
        return []
    zones = np.asarray(zones, dtype=np.int8)
    if zones.shape != levels.shape:
        zones = np.resize(zones, levels.shape) if zones.size else np.zeros(levels.shape, np.int8)
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


class ZoneSparkline:
    """A Rich renderable: `values` (e.g. bucket means) as bars coloured by `zones`."""

    def __init__(self, values: np.ndarray, zones: np.ndarray, palette: ZonePalette) -> None:
        self.values = np.asarray(values, dtype=float)
        self.zones = np.asarray(zones, dtype=np.int8)
        self.palette = palette

    @classmethod
    def from_buckets(
        cls, buckets: Buckets, zones: np.ndarray, palette: ZonePalette
    ) -> ZoneSparkline:
        return cls(buckets.mean, zones, palette)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        width = options.max_width
        segments = sparkline_segments(self.values, self.zones, self.palette)
        yield from Segment.adjust_line_length(segments, min(width, len(self.values)))
        yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = min(len(self.values), options.max_width)
        return Measurement(width, width)
