"""The completions panel: what the model writes, one prompt group at a time, live.

GRPO learns from the differences inside a group, so a group is the unit on screen: its
step, its prompt folded to one line, then one row per completion (reward per function,
total, advantage, flags, the text cut to a few lines). Core's completions index (shared
with the reader thread; it locks itself) hands out pages; pages are loaded in a thread
worker, since a batch can be a 10 MB line, and arrive as `PageLoaded`.

Keys: `n` / `N` next / previous group, `[` / `]` previous / next step, `w` / `b` worst /
best group of the step, `z` zero-spread groups only, `/` search, `e` expand, `space`
follow / hold, `enter` the whole completion. See ui/completions_cursor.py for how the
place moves (following the newest batch, or held where the user put it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.console import Group as RichGroup
from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from grpo_tui.numbers import NEAR_ZERO, format_cell, format_value
from grpo_tui.presentation import DEFAULT_CYCLE_S
from grpo_tui.run.completions import CompletionsIndex, Group, IndexState, Page, Sample
from grpo_tui.run.text_stats import REPETITIVE_SHARE, SHINGLE_CHARS
from grpo_tui.ui.completions_cursor import (
    CompletionsCursor,
    arrivals,
    best_group,
    group_order,
    worst_group,
)
from grpo_tui.ui.sample_text import capped_lines, fold_prompt
from grpo_tui.ui.themes import ZonePalette
from grpo_tui.untrusted import printable
from grpo_tui.vocabulary import Zone

#: lines of completion text per row, folded and expanded (`e`)
TEXT_LINES = 3
TEXT_LINES_EXPANDED = 12
#: lines of the prompt when expanded
PROMPT_LINES_EXPANDED = 12
#: the text column never gets narrower than this; reward columns give way first
MIN_TEXT_WIDTH = 26
#: characters of a reward function's name in its column header
REWARD_NAME_CHARS = 7

HOW_TO_LOG = (
    "Turn completion logging on to see what the model writes, grouped by prompt:\n"
    "  ms-swift   --log_completions true   (writes completions.jsonl next to logging.jsonl)\n"
    "  TRL        GRPOConfig(log_completions=True)   (≥ 0.28: <output_dir>/completions/)\n"
    "  verl       trainer.rollout_data_dir=DIR   (beside the log, or --completions DIR)"
)


@dataclass(frozen=True, slots=True)
class CompletionsSource:
    """What the panel is drawn from: the index (None until a completions file is
    followed; only the panel's workers call it, since the reader may hold its lock for a
    while), what it held at the newest read, and the file looked for (the empty state)."""

    index: CompletionsIndex | None
    state: IndexState | None
    looked_for: Path | None
    framework: str | None


# -- rendering (pure: tests call these directly) ------------------------------------------


def short_name(name: str, width: int = REWARD_NAME_CHARS) -> str:
    """A reward function's column header: its name, cut with an ellipsis."""
    clean = printable(name)
    return clean if len(clean) <= width else clean[: width - 1] + "…"


def advantage_cell(value: float | None, palette: ZonePalette) -> Text:
    """The advantage with a glyph for its sign (colour is not the only cue)."""
    if value is None or math.isnan(value):
        return Text("  –", style="dim")
    width = ADVANTAGE_CELLS - 1  # the glyph takes one cell
    if abs(value) < NEAR_ZERO:
        return Text(f"·{format_cell(value, width)}", style="dim")
    if value > 0:
        return Text(f"▲{format_cell(value, width)}", style=palette.style(Zone.HEALTHY))
    return Text(f"▼{format_cell(-value, width)}", style=palette.style(Zone.BAD))


def sample_flags(sample: Sample) -> list[str]:
    """Short words for what is wrong with one completion."""
    flags: list[str] = []
    if sample.follows_format is False:
        flags.append("✗fmt")
    if sample.truncated:
        flags.append("✂cut")
    if sample.repetitive:
        flags.append("↻rep")
    return flags


def group_kind(group: Group) -> str | None:
    """The kind of a zero-spread group, as a word (None when the rewards differ)."""
    if not group.zero_spread:
        return None
    if group.all_fail:
        return "ALL FAIL"
    if group.all_pass:
        return "ALL PASS"
    return "ZERO SPREAD"


#: how an entry's role reads in its title
KIND_WORDS = {"new": "train", "eval": "eval", "eval_or_end": "eval / end", "repeat": "repeat"}


def group_title(
    page: Page,
    position: int,
    visible: Sequence[int],
    palette: ZonePalette,
) -> Text:
    """`step 45 · train · group 2/4 · 8 completions · mean 0.5 · spread 0.41 · distinct 0.62
    · overlap 0.21` (the mean total is what `w` / `b` rank by)."""
    group = page.groups[position]
    info = page.info
    kind = KIND_WORDS[info.kind]
    text = Text()
    # the space inside the bold run: Textual drops a lone unstyled one between two runs
    text.append(f"step {printable(group.step)} ", style="bold")
    # eval rollouts are not what the policy trains on: said loud, not dim
    text.append(kind, style="bold reverse" if info.kind in ("eval", "eval_or_end") else "dim")
    where = visible.index(position) + 1 if position in visible else 0
    text.append(f" · group {where}/{len(visible)}")
    if len(visible) != len(page.groups):
        text.append(f" of {len(page.groups)}", style="dim")
    text.append(f" · {group.size} completions")
    mean = group.mean_total
    if not math.isnan(mean):
        # what w / b rank the groups by
        text.append(f" · mean {format_value(mean)}")
    if not math.isnan(group.spread):
        text.append(" · spread ")
        text.append(format_value(group.spread), style="bold")
    if not math.isnan(group.distinct_2):
        text.append(f" · distinct {format_value(group.distinct_2)}")
    if not math.isnan(group.pairwise_overlap):
        text.append(f" · overlap {format_value(group.pairwise_overlap)}")
    kind_word = group_kind(group)
    if kind_word is not None:
        zone = Zone.CAUTION if group.all_pass else Zone.BAD
        text.append(" · ")
        text.append(kind_word, style=palette.style(zone) + Style(bold=True))
    return text


def prompt_text(group: Group, width: int, *, expanded: bool) -> Text:
    """The prompt: one folded line, or its first lines as written when expanded."""
    if expanded:
        return capped_lines(group.prompt, width - 2, PROMPT_LINES_EXPANDED).text
    line = Text(fold_prompt(group.prompt), no_wrap=True, overflow="ellipsis")
    line.truncate(max(1, width - 2), overflow="ellipsis")
    return line


@dataclass(frozen=True, slots=True)
class TableLayout:
    """Which columns fit the width, and how wide each is: reward functions give way (first
    their long names, then whole columns, from the last) before the text gets too narrow;
    the flags column is there only when a row has a flag; the text takes what is left."""

    #: (reward function, its column's width), in logged order
    rewards: tuple[tuple[str, int], ...]
    #: reward functions left out for want of width (said under the prompt)
    hidden: tuple[str, ...]
    #: the flags column's width (0: no row of the group has a flag, no column)
    flags_width: int
    text_width: int

    @property
    def reward_names(self) -> tuple[str, ...]:
        """The reward functions shown, in order."""
        return tuple(name for name, _ in self.rewards)

    @property
    def width(self) -> int:
        """The cells the columns take, padding and the scrollbar included."""
        fixed = [NUMBER_WIDTH, VALUE_CELLS, ADVANTAGE_CELLS, self.text_width]
        contents = [*fixed, *(w for _, w in self.rewards)]
        if self.flags_width:
            contents.append(self.flags_width)
        return sum(contents) + _PADDING * len(contents) + 1


#: content widths of the fixed columns (the table pads each column by one cell a side)
NUMBER_WIDTH = 3
VALUE_CELLS = 6
ADVANTAGE_CELLS = 7
FLAGS_HEADER = "flags"
#: a reward function's column is at most this wide (a longer name is cut)
REWARD_NAME_MAX = 24
_PADDING = 2


def _full_width(name: str) -> int:
    return min(REWARD_NAME_MAX, max(VALUE_CELLS, len(printable(name))))


def table_layout(width: int, reward_names: Sequence[str], flags_width: int = 0) -> TableLayout:
    """The columns for a table `width` cells wide. `flags_width`: the widest flags cell of
    the group (0 when no row has a flag)."""
    columns = [NUMBER_WIDTH, VALUE_CELLS, ADVANTAGE_CELLS] + ([flags_width] if flags_width else [])
    # + the text column's padding and the scrollbar
    fixed = sum(columns) + _PADDING * (len(columns) + 1) + 1

    def text_left(widths: Sequence[int]) -> int:
        return width - fixed - sum(w + _PADDING for w in widths)

    names = list(reward_names)
    widths = [_full_width(name) for name in names]
    if text_left(widths) < MIN_TEXT_WIDTH:
        # long names first give way to short ones, then whole columns from the last
        widths = [min(w, REWARD_NAME_CHARS) for w in widths]
    while names and text_left(widths) < MIN_TEXT_WIDTH:
        names.pop()
        widths.pop()
    for position, name in enumerate(names):
        # the room a dropped column left gives names back their whole width, in order
        whole = [*widths[:position], _full_width(name), *widths[position + 1 :]]
        if text_left(whole) >= MIN_TEXT_WIDTH:
            widths = whole
    hidden = tuple(reward_names[len(names) :])
    return TableLayout(
        tuple(zip(names, widths, strict=True)),
        hidden,
        flags_width,
        max(MIN_TEXT_WIDTH, text_left(widths)),
    )


def flags_width(group: Group) -> int:
    """The flags column's width: its widest cell, at least its header (0: none of the
    group's completions has a flag, no column)."""
    widest = max((len(" ".join(sample_flags(s))) for s in group.completions), default=0)
    return max(widest, len(FLAGS_HEADER)) if widest else 0


def hidden_caption(layout: TableLayout) -> Text | None:
    """What the table leaves out, said (None when every column is there)."""
    if not layout.hidden:
        return None
    count = len(layout.hidden)
    names = ", ".join(printable(name) for name in layout.hidden)
    text = Text(f"+{count} reward{'s' if count != 1 else ''} hidden ({names})", style="bold")
    text.append(" · widen the terminal or press enter for the whole completion", style="dim")
    return text


def row_cells(
    number: int,
    sample: Sample,
    layout: TableLayout,
    palette: ZonePalette,
    *,
    lines: int,
    search: str = "",
) -> tuple[list[Text], int]:
    """One completion's cells and the row's height."""
    cells = [Text(str(number), style="dim", justify="right")]
    for name, width in layout.rewards:
        reward = format_cell(sample.rewards.get(name), width)
        cells.append(Text(reward, justify="right"))
    cells.append(Text(format_cell(sample.total, VALUE_CELLS), style="bold", justify="right"))
    cells.append(advantage_cell(sample.advantage, palette))
    if layout.flags_width:
        flags = sample_flags(sample)
        cells.append(Text(" ".join(flags), style=palette.style(Zone.CAUTION) if flags else ""))
    # the role prefix that opens it ("assistant: ") is folded away: the text as logged is
    # one key away (enter)
    capped = capped_lines(sample.shown_text, layout.text_width, lines)
    body = capped.text
    if search:
        body.highlight_words([search], style="reverse", case_sensitive=False)
    if not body.plain.strip() or sample.empty:
        # nothing but a role prefix or template markers is an empty answer, said so
        body = Text("(empty)", style="dim")
    cells.append(body)
    return cells, capped.lines


def empty_state(source: CompletionsSource | None) -> Text:
    """What the panel says before any completion was read: why, and how to log them."""
    text = Text()
    state = source.state if source is not None else None
    if state is None or state.lines == 0:
        text.append("No completions logged yet.\n", style="bold")
        if source is not None and source.looked_for is not None:
            text.append("Looked for: ")
            text.append(printable(str(source.looked_for)))
            exists = state is not None and state.file_exists
            if state is not None and state.problem:
                text.append(f" ({printable(state.problem)})\n")
            else:
                text.append(
                    " (present, no completions in it yet)\n" if exists else " (not there)\n"
                )
        elif source is not None and source.framework is not None:
            text.append(
                f"This {printable(source.framework)} run shows no completions grpo-tui reads.\n"
            )
        text.append(HOW_TO_LOG, style="dim")
        bad = state.bad_line_count if state is not None else 0
        if bad:
            text.append(f"\n{bad} line{'' if bad == 1 else 's'} could not be read", style="bold")
    return text


# -- the widget ---------------------------------------------------------------------------


class CompletionsPanel(Vertical):
    """One prompt group at a time from the run's completions, following the newest."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "next_group", "Next group"),
        Binding("N", "previous_group", "Prev group"),
        Binding("right_square_bracket", "next_step", "Next step"),
        Binding("left_square_bracket", "previous_step", "Prev step"),
        Binding("w", "worst", "Worst group"),
        Binding("b", "best", "Best group"),
        Binding("z", "zero_spread", "Zero-spread only"),
        Binding("slash", "search", "Search"),
        Binding("e", "expand", "Expand"),
        Binding("space", "toggle_follow", "Follow/hold"),
        # off the footer, which is full already (q Quit would go); `?` lists it
        Binding("d", "distribution", "Distribution", show=False),
        Binding("escape", "close_search", "Close search", show=False),
    ]

    class PageLoaded(Message):
        """A page read by the loading worker (None: the file changed under the index)."""

        def __init__(
            self,
            request: int,
            page: Page | None,
            group: int | None,
            at_end: bool,
            note: str | None = None,
            resume: tuple[str, int] | None = None,
        ) -> None:
            super().__init__()
            self.request = request
            self.page = page
            self.group = group
            self.at_end = at_end
            self.note = note
            #: (text, entry) a search that ran out of time goes on from
            self.resume = resume

    class OpenCompletion(Message):
        """The user asked for one whole completion (the app opens the full view)."""

        def __init__(self, page: Page, group: int, row: int) -> None:
            super().__init__()
            self.page = page
            self.group = group
            self.row = row

    def __init__(
        self,
        *,
        palette: ZonePalette,
        cycle_seconds: float = DEFAULT_CYCLE_S,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.palette = palette
        self.cycle_seconds = cycle_seconds
        self.cursor = CompletionsCursor()
        self.page: Page | None = None
        self.expanded = False
        #: the app is paused: nothing moves on its own, nothing newer than the pause shows
        self.frozen = False
        self.search_text = ""
        #: (text, entry) a search that ran out of time goes on from
        self._search_resume: tuple[str, int] | None = None
        self._source: CompletionsSource | None = None
        self._request = 0
        #: entries worth showing at the newest state seen ("N new" counts from it)
        self._shown_seen: int | None = None
        #: groups in those entries at the newest state seen ("N new groups" counts from it)
        self._groups_seen: int | None = None
        self._loading = False
        self._note = ""
        self._drawn: tuple[object, ...] | None = None
        #: the columns of the table drawn last (None before one is drawn)
        self.table_columns: TableLayout | None = None
        self._title = Static("", id="completions-title")
        self._prompt = Static("", id="completions-prompt")
        self._table: DataTable[Text] = DataTable(
            id="completions-table", cursor_type="row", zebra_stripes=True
        )
        self._empty = Static("", id="completions-empty")
        self._search = Input(
            placeholder="search prompts and completions (enter)", id="completions-search"
        )
        self._status = Static("", id="completions-status")

    def compose(self) -> ComposeResult:
        yield self._title
        yield self._prompt
        yield self._table
        yield self._empty
        yield self._search
        yield self._status

    def on_mount(self) -> None:
        self._search.display = False
        self._show_empty(True)
        self.set_interval(self.cycle_seconds, self._cycle)

    # -- what the app hands over ------------------------------------------------------
    def show(self, source: CompletionsSource) -> None:
        """The run's newest state (each frame that changed something)."""
        previous, self._source = self._source, source
        state = source.state
        if self.page is not None and self._started_over(previous, source):
            self._start_over()
        if source.index is None or state is None or (state.lines == 0 and not state.previewing):
            if self.page is None:
                self._empty.update(empty_state(source))
                self._show_empty(True)
            return
        if self.frozen:
            return
        if state.previewing:
            # the index is still reading older lines: the preview is the newest there is
            if self.page is None or (self.cursor.following and not self.page.preview):
                self._load(None, group=0)
            else:
                self._draw_status()
            return
        newest = state.newest_entry
        preview_done = self.page is not None and self.page.preview
        count = None
        if self._shown_seen is not None:
            count = state.shown_entries - self._shown_seen
        self._shown_seen = state.shown_entries
        if self._groups_seen is not None:
            self.cursor.groups_arrived(state.shown_groups - self._groups_seen)
        self._groups_seen = state.shown_groups
        if self.cursor.arrived(newest, count) or (preview_done and self.cursor.following):
            self._load(newest, group=0)
        elif self.page is not None:
            self._draw_status()

    def _started_over(self, previous: CompletionsSource | None, source: CompletionsSource) -> bool:
        """Another completions file (a newer run directory), or the file was truncated or
        replaced and is being read again: the pages held belong to what is gone."""
        if previous is None:
            return False
        if previous.index is not source.index:
            return True
        seen = self.cursor.newest_seen
        state = source.state
        if state is None or seen is None:
            return False
        return state.newest_entry is None or state.newest_entry < seen

    def _start_over(self) -> None:
        self.page = None
        self.cursor = CompletionsCursor()
        self._shown_seen = None
        self._groups_seen = None
        self._drawn = None
        self._request += 1  # a page still being read belongs to the old file
        self._loading = False
        self._note = "the completions file started over"
        self._table.clear(columns=True)

    @property
    def settled(self) -> bool:
        """No page is being loaded and the newest state handed over is drawn (tests wait
        on it): a following panel shows the newest entry, or the preview of it."""
        if self._loading:
            return False
        state = self._source.state if self._source is not None else None
        if state is None or (state.lines == 0 and not state.previewing):
            return True
        page = self.page
        if page is None:
            return False
        if self.frozen or not self.cursor.following:
            return True
        if state.previewing:
            return page.preview
        return not page.preview and page.info.index == state.newest_entry

    def freeze(self, frozen: bool) -> None:
        """The app paused (or went on): nothing moves on its own while frozen."""
        self.frozen = frozen
        self._draw_status()

    def focus_table(self) -> None:
        """Keys go to the panel (its table, or the search box while it is open)."""
        self._table.focus()

    @property
    def shown_group(self) -> Group | None:
        page = self.page
        if page is None or not page.groups:
            return None
        position = self.cursor.place.group
        return page.groups[position] if 0 <= position < len(page.groups) else None

    @property
    def visible_groups(self) -> list[int]:
        if self.page is None:
            return []
        return group_order(self.page.groups, zero_spread_only=self.cursor.zero_spread_only)

    # -- loading (a thread worker: a page can be a 10 MB line) -----------------------------
    def _load(self, entry: int | None, *, group: int | None = None, at_end: bool = False) -> None:
        index = self._source.index if self._source is not None else None
        if index is None:
            return
        self._request += 1
        self._loading = True
        self._read_page(index, self._request, entry, group, at_end)

    @work(thread=True, exclusive=True, group="completions-page", name="completions page")
    def _read_page(
        self,
        index: CompletionsIndex,
        request: int,
        entry: int | None,
        group: int | None,
        at_end: bool,
    ) -> None:
        page = index.newest_page() if entry is None else index.page(entry)
        self.post_message(self.PageLoaded(request, page, group, at_end))

    @work(thread=True, exclusive=True, group="completions-page", name="completions move")
    def _read_neighbour(
        self,
        index: CompletionsIndex,
        request: int,
        current: int | None,
        forward: bool,
        at_end: bool,
        zero_spread_only: bool,
        limit: int | None,
    ) -> None:
        target = index.neighbour(current, forward=forward, zero_spread_only=zero_spread_only)
        if target is None or (limit is not None and target > limit):
            newer = "newer" if forward else "older"
            if zero_spread_only:
                note = f"no {newer} step with a zero-spread group"
            else:
                note = f"this is the {'newest' if forward else 'oldest'} step"
            self.post_message(self.PageLoaded(request, None, None, at_end, note))
            return
        self.post_message(self.PageLoaded(request, index.page(target), None, at_end, ""))

    @on(PageLoaded)
    def _page_loaded(self, message: PageLoaded) -> None:
        message.stop()
        if message.request != self._request:
            return  # a newer request is on its way
        self._loading = False
        if message.note is not None:
            self._note = message.note
        if message.resume is not None:
            self._search_resume = message.resume
        page = message.page
        if page is None:
            self._draw_status()
            return
        self.page = page
        entry = None if page.preview else page.info.index
        self.cursor.show(entry, self.visible_groups, group=message.group, at_end=message.at_end)
        self._show_empty(False)
        self._draw(force=True)

    # -- drawing ------------------------------------------------------------------------
    def _show_empty(self, empty: bool) -> None:
        self._empty.display = empty
        self._table.display = not empty
        self._title.display = not empty
        self._prompt.display = not empty

    def on_resize(self) -> None:
        self._draw(force=True)

    def _draw(self, *, force: bool = False) -> None:
        page = self.page
        group = self.shown_group
        if page is None:
            return
        width = max(20, self.size.width)
        key = (
            id(page),
            self.cursor.place,
            self.expanded,
            width,
            self.search_text,
            self.cursor.zero_spread_only,
        )
        if not force and key == self._drawn:
            self._draw_status()
            return
        self._drawn = key
        visible = self.visible_groups
        if group is None or self.cursor.place.group not in visible:
            self._title.update(self._title_without_group(page))
            self._prompt.update("")
            self._table.clear(columns=True)
            self._draw_status()
            return
        self._title.update(group_title(page, self.cursor.place.group, visible, self.palette))
        self.table_columns = table_layout(width, list(group.rewards), flags_width(group))
        prompt = prompt_text(group, width, expanded=self.expanded)
        caption = hidden_caption(self.table_columns)
        if caption is not None:
            caption.truncate(max(1, width - 2), overflow="ellipsis")
            prompt = Text("\n").join([prompt, caption])
        self._prompt.update(prompt)
        self._fill_table(group)
        self._draw_status()

    def _title_without_group(self, page: Page) -> Text:
        text = Text(f"step {printable(page.info.step)}", style="bold")
        if self.cursor.zero_spread_only:
            text.append(" · no zero-spread group in this step ([ / ] for other steps, z for all)")
        else:
            text.append(" · no groups in this batch")
        return text

    def _fill_table(self, group: Group) -> None:
        table = self._table
        layout = self.table_columns
        if layout is None:
            return
        lines = TEXT_LINES_EXPANDED if self.expanded else TEXT_LINES
        table.clear(columns=True)
        table.add_column("#", key="n", width=NUMBER_WIDTH)
        for name, column_width in layout.rewards:
            # a Text label: a str would be read as markup (a reward named "[/]" would crash)
            header = Text(short_name(name, column_width))
            table.add_column(header, key=f"r:{name}", width=column_width)
        table.add_column("total", key="total", width=VALUE_CELLS)
        table.add_column("adv", key="adv", width=ADVANTAGE_CELLS)
        if layout.flags_width:
            table.add_column(FLAGS_HEADER, key="flags", width=layout.flags_width)
        table.add_column("completion", key="text", width=layout.text_width)
        for number, sample in enumerate(group.completions, 1):
            cells, height = row_cells(
                number, sample, layout, self.palette, lines=lines, search=self.search_text
            )
            table.add_row(*cells, height=height)

    def _draw_status(self) -> None:
        parts: list[Text] = []
        cursor = self.cursor
        if self.frozen:
            parts.append(Text("paused", style="bold"))
        elif cursor.following:
            parts.append(Text(f"▶ following the newest, next group every {self.cycle_seconds:g}s"))
            parts.append(Text("space holds", style="dim"))
        else:
            parts.append(Text("⏸ held", style="bold"))
            if cursor.new_entries or cursor.new_groups:
                words = arrivals(cursor.new_groups, cursor.new_entries)
                parts.append(Text(words, style="bold reverse"))
            parts.append(Text("space follows the newest", style="dim"))
        if cursor.zero_spread_only:
            parts.append(Text("zero-spread groups only (z)", style="bold"))
        if self.search_text:
            parts.append(Text(f"/ {printable(self.search_text)}"))
        state = self._source.state if self._source is not None else None
        if state is not None and state.previewing:
            done, size = state.progress
            parts.append(Text(f"indexing older steps {done * 100 // max(1, size)}%", style="dim"))
        if self._note:
            parts.append(Text(self._note, style="italic"))
        if self._loading:
            parts.append(Text("loading…", style="dim"))
        self._status.update(Text(" · ").join(parts))

    # -- moving -------------------------------------------------------------------------
    def _entry_of_page(self) -> int | None:
        page = self.page
        return None if page is None or page.preview else page.info.index

    def _cycle(self) -> None:
        if self.frozen or not self.cursor.following or self.page is None or not self.display:
            return
        if not self.is_on_screen:
            return
        state = self._source.state if self._source is not None else None
        wrapped = self.cursor.cycle(self.visible_groups)
        if wrapped and state is not None and not state.previewing:
            newest = state.newest_entry
            if newest is not None and newest != self._entry_of_page():
                self._load(newest, group=0)
                return
        self._draw()

    @property
    def is_on_screen(self) -> bool:
        return bool(self.region) and self.region.height > 0

    def _move_entry(self, forward: bool, *, at_end: bool = False) -> None:
        """Load the neighbouring step (in a worker: finding it may parse entries); it
        says so when there is none. While paused, nothing newer than the pause shows."""
        index = self._source.index if self._source is not None else None
        if index is None:
            return
        self._request += 1
        self._loading = True
        limit = self.cursor.newest_seen if self.frozen else None
        self._read_neighbour(
            index,
            self._request,
            self._entry_of_page(),
            forward,
            at_end,
            self.cursor.zero_spread_only,
            limit,
        )

    def action_next_group(self) -> None:
        if not self.cursor.step_group(self.visible_groups, forward=True):
            self._move_entry(True)
        self._say("")
        self._draw()

    def action_previous_group(self) -> None:
        if not self.cursor.step_group(self.visible_groups, forward=False):
            self._move_entry(False, at_end=True)
        self._say("")
        self._draw()

    def action_next_step(self) -> None:
        self.cursor.hold()
        self._move_entry(True)
        self._draw_status()

    def action_previous_step(self) -> None:
        self.cursor.hold()
        self._move_entry(False)
        self._draw_status()

    def action_worst(self) -> None:
        if self.page is not None:
            self.cursor.jump(worst_group(self.page.groups, self.visible_groups))
            self._draw()

    def action_best(self) -> None:
        if self.page is not None:
            self.cursor.jump(best_group(self.page.groups, self.visible_groups))
            self._draw()

    def action_zero_spread(self) -> None:
        self.cursor.zero_spread_only = not self.cursor.zero_spread_only
        visible = self.visible_groups
        if self.cursor.zero_spread_only and not visible:
            self.cursor.hold()
            self._move_entry(False)
        elif visible and self.cursor.place.group not in visible:
            self.cursor.show(self.cursor.place.entry, visible)
        self._draw(force=True)

    def action_expand(self) -> None:
        self.expanded = not self.expanded
        self._draw(force=True)

    def action_toggle_follow(self) -> None:
        if self.cursor.following:
            self.cursor.hold()
        else:
            self.cursor.follow()
            state = self._source.state if self._source is not None else None
            if state is not None and not self.frozen:
                self.cursor.arrived(state.newest_entry)
                self._load(None if state.previewing else state.newest_entry, group=0)
        self._draw_status()

    def action_distribution(self) -> None:
        """`d`: the shown step's reward, advantage and group-split distribution."""
        from grpo_tui.ui.widgets.distribution import NOTHING_LOGGED, DistributionScreen

        index = self._source.index if self._source is not None else None
        if index is None or self.page is None:
            self.app.notify(NOTHING_LOGGED, severity="warning", markup=False)
            return
        limit = self.cursor.newest_seen if self.frozen else None
        screen = DistributionScreen(index, self._entry_of_page(), self.palette, limit=limit)
        self.app.push_screen(screen)

    # -- search -------------------------------------------------------------------------
    def action_search(self) -> None:
        self._search.display = True
        self._search.value = self.search_text
        self.screen.set_focus(self._search)

    def action_close_search(self) -> None:
        if self._search.display:
            self._search.display = False
            self.search_text = ""
            self._table.focus()
            self._draw(force=True)

    @on(Input.Submitted, "#completions-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.search_text = event.value.strip()
        self._search.display = False
        self._table.focus()
        if not self.search_text or self._source is None or self._source.index is None:
            self._draw(force=True)
            return
        self.cursor.hold()
        index = self._source.index
        entry = self._entry_of_page()
        newest = self._source.state.newest_entry if self._source.state is not None else None
        start = entry if entry is not None else (newest or 0)
        after: int | None = self.cursor.place.group
        resume = self._search_resume
        if resume is not None and resume[0] == self.search_text and resume[1] >= 0:
            start, after = resume[1], None  # go on from where the last search stopped
        self._search_resume = None
        self._say(f"searching for {printable(self.search_text)}…")
        self._request += 1
        self._run_search(index, self._request, self.search_text, start, after)

    @work(thread=True, exclusive=True, group="completions-page", name="completions search")
    def _run_search(
        self, index: CompletionsIndex, request: int, text: str, start: int, group: int | None
    ) -> None:
        hit = index.search(text, start, backwards=True, after_group=group)
        if hit.entry is None:
            resume = None
            if hit.exhausted:
                note = f"no more matches (searched {hit.searched} steps back)"
            else:
                resume = (text, start - hit.searched)
                note = f"not found in {hit.searched} steps; / enter searches further back"
            self.post_message(self.PageLoaded(request, None, None, False, note, resume))
            return
        page = index.page(hit.entry)
        self.post_message(self.PageLoaded(request, page, hit.group, False, "found"))

    def _say(self, note: str) -> None:
        self._note = note
        self._draw_status()

    # -- the whole completion ------------------------------------------------------------
    @on(DataTable.RowSelected, "#completions-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if self.page is not None and self.shown_group is not None:
            self.post_message(
                self.OpenCompletion(self.page, self.cursor.place.group, event.cursor_row)
            )


def completion_view(group: Group, row: int, palette: ZonePalette) -> RichGroup:
    """The head of the full view: where the completion is and what it got."""
    sample = group.completions[row]
    title = Text(f"step {printable(group.step)} · completion {row + 1}/{group.size}", style="bold")
    facts = Text()
    for name, value in sample.rewards.items():
        facts.append(f"{printable(name)} {format_value(value)}  ")
    facts.append(f"total {format_value(sample.total)}  ", style="bold")
    facts.append("advantage ")
    facts.append_text(advantage_cell(sample.advantage, palette))
    flags = sample_flags(sample)
    if flags:
        facts.append("  " + " ".join(flags), style=palette.style(Zone.CAUTION))
    if sample.solution is not None:
        facts.append(f"  solution {printable(sample.solution)[:EXTRA_CHARS]}")
    lines = [title, facts]
    extras = extras_line(sample)
    if extras is not None:
        lines.append(extras)
    prompt = Text("prompt: ", style="dim")
    prompt.append(fold_prompt(group.prompt))
    lines.append(prompt)
    return RichGroup(*lines)


#: characters of a logged extra value (and of the solution) shown in the head
EXTRA_CHARS = 80


def extras_line(sample: Sample) -> Text | None:
    """The further columns the framework logged for this completion (TRL's `log_extra`:
    `extracted 42 · gold 42`), inert and one line each value; None when there are none."""
    if not sample.extras:
        return None
    text = Text("logged with it: ", style="dim")
    for position, (name, value) in enumerate(sample.extras):
        if position:
            text.append(" · ", style="dim")
        text.append(printable(name), style="bold")
        shown = printable(value)
        cut = len(shown) > EXTRA_CHARS
        text.append(" " + shown[:EXTRA_CHARS] + ("…" if cut else ""))
    return text


def completions_help() -> list[str]:
    """What the completions pane's flags and statistics mean, one term a line, from the
    thresholds the code uses (the help screen shows these)."""
    share = f"{REPETITIVE_SHARE:.0%}"
    piece = f"{SHINGLE_CHARS}-character pieces"
    terms = (
        ("train / eval", "the batch's role; eval rollouts stay out of the samples/* series"),
        ("eval / end", "a later batch at a step already seen (eval or end of training)"),
        ("mean", "the group's mean total reward (w / b jump to the lowest / highest)"),
        ("spread", "the std of the group's totals (0: one reward for all, no signal)"),
        ("distinct", f"unique {piece} / all pieces in the group (1: all differ)"),
        ("overlap", f"the mean share of {piece} two completions have in common"),
        ("ZERO SPREAD", "every completion of the group got the same total"),
        ("ALL FAIL", "zero spread at the lowest total seen so far, or every reward 0"),
        ("ALL PASS", "zero spread at the highest total seen so far"),
        ("total", "the sum of the reward functions (weighted as the run's args say)"),
        ("adv ▲ ▼ ·", f"positive / negative advantage / about 0 (below {NEAR_ZERO:g})"),
        ("✗fmt", "the group uses <think>/<answer> or \\boxed{}; this one breaks the format"),
        ("✂cut", "a tag or \\boxed{ opened and never closed: cut off"),
        ("↻rep", f"at least {share} of its {piece} repeat: a loop"),
    )
    width = max(len(term) for term, _ in terms)
    return [
        "Completions pane: one GRPO group (the completions of one prompt) at a time; "
        "the flags column shows when a row has a flag, reward columns that do not fit are "
        "named under the prompt, enter shows the whole completion and every logged column.",
        *(f"  {term.ljust(width)}  {meaning}" for term, meaning in terms),
    ]
