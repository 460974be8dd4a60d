"""Following a run: sources → Update (reader side) → Run (owner side).

`RunFollower.read()` does the IO and parsing; `Run.apply(update)` only appends arrays and
runs on the thread that owns the Run. `FollowLoop` runs the reads in a daemon thread for as
long as a run is watched (the TUI and `inspect --follow` both use it); `load_run` reads
what a PATH holds now, once (`check`, `inspect`, tests).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from grpo_tui.run.completions import CompletionsIndex
from grpo_tui.run.live import Run
from grpo_tui.run.update import Update
from grpo_tui.sources.completion_batches import open_batches
from grpo_tui.sources.feed import RunFeed, SourceOptions
from grpo_tui.sources.records import Batch
from grpo_tui.sources.watch import DirectoryWaker

#: bytes read per poll while following (and for the first poll of a backfill)
LIVE_CHUNK = 1 << 20
#: bytes read per poll while a backlog is being read. 8 MB reads a 100 000-line history as
#: fast as 32 MB did, and its parsed lines peak at 135 MB of RSS where 32 MB's took 210
#: (bench/footprint.py prints both)
BACKFILL_CHUNK = 8 << 20
#: bytes of a completions file read by its first poll (the preview of the newest batch
#: comes with it; the screen should not wait for the start of the backlog too)
FIRST_COMPLETIONS_CHUNK = 64 << 10


class RunFollower:
    """Reads a PATH's sources in bounded slices (metrics log and completions)."""

    def __init__(
        self,
        path: Path,
        options: SourceOptions | None = None,
        *,
        newest_first: bool = False,
        rediscover_every: float = 2.0,
    ) -> None:
        """`newest_first`: the first read of a big log also hands out its newest lines,
        read from the end, so a screen shows the latest state before the history is in.
        `rediscover_every`: seconds between two looks for the run's files (RunFeed)."""
        self.path = Path(path)
        self.feed = RunFeed(self.path, options=options, rediscover_every=rediscover_every)
        self.newest_first = newest_first
        self._previewed = False
        self.completions: CompletionsIndex | None = None
        self._backlog = False
        #: (kinds, steps) of metrics lines read before there was a completions index
        self._unnoted: list[tuple[np.ndarray, np.ndarray]] = []

    def read(self, time_budget: float = 0.05, chunk_bytes: int | None = None) -> Update:
        """Read for about `time_budget` seconds (at least one chunk). Chunks are small
        until a read finds a backlog (the first screen comes quickly), then big (a big
        chunk is parsed faster per line: fewer numpy calls per row)."""
        started = time.perf_counter()
        batch = Batch()
        preview: Batch | None = None
        more = True
        while more:
            size = chunk_bytes or (BACKFILL_CHUNK if self._backlog else LIVE_CHUNK)
            part, more = self.feed.read(size)
            self._backlog = more
            batch.extend(part)
            if more and self.newest_first and not self._previewed:
                # a backlog: the newest lines first, the history from the next read on
                self._previewed = True
                preview = self.feed.preview()
                break
            if time.perf_counter() - started >= time_budget:
                break
        new_samples = 0
        samples = None
        relabelled = False
        lines = [
            (block.kinds, block.steps)
            for block in (*batch.blocks, *(preview.blocks if preview is not None else ()))
        ]
        index = self._completions_index()
        if index is not None:
            # a new index hands out its preview of the newest batch at once; its backlog
            # is read from the next read on
            first = index.polls == 0
            while True:
                added = index.poll(FIRST_COMPLETIONS_CHUNK if first else chunk_bytes or LIVE_CHUNK)
                new_samples += added
                if first or not index.more or time.perf_counter() - started >= time_budget:
                    break
            more = more or index.more
            # which steps had an eval: their batches are eval rollouts (index docstring)
            for kinds, steps in self._unnoted + lines:
                relabelled |= index.note_log_lines(kinds, steps)
            self._unnoted = []
            if index.state().lines and str(index.path) not in self.feed.status.files:
                self.feed.status.files.append(str(index.path))
                self.feed.status.followed.append(str(index.path))
            if new_samples or relabelled:
                samples = index.summary()
        else:
            self._unnoted.extend(lines)  # for the index once a completions file turns up
        return Update(
            batch=batch,
            status=self.feed.status.snapshot(),
            samples=samples,
            more=more,
            new_samples=new_samples,
            completions=index,
            completions_state=None if index is None else index.state(),
            preview=preview,
        )

    def _completions_index(self) -> CompletionsIndex | None:
        ref = self.feed.status.completions
        if ref is None:
            return None
        if self.completions is None or self.completions.path != ref.path:
            # num_generations lets a prompt that repeats within one batch split into its groups
            group_size = self.feed.status.context.num_generations
            # the reward weights make a row's total the trainer's weighted sum
            weights = self.feed.status.context.reward_weights
            self.completions = CompletionsIndex(
                ref.path, group_size=group_size, source=open_batches(ref, reward_weights=weights)
            )
        return self.completions


def load_run(
    path: Path,
    *,
    follower: RunFollower | None = None,
    time_budget: float = 5.0,
    options: SourceOptions | None = None,
) -> Run:
    """Read everything a PATH holds now into a Run (no waiting for more). Pass the
    follower to keep following the same sources afterwards."""
    follower = follower or RunFollower(path, options)
    run = Run(Path(path))
    while True:
        # big chunks: a backfill has no screen to keep responsive
        update = follower.read(time_budget=time_budget, chunk_bytes=BACKFILL_CHUNK)
        run.apply(update)
        if not update.more:
            break
    # the end of what is there: a record the file ends inside (a cut paste) is read too
    last = follower.feed.finish()
    if last.blocks or last.bad_lines:
        run.ingest(last)
    return run


#: seconds between reads when nothing is pending (file events wake the loop earlier)
POLL_INTERVAL_S = 1.0
#: seconds the reader leaves the CPU to the screen after handing out a preview
PREVIEW_PAUSE_S = 0.25
#: seconds one read may take before its update is handed on (keeps a backfill's first
#: screen quick and its progress visible)
READ_BUDGET_S = 0.05


class FollowLoop:
    """Reads a PATH's sources in a daemon thread until stopped, handing each Update on.

    One loop for every live consumer (the TUI posts the updates as messages, `inspect
    --follow` prints them). It reads for about `READ_BUDGET_S`, hands the update to
    `deliver` when it holds data or the status changed, then sleeps for `poll_interval`
    unless more is ready or a file event wakes it (watchdog, when `watch_files`; polling
    stays the truth). `stop()` never waits for the thread: a read stuck in the kernel (a
    hung NFS mount) must not keep the process from exiting, and a daemon thread does not.
    """

    def __init__(
        self,
        follower: RunFollower,
        deliver: Callable[[Update], object],
        *,
        on_error: Callable[[str], object] | None = None,
        on_notice: Callable[[str], object] | None = None,
        poll_interval: float = POLL_INTERVAL_S,
        watch_files: bool = True,
    ) -> None:
        self.follower = follower
        self._deliver = deliver
        self._on_error = on_error
        self._on_notice = on_notice
        self.poll_interval = poll_interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._waker: DirectoryWaker | None = DirectoryWaker(self._wake) if watch_files else None
        self._thread = threading.Thread(target=self._loop, name="grpo-tui-reader", daemon=True)
        #: how many reads of the files have ended, each handed on if it held anything (a
        #: test that needs the files looked at since some moment waits for two more)
        self.reads = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop reading (the thread ends after its current read; nothing waits for it)."""
        self._stop.set()
        self._wake.set()
        if self._waker is not None:
            self._waker.stop()

    def wake(self) -> None:
        """Read now rather than at the end of the poll interval."""
        self._wake.set()

    def _loop(self) -> None:
        last_status: tuple[object, ...] | None = None
        told_no_events = False
        while not self._stop.is_set():
            try:
                update = self.follower.read(time_budget=READ_BUDGET_S)
            except Exception as error:
                if self._on_error is not None:
                    self._on_error(f"{type(error).__name__}: {error}")
                self._sleep()
                continue
            if self._stop.is_set():
                return
            status = update.status.signature()
            if update or status != last_status or update.preview is not None:
                last_status = status
                self._deliver(update)
                if update.preview is not None:
                    # let the screen draw the newest lines before the history takes the CPU
                    self._stop.wait(PREVIEW_PAUSE_S)
            self.reads += 1
            if self._waker is not None:
                self._waker.watch(self.follower.feed.watched_dirs)
                if self._waker.failure is not None and not told_no_events:
                    told_no_events = True
                    if self._on_notice is not None:
                        self._on_notice(self._waker.failure)
            if not update.more:
                self._sleep()

    def _sleep(self) -> None:
        self._wake.wait(self.poll_interval)
        self._wake.clear()
