"""Following a run: sources → Update (worker side) → Run (owner side).

The split matters for the TUI: `RunFollower.read()` does the IO and parsing and may run in
a worker thread; `Run.apply(update)` only appends arrays and runs on the thread that owns
the Run. Headless commands simply call both in a loop (`load_run`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from grpo_tui.run.completion_stats import CompletionsSummary
from grpo_tui.run.completions import CompletionsIndex
from grpo_tui.run.live import Run
from grpo_tui.sources.feed import FeedStatus, RunFeed
from grpo_tui.sources.records import Batch

#: bytes read per poll while following (and for the first poll of a backfill)
LIVE_CHUNK = 1 << 20
#: bytes read per poll while a backlog is being read
BACKFILL_CHUNK = 32 << 20


@dataclass
class Update:
    """Everything one read produced, handed to the Run's owner in one message."""

    batch: Batch
    #: a copy of the feed's status, safe to hand to another thread
    status: FeedStatus
    samples: CompletionsSummary | None = None
    #: more data is ready right now (the read stopped at its time budget)
    more: bool = False
    #: completions lines newly indexed
    new_samples: int = 0
    read_seconds: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.batch) or self.new_samples > 0


class RunFollower:
    """Reads a PATH's sources in bounded slices (metrics log and completions)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.feed = RunFeed(self.path)
        self.completions: CompletionsIndex | None = None
        self._backlog = False

    def read(self, time_budget: float = 0.05, chunk_bytes: int | None = None) -> Update:
        """Read for about `time_budget` seconds (at least one chunk). Chunks are small
        until a read finds a backlog (the first screen comes quickly), then big (a big
        chunk is parsed faster per line, in parts by helper processes: sources/helper.py)."""
        started = time.perf_counter()
        batch = Batch()
        more = True
        while more:
            size = chunk_bytes or (BACKFILL_CHUNK if self._backlog else LIVE_CHUNK)
            part, more = self.feed.poll(size)
            self._backlog = more
            batch.extend(part)
            if time.perf_counter() - started >= time_budget:
                break
        new_samples = 0
        samples = None
        index = self._completions_index()
        if index is not None:
            while True:
                added = index.poll(chunk_bytes or LIVE_CHUNK)
                new_samples += added
                if not index.more or time.perf_counter() - started >= time_budget:
                    break
            more = more or index.more
            if index.lines and str(index.path) not in self.feed.status.files:
                self.feed.status.files.append(str(index.path))
                self.feed.status.followed.append(str(index.path))
            if new_samples:
                samples = index.summary()
        return Update(
            batch=batch,
            status=self.feed.status.snapshot(),
            samples=samples,
            more=more,
            new_samples=new_samples,
            read_seconds=time.perf_counter() - started,
        )

    def _completions_index(self) -> CompletionsIndex | None:
        path = self.feed.status.completions_file
        if path is None:
            return None
        if self.completions is None or self.completions.path != path:
            # num_generations lets a prompt that repeats within one batch split into its groups
            group_size = self.feed.status.context.num_generations
            self.completions = CompletionsIndex(path, group_size=group_size)
        return self.completions


def load_run(
    path: Path, *, follower: RunFollower | None = None, time_budget: float = 5.0
) -> Run:
    """Read everything a PATH holds now into a Run (no waiting for more). Pass the
    follower to keep following the same sources afterwards."""
    follower = follower or RunFollower(path)
    run = Run(Path(path))
    while True:
        # big chunks: a backfill has no screen to keep responsive
        update = follower.read(time_budget=time_budget, chunk_bytes=BACKFILL_CHUNK)
        run.apply(update)
        if not update.more:
            break
    return run
