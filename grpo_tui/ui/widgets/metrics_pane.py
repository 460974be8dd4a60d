"""The metrics pane: a filter box, the caption over the columns, and the metric grid.

The caption follows the grid's column widths (which change when a scrollbar appears or
the names get longer) and says which steps the sparklines span and what the filter kept.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.events import Key
from textual.widgets import Input, Static

from grpo_tui.numbers import format_step
from grpo_tui.ui.inert import inert
from grpo_tui.ui.widgets.metric_grid import MetricGrid
from grpo_tui.ui.widgets.metric_rows import VALUE_WIDTH, MetricsFrame, RowLayout


class MetricsPane(Vertical):
    """Filter, caption and grid; `show` draws a frame, `open_filter` / `clear_filter` act."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.grid = MetricGrid(id="grid")
        self._filter = Input(
            placeholder="filter metrics by name (enter keeps it, esc clears it)", id="filter"
        )
        self._filter.display = False
        self._caption = Static("", id="grid-caption")
        self._caption_layout: RowLayout | None = None
        self._source: MetricsFrame | None = None

    def compose(self) -> ComposeResult:
        yield self._filter
        yield self._caption
        yield self.grid

    @property
    def caption_aligned(self) -> bool:
        """The caption follows the grid's column widths (one message later); a grid that
        is not on screen has nothing to align."""
        return not self.grid.region or self._caption_layout == self.grid.row_layout

    def show(self, source: MetricsFrame) -> None:
        self._source = source
        self.grid.show(source)
        self._draw_caption()

    # -- the filter -------------------------------------------------------------------------
    def open_filter(self) -> None:
        self._filter.display = True
        # focus now (not after a refresh) so keys typed right after `/` land in the box
        self.screen.set_focus(self._filter)

    def clear_filter(self) -> None:
        self._filter.value = ""
        self._filter.display = False
        self.grid.set_filter("")
        self.grid.focus()
        self._draw_caption()

    @property
    def filter_has_focus(self) -> bool:
        return self._filter.has_focus

    def type_into_filter(self, event: Key) -> None:
        """Textual routes keys to the widget focused when they arrive: keys typed right
        after `/` were queued for the grid and come back unhandled; they belong in the box."""
        if event.is_printable and event.character:
            self._filter.insert_text_at_cursor(event.character)
            event.stop()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.grid.set_filter(event.value)
        self._draw_caption()

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self._filter.display = False
        self.grid.focus()

    # -- the caption ------------------------------------------------------------------------
    @on(MetricGrid.LayoutChanged)
    def _draw_caption(self) -> None:
        grid = self.grid
        text = Text(no_wrap=True, overflow="ellipsis", style="dim")
        text.append("metric".ljust(grid.row_layout.name) + " " + "now".rjust(VALUE_WIDTH) + "    ")
        store = self._source.store if self._source is not None else None
        if store is not None and len(store):
            first, last = float(store.steps[0]), store.last_step()
            text.append(f"history, steps {format_step(first)}–{format_step(last or first)}")
        if grid.filter:
            text.append("   filter: ", style="bold")
            text.append_text(inert(grid.filter, "bold"))
            text.append(f" ({len(grid.names)})", style="bold")
        self._caption.update(text)
        self._caption_layout = grid.row_layout
