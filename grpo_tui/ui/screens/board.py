"""The board: one row per run, its state, step, verdict and reward, in the order asked.

It draws core's `BoardRow`s (grpo_tui/monitor/board.py) and nothing else: the Board reads every
run in one thread, this screen takes what it read (`Board.take_inbox`) and runs one
diagnosis at a time in a worker thread. `enter` opens the run under the cursor as a
`RunScreen` over the session the Board holds for it (`Board.open`: nothing read or judged
twice; its first frame shows the row's verdict), and `esc` there comes back. Covered by a
run, the board goes on reading and judging its runs, and hands the opened run's screen
what its reads brought; it draws its table again only once it is in front.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.events import Key, ScreenResume
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from grpo_tui.monitor.board import (
    SORT_WORDS,
    SORTS,
    Board,
    BoardRow,
    board_counts,
    row_facts,
    sort_rows,
)
from grpo_tui.monitor.session import DiagnosisJob, DiagnosisResult
from grpo_tui.sources.runs import RunRef
from grpo_tui.ui.host import host
from grpo_tui.ui.screens.run import RunScreen
from grpo_tui.ui.widgets.board_table import BoardTable
from grpo_tui.views.presentation import DEFAULT_CYCLE_S, FACT_SEPARATOR, VERDICT_SEPARATOR

#: the board's clock: ages and states ("STALLED") change with time alone; seconds while a
#: row's data is under a minute old (its age counts seconds), else every few seconds (ages
#: show to the minute; fifty rows cost ~2 ms a look)
BOARD_CLOCK_S = 1.0
BOARD_SLOW_CLOCK_S = 5.0
#: data younger than this shows its age in seconds
_SECONDS_SHOWN_S = 60.0
#: keys that move the table's cursor (from then on it follows the run it is on)
_CURSOR_KEYS = frozenset({"up", "down", "pageup", "pagedown", "home", "end", "j", "k"})


class BoardScreen(Screen[None]):
    """Every run of the board, worst first (`s` sorts otherwise); `enter` opens one, `/`
    filters, `space` marks and `c` compares the marked."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "app.quit", "Quit"),
        Binding("enter", "open_run", "Open"),
        Binding("slash", "filter", "Filter"),
        Binding("s", "sort", "Sort"),
        Binding("space", "mark", "Mark"),
        Binding("c", "compare", "Compare"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("t", "app.cycle_theme", "Theme"),
    ]

    class Read(Message):
        """The board's reader put something in its inbox."""

    @dataclass
    class Diagnosed(Message):
        """A diagnosis of one run, from the diagnosis worker."""

        ref: RunRef
        result: DiagnosisResult

    def __init__(
        self,
        board: Board,
        *,
        title: str = "",
        now: Callable[[], float] = time.time,
        cycle_seconds: float = DEFAULT_CYCLE_S,
        selected: RunRef | None = None,
    ) -> None:
        super().__init__()
        self.board = board
        #: the wall clock (injectable so tests and snapshots have a fixed time)
        self.now = now
        self._title = title
        self._cycle_seconds = cycle_seconds
        self._selected = selected
        #: the rows shown now (filtered), in the order asked
        self.rows: list[BoardRow] = []
        #: the order the rows are in (grpo_tui.monitor.board.SORTS)
        self.sort = SORTS[0]
        self._shown: tuple[object, ...] | None = None
        self._filter = ""
        self._diagnosing = False
        self._cursor_moved = selected is not None
        #: the runs marked for a comparison (space), in the order marked
        self.marked: list[RunRef] = []
        #: the run opened over the board, and its screen
        self.opened: RunScreen | None = None
        self._state = Static("", id="board-state")
        self._counts = Static("", id="board-counts")
        self._facts = Static("", id="board-facts")
        self._filter_box = Input(placeholder="filter runs by name, framework, state or verdict")
        self._filter_box.id = "board-filter"
        self.table = BoardTable(id="board-table")
        #: the selected run's whole verdict and facts, under the table at any width
        self._detail = Static("", id="board-detail")

    def compose(self) -> ComposeResult:
        yield self._state
        yield self._counts
        yield self._facts
        yield self._filter_box
        yield self.table
        yield self._detail
        yield Footer()

    def on_mount(self) -> None:
        self._filter_box.display = False
        # the theme is part of what is drawn (`_key`): a new one draws the board anew
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._draw())
        # called from the reader's thread: one message per wake-up, however much it put
        self.board.on_post = lambda: self.post_message(self.Read())
        self.set_timer(BOARD_CLOCK_S, self._clock)
        self._take()
        self.table.focus()

    def on_unmount(self) -> None:
        self.board.on_post = None

    # -- reading and diagnosing ---------------------------------------------------------
    @on(Read)
    def _take(self) -> None:
        changed, notices = self.board.take_inbox()
        for notice in notices[-1:]:
            host(self).tell(notice.text, title=notice.title, error=notice.error)
        if self.opened is not None:
            self.opened.session_changed(self.board.take_opened())
        if changed:
            self._draw()
        self._maybe_diagnose()

    def _maybe_diagnose(self) -> None:
        if self._diagnosing or (chosen := self.board.next_diagnosis()) is None:
            return
        self._diagnosing = True
        ref, job = chosen
        self._diagnose(ref, job)

    @work(thread=True, exclusive=False, group="diagnose", name="diagnose a run")
    def _diagnose(self, ref: RunRef, job: DiagnosisJob) -> None:
        self.post_message(self.Diagnosed(ref, job()))

    @on(Diagnosed)
    def _on_diagnosed(self, message: Diagnosed) -> None:
        self._diagnosing = False
        self.board.diagnosed(message.ref, message.result)
        if self.opened is not None and message.ref == self.board.opened:
            # a diagnosis in flight when the run was opened: its screen draws it
            self.opened.session_changed(None)
        self._take()
        self._alert()
        self._draw()

    def _clock(self) -> None:
        self._take()
        self._alert()
        self._draw()
        self.set_timer(self._clock_interval(), self._clock)

    def _clock_interval(self) -> float:
        now = self.now()
        fresh = any(
            row.data_time is not None and now - row.data_time < _SECONDS_SHOWN_S
            for row in self.rows
        )
        return BOARD_CLOCK_S if fresh else BOARD_SLOW_CLOCK_S

    def _alert(self) -> None:
        """Tell the events the runs bring (core decides: a worsening marks its row; the
        opened run's are its screen's to tell)."""
        events = self.board.observe(self.now())
        host(self).tell_events(events, self.board.alert_settings, named=True)

    @property
    def settled(self) -> bool:
        """Every run read is diagnosed and drawn (tests wait on it)."""
        return not self._diagnosing and self.board.settled and self._shown == self._key()

    # -- drawing ------------------------------------------------------------------------
    def _key(self) -> tuple[object, ...]:
        return (
            tuple(self.rows),
            self.size.width,
            self.app.theme,
            self._filter,
            tuple(self.marked),
            self.sort,
            self.board.judging(),
            self.table.selected_run(),
        )

    def refresh_rows(self) -> None:
        """Draw the rows as they are now (the clock does every second or few)."""
        self._draw()

    def _draw(self) -> None:
        every = self.board.rows(self.now())
        shown = [row for row in every if not self._filter or row.matches(self._filter)]
        self.rows = sort_rows(shown, self.sort)
        if not self.is_active:
            return  # a run is in front: the table is drawn again once the board is
        key = self._key()
        if key == self._shown:
            return
        self._shown = key
        self._state.update(Text.assemble((" BOARD ", "reverse bold"), " " + self._title))
        self._counts.update(Text(board_counts(every), no_wrap=True, overflow="ellipsis"))
        self._facts.update(Text(self._facts_line(every), style="dim", no_wrap=True))
        palette = host(self).theme_spec.palette
        self.table.show(
            self.rows, self.size.width or 80, palette, frozenset(self.marked), self.sort
        )
        # the cursor follows the run the user moved it to; until then it stays on the top
        # row, the first of the order (which changes as the verdicts come in)
        if self._selected is not None:
            self.table.select(self._selected)
            self._selected = None
        elif not self._cursor_moved and self.table.row_count:
            self.table.move_cursor(row=0, animate=False)
        self._draw_detail()
        self._shown = self._key()

    def _facts_line(self, every: list[BoardRow]) -> str:
        facts = f"{len(every)} run{'' if len(every) == 1 else 's'} · {SORT_WORDS[self.sort]}"
        if self._filter:
            facts += f" · filter: {self._filter} ({len(self.rows)})"
        if alerted := sum(1 for row in every if row.alert):
            facts += f" · ⚑ {alerted} worse since opened"
        if judging := self.board.judging():
            facts += f" · judging {judging}"
        if self.marked:
            facts += f" · {len(self.marked)} marked (c compares)"
        return facts + " · enter opens a run · s sorts · space marks"

    def _draw_detail(self) -> None:
        """The selected run's whole verdict and its facts, wrapped, under the table."""
        ref = self.table.selected_run()
        row = next((row for row in self.rows if row.ref == ref), None)
        if row is None:
            self._detail.update("")
            return
        palette = host(self).theme_spec.palette
        line = row.verdict
        text = Text()
        text.append(line.lead, style=palette.style(row.status.zone) + Style(bold=True))
        for part in line.parts:
            text.append(VERDICT_SEPARATOR + part)
        text.append("\n")
        text.append(row.name, style="bold")
        facts = [*row_facts(row), *([row.framework] if row.framework else [])]
        text.append(FACT_SEPARATOR + FACT_SEPARATOR.join(facts), style="dim")
        if row.checkpoints:
            text.append("\n" + row.checkpoints)
        self._detail.update(text)

    def on_resize(self) -> None:
        self._draw()

    def on_screen_resume(self, event: ScreenResume) -> None:
        """In front again: a run opened over the board was closed (its reading back to the
        board's pace), and the board is drawn as it is now."""
        if self.opened is not None and self.opened not in self.app.screen_stack:
            if self.board.opened is not None:
                self.board.release(self.board.opened)
            self.opened = None
        self._shown = None
        self._draw()

    def on_key(self, event: Key) -> None:
        if event.key in _CURSOR_KEYS:
            self._cursor_moved = True
        vi_keys = {"j": self.table.action_cursor_down, "k": self.table.action_cursor_up}
        if event.key in vi_keys and self.table.has_focus:
            vi_keys[event.key]()  # the vi keys, as in the metric grid
            event.stop()

    def on_click(self) -> None:
        self._cursor_moved = True

    @on(DataTable.RowHighlighted, "#board-table")
    def _highlighted(self) -> None:
        self._draw_detail()

    # -- actions ------------------------------------------------------------------------
    def action_open_run(self) -> None:
        if (ref := self.table.selected_run()) is not None:
            self.open_run(ref)

    @on(DataTable.RowSelected, "#board-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if (ref := self.table.refs.get(event.row_key.value or "")) is not None:
            self.open_run(ref)

    def open_run(self, ref: RunRef) -> None:
        """The run's screen over the session the board holds for it (nothing read again)."""
        opened = self.board.open(ref)
        if opened is None:
            return
        self._cursor_moved = True
        self.table.select(ref)
        screen = RunScreen(
            opened.session,
            opened.alerts,
            host(self).theme_spec.palette,
            now=self.now,
            cycle_seconds=self._cycle_seconds,
            from_board=True,
        )
        self.opened = screen
        self.app.push_screen(screen)

    def action_sort(self) -> None:
        """The next order of the rows (SORTS), said."""
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        host(self).tell(SORT_WORDS[self.sort], title="sorted", timeout=3)
        self._draw()

    def action_mark(self) -> None:
        """Mark the run under the cursor for a comparison, or unmark it."""
        ref = self.table.selected_run()
        if ref is None:
            return
        self._cursor_moved = True
        if ref in self.marked:
            self.marked.remove(ref)
        else:
            self.marked.append(ref)
        self._draw()

    def action_compare(self) -> None:
        """The marked runs side by side (two or more)."""
        from grpo_tui.monitor.compare import compare_runs, overlay_series
        from grpo_tui.ui.screens.compare import CompareScreen

        runs = self.board.to_compare(self.marked)
        if len(runs) < 2:
            host(self).tell("mark two or more runs with space, then press c")
            return
        width = max(20, (self.size.width or 80) - 44)
        comparison = compare_runs(runs, self.board.rules, width)
        self.app.push_screen(
            CompareScreen(
                comparison,
                host(self).theme_spec.palette,
                lambda metric, cells: overlay_series(runs, metric, cells),
            )
        )

    def action_filter(self) -> None:
        self._filter_box.display = True
        self._filter_box.focus()

    def action_clear_filter(self) -> None:
        self._filter_box.value = ""
        self._filter_box.display = False
        self._filter = ""
        self.table.focus()
        self._draw()

    @on(Input.Changed, "#board-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._filter = event.value.strip()
        self._draw()

    @on(Input.Submitted, "#board-filter")
    def _filter_submitted(self) -> None:
        self._filter_box.display = False
        self.table.focus()


def board_title(roots: list[Path]) -> str:
    """What the board's first line names: the folders or paths given."""
    shown = ", ".join(str(root) for root in roots[:3])
    return shown + (f" and {len(roots) - 3} more" if len(roots) > 3 else "")
