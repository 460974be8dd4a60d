"""A full-size chart of one metric, drawn with plotext from bucketed data.

plotext builds the picture as an ANSI string; `Text.from_ansi` turns it into inert Rich
Text (no markup is ever parsed). plotext keeps one global figure, so charts are built on
the app thread only. plotext takes ~0.5 s to import: it is imported on first use
(`warm_up` lets the app do that in the background).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np
from rich.color import Color
from rich.text import Text

from grpo_tui.numbers import format_step, format_value
from grpo_tui.run.metrics import Buckets
from grpo_tui.ui.themes import ZonePalette
from grpo_tui.untrusted import printable
from grpo_tui.vocabulary import Zone

if TYPE_CHECKING:
    import plotext

RGB = tuple[int, int, int]


def warm_up() -> None:
    """Import plotext ahead of the first chart (safe from any thread)."""
    import plotext  # noqa: F401


@dataclass(frozen=True)
class Marker:
    """A vertical line at a step (e.g. the onset of a scenario)."""

    step: float
    label: str
    zone: Zone


@dataclass(frozen=True)
class BandCut:
    """A horizontal line between two zone bands."""

    value: float
    label: str
    zone: Zone


def band_cuts(bands: list[tuple[float, float, Zone]]) -> list[BandCut]:
    """The finite edges between consecutive bands, each labelled by its worse side."""
    cuts: list[BandCut] = []
    for (_, edge, below), (_, _, above) in pairwise(bands):
        if above.badness >= below.badness:
            cuts.append(BandCut(edge, f"{above.word} > {format_value(edge)}", above))
        else:
            cuts.append(BandCut(edge, f"{below.word} < {format_value(edge)}", below))
    return cuts


def _rgb(palette: ZonePalette, zone: Zone) -> RGB | None:
    color: Color | None = palette.style(zone).color
    if color is None or color.is_default:
        return None
    triplet = color.get_truecolor()
    return (triplet.red, triplet.green, triplet.blue)


def _pixel(palette: ZonePalette, zone: Zone) -> plotext.pixel:
    import plotext as plt

    rgb = _rgb(palette, zone)
    # "default" background: leave the cell unpainted so the screen's background shows
    return plt.pixel(rgb, "default") if rgb is not None else plt.pixel("default", "default")


def build_chart(
    buckets: Buckets,
    zones: np.ndarray,
    cuts: list[BandCut],
    markers: list[Marker],
    palette: ZonePalette,
    width: int,
    height: int,
) -> tuple[Text, list[BandCut]]:
    """The chart as inert Text, and the band cuts that fell outside its y range (so the
    caller can list them instead)."""
    import plotext as plt

    fig = plt.figure
    fig.clear()
    plt.terminal.limit(False, False)
    fig.plot_size(max(20, width), max(6, height))
    fig.theme("colorless")
    fig.legend(active=False)
    means = np.asarray(buckets.mean, dtype=float)
    finite = np.isfinite(means)
    if not finite.any():
        return Text("nothing logged yet", style="dim"), cuts
    x_all = (np.asarray(buckets.step_lo, float) + np.asarray(buckets.step_hi, float)) / 2
    indices = np.flatnonzero(finite)
    lo = float(np.nanmin(np.where(finite, buckets.min, np.nan)))
    hi = float(np.nanmax(np.where(finite, buckets.max, np.nan)))
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    y_lo, y_hi = lo - 0.08 * span, hi + 0.08 * span
    # band edges and onsets first (data draws over them); they are two-point signals because
    # plotext's own line() paints a background
    x_lo, x_hi = float(x_all[indices[0]]), float(x_all[indices[-1]])
    hidden: list[BandCut] = []
    for cut in cuts:
        if y_lo <= cut.value <= y_hi:
            edge = fig.signal(
                [x_lo, x_hi],
                [cut.value, cut.value],
                marker=plt.marker("┈", _pixel(palette, cut.zone)),
            )
            fig.draw(edge.lines())
        else:
            hidden.append(cut)
    for marker in markers:
        if x_lo <= marker.step <= x_hi:
            onset = fig.signal(
                [marker.step, marker.step],
                [y_lo, y_hi],
                marker=plt.marker("│", _pixel(palette, marker.zone)),
            )
            fig.draw(onset.lines())
    # then the min / max envelope, then the mean on top of everything
    if bool(np.any(buckets.count[finite] > 1)):
        grey = _pixel(palette, Zone.UNKNOWN)
        for series in (buckets.min, buckets.max):
            envelope = fig.signal(
                x_all[finite].tolist(),
                np.asarray(series)[finite].tolist(),
                marker=plt.marker("braille", grey),
            )
            fig.draw(envelope.lines())
    # the mean, one signal per run of equal zone so the line carries the zone colours
    zone_codes = np.asarray(zones, dtype=np.int8)
    start = None
    for pos, index in enumerate(indices.tolist()):
        if start is None:
            start = pos
        last_of_run = pos == len(indices) - 1 or zone_codes[indices[pos + 1]] != zone_codes[index]
        if last_of_run:
            # include the next point so consecutive runs join up
            stop = min(pos + 2, len(indices))
            run = indices[start:stop]
            zone = Zone(int(zone_codes[index]))
            line = fig.signal(
                x_all[run].tolist(),
                means[run].tolist(),
                marker=plt.marker("braille", _pixel(palette, zone)),
            )
            fig.draw(line.lines())
            start = None
    fig.ruler("y").lim(y_lo, y_hi)
    if x_hi > x_lo:
        fig.ruler("x").lim(x_lo, x_hi)
    picture = fig.build().string()
    return Text.from_ansi(picture.rstrip("\n"), no_wrap=True, end=""), hidden


def chart_legend(
    cuts: list[BandCut],
    hidden: list[BandCut],
    markers: list[Marker],
    palette: ZonePalette,
    width: int,
) -> Text:
    """What the lines mean: ┈ band edges (those off the chart said so), │ scenario onsets;
    packed into lines of `width` cells without breaking an item."""
    items: list[Text] = []
    for cut in cuts:
        item = Text("┈ " + cut.label, style=palette.style(cut.zone))
        if cut in hidden:
            item.append(" (off chart)", style="dim")
        items.append(item)
    for marker in markers:
        style = palette.style(marker.zone)
        items.append(
            Text(f"│ {printable(marker.label)} from step {format_step(marker.step)}", style=style)
        )
    if not items:
        return Text("no zone bands for this metric", style="dim")
    legend = Text(no_wrap=True, overflow="ellipsis")
    used = 0
    for index, item in enumerate(items):
        if index:
            if used + 3 + item.cell_len > width:
                legend.append("\n")
                used = 0
            else:
                legend.append("   ")
                used += 3
        legend.append_text(item)
        used += item.cell_len
    return legend
