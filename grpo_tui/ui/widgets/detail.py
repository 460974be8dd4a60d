"""The detail screen: one metric full-size, with its zone bands and scenario onsets."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Static

from grpo_tui.health.verdict import Diagnosis
from grpo_tui.health.zones import zone_bands, zone_of_values
from grpo_tui.numbers import format_step, format_value
from grpo_tui.presentation import verdict_line
from grpo_tui.ui.widgets.chart import Marker, band_cuts, build_chart, chart_legend
from grpo_tui.ui.widgets.frame import MetricsFrame
from grpo_tui.ui.widgets.header import verdict_text
from grpo_tui.untrusted import printable
from grpo_tui.vocabulary import ScenarioId, Zone

#: cells the y-axis labels and frame take beside the plotted area
_AXIS_CELLS = 10


def onset_markers(diagnosis: Diagnosis | None) -> list[Marker]:
    """A vertical line per active scenario that says when it began."""
    if diagnosis is None:
        return []
    return [
        Marker(scenario.onset_step, scenario.title, scenario.severity.zone)
        for scenario in diagnosis.scenarios
        if scenario.onset_step is not None and scenario.id is not ScenarioId.WARMING_UP
    ]


def detail_title(name: str, source: MetricsFrame) -> Text:
    store = source.store
    health = source.diagnosis.metrics.get(name) if source.diagnosis is not None else None
    zone = health.zone if health is not None else Zone.UNKNOWN
    style = source.palette.style(zone)
    text = Text(no_wrap=False)
    text.append(printable(name), style="bold")
    text.append(
        f"  {format_value(latest[1] if (latest := store.latest(name)) else None)} ", style=style
    )
    text.append(f"{zone.glyph} {zone.word}", style=style)
    if health is not None and health.trend.known:
        text.append(f"  {health.trend.word}", style="dim")
    count = store.count(name)
    text.append(f"  {count} point{'' if count == 1 else 's'}", style="dim")
    last = store.last(name)
    if last is not None:
        text.append(f", latest at step {format_step(last[0])}", style="dim")
    if health is not None and health.reason:
        text.append("\n")
        text.append(f"{printable(name)} {printable(health.reason)}", style="dim")
    return text


class DetailScreen(Screen[None]):
    """Full-size chart of one metric; `esc` goes back to the grid."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, metric: str, source: MetricsFrame) -> None:
        super().__init__()
        self.metric = metric
        self._source = source
        self._drawn: tuple[object, ...] | None = None
        self._verdict = Static("", id="detail-verdict")
        self._title_line = Static("", id="detail-title")
        self._chart = Static("", id="detail-chart")
        self._legend = Static("", id="detail-legend")

    def compose(self) -> ComposeResult:
        yield self._verdict
        yield self._title_line
        yield self._chart
        yield self._legend
        yield Footer()

    def on_mount(self) -> None:
        self.show(self._source)

    def on_resize(self) -> None:
        self.call_after_refresh(self.show, self._source)

    def show(self, source: MetricsFrame) -> None:
        """Redraw when the data, the diagnosis, the theme or the chart's size changed."""
        self._source = source
        chart = self._chart
        width = chart.content_region.width or self.size.width
        height = chart.content_region.height or max(6, self.size.height - 6)
        key = (source.version, id(source.diagnosis), id(source.palette), width, height)
        if key == self._drawn:
            return
        self._drawn = key
        name = self.metric
        # the run's verdict stays in sight over the one metric looked at
        line = verdict_line(source.diagnosis)
        self._verdict.update(
            verdict_text(line, source.palette, self._verdict.content_size.width or width)
        )
        self._title_line.update(detail_title(name, source))
        buckets = source.store.buckets(name, max(8, width - _AXIS_CELLS))
        zones = zone_of_values(name, buckets.mean, source.rules, source.context)
        cuts = band_cuts(zone_bands(name, source.rules, source.context))
        markers = onset_markers(source.diagnosis)
        picture, hidden = build_chart(buckets, zones, cuts, markers, source.palette, width, height)
        chart.update(picture)
        self._legend.update(chart_legend(cuts, hidden, markers, source.palette, width))
