"""Marked runs side by side: their verdicts, each run's task reward against the first's
(beyond noise or not), the settings that differ, every metric with
one row per run on one step axis, and (`enter` on a row) that metric's chart with every
run overlaid. Draws core's `Comparison` (grpo_tui/monitor/compare.py) and nothing else."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from grpo_tui.health.difference import Difference
from grpo_tui.monitor.compare import Comparison, OverlaySeries
from grpo_tui.numbers import format_step, format_value
from grpo_tui.ui.widgets.chart import draw_line, finish_figure, new_figure
from grpo_tui.ui.widgets.sparkline import sparkline_segments
from grpo_tui.untrusted import printable
from grpo_tui.views.chart import step_axes
from grpo_tui.views.palette import ZonePalette
from grpo_tui.views.presentation import VERDICT_SEPARATOR, fit_names

#: the runs' colours in the overlay chart and the legend, in run order (Okabe-Ito: told
#: apart by colour-blind readers too)
RUN_RGB = (
    (86, 180, 233),
    (230, 159, 0),
    (204, 121, 167),
    (0, 158, 115),
    (240, 228, 66),
    (0, 114, 178),
    (213, 94, 0),
    (200, 200, 200),
)
#: the runs' markers in the legend and the table: a run is told apart without colour
RUN_MARKS = "123456789"


def run_mark(index: int) -> str:
    return RUN_MARKS[index] if index < len(RUN_MARKS) else "+"


def verdicts_text(comparison: Comparison, palette: ZonePalette, width: int) -> Text:
    """One line per run: its mark, status, name and verdict's parts that fit."""
    text = Text(no_wrap=True, overflow="ellipsis")
    for index, run in enumerate(comparison.runs):
        if index:
            text.append("\n")
        text.append(f"{run_mark(index)} ", style="bold")
        status = run.verdict.status
        text.append(status.glyph + " ", style=palette.style(status.zone))
        text.append(run.name, style="bold")
        room = width - len(run.name) - 4
        if parts := run.verdict.fitted(room + len(run.verdict.lead)):
            text.append("  " + VERDICT_SEPARATOR.join(parts))
    return text


def differences_text(comparison: Comparison) -> Text:
    """The settings that differ, a line each (`learning_rate  1: 1e-06  2: 5e-06`)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    if not comparison.differences:
        text.append("settings: none differ (as far as the runs' files say)", style="dim")
        return text
    text.append("settings that differ", style="bold underline")
    for difference in comparison.differences:
        text.append("\n" + difference.name + "  ", style="bold")
        text.append(
            "  ".join(f"{run_mark(i)}: {value}" for i, value in enumerate(difference.values))
        )
    return text


def rewards_text(comparison: Comparison) -> Text:
    """Each run against the first, a line a reading, as core's Difference words it with
    the runs' marks for names ("task reward: run 2 below run 1 by 0.1 ± 1.0 over steps
    5–200: not beyond noise; …"); beyond noise in bold."""
    text = Text()
    for comparison_line in comparison.rewards:
        labels = (f"run {run_mark(0)}", f"run {run_mark(comparison_line.index)}")
        for reading in comparison_line.readings:
            if text:
                text.append("\n")
            beyond = isinstance(reading, Difference) and reading.beyond_noise
            text.append(reading.describe(labels), style="bold" if beyond else "")
    return text


def spark_text(levels: np.ndarray, zones: np.ndarray, palette: ZonePalette) -> Text:
    segments = sparkline_segments(levels, zones, palette)
    return Text.assemble(*((s.text, s.style or "") for s in segments), no_wrap=True)


class CompareScreen(Screen[None]):
    """The comparison of the marked runs; `enter` charts a metric, `esc` goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("enter", "chart", "Chart"),
    ]
    #: each run against the first, under the verdicts it names the runs of
    DEFAULT_CSS = """
    #compare-rewards {
        max-height: 6;
        padding: 0 1;
    }
    """

    def __init__(
        self,
        comparison: Comparison,
        palette: ZonePalette,
        overlay: Callable[[str, int], list[OverlaySeries]],
    ) -> None:
        super().__init__()
        self.comparison = comparison
        self._palette = palette
        self._overlay = overlay
        self._verdicts = Static("", id="compare-verdicts")
        self._rewards = Static("", id="compare-rewards")
        self._differences = Static("", id="compare-settings")
        # every cell is Text: a str cell would be read as markup
        self._table: DataTable[Text] = DataTable(id="compare-table", cursor_type="row")
        #: the metric of each table row, in order
        self.metric_rows: list[str] = []

    def compose(self) -> ComposeResult:
        yield self._verdicts
        yield self._rewards
        yield self._differences
        yield self._table
        yield Footer()

    def on_mount(self) -> None:
        self._draw()
        self._table.focus()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        width = self.size.width or 80
        comparison = self.comparison
        self._verdicts.update(verdicts_text(comparison, self._palette, width - 2))
        self._rewards.update(rewards_text(comparison))
        self._rewards.display = bool(comparison.rewards)
        self._differences.update(differences_text(comparison))
        table = self._table
        table.clear(columns=True)
        name_width = min(28, max(10, width // 4))
        cells = comparison.metrics[0].lines[0].levels.size if comparison.metrics else 0
        first, last = comparison.first_step, comparison.last_step
        steps = ""
        if first is not None and last is not None:
            steps = f"steps {format_step(first)}–{format_step(last)}"
        table.add_column(Text("metric"), width=name_width, key="metric")
        table.add_column(Text(""), width=1, key="run")
        table.add_column(Text("last"), width=9, key="last")
        table.add_column(Text(steps or "history"), width=max(cells, len(steps)), key="history")
        self.metric_rows = []
        marks = {run.name: run_mark(i) for i, run in enumerate(comparison.runs)}
        labels = fit_names([metric.metric for metric in comparison.metrics], name_width)
        for metric in comparison.metrics:
            for index, line in enumerate(metric.lines):
                shown = labels[metric.metric] if index == 0 else ""
                table.add_row(
                    Text(shown, no_wrap=True),
                    Text(marks.get(line.run, "+"), style="bold"),
                    Text(format_value(line.last), justify="right"),
                    spark_text(line.levels, line.zones, self._palette),
                )
                self.metric_rows.append(metric.metric)

    @on(DataTable.RowSelected, "#compare-table")
    def action_chart(self) -> None:
        row = self._table.cursor_row
        if 0 <= row < len(self.metric_rows):
            metric = self.metric_rows[row]
            width = max(20, (self.size.width or 80) - 12)
            self.app.push_screen(
                OverlayScreen(metric, self._overlay(metric, width), self.comparison)
            )


def overlay_chart(metric: str, series: Sequence[OverlaySeries], width: int, height: int) -> Text:
    """The runs' series in one plotext chart on the detail chart's axes (the metric's
    floor, a minimum span, integer step ticks), as inert Text."""
    import plotext as plt

    steps = np.concatenate([one.steps for one in series]) if series else np.empty(0)
    values = np.concatenate([one.values for one in series]) if series else np.empty(0)
    axes = step_axes(metric, steps.astype(float), values, width, height)
    if axes is None:
        return Text("no run logs this metric", style="dim")
    fig = new_figure(width, height)
    for one in series:
        marker = plt.marker("braille", plt.pixel(RUN_RGB[one.index % len(RUN_RGB)], "default"))
        draw_line(fig, one.steps, one.values, marker)
    return finish_figure(fig, axes)


class OverlayScreen(Screen[None]):
    """One metric of every compared run in one chart, with a legend; `esc` goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, metric: str, series: list[OverlaySeries], comparison: Comparison) -> None:
        super().__init__()
        self.metric = metric
        self.series = series
        self._title = Static("", id="overlay-title")
        self._chart = Static("", id="overlay-chart")
        self._legend = Static("", id="overlay-legend")
        self._runs = [run.name for run in comparison.runs]

    def compose(self) -> ComposeResult:
        yield self._title
        yield self._chart
        yield self._legend
        yield Footer()

    def on_mount(self) -> None:
        self.call_after_refresh(self._draw)

    def on_resize(self) -> None:
        self.call_after_refresh(self._draw)

    def _draw(self) -> None:
        title = Text(printable(self.metric), style="bold")
        title.append(f"  {len(self.series)} of {len(self._runs)} runs log it", style="dim")
        self._title.update(title)
        # the legend first, a run a line cut to the width: the chart gets the rows left
        # (sized from the legend's old height, its x labels fell off the bottom)
        cells = max(1, self.size.width - 2)
        lines: list[Text] = []
        shown = {one.run for one in self.series}
        for index, name in enumerate(self._runs):
            red, green, blue = RUN_RGB[index % len(RUN_RGB)]
            style = f"rgb({red},{green},{blue})" if name in shown else "dim"
            line = Text(f"{run_mark(index)} ━ {name}", style=style)
            if name not in shown:
                line.append(" (not logged)", style="dim")
            line.truncate(cells, overflow="ellipsis")
            lines.append(line)
        self._legend.update(Text("\n").join(lines))
        # title and footer a row each
        height = max(6, self.size.height - 2 - len(lines))
        self._chart.update(overlay_chart(self.metric, self.series, self.size.width, height))
