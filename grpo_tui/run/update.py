"""One read of a run's sources: what the reader hands to the Run's owner."""

from __future__ import annotations

from dataclasses import dataclass

from grpo_tui.run.completion_stats import CompletionsSummary
from grpo_tui.run.completions import CompletionsIndex, IndexState
from grpo_tui.sources.feed import FeedStatus
from grpo_tui.sources.records import Batch


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
    #: the completions index being followed (the same object every time; it locks itself)
    completions: CompletionsIndex | None = None
    #: what that index held at the end of this read (read without its lock)
    completions_state: IndexState | None = None
    #: the newest lines of a big log, read ahead of its history (newest first on screen)
    preview: Batch | None = None

    def __bool__(self) -> bool:
        return bool(self.batch) or self.new_samples > 0

    def merged(self, later: Update) -> Update:
        """This update followed by a later one, as one (held back while the screen is paused
        or the diagnosis reads the Run: the data adds up, the status is the later one's)."""
        batch = Batch()
        batch.extend(self.batch)
        batch.extend(later.batch)
        return Update(
            batch=batch,
            status=later.status,
            samples=later.samples if later.samples is not None else self.samples,
            more=later.more,
            new_samples=self.new_samples + later.new_samples,
            completions=self.completions if later.completions is None else later.completions,
            completions_state=(
                self.completions_state
                if later.completions_state is None
                else later.completions_state
            ),
            preview=self.preview if later.preview is None else later.preview,
        )
