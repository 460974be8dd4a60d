"""The metrics feed: follows what PATH points at and hands out Batches.

One object per monitored PATH. `read()` polls its source for a bounded amount (so a
consumer can time-box its work), parses it and says whether more is ready. A log is
tailed (tail.py) and read line by line (logreader.py, console.py); a store (a document
rewritten whole, TensorBoard's event files, trackio's database) is polled for new records
(polled.py). Discovery (discover.py) says which, and how. It re-resolves PATH every few seconds to notice
a file appearing, a newer `v*` run directory (a resumed run: the old one is drained first
and its history kept) or a newer checkpoint's `trainer_state.json`.
"""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grpo_tui.context import RunContext
from grpo_tui.sources.checkpoints import CheckpointLister, CheckpointListing
from grpo_tui.sources.console import ConsoleReader
from grpo_tui.sources.context import (
    ArgsError,
    context_and_problems,
    read_args_json,
)
from grpo_tui.sources.discover import RunLayout, completions_in, discover
from grpo_tui.sources.document import DocumentStore
from grpo_tui.sources.formats import ADAPTERS, FormatAdapter
from grpo_tui.sources.formats.layout import CompletionsRef, Reading, probe
from grpo_tui.sources.logreader import LogReader
from grpo_tui.sources.merged import MergedStepsStore
from grpo_tui.sources.polled import RecordStore
from grpo_tui.sources.records import Batch
from grpo_tui.sources.stop_lines import StopLine, StopLog, StopScanner, StopTracker, console_logs
from grpo_tui.sources.tail import DEFAULT_CHUNK, PREVIEW_FROM_BYTES, TailReader, read_tail_lines
from grpo_tui.sources.tensorboard import TensorBoardStore
from grpo_tui.sources.trackio import TrackioStore
from grpo_tui.sources.wandb.store import WandbRunStore

#: bytes of the newest lines previewed: about a thousand ms-swift lines (~1 KB each), more
#: points than the widest sparkline draws, parsed in ~25 ms (4 MB took four times that
#: while the first screen waited)
PREVIEW_BYTES = 1 << 20


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
    #: the run followed in a store that holds several (a trackio project's), else None
    store_run: str | None = None
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
    #: lines of the followed log read so far, metric lines or not (a file of none but
    #: other text says so rather than look live)
    lines_read: int = 0
    #: the line of a console log that says why the run ended (a traceback's error, out of
    #: memory, a signal, "Training completed"), when it stands: no metric record came
    #: after it (sources/stop_lines.py); None while none does
    stop: StopLine | None = None
    #: mtime of the newest console text read (the metrics log when it is console text, or
    #: a console file beside it), and that file's name: a log that grows while no metric
    #: record comes is a run alive but not training (or hung printing warnings)
    log_time: float | None = None
    log_name: str | None = None
    #: the console files beside the metrics read for the lines that end runs (`inspect`)
    stop_logs: list[str] = field(default_factory=list)
    #: the run's checkpoints on disk and its saving schedule (sources/checkpoints.py),
    #: listed when the run folder is looked at again; None when its format keeps none known
    checkpoints: CheckpointListing | None = None

    def signature(self) -> tuple[object, ...]:
        """What a consumer shows of the status, as one comparable value (a new signature
        is worth handing on even when no data came with it)."""
        return (
            self.framework,
            tuple(self.files),
            tuple(self.followed),
            self.store_run,
            self.waiting_for,
            self.unreadable,
            tuple(self.notes),
            self.data_time,
            self.completions_file,
            self.context,
            self.lines_read,
            self.stop,
            self.log_time,
            self.checkpoints,
        )

    def snapshot(self) -> FeedStatus:
        """A copy another thread can keep while the feed goes on changing this one."""
        return copy.deepcopy(self)


class RunFeed:
    """Follows one PATH's metrics source; call `read()` whenever data may have arrived."""

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
        self._store: RecordStore | None = None
        self._next_discovery = 0.0
        self._announced_wait = False
        #: the settings a console log printed, once they were taken into the context
        self._settings_taken: dict[str, Any] | None = None
        #: why the run stopped: the console files beside the metrics, the scanner of the
        #: metrics log when it is console text, and the stop line that stands
        self._stops = StopTracker()
        self._stop_logs: dict[Path, StopLog] = {}
        self._metrics_stops: StopScanner | None = None
        self._checkpoints = CheckpointLister()

    # -- public ----------------------------------------------------------------------
    def read(self, max_bytes: int = DEFAULT_CHUNK) -> tuple[Batch, bool]:
        """Read up to ~max_bytes of new data (PATH re-resolved every few seconds).
        Returns (batch, more_ready)."""
        batch = Batch()
        now = time.monotonic()
        if self._layout is None or now >= self._next_discovery:
            self._next_discovery = now + self.rediscover_every
            self._rediscover(batch)
        if self._store is not None:
            more = self._read_store(batch)
        else:
            more = self._read_tail(batch, max_bytes)
        more = self._read_stop_logs(max_bytes) or more
        self.status.stop = self._stops.current
        return batch, more

    def preview(self) -> Batch | None:
        """The newest lines of a big JSON-lines log, read from its end before its history
        (the screen shows the latest state at once). None when the log is small, is read
        another way, or its lines do not name their steps (a preview would count them from
        1). The history is still read whole, from the start: this is a look ahead only."""
        layout, tail, reader = self._layout, self._tail, self._reader
        if layout is None or layout.reading is not Reading.JSONL or tail is None or reader is None:
            return None
        if tail.size < PREVIEW_FROM_BYTES:
            return None
        lines = read_tail_lines(tail.path, PREVIEW_BYTES, block=PREVIEW_BYTES)
        if not lines:
            return None
        ahead = LogReader(reader.adapter, str(tail.path))
        batch = ahead.read_chunk(b"".join(line.data + b"\n" for line in lines), 0)
        if ahead.counted_steps:
            return None
        batch.bad_lines.clear()  # the history's read counts them, at their line numbers
        return batch

    def finish(self) -> Batch:
        """A one-shot read reached the end of what is there: what a reader still holds
        open (a console dict the file ends inside) is read as far as it goes; the steps a
        merged log still holds are complete."""
        if isinstance(self._store, MergedStepsStore) and self._reader is not None:
            return self._reader.read_objects(self._store.finish().records)
        if self._reader is None or self._tail is None:
            return Batch()
        return self._reader.finish()

    def wake(self) -> None:
        """Something changed on disk (a watchdog event): re-resolve PATH at the next poll."""
        self._next_discovery = 0.0

    @property
    def watched_dirs(self) -> list[Path]:
        """Directories whose events should wake the poller."""
        layout = self._layout
        here = self.path if os.path.isdir(self.path) else self.path.parent
        candidates = (layout.run_dir, layout.output_dir, here) if layout else (here,)
        # os.path.isdir: False (not an exception) for a directory this process may not see
        return [d for d in dict.fromkeys(candidates) if d is not None and os.path.isdir(d)]

    # -- discovery ---------------------------------------------------------------------
    def _rediscover(self, batch: Batch) -> None:
        current = self._layout
        layout = discover(
            self.path, only=self.options.only, current=current.metrics_file if current else None
        )
        if layout.unreachable and current is not None:
            # the connection, not the run, is gone: keep what is followed (its offsets resume)
            self.status.unreadable = layout.problem
            return
        if self.options.completions is not None:
            layout = replace(layout, completions=completions_in(self.options.completions))
        self.status.unreadable = layout.problem or None
        self._find_stop_logs(layout)
        self.status.checkpoints = self._checkpoints.listing(
            ADAPTERS.get(layout.adapter or ""),
            layout.run_dir,
            layout.metrics_file,
            given=self.path,
            args_file=layout.args_file,
        )
        if (
            current is not None
            and layout.metrics_file == current.metrics_file
            and layout.reading == current.reading
            and layout.adapter == current.adapter
        ):
            if (layout.args_file, layout.skipped) != (current.args_file, current.skipped):
                self._layout = layout
                self._read_context(layout)
            return
        if current is not None and self._tail is not None:
            # a newer run directory: drain the old file so nothing it wrote is lost
            while self._read_tail(batch, DEFAULT_CHUNK):
                pass
        self.status.waiting_for = None
        if not layout.problem and (
            layout.reading is None
            or (layout.metrics_file and probe(layout.metrics_file).mode is None)
        ):
            self.status.waiting_for = layout.waiting_for or str(layout.metrics_file)
            if not self._announced_wait:
                batch.events.append(f"waiting for {self.status.waiting_for}")
                self._announced_wait = True
        if current is not None and layout.run_dir != current.run_dir and not layout.waiting:
            batch.events.append(f"following newer run directory {layout.run_dir}")
        previous_store = self._store
        self._layout = layout
        self._tail = None
        self._store = None
        adapter = ADAPTERS.get(layout.adapter or "")
        path, reading = layout.metrics_file, layout.reading
        self._metrics_stops = None
        if adapter is not None and path is not None and reading is not None:
            if reading in (Reading.JSONL, Reading.CONSOLE):
                self._tail = TailReader(path)
                if reading is Reading.CONSOLE:
                    self._metrics_stops = StopScanner(str(path))
            elif reading is Reading.DOCUMENT:
                # a newer checkpoint: its history starts with what was already read
                after = previous_store if isinstance(previous_store, DocumentStore) else None
                self._store = DocumentStore(path, adapter.document_records, after=after)
            elif reading is Reading.TENSORBOARD:
                # its hparams (a trainer's config) through the adapter's settings mapping
                self._store = TensorBoardStore(path, settings=adapter.settings)
            elif reading is Reading.MERGED_JSONL:
                self._store = MergedStepsStore(path, adapter.writers, adapter.eval_prefix)
            elif reading is Reading.WANDB:
                self._store = WandbRunStore(path)
            else:
                self._store = TrackioStore(path, self.options.run_name)
            self._reader = self._reader_for(adapter, path, reading is Reading.CONSOLE)
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
        title = reader.adapter.title
        self.status.framework = f"{reader.flavour} ({title})" if reader.flavour else title

    def _read_context(self, layout: RunLayout) -> None:
        """Read the args file (again): the context, or a note saying why it is unknown."""
        notes = list(layout.skipped)
        if layout.args_file is not None:
            try:
                adapter = ADAPTERS.get(layout.adapter or "")
                mapper = adapter.settings if adapter is not None else None
                context, problems = read_args_json(layout.args_file, mapper)
            except ArgsError as error:
                notes.append(f"{error}: run context unknown")
            else:
                self.status.context = context
                notes.extend(f"{layout.args_file.name}: {problem}" for problem in problems)
                self._note_file(layout.args_file)
        self.status.notes = notes  # renewed per layout

    def _note_file(self, path: Path) -> None:
        if str(path) not in self.status.files:
            self.status.files.append(str(path))

    # -- reading -----------------------------------------------------------------------
    def _read_tail(self, batch: Batch, max_bytes: int) -> bool:
        tail, reader = self._tail, self._reader
        if tail is None or reader is None:
            return False
        chunk = tail.poll(max_bytes)
        self.status.backlog = (tail.offset, tail.size) if chunk.more else None
        self.status.unreadable = tail.problem
        if not tail.exists:
            return False
        self.status.waiting_for = None
        self._note_file(tail.path)
        if chunk.restarted:
            batch.events.append(
                f"{tail.path.name} was {chunk.restarted}: reading it from the start"
            )
            batch.restarted = True
            reader.restart()
            self._stops.forget(str(tail.path))
            if self._metrics_stops is not None:
                self._metrics_stops.restart()
        self.status.lines_read = tail.line_no
        if chunk.data:
            stops = (
                self._metrics_stops.scan(chunk.data, chunk.first_line_no, chunk.offset)
                if self._metrics_stops is not None
                else []
            )
            read = reader.read_chunk(chunk.data, chunk.first_line_no)
            batch.extend(read)
            if read.blocks or read.finished:
                # "last data" is the newest metric record, not the newest bytes: a hung
                # trainer printing warnings is not live
                self.status.data_time = tail.mtime
                last = reader.last_record_line if isinstance(reader, ConsoleReader) else None
                self._stops.metrics_read(tail.mtime, str(tail.path), last)
                if last:
                    stops = [line for line in stops if line.line_no >= last]
            self._stops.offer(stops, metrics_file=str(tail.path))
            if self._metrics_stops is not None:
                self.status.log_time, self.status.log_name = tail.mtime, tail.path.name
            self._read_by(reader)
            self._take_printed_settings(reader, tail.path)
        return chunk.more

    def _read_store(self, batch: Batch) -> bool:
        store, reader = self._store, self._reader
        if store is None or reader is None:
            return False
        polled = store.poll()
        self.status.unreadable = polled.problem
        self.status.store_run = polled.run or self.status.store_run
        batch.events.extend(polled.events)
        batch.bad_lines.extend(polled.bad)
        if polled.restarted:
            batch.events.append(f"{store.path.name} started over: reading it from the start")
            batch.restarted = True
            reader.restart()
        trainer = store.adapter if isinstance(store, WandbRunStore) else None
        if trainer is not None and trainer is not reader.adapter:
            # the trainer a W&B run file's config (or keys) named: its keys and its name
            reader = self._reader = self._reader_for(trainer, store.path, False)
        if polled.records or polled.settings is not None:
            self._note_file(store.path)
            self.status.data_time = polled.data_time
        if polled.records:
            self._stops.metrics_read(polled.data_time, str(store.path), None)
        if polled.settings:
            # the store's own settings (max_steps, logging_steps) fill the run context
            self.status.context.merge_missing(context_and_problems(polled.settings)[0])
        if polled.records:
            batch.extend(reader.read_objects(polled.records))
            self._read_by(reader)
        return polled.more

    def _find_stop_logs(self, layout: RunLayout) -> None:
        """The console files beside the metrics, followed for the lines that end runs (those
        followed already keep their place and offsets): in the run's folder and PATH's. A
        console log given as PATH is the run's console itself (its folder may hold other
        runs' logs); a metrics file given as PATH has its run's folder around it."""
        if probe(self.path).is_dir:
            folders = [d for d in (layout.run_dir, self.path) if d is not None]
        elif layout.reading is Reading.CONSOLE or layout.run_dir is None:
            folders = []
        else:
            folders = [layout.run_dir]
        paths = console_logs(folders, exclude=layout.metrics_file) if folders else []
        self._stop_logs = {path: self._stop_logs.get(path) or StopLog(path) for path in paths}
        self.status.stop_logs = [str(path) for path in paths]

    def _read_stop_logs(self, max_bytes: int) -> bool:
        """Read the console files beside the metrics for stop lines; True when one has more."""
        more = False
        metrics = self.status.followed[0] if self.status.followed else None
        for log in self._stop_logs.values():
            lines, log_more, grew = log.poll(max_bytes)
            if log.restarted:
                self._stops.forget(str(log.path))
            self._stops.offer(lines, metrics_file=metrics)
            if grew and log.mtime is not None and log.mtime >= (self.status.log_time or 0.0):
                self.status.log_time, self.status.log_name = log.mtime, log.path.name
            more = more or log_more
        return more

    def _take_printed_settings(self, reader: LogReader, path: Path) -> None:
        """The settings a console log printed at its start (verl's config) fill what the
        run context does not know (an args file beside it says first)."""
        settings = reader.parser.settings if isinstance(reader, ConsoleReader) else None
        if settings is None or settings is self._settings_taken:
            return
        self._settings_taken = settings
        context, problems = context_and_problems(settings)
        self.status.context.merge_missing(context)
        if problems:
            self.status.notes = [*self.status.notes, *(f"{path.name}: {p}" for p in problems)]

    def _read_by(self, reader: LogReader) -> None:
        """What the reader learnt from the lines it read, for the status."""
        self.status.version_hints = reader.version_hints
        self._show_framework(reader)
