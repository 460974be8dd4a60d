"""The board: one row per run (worst first), its state, step, verdict and reward.

It draws core's `BoardRow`s (grpo_tui/board.py) and nothing else: the Board reads every
run in one thread, this app takes what it read (`Board.take_inbox`) and runs one
diagnosis at a time in a worker thread. `enter` ends the board app with the run chosen
(`BoardChoice`): the command opens that run's monitor and, when the user comes back from
it (`esc`), a board app again on the same Board, which kept reading meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import ClassVar

import numpy as np
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.events import Key
from textual.message import Message
from textual.widgets import DataTable, Footer, Input, Static

from grpo_tui.board import Board, BoardRow, board_counts
from grpo_tui.numbers import format_value
from grpo_tui.presentation import VERDICT_SEPARATOR, bars, fit_names
from grpo_tui.session import DiagnosisJob, DiagnosisResult
from grpo_tui.sources.runs import RunRef
from grpo_tui.ui.base_app import GrpoApp

#: the board's clock: ages and states ("STALLED") change with time alone; seconds while a
#: row's data is under a minute old (its age counts seconds), else every few seconds (ages
#: show to the minute; fifty rows cost ~2 ms a look)
BOARD_CLOCK_S = 1.0
BOARD_SLOW_CLOCK_S = 5.0
#: data younger than this shows its age in seconds
_SECONDS_SHOWN_S = 60.0
#: keys that move the table's cursor (from then on it follows the run it is on)
_CURSOR_KEYS = frozenset({"up", "down", "pageup", "pagedown", "home", "end", "j", "k"})
#: actions of the board's table, not of the screens above it
_BOARD_ONLY = frozenset({"open_run", "filter", "clear_filter", "mark", "compare"})
#: columns from which the reward, framework and ETA columns are shown
WIDE_BOARD = 120


@dataclass(frozen=True)
class BoardChoice:
    """What the board app ended with: the run to open (None: the user quit)."""

    ref: RunRef | None


def reward_cell(row: BoardRow) -> str:
    """`0.21→0.63 ▁▂▄▆█` (first and latest level, the sparkline over the run's steps)."""
    if row.reward_first is None or row.reward_now is None:
        return ""
    levels = np.asarray(row.reward_levels, dtype=float)
    spark = bars(levels) if levels.size and np.isfinite(levels).any() else ""
    return f"{format_value(row.reward_first)}→{format_value(row.reward_now)} {spark}"


def state_word(row: BoardRow) -> str:
    """The state in a word of at most 8 cells (its detail is in the monitor's header)."""
    word = row.state.word.upper()
    return word if len(word) <= 8 else word[:7] + "…"


def verdict_cell(row: BoardRow, width: int) -> Text:
    """The verdict's parts in `width` cells (the status glyph has its own column); the
    status in words while there are none (warming up, diagnosing)."""
    line = row.verdict
    parts = line.fitted(width + len(line.lead))
    text = VERDICT_SEPARATOR.join(parts) if parts else line.lead.split(" ", 1)[-1].lower()
    return Text(text, no_wrap=True, overflow="ellipsis")


class BoardApp(GrpoApp[BoardChoice]):
    """Every run of the board, worst first; `enter` opens one, `/` filters."""

    TITLE = "grpo-tui board"
    CSS_PATH: ClassVar[list[str | PurePath]] = ["toast.tcss", "board.tcss"]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_board", "Quit"),
        Binding("ctrl+c", "quit_board", "Quit", show=False, priority=True),
        Binding("enter", "open_run", "Open"),
        Binding("slash", "filter", "Filter"),
        Binding("space", "mark", "Mark"),
        Binding("c", "compare", "Compare"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("t", "cycle_theme", "Theme"),
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
        theme: str | None = None,
        now: Callable[[], float] = time.time,
        environ: Mapping[str, str] | None = None,
        title: str = "",
        selected: RunRef | None = None,
    ) -> None:
        super().__init__(theme=theme, environ=environ)
        self.board = board
        #: the wall clock (injectable so tests and snapshots have a fixed time)
        self.now = now
        self._title = title
        self._selected = selected
        #: the rows shown now (filtered), worst first
        self.rows: list[BoardRow] = []
        self._shown: tuple[object, ...] | None = None
        self._filter = ""
        self._diagnosing = False
        self._cursor_moved = selected is not None
        #: the runs marked for a comparison (space), in the order marked
        self.marked: list[RunRef] = []
        #: the table's row keys → the runs they are
        self._keyed: dict[str, RunRef] = {}
        self._state = Static("", id="board-state")
        self._counts = Static("", id="board-counts")
        self._facts = Static("", id="board-facts")
        self._filter_box = Input(placeholder="filter runs by name, framework, state or verdict")
        self._filter_box.id = "board-filter"
        # every cell is Text: a str cell would be read as markup
        self._table: DataTable[Text] = DataTable(
            id="board-table", cursor_type="row", zebra_stripes=False
        )

    def compose(self) -> ComposeResult:
        yield self._state
        yield self._counts
        yield self._facts
        yield self._filter_box
        yield self._table
        yield Footer()

    def on_mount(self) -> None:
        self._filter_box.display = False
        # the theme is part of what is drawn (`_key`): a new one draws the board anew
        self.theme_changed_signal.subscribe(self, lambda _theme: self._draw())
        # called from the reader's thread: one message per wake-up, however much it put
        self.board.on_post = lambda: self.post_message(self.Read())
        self.set_timer(BOARD_CLOCK_S, self._clock)
        self._take()
        self._table.focus()

    def on_unmount(self) -> None:
        self.board.on_post = None

    # -- reading and diagnosing ---------------------------------------------------------
    @on(Read)
    def _take(self) -> None:
        changed, notices = self.board.take_inbox()
        for notice in notices[-1:]:
            self.tell(notice.text, title=notice.title, error=notice.error)
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
        """Tell the events the runs bring (core decides: a worsening marks its row)."""
        self.tell_events(self.board.observe(self.now()), self.board.alert_settings, named=True)

    @property
    def settled(self) -> bool:
        """Every run read is diagnosed and drawn (tests wait on it)."""
        return not self._diagnosing and self.board.settled and self._shown == self._key()

    # -- drawing ------------------------------------------------------------------------
    def _key(self) -> tuple[object, ...]:
        return (
            tuple(self.rows),
            self.size.width,
            self.theme,
            self._filter,
            tuple(self.marked),
            self.board.judging(),
        )

    def _draw(self) -> None:
        every = self.board.rows(self.now())
        self.rows = [row for row in every if not self._filter or row.matches(self._filter)]
        key = self._key()
        if key == self._shown:
            return
        self._shown = key
        width = self.size.width or 80
        self._state.update(Text.assemble((" BOARD ", "reverse bold"), " " + self._title))
        self._counts.update(Text(board_counts(every), no_wrap=True, overflow="ellipsis"))
        facts = f"{len(every)} run{'' if len(every) == 1 else 's'}"
        if self._filter:
            facts += f" · filter: {self._filter} ({len(self.rows)})"
        if alerted := sum(1 for row in every if row.alert):
            facts += f" · ⚑ {alerted} worse since opened"
        if judging := self.board.judging():
            facts += f" · judging {judging}"
        if self.marked:
            facts += f" · {len(self.marked)} marked (c compares)"
        facts += " · enter opens a run · space marks"
        self._facts.update(Text(facts, style="dim", no_wrap=True, overflow="ellipsis"))
        self._fill_table(width)

    def _columns(self, width: int) -> list[tuple[str, int]]:
        """(label, cells) per column: the verdict takes what the others leave (DataTable
        pads each column by a cell on both sides)."""
        wide = width >= WIDE_BOARD
        name = 28 if wide else 19
        fixed = [
            ("mark", 1),
            ("status", 1),
            ("run", name),
            ("state", 8),
            ("step", 15 if wide else 9),
        ]
        if wide:
            fixed += [("ETA", 8), ("framework", 12), ("reward first→now", 26), ("data", 9)]
        used = sum(w for _, w in fixed) + 2 * (len(fixed) + 1)
        return [*fixed, ("verdict", max(16, width - used - 1))]

    def _fill_table(self, width: int) -> None:
        table = self._table
        # the cursor follows the run the user moved it to; until then it stays on the top
        # row, the worst run (which changes as the verdicts come in)
        selected = self._selected_run() if self._cursor_moved else None
        columns = self._columns(width)
        table.clear(columns=True)
        for label, size in columns:
            # the mark and status columns have a key, no label
            shown = "" if label in ("mark", "status") else label
            table.add_column(Text(shown), width=size, key=label)
        spec = self.theme_spec.palette
        verdict_width = columns[-1][1]
        narrow = width < WIDE_BOARD
        # sweep runs share a prefix and differ at the end (`trl-qwen35…s44-latecollapse`)
        names = fit_names([row.name for row in self.rows], columns[2][1])
        for row in self.rows:
            glyph = Text(row.status.glyph, style=spec.style(row.status.zone))
            state_style = "bold" if row.troubled else ""
            mark = "●" if row.ref in self.marked else "⚑" if row.alert else " "
            cells: list[Text] = [
                Text(mark, style="bold"),
                glyph,
                Text(names[row.name], no_wrap=True),
                Text(state_word(row), style=state_style),
                Text(row.step.removeprefix("step ").split(" ")[0] if narrow else row.step[5:]),
            ]
            if len(columns) > 6:
                cells += [
                    Text(row.eta.removeprefix("ETA ")),
                    Text(row.framework, no_wrap=True, overflow="ellipsis"),
                    Text(reward_cell(row), no_wrap=True, overflow="ellipsis"),
                    Text(row.age),
                ]
            cells.append(verdict_cell(row, verdict_width))
            self._keyed[str(row.ref)] = row.ref
            table.add_row(*cells, key=str(row.ref))
        if selected is not None:
            self._select(selected)
        elif self._selected is not None:
            self._select(self._selected)
            self._selected = None

    def _selected_run(self) -> RunRef | None:
        table = self._table
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:  # no rows, or the table is being refilled
            return None
        return self._keyed.get(key) if key else None

    def _select(self, ref: RunRef) -> None:
        try:
            index = self._table.get_row_index(str(ref))
        except Exception:  # not shown (filtered out)
            return
        self._table.move_cursor(row=index, animate=False)

    def on_resize(self) -> None:
        self._draw()

    def on_key(self, event: Key) -> None:
        if event.key in _CURSOR_KEYS:
            self._cursor_moved = True
        vi_keys = {"j": self._table.action_cursor_down, "k": self._table.action_cursor_up}
        if event.key in vi_keys and self._table.has_focus:
            vi_keys[event.key]()  # the vi keys, as in the metric grid
            event.stop()

    def on_click(self) -> None:
        self._cursor_moved = True

    # -- actions ------------------------------------------------------------------------
    def action_open_run(self) -> None:
        if (ref := self._selected_run()) is not None:
            self._open(ref)

    @on(DataTable.RowSelected, "#board-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if (ref := self._keyed.get(event.row_key.value or "")) is not None:
            self._open(ref)

    def _open(self, ref: RunRef) -> None:
        self.board.seen(ref)  # its marker goes: the user looks at it now
        self.exit(BoardChoice(ref))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The board's own keys act (and show in the footer) on the board only, not on a
        comparison pushed over it."""
        return not (action in _BOARD_ONLY and len(self.screen_stack) > 1)

    def action_mark(self) -> None:
        """Mark the run under the cursor for a comparison, or unmark it."""
        ref = self._selected_run()
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
        from grpo_tui.compare import compare_runs, overlay_series
        from grpo_tui.ui.compare_screen import CompareScreen

        runs = self.board.to_compare(self.marked)
        if len(runs) < 2:
            self.tell("mark two or more runs with space, then press c")
            return
        width = max(20, (self.size.width or 80) - 44)
        comparison = compare_runs(runs, self.board.rules, width)
        self.push_screen(
            CompareScreen(
                comparison,
                self.theme_spec.palette,
                lambda metric, cells: overlay_series(runs, metric, cells),
            )
        )

    def action_quit_board(self) -> None:
        self.exit(BoardChoice(None))

    def action_filter(self) -> None:
        self._filter_box.display = True
        self._filter_box.focus()

    def action_clear_filter(self) -> None:
        self._filter_box.value = ""
        self._filter_box.display = False
        self._filter = ""
        self._table.focus()
        self._draw()

    @on(Input.Changed, "#board-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._filter = event.value.strip()
        self._draw()

    @on(Input.Submitted, "#board-filter")
    def _filter_submitted(self) -> None:
        self._filter_box.display = False
        self._table.focus()


def board_title(roots: list[Path]) -> str:
    """What the board's first line names: the folders or paths given."""
    shown = ", ".join(str(root) for root in roots[:3])
    return shown + (f" and {len(roots) - 3} more" if len(roots) > 3 else "")
