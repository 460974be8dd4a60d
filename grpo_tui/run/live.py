"""The Run: everything known about one training run, fed batch by batch from sources.

`check`, `inspect` and the TUI all hold a Run; health reads it, views render it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from grpo_tui.context import RunContext
from grpo_tui.run.completion_stats import CompletionsSummary
from grpo_tui.run.completions import CompletionsIndex, IndexState
from grpo_tui.run.memory import release_free_memory
from grpo_tui.run.metrics import MetricStore
from grpo_tui.run.sample_series import SamplePlacer
from grpo_tui.run.update import Update
from grpo_tui.sources.checkpoints import CheckpointListing
from grpo_tui.sources.feed import FeedStatus
from grpo_tui.sources.records import BadLine, Batch
from grpo_tui.sources.stop_lines import StopLine
from grpo_tui.vocabulary import LineKind, StopKind

if TYPE_CHECKING:
    import pandas as pd

#: bad lines kept verbatim (the first ones, then the most recent): enough to show, bounded
_BAD_LINES_KEPT = 20
#: a learning rate at most this share of its peak, at the newest of at least SCHEDULE_POINTS
#: logged values, is a decaying schedule run to its end (linear and cosine decay end at 0)
SCHEDULE_END = 0.01
SCHEDULE_POINTS = 10
#: the canonical share of the schedule done (Tinker's `progress/done_frac`) at which the
#: run is over (1, less a float's rounding of (i + 1) / n)
DONE_FRAC_END = 1.0 - 1e-9


@dataclass(slots=True, frozen=True)
class Progress:
    """Where the run is, from the latest line that said so (None = not logged)."""

    step: float | None
    max_steps: int | None
    fraction: float | None
    elapsed_s: float | None
    remaining_s: float | None
    seconds_per_step: float | None
    memory_gib: float | None


@dataclass
class Run:
    """One run: its metric store, what the sources say about it, reading statistics."""

    path: Path
    store: MetricStore = field(default_factory=MetricStore)
    #: the sources' latest word on the run: framework, context, files, waiting, problems
    status: FeedStatus = field(default_factory=FeedStatus)
    line_counts: Counter[str] = field(default_factory=Counter)
    bad_line_count: int = 0
    bad_lines: list[BadLine] = field(default_factory=list)
    finished: bool = False
    #: wall-clock time (epoch s) the newest metric record was written (its file's mtime
    #: when read), None before any
    last_data_time: float | None = None
    #: wall-clock time the newest console text was written (the log growing, metric
    #: records or not), None before any
    last_log_time: float | None = None
    #: human notes about the sources: waiting for a file, restarts, a newer run directory
    events: list[str] = field(default_factory=list)
    #: what the logged completions show (None until a completions file has been read)
    samples: CompletionsSummary | None = None
    #: bumped on every ingest that changed something, so views can skip redraws
    version: int = 0
    #: what the user said on the command line (`--max-completion-length`): fills what the
    #: run's own files do not say
    given: RunContext = field(default_factory=RunContext)
    #: the completions file's index (shared with the reader thread; it locks itself), for
    #: the completions panel to page through; None until a completions file is followed
    completions: CompletionsIndex | None = None
    #: what that index held at the newest read (the screen reads this, never the index)
    completions_state: IndexState | None = None
    #: the whole history being read behind a preview of the newest lines: `store` shows the
    #: preview until this has caught up, then becomes it (see `apply`)
    history: MetricStore | None = None
    _max_steps: int | None = None
    _samples_placer: SamplePlacer = field(default_factory=SamplePlacer)
    _reading_history: bool = False

    # -- what the sources say (read-only views of `status`) ------------------------------
    @property
    def framework(self) -> str | None:
        return self.status.framework

    @property
    def context(self) -> RunContext:
        return self.status.context.filled_from(self.given)

    @property
    def waiting_for(self) -> str | None:
        """What is being waited for (a file or directory that does not exist yet), or None."""
        return self.status.waiting_for

    @property
    def unreadable(self) -> str | None:
        """Why the metrics cannot be read ("permission denied: PATH"), or None."""
        return self.status.unreadable

    @property
    def notes(self) -> list[str]:
        """What else is wrong with the run's files (a malformed args.json, a skipped file)."""
        return self.status.notes

    @property
    def checkpoints(self) -> CheckpointListing | None:
        """The run's checkpoints on disk and what its trainer said about saving them, as
        plain data (None: its format keeps none grpo-tui knows of)."""
        return self.status.checkpoints

    @property
    def reading(self) -> tuple[int, int] | None:
        """(bytes read, bytes in the file) while the metrics log's history is being read."""
        return self.status.backlog

    def apply(self, update: Update) -> None:
        """Take one read of the sources (see run/follow.py)."""
        status = update.status
        self.status = status
        if status.data_time is not None:
            self.last_data_time = status.data_time
        if status.log_time is not None:
            self.last_log_time = status.log_time
        if update.completions is not None:
            self.completions = update.completions
            if update.completions_state != self.completions_state:
                self.completions_state = update.completions_state
                self.version += 1
        if update.samples is not None:
            self.samples = update.samples
            self.version += 1
        if update.preview is not None and self.history is None and len(self.store) == 0:
            # newest first: the screen shows the log's newest lines while its history is
            # read into a store of its own, which takes the preview's place once it is in
            self.history, self.store = self.store, MetricStore()
            for block in update.preview.blocks:
                self.store.add_block(block)
                if block.max_steps:
                    self._max_steps = block.max_steps
        self.ingest(update.batch)
        if self.history is not None and status.backlog is None:
            self.store, self.history = self.history, None
            self._samples_placer = SamplePlacer()
            self.version += 1
        if self._reading_history and status.backlog is None:
            # the whole history is in: what grew for it and what parsing it left free go back
            self.store.compact()
            release_free_memory()
        self._reading_history = status.backlog is not None
        # the samples' statistics go into the train rows of their steps, once those exist
        # (in the whole history: not while a preview of the newest lines is shown)
        if self.history is None and self._samples_placer.place(self.samples, self.store):
            self.version += 1

    def ingest(self, batch: Batch) -> None:
        if not batch:
            return
        target = self.store if self.history is None else self.history
        for block in batch.blocks:
            target.add_block(block)
            kinds, counts = np.unique(block.kinds, return_counts=True)
            for kind, count in zip(kinds.tolist(), counts.tolist()):
                self.line_counts[LineKind(kind).word] += count
            if block.max_steps:
                self._max_steps = block.max_steps
            self._note_lifecycle(block.kinds)
        for bad in batch.bad_lines:
            self.bad_line_count += 1
            if len(self.bad_lines) >= _BAD_LINES_KEPT:
                # keep the first half as they were, roll the rest
                del self.bad_lines[_BAD_LINES_KEPT // 2]
            self.bad_lines.append(bad)
        if batch.finished:
            self.finished = True
            self.line_counts[LineKind.SUMMARY.word] += 1
        if batch.restarted:
            # a new generation of the file: the run is live again until it says otherwise
            self.finished = False
        self.events.extend(batch.events)
        del self.events[:-50]
        self.version += 1

    def _note_lifecycle(self, kinds: np.ndarray) -> None:
        """An end-of-train line (`train_runtime`: TRL's log_history ends with one, ms-swift
        writes one before its summary) finishes the run; a train line after it means the
        run goes on (resumed), so it is live again."""
        ends = np.flatnonzero(kinds == LineKind.END)
        trains = np.flatnonzero(kinds == LineKind.TRAIN)
        if ends.size and (not trains.size or ends[-1] > trains[-1]):
            self.finished = True
        elif trains.size:
            self.finished = False

    @property
    def max_steps(self) -> int | None:
        return self._max_steps or self.context.max_steps

    @property
    def stop(self) -> StopLine | None:
        """The console line that says why the run ended, when one stands (no metric record
        came after it): a failure, a kill or a completion (sources/stop_lines.py)."""
        return self.status.stop

    def ended(self) -> bool:
        """The run is over: its log says so (an end record, a "Training completed" line),
        its newest step is max_steps, the share done (`done_frac`) reached 1, or its
        learning rate schedule ran to its end (a format that writes no end marker)."""
        return (
            self.finished
            or self.completed_by_line()
            or self.reached_max_steps()
            or self.done_frac_reached()
            or self.schedule_ended()
        )

    def completed_by_line(self) -> bool:
        """A console line that says the training completed stands (no metrics after it)."""
        stop = self.stop
        return stop is not None and stop.kind is StopKind.COMPLETED

    def done_frac_reached(self) -> bool:
        """The newest share of the schedule done (`done_frac`, Tinker's
        `progress/done_frac` = (batch + 1) / batches) is 1: the last batch was trained."""
        found = self.store.last("done_frac") if "done_frac" in self.store else None
        return found is not None and found[1] >= DONE_FRAC_END

    def schedule_ended(self) -> bool:
        """The learning rate decayed to at most SCHEDULE_END of its peak at the newest of
        at least SCHEDULE_POINTS logged values: a decaying schedule run to its end."""
        if "learning_rate" not in self.store:
            return False
        values = self.store.points("learning_rate").values
        values = values[np.isfinite(values)]
        if values.size < SCHEDULE_POINTS:
            return False
        peak = float(values.max())
        return peak > 0 and float(values[-1]) <= SCHEDULE_END * peak

    def reached_max_steps(self) -> bool:
        """The newest train step is max_steps: the training loop is over. A run read from
        TRL checkpoints ends this way (the end-of-train item is logged after the last
        checkpoint is saved), and an ms-swift run does a little before its end line (the
        final eval comes first)."""
        step = self.store.last_train_step()
        max_steps = self.max_steps
        return step is not None and max_steps is not None and max_steps > 0 and step >= max_steps

    def progress(self) -> Progress:
        store = self.store
        step = store.last_step()
        max_steps = self.max_steps
        fraction = None
        if step is not None and max_steps:
            fraction = min(1.0, step / max_steps)
        if fraction is None and (pct := store.last("percentage")) is not None:
            fraction = pct[1] / 100.0
        if fraction is None and "done_frac" in store and (done := store.last("done_frac")):
            fraction = min(1.0, max(0.0, done[1]))

        def latest(name: str) -> float | None:
            found = store.last(name)
            return found[1] if found is not None else None

        return Progress(
            step=step,
            max_steps=max_steps,
            fraction=fraction,
            elapsed_s=latest("elapsed"),
            remaining_s=latest("remaining"),
            seconds_per_step=latest("speed"),
            memory_gib=latest("memory"),
        )

    def to_pandas(self) -> pd.DataFrame:
        """The canonical metrics as a pandas DataFrame, the hand-off to a notebook or a
        script: one row per step (a train line and the eval line of the same step become
        one row; eval metrics keep their `eval_` prefix), one column per canonical metric
        in the order the store met them, NaN where a step did not log a metric.
        `samples/...` columns are the statistics of the logged completions. pandas is
        imported here only, when asked for."""
        import pandas as pd

        store = self.store
        columns = {name: store.column(name) for name in store.names()}
        frame = pd.DataFrame(columns, index=pd.Index(store.steps, name="step"))
        if frame.empty:
            return frame
        # train, eval and end lines of one step are one row; the latest value of a metric wins
        frame = frame.groupby(level="step", sort=True).last()
        steps = frame.index.to_numpy()
        if len(steps) and ((steps % 1) == 0).all():
            frame.index = frame.index.astype("int64")
        return frame

    def usual_interval(self) -> float | None:
        """Typical wall seconds between two log lines, from the logged elapsed times
        (median of positive differences), or None when unknown."""
        elapsed = self.store.window("elapsed", 50).values  # empty when none is logged
        if elapsed.size < 3:
            return None
        diffs = np.diff(elapsed)
        diffs = diffs[diffs > 0]
        return float(np.median(diffs)) if diffs.size else None

    def data_age(self, now: float) -> float | None:
        """Seconds since the newest metric record was written."""
        return None if self.last_data_time is None else max(0.0, now - self.last_data_time)

    def log_age(self, now: float) -> float | None:
        """Seconds since the newest console text was written (metric records or not)."""
        return None if self.last_log_time is None else max(0.0, now - self.last_log_time)
