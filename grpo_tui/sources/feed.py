"""The metrics feed: follows what PATH points at and hands out Batches.

One object per monitored PATH. `poll()` reads a bounded amount (so a consumer can time-box
its work) and says whether more is ready. It re-resolves PATH every few seconds to notice
a file appearing, a newer `v*` run directory (a resumed run: the old one is drained first
and its history kept) or a newer checkpoint's `trainer_state.json`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grpo_tui.context import RunContext
from grpo_tui.files import describe_os_error
from grpo_tui.sources.console import ConsoleReader
from grpo_tui.sources.context import (
    ArgsError,
    context_from_args,
    read_args_json,
    read_json_file,
)
from grpo_tui.sources.discover import RunLayout, discover
from grpo_tui.sources.formats import ADAPTERS, FormatAdapter
from grpo_tui.sources.formats.completions import completions_in
from grpo_tui.sources.formats.layout import CompletionsRef, Reading
from grpo_tui.sources.logreader import LogReader
from grpo_tui.sources.polled import RecordStore
from grpo_tui.sources.records import Batch
from grpo_tui.sources.tail import DEFAULT_CHUNK, PREVIEW_FROM_BYTES, TailReader, read_tail_lines

#: bytes of the newest lines previewed: about a thousand ms-swift lines (~1 KB each), more
#: points than the widest sparkline draws, parsed in ~25 ms (4 MB took four times that
#: while the first screen waited)
PREVIEW_BYTES = 1 << 20


@dataclass
class _StateFile:
    """A JSON document rewritten whole (a trainer_state.json), re-read whenever it changes."""

    path: Path
    signature: tuple[int, int, float, int] | None = None
    #: (kind-free) the last log record handed out, to skip what was already read
    last_item: dict[str, Any] | None = None
    unreadable: str | None = None


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """What the user said about the sources on the command line."""

    #: read PATH as this adapter's files (`--format NAME`; formats.ADAPTERS keys)
    only: str | None = None
    #: the run inside a store that holds many (`--run NAME`; trackio), else the newest
    run_name: str | None = None
    #: a completions file or folder given by hand (`--completions PATH`)
    completions: Path | None = None


@dataclass
class FeedStatus:
    """What the feed knows about the run besides its metric rows."""

    framework: str | None = None
    #: the file followed and why it was chosen, and other metrics files passed over
    #: (`inspect` says what it chose and why)
    chosen_because: str = ""
    passed_over: list[str] = field(default_factory=list)
    context: RunContext = field(default_factory=RunContext)
    #: every file read so far
    files: list[str] = field(default_factory=list)
    #: files followed now
    followed: list[str] = field(default_factory=list)
    version_hints: list[str] = field(default_factory=list)
    waiting_for: str | None = None
    #: why the run's metrics cannot be read ("permission denied: PATH", a FIFO skipped), or
    #: None when they can (or are simply not there yet)
    unreadable: str | None = None
    #: what else went wrong with the run's files, one sentence each (a malformed args.json,
    #: a file skipped): shown beside the data, which is still read
    notes: list[str] = field(default_factory=list)
    completions_file: Path | None = None
    #: where the completions are and in which shape (the file above, or a folder)
    completions: CompletionsRef | None = None
    #: mtime of the newest metrics data read
    data_time: float | None = None
    #: (bytes read, bytes in the file) while the metrics log holds more than one read
    #: takes (its history is being read); None once caught up
    backlog: tuple[int, int] | None = None

    def signature(self) -> tuple[object, ...]:
        """What a consumer shows of the status, as one comparable value (a new signature
        is worth handing on even when no data came with it)."""
        return (
            self.framework,
            tuple(self.files),
            tuple(self.followed),
            self.waiting_for,
            self.unreadable,
            tuple(self.notes),
            self.data_time,
            self.completions_file,
            self.context,
        )

    def snapshot(self) -> FeedStatus:
        """A copy another thread can keep while the feed goes on changing this one."""
        return replace(
            self,
            files=list(self.files),
            followed=list(self.followed),
            passed_over=list(self.passed_over),
            version_hints=list(self.version_hints),
            notes=list(self.notes),
            context=replace(self.context, reward_funcs=list(self.context.reward_funcs)),
        )


class RunFeed:
    """Follows one PATH's metrics source; call `poll()` whenever data may have arrived."""

    def __init__(
        self,
        path: Path,
        *,
        rediscover_every: float = 2.0,
        options: SourceOptions | None = None,
    ) -> None:
        self.path = Path(path)
        self.rediscover_every = rediscover_every
        self.options = options or SourceOptions()
        self.status = FeedStatus()
        self._layout: RunLayout | None = None
        self._tail: TailReader | None = None
        self._reader: LogReader | None = None
        self._state: _StateFile | None = None
        self._store: RecordStore | None = None
        self._next_discovery = 0.0
        self._announced_wait = False
        #: notes about the layout's files (skipped files, the args file), renewed per layout
        self._layout_notes: list[str] = []

    # -- public ----------------------------------------------------------------------
    def poll(self, max_bytes: int = DEFAULT_CHUNK) -> tuple[Batch, bool]:
        """Read up to ~max_bytes of new data. Returns (batch, more_ready)."""
        batch = Batch()
        now = time.monotonic()
        if self._layout is None or now >= self._next_discovery:
            self._next_discovery = now + self.rediscover_every
            self._rediscover(batch)
        layout = self._layout
        if layout is None or layout.mode in ("waiting", "unreadable"):
            return batch, False
        if layout.mode == Reading.DOCUMENT:
            self._poll_state(batch)
            return batch, False
        if layout.mode == Reading.STORE:
            return batch, self._poll_store(batch)
        return batch, self._poll_tail(batch, max_bytes)

    def preview(self, max_bytes: int = PREVIEW_BYTES) -> Batch | None:
        """The newest lines of a big JSON-lines log, read from its end before its history
        (the screen shows the latest state at once). None when the log is small, is read
        another way, or its lines do not name their steps (a preview would count them from
        1). The history is still read whole, from the start: this is a look ahead only."""
        layout, tail = self._layout, self._tail
        if layout is None or layout.mode != Reading.JSONL or tail is None or self._reader is None:
            return None
        if tail.size < PREVIEW_FROM_BYTES:
            return None
        lines = read_tail_lines(tail.path, max_bytes, block=max_bytes)
        if not lines:
            return None
        reader = LogReader(self._reader.adapter, str(tail.path))
        batch = reader.read_chunk(b"".join(line.data + b"\n" for line in lines), 0)
        if reader.counted_steps:
            return None
        batch.bad_lines.clear()  # the history's read counts them, at their line numbers
        return batch

    def finish(self) -> Batch:
        """A one-shot read reached the end of what is there: what a reader still holds
        open (a console dict the file ends inside) is read as far as it goes."""
        if self._reader is None or self._tail is None:
            return Batch()
        return self._reader.finish()

    def wake(self) -> None:
        """Something changed on disk (a watchdog event): re-resolve PATH at the next poll."""
        self._next_discovery = 0.0

    @property
    def watched_dirs(self) -> list[Path]:
        """Directories whose events should wake the poller."""
        dirs: list[Path] = []
        layout = self._layout
        for candidate in (
            layout.run_dir if layout else None,
            layout.output_dir if layout else None,
            self.path if os.path.isdir(self.path) else self.path.parent,
        ):
            # os.path.isdir: False (not an exception) for a directory this process may not see
            if candidate is not None and candidate not in dirs and os.path.isdir(candidate):
                dirs.append(candidate)
        return dirs

    # -- discovery ---------------------------------------------------------------------
    def _rediscover(self, batch: Batch) -> None:
        current = self._layout
        layout = discover(
            self.path, only=self.options.only, current=current.metrics_file if current else None
        )
        if self.options.completions is not None:
            layout = replace(layout, completions=completions_at(self.options.completions))
        self.status.unreadable = layout.problem or None
        if (
            current is not None
            and layout.metrics_file == current.metrics_file
            and layout.mode == current.mode
            and layout.adapter == current.adapter
        ):
            if (layout.args_file, layout.skipped) != (current.args_file, current.skipped):
                self._layout = layout
                self._read_context(layout)
            return
        if current is not None and self._tail is not None:
            # a newer run directory: drain the old file so nothing it wrote is lost
            while self._poll_tail(batch, DEFAULT_CHUNK):
                pass
        if layout.mode == "unreadable":
            self.status.waiting_for = None
        elif layout.mode == "waiting" or (
            layout.metrics_file and not os.path.exists(layout.metrics_file)
        ):
            self.status.waiting_for = layout.waiting_for or str(layout.metrics_file)
            if not self._announced_wait:
                batch.events.append(f"waiting for {self.status.waiting_for}")
                self._announced_wait = True
        else:
            self.status.waiting_for = None
        if current is not None and layout.run_dir != current.run_dir and layout.mode != "waiting":
            batch.events.append(f"following newer run directory {layout.run_dir}")
        previous_state = self._state
        self._layout = layout
        self._tail = None
        self._state = None
        self._store = None
        adapter = ADAPTERS.get(layout.adapter or "")
        path = layout.metrics_file
        if adapter is not None and path is not None:
            if layout.mode in (Reading.JSONL, Reading.CONSOLE):
                self._tail = TailReader(path)
            elif layout.mode == Reading.DOCUMENT:
                self._state = _StateFile(path)
                if previous_state is not None:
                    # a newer checkpoint: its history starts with what was already read
                    self._state.last_item = previous_state.last_item
            elif layout.mode == Reading.STORE and adapter.open_store is not None:
                self._store = adapter.open_store(path, self.options.run_name)
            self._reader = self._reader_for(adapter, path, layout.mode == Reading.CONSOLE)
        self.status.chosen_because = layout.why
        self.status.passed_over = list(layout.passed_over)
        self._read_context(layout)
        self.status.completions = layout.completions
        self.status.completions_file = layout.completions_file
        self.status.followed = [str(p) for p in (layout.metrics_file,) if p is not None]

    def _reader_for(self, adapter: FormatAdapter, path: Path, console: bool) -> LogReader:
        reader = ConsoleReader(str(path), adapter) if console else LogReader(adapter, str(path))
        if self._reader is not None and self._reader.adapter is adapter:
            # a resumed run's new file: the step counter and what was learnt go on
            reader.carry_over(self._reader)
        self._show_framework(reader)
        return reader

    def _show_framework(self, reader: LogReader) -> None:
        title = reader.adapter.shown_name
        self.status.framework = f"{reader.flavour} ({title})" if reader.flavour else title

    def _read_context(self, layout: RunLayout) -> None:
        """Read the args file (again): the context, or a note saying why it is unknown."""
        notes = list(layout.skipped)
        if layout.args_file is not None:
            try:
                context, problems = read_args_json(layout.args_file)
            except ArgsError as error:
                notes.append(f"{error}: run context unknown")
            else:
                self.status.context = context
                notes.extend(f"{layout.args_file.name}: {problem}" for problem in problems)
                self._note_file(layout.args_file)
        self._layout_notes = notes
        self._renew_notes()

    def _renew_notes(self, *extra: str) -> None:
        self.status.notes = [*self._layout_notes, *extra]

    def _note_file(self, path: Path) -> None:
        if str(path) not in self.status.files:
            self.status.files.append(str(path))

    # -- reading -----------------------------------------------------------------------
    def _poll_tail(self, batch: Batch, max_bytes: int) -> bool:
        tail, reader = self._tail, self._reader
        if tail is None or reader is None:
            return False
        chunk = tail.poll(max_bytes)
        self.status.backlog = (tail.offset, tail.size) if chunk.more else None
        self.status.unreadable = tail.problem
        if not tail.exists:
            return False
        if self.status.waiting_for is not None:
            self.status.waiting_for = None
        self._note_file(tail.path)
        if chunk.restarted:
            batch.events.append(
                f"{tail.path.name} was {chunk.restarted}: reading it from the start"
            )
            batch.restarted = True
            reader.restart()
        if chunk.data:
            batch.extend(reader.read_chunk(chunk.data, chunk.first_line_no))
            self.status.data_time = tail.mtime
            self.status.version_hints = reader.version_hints
            self._show_framework(reader)
        return chunk.more

    def _poll_store(self, batch: Batch) -> bool:
        store, reader = self._store, self._reader
        if store is None or reader is None:
            return False
        polled = store.poll()
        self.status.unreadable = polled.problem
        if polled.restarted:
            batch.events.append(f"{store.path.name} started over: reading it from the start")
            batch.restarted = True
            reader.restart()
        if polled.records:
            self._note_file(store.path)
            batch.extend(reader.read_objects(enumerate(polled.records, 1)))
            self.status.data_time = polled.data_time
            self.status.version_hints = reader.version_hints
            self._show_framework(reader)
        return polled.more

    def _poll_state(self, batch: Batch) -> None:
        state = self._state
        if state is None:
            return
        try:
            stat = os.stat(state.path)
        except FileNotFoundError:
            return  # replaced right now, or a checkpoint deleted: discovery finds the newest
        except OSError as error:
            self.status.unreadable = describe_os_error(error, state.path)
            return
        signature = (stat.st_dev, stat.st_ino, stat.st_mtime, stat.st_size)
        if signature == state.signature:
            return
        try:
            document = read_json_file(state.path)
        except OSError as error:
            self.status.unreadable = describe_os_error(error, state.path)
            return
        except ValueError as error:
            # probably being written right now: try again at the next poll
            if state.unreadable is None:
                batch.events.append(f"{state.path.name} unreadable for now: {error}")
            state.unreadable = str(error)
            return
        self.status.unreadable = None
        state.signature = signature
        state.unreadable = None
        self._note_file(state.path)
        self.status.data_time = stat.st_mtime
        reader = self._reader
        records = None if reader is None else reader.adapter.document_records
        history = None if records is None else records(document)
        if history is None:
            batch.events.append(f"{state.path.name} holds no log records")
            return
        if isinstance(document, dict):
            # the document's own settings (max_steps, logging_steps) fill the run context
            self.status.context.merge_missing(context_from_args(document))
        items = [item for item in history if isinstance(item, dict)]
        start = 0
        if state.last_item is not None:
            # a newer checkpoint repeats the older history: hand out only what is new
            for index in range(len(items) - 1, -1, -1):
                if items[index] == state.last_item:
                    start = index + 1
                    break
        new_items = items[start:]
        if new_items and self._reader is not None:
            state.last_item = new_items[-1]
            batch.extend(self._reader.read_objects(enumerate(new_items, start + 1)))
            self._show_framework(self._reader)


def completions_at(path: Path) -> CompletionsRef:
    """A completions source given by hand: a file of JSON lines, or a folder of per-step
    files, read the way the adapter that owns such a folder reads it."""
    return completions_in(Path(path))
