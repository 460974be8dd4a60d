"""The completions panel: what the model writes, one prompt group at a time, live.

GRPO learns from the differences inside a group, so a group is the unit on screen: its
step, its prompt folded to one line, then one row per completion (reward per function,
total, advantage, flags, the text cut to a few lines). Core's completions index (shared
with the reader thread; it locks itself) hands out pages; pages are loaded in a thread
worker, since a batch can be a 10 MB line, and arrive as `PageLoaded`.

Keys: `n` / `N` next / previous group, `[` / `]` previous / next step, `w` / `b` worst /
best group of the step, `z` zero-spread groups only, `c` the groups of one prompt-ledger
category (never solved, regressed, first solved, always solved; run/completions/ledger.py),
`/` search, `e` expand, `space` follow / hold, `enter` the whole completion. See ui/completions_cursor.py for how the
place moves (following the newest batch, or held where the user put it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from grpo_tui.run.completions import CompletionsIndex, Group, Page
from grpo_tui.run.completions.ledger import Category
from grpo_tui.ui.completions_cursor import (
    CompletionsCursor,
    arrivals,
    category_order,
    group_order,
    next_category,
    ranked_group,
)
from grpo_tui.untrusted import printable
from grpo_tui.views.completion_rows import (
    ADVANTAGE_CELLS,
    FLAGS_HEADER,
    NUMBER_WIDTH,
    TEXT_LINES,
    TEXT_LINES_EXPANDED,
    VALUE_CELLS,
    CompletionsSource,
    TableLayout,
    empty_state,
    flags_width,
    group_title,
    hidden_caption,
    prompt_text,
    row_cells,
    short_name,
    table_layout,
)
from grpo_tui.views.palette import ZonePalette
from grpo_tui.views.presentation import DEFAULT_CYCLE_S
from grpo_tui.views.prompts import CATEGORY_WORDS

#: what the page worker runs: a read of the index, as the message of its request
Reader = Callable[[CompletionsIndex, int], "CompletionsPanel.PageLoaded"]


class CompletionsPanel(Vertical):
    """One prompt group at a time from the run's completions, following the newest."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "step_group(True)", "Next group"),
        Binding("N", "step_group(False)", "Prev group"),
        Binding("right_square_bracket", "step(True)", "Next step"),
        Binding("left_square_bracket", "step(False)", "Prev step"),
        Binding("w", "ranked(False)", "Worst group"),
        Binding("b", "ranked(True)", "Best group"),
        Binding("z", "zero_spread", "Zero-spread only"),
        Binding("c", "prompt_category", "Prompts by category"),
        Binding("slash", "search", "Search"),
        Binding("e", "expand", "Expand"),
        Binding("space", "toggle_follow", "Follow/hold"),
        # off the footer, which is full already (q Quit would go); `?` lists it
        Binding("d", "distribution", "Distribution", show=False),
        Binding("escape", "close_search", "Close search", show=False),
    ]

    @dataclass
    class PageLoaded(Message):
        """A page read by the loading worker (None: the file changed under the index)."""

        request: int
        page: Page | None
        group: int | None
        at_end: bool
        note: str | None = None
        #: (text, entry) a search that ran out of time goes on from
        resume: tuple[str, int] | None = None
        #: the prompt-ledger category of each of the page's groups (the worker reads them)
        categories: tuple[Category | None, ...] = ()

    @dataclass
    class OpenCompletion(Message):
        """The user asked for one whole completion (the app opens the full view)."""

        page: Page
        group: int
        row: int

    @dataclass
    class OpenDistribution(Message):
        """The user asked for the shown step's distribution (`d`; the run's screen opens
        it): the index (None: nothing logged yet), the entry shown (None: the newest
        batch's preview), the newest entry to go to while paused (None: any)."""

        index: CompletionsIndex | None
        entry: int | None
        limit: int | None

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
        #: the shown page's groups' prompt-ledger categories, as read with it
        self.categories: tuple[Category | None, ...] = ()
        #: how many prompts each ledger category holds (the session's report; None before
        #: one): `c` passes over the empty ones
        self.prompt_counts: Mapping[Category, int] | None = None
        self.expanded = False
        #: the app is paused: nothing moves on its own, nothing newer than the pause shows
        self.frozen = False
        self.search_text = ""
        #: (text, entry) a search that ran out of time goes on from
        self._search_resume: tuple[str, int] | None = None
        #: what the app handed over last (nothing followed yet: an empty source)
        self._source = CompletionsSource(None, None, None, None)
        self._request = 0
        #: entries worth showing at the newest state seen ("N new" counts from it)
        self._shown_seen: int | None = None
        #: groups in those entries at the newest state seen ("N new groups" counts from it)
        self._groups_seen: int | None = None
        self._loading = False
        self._note = ""
        self._drawn: tuple[object, ...] | None = None
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
        count = None if self._shown_seen is None else state.shown_entries - self._shown_seen
        self._shown_seen = state.shown_entries
        if self._groups_seen is not None:
            self.cursor.groups_arrived(state.shown_groups - self._groups_seen)
        self._groups_seen = state.shown_groups
        if self.cursor.arrived(newest, count) or (preview_done and self.cursor.following):
            self._load(newest, group=0)
        elif self.page is not None:
            self._draw_status()

    def _started_over(self, previous: CompletionsSource, source: CompletionsSource) -> bool:
        """Another completions file (a newer run directory), or the file was truncated or
        replaced and is being read again: the pages held belong to what is gone."""
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
        state = self._source.state
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
        visible = group_order(self.page.groups, zero_spread_only=self.cursor.zero_spread_only)
        return category_order(visible, self.categories, self.cursor.category)

    # -- loading (a thread worker: a page can be a 10 MB line) -----------------------------
    def _read(self, read: Reader, *, loading: bool = True) -> None:
        """`read` the index in the page worker (a newer read makes the older one stale);
        `loading` says so in the status (a search says it itself)."""
        if (index := self._source.index) is None:
            return
        self._request += 1
        if loading:
            self._loading = True
        self._read_page(index, self._request, read)

    @work(thread=True, exclusive=True, group="completions-page", name="completions page")
    def _read_page(self, index: CompletionsIndex, request: int, read: Reader) -> None:
        message = read(index, request)
        if message.page is not None:
            message.categories = tuple(index.prompt_categories(message.page.groups))
        self.post_message(message)

    def _load(self, entry: int | None, *, group: int | None = None, at_end: bool = False) -> None:
        def read(index: CompletionsIndex, request: int) -> CompletionsPanel.PageLoaded:
            page = index.newest_page() if entry is None else index.page(entry)
            return self.PageLoaded(request, page, group, at_end)

        self._read(read)

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
        self.categories = message.categories
        entry = None if page.preview else page.info.index
        self.cursor.show(entry, self.visible_groups, group=message.group, at_end=message.at_end)
        self._show_empty(False)
        self._draw(force=True)

    # -- drawing ------------------------------------------------------------------------
    def _show_empty(self, empty: bool) -> None:
        self._empty.display = empty
        for shown in (self._table, self._title, self._prompt):
            shown.display = not empty

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
            self.cursor.category,
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
        layout = table_layout(width, list(group.rewards), flags_width(group))
        prompt = prompt_text(group, width, expanded=self.expanded)
        if (caption := hidden_caption(layout)) is not None:
            caption.truncate(max(1, width - 2), overflow="ellipsis")
            prompt = Text("\n").join([prompt, caption])
        self._prompt.update(prompt)
        self._fill_table(group, layout)
        self._draw_status()

    def _title_without_group(self, page: Page) -> Text:
        text = Text(f"step {printable(page.info.step)}", style="bold")
        if self.cursor.category is not None:
            word = CATEGORY_WORDS[self.cursor.category][0]
            text.append(
                f" · no group of a {word} prompt in this step ([ / ] for other steps, c for the next)"
            )
        elif self.cursor.zero_spread_only:
            text.append(" · no zero-spread group in this step ([ / ] for other steps, z for all)")
        else:
            text.append(" · no groups in this batch")
        return text

    def _fill_table(self, group: Group, layout: TableLayout) -> None:
        table = self._table
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
        if cursor.category is not None:
            word = CATEGORY_WORDS[cursor.category][0]
            parts.append(Text(f"{word} prompts only (c)", style="bold"))
        if self.search_text:
            parts.append(Text(f"/ {printable(self.search_text)}"))
        if (state := self._source.state) is not None and state.previewing:
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
        if not self.region:  # no room on the screen (a region of no area)
            return
        state = self._source.state
        wrapped = self.cursor.cycle(self.visible_groups)
        if wrapped and state is not None and not state.previewing:
            newest = state.newest_entry
            if newest is not None and newest != self._entry_of_page():
                self._load(newest, group=0)
                return
        self._draw()

    def _move_entry(self, forward: bool, *, at_end: bool = False) -> None:
        """Load the neighbouring step (in a worker: finding it may parse entries); it
        says so when there is none. While paused, nothing newer than the pause shows."""
        current, zero_spread_only = self._entry_of_page(), self.cursor.zero_spread_only
        limit = self.cursor.newest_seen if self.frozen else None
        category = self.cursor.category

        def read(index: CompletionsIndex, request: int) -> CompletionsPanel.PageLoaded:
            if category is not None:
                target = index.category_neighbour(current, category, forward=forward)
            else:
                target = index.neighbour(
                    current, forward=forward, zero_spread_only=zero_spread_only
                )
            if target is not None and (limit is None or target <= limit):
                return self.PageLoaded(request, index.page(target), None, at_end, "")
            if category is not None:
                word = CATEGORY_WORDS[category][0]
                note = f"no {'newer' if forward else 'older'} step with a {word} prompt"
            elif zero_spread_only:
                note = f"no {'newer' if forward else 'older'} step with a zero-spread group"
            else:
                note = f"this is the {'newest' if forward else 'oldest'} step"
            return self.PageLoaded(request, None, None, at_end, note)

        self._read(read)

    def action_step_group(self, forward: bool) -> None:
        """`n` / `N`: the next / previous group, in the neighbouring step past either end."""
        if not self.cursor.step_group(self.visible_groups, forward=forward):
            self._move_entry(forward, at_end=not forward)
        self._say("")
        self._draw()

    def action_step(self, forward: bool) -> None:
        """`]` / `[`: the next / previous step."""
        self.cursor.hold()
        self._move_entry(forward)
        self._draw_status()

    def action_ranked(self, best: bool) -> None:
        """`w` / `b`: the worst / best group of the step."""
        if self.page is not None:
            self.cursor.jump(ranked_group(self.page.groups, self.visible_groups, best=best))
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

    def action_prompt_category(self) -> None:
        """`c`: the groups of the next prompt-ledger category only (then every group again),
        held; a step without one moves to the newest step before it that has one."""
        cursor = self.cursor
        cursor.category = next_category(cursor.category, self.prompt_counts)
        visible = self.visible_groups
        if cursor.category is not None:
            cursor.hold()
            if not visible:
                self._move_entry(False)
            elif cursor.place.group not in visible:
                cursor.show(cursor.place.entry, visible)
            word = CATEGORY_WORDS[cursor.category][0]
            self._say(f"{word}: {CATEGORY_WORDS[cursor.category][1]}")
        else:
            self._say("every group")
            if visible and cursor.place.group not in visible:
                cursor.show(cursor.place.entry, visible)
        self._draw(force=True)

    def action_expand(self) -> None:
        self.expanded = not self.expanded
        self._draw(force=True)

    def action_toggle_follow(self) -> None:
        if self.cursor.following:
            self.cursor.hold()
        else:
            self.cursor.follow()
            if (state := self._source.state) is not None and not self.frozen:
                self.cursor.arrived(state.newest_entry)
                self._load(None if state.previewing else state.newest_entry, group=0)
        self._draw_status()

    def action_distribution(self) -> None:
        """`d`: the shown step's reward, advantage and group-split distribution."""
        index = self._source.index if self.page is not None else None
        limit = self.cursor.newest_seen if self.frozen else None
        entry = self._entry_of_page() if index is not None else None
        self.post_message(self.OpenDistribution(index, entry, limit))

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
        if not self.search_text or self._source.index is None:
            self._draw(force=True)
            return
        self.cursor.hold()
        entry = self._entry_of_page()
        newest = self._source.state.newest_entry if self._source.state is not None else None
        start = entry if entry is not None else (newest or 0)
        after: int | None = self.cursor.place.group
        resume = self._search_resume
        if resume is not None and resume[0] == self.search_text and resume[1] >= 0:
            start, after = resume[1], None  # go on from where the last search stopped
        self._search_resume = None
        self._say(f"searching for {printable(self.search_text)}…")
        text = self.search_text

        def read(index: CompletionsIndex, request: int) -> CompletionsPanel.PageLoaded:
            hit = index.search(text, start, backwards=True, after_group=after)
            if hit.entry is not None:
                return self.PageLoaded(request, index.page(hit.entry), hit.group, False, "found")
            if hit.exhausted:
                note = f"no more matches (searched {hit.searched} steps back)"
                return self.PageLoaded(request, None, None, False, note)
            note = f"not found in {hit.searched} steps; / enter searches further back"
            return self.PageLoaded(request, None, None, False, note, (text, start - hit.searched))

        self._read(read, loading=False)

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
