"""What the logged completions say, summarised for health (produced by run/completions.py).

Kept in its own module so the health engine depends on these plain types only, not on how
completions files are indexed and parsed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StepSampleStats:
    """The groups logged at one step (one completions line, de-duplicated)."""

    step: float
    groups: int
    completions: int
    #: fraction of groups whose total reward is identical for every completion
    zero_spread_fraction: float
    #: of all groups: zero spread with the reward at the bottom of its observed range (all fail)
    zero_spread_all_fail: float
    #: of all groups: zero spread with the reward at the top of its observed range (all pass)
    zero_spread_all_pass: float
    #: mean over groups of distinct-2 (unique bigrams / all bigrams across the group's completions)
    distinct_2: float
    #: mean over groups of the mean pairwise Jaccard overlap of word 3-gram sets (1 = identical)
    pairwise_overlap: float
    #: fraction of completions that follow the expected tag format, None when no format is recognisable
    format_rate: float | None
    #: mean completion length in characters
    mean_chars: float
    #: fraction of completions that look cut off (an opened tag never closed), None when unknown
    truncated_rate: float | None
    #: mean share of repeated word 3-grams inside a completion (0 = no loops)
    repetition: float = 0.0


@dataclass(frozen=True, slots=True)
class CompletionsSummary:
    """Samples over the run: the early and recent windows and every step in between."""

    #: completions lines read (each a log call's batch of rollouts)
    lines: int
    #: per logged step, oldest first (eval rollouts excluded where they can be told apart)
    steps: tuple[StepSampleStats, ...]
    #: changes whenever earlier steps were re-judged (e.g. a new highest total moves what
    #: counts as all-pass) or the file started over: earlier copies are stale
    revision: int = 0

    @property
    def latest(self) -> StepSampleStats | None:
        return self.steps[-1] if self.steps else None

    @property
    def earliest(self) -> StepSampleStats | None:
        return self.steps[0] if self.steps else None
