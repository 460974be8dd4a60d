"""What the logged completions say: early samples against recent ones.

Read from the per-step sample statistics of `completions.jsonl` (run/completion_stats.py):
diversity inside groups (pairwise shingle overlap), format compliance, all-fail and
all-pass groups. "Are the samples getting better?" is answered from these, not from the
reward.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from grpo_tui.health import trends as tr
from grpo_tui.health.rules import Rules
from grpo_tui.health.verdict import Evidence, Window, finite_or_none
from grpo_tui.run.completion_stats import CompletionsSummary, StepColumns, StepSampleStats

Getter = Callable[[StepSampleStats], "float | None"]
#: a condition of every logged step at once, from their columns (one bool per step)
Held = Callable[[StepColumns], np.ndarray]


overlap: Getter = attrgetter("pairwise_overlap")
format_rate: Getter = attrgetter("format_rate")


@dataclass(frozen=True)
class Samples:
    """The logged sample steps, with the early and the recent ones apart."""

    #: every logged sample step (columns: a step is built when looked at)
    stats: StepColumns
    early: tuple[StepSampleStats, ...]
    recent: tuple[StepSampleStats, ...]
    window: Window
    rules: Rules

    @staticmethod
    def of(summary: CompletionsSummary | None, rules: Rules) -> Samples | None:
        if summary is None or not summary.steps:
            return None
        stats = summary.columns
        k = min(rules.samples.compare_steps, max(1, len(stats) // 2))
        window = Window(stats[0].step, stats[-1].step, len(stats))
        return Samples(stats, tuple(stats[:k]), tuple(stats[-k:]), window, rules)

    @property
    def comparable(self) -> bool:
        """Early and recent are different steps."""
        return len(self.stats) >= 2

    @staticmethod
    def _mean(stats: Sequence[StepSampleStats], get: Getter) -> float | None:
        values = [v for v in (get(s) for s in stats) if v is not None and math.isfinite(v)]
        return float(np.mean(values)) if values else None

    def early_mean(self, get: Getter) -> float | None:
        return self._mean(self.early, get)

    def recent_mean(self, get: Getter) -> float | None:
        return self._mean(self.recent, get)

    def worse(self, get: Getter, falls: bool, drop: float) -> tuple[float, float] | None:
        """(early, recent) means of a measure that changed for the worse (fell, when `falls`;
        else rose) by more than `drop`."""
        early, recent = self.early_mean(get), self.recent_mean(get)
        if early is None or recent is None:
            return None
        return (early, recent) if (early - recent if falls else recent - early) > drop else None

    def onset(self, held: Held) -> float | None:
        """First sample step of the latest stretch where `held` was true on a sustained
        share of a rolling window of sample steps (`held` judges every step at once, e.g.
        `lambda s: s.column("pairwise_overlap") >= 0.5`: a run logs many thousands)."""
        width = self.rules.window_size(len(self.stats))
        flags = np.asarray(held(self.stats), dtype=bool)
        index = tr.condition_onset(flags, width, self.rules.window.sustained)
        return None if index is None else float(self.stats[index].step)

    def evidence(self, numbers: dict[str, float | None], text: str) -> Evidence:
        return Evidence(
            "samples", self.window, {k: finite_or_none(v) for k, v in numbers.items()}, text
        )
