"""The samples' statistics as metric series (`samples/...`), one value per logged step.

What the completions show is charted and judged like any logged metric: each step's
statistics (run/completion_stats.py) become values of the `samples/` metrics in the train
row of that step (`MetricStore.annotate`). The `samples/` prefix tells a user these come
from reading the completions, not from the trainer's log.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from grpo_tui.run.completion_stats import CompletionsSummary, StepColumns, StepSampleStats
from grpo_tui.run.metrics import MetricStore

#: each metric derived from the logged completions, and how a step's statistics give it
SAMPLE_SERIES: dict[str, Callable[[StepSampleStats], float | None]] = {
    # fraction of completions that follow the tag format (think/answer, \boxed{})
    "samples/format_ok": lambda s: s.format_rate,
    # fraction of groups where every completion got the lowest total reward
    "samples/all_fail": lambda s: s.zero_spread_all_fail,
    # fraction of groups where every completion got the highest total reward
    "samples/all_pass": lambda s: s.zero_spread_all_pass,
    # unique character shingles / all shingles inside a group, mean over groups (1 = all
    # differ; the name is kept from when it counted word bigrams)
    "samples/distinct_2": lambda s: s.distinct_2,
    # mean pairwise character shingle overlap inside a group (1 = identical completions;
    # the name is kept from when it compared word 3-grams)
    "samples/overlap_3gram": lambda s: s.pairwise_overlap,
    # share of a completion's character shingles repeating an earlier one, mean (loops)
    "samples/repetition": lambda s: s.repetition,
    # fraction of completions with a tag or \boxed{ opened and never closed
    "samples/cut_off": lambda s: s.truncated_rate,
    # fraction of completions of at most one token once role prefixes are left out
    "samples/one_token": lambda s: s.one_token,
}
SAMPLE_METRICS: tuple[str, ...] = tuple(SAMPLE_SERIES)


#: what a GRPO metric derived from the completions says it came from (`inspect`'s key)
DERIVED_SOURCE = "derived from the logged completions"


def derived_values(
    stats: StepSampleStats, functions: dict[str, float], store: MetricStore
) -> dict[str, float]:
    """GRPO signals the framework does not log, derived from its completions (verl logs no
    zero-spread fraction, no group std and no per-function means; its rollout dumps show
    every group). A logged value always wins: a column the log filled is never written
    over. `functions`: each reward function's mean over the step's completions."""
    wanted: dict[str, float] = {}
    if stats.groups:
        wanted["frac_reward_zero_std"] = stats.zero_spread_fraction
        if stats.group_std is not None:
            wanted["reward_std"] = stats.group_std
    for function, mean in functions.items():
        wanted[f"rewards/{function}/mean"] = mean
    return {
        name: float(value)
        for name, value in wanted.items()
        if math.isfinite(value) and (name not in store or store.source_key(name) == DERIVED_SOURCE)
    }


def sample_values(stats: StepSampleStats) -> dict[str, float]:
    """The step's values of every sample metric it knows (unknown ones are left out)."""
    values = {name: value(stats) for name, value in SAMPLE_SERIES.items()}
    return {name: float(v) for name, v in values.items() if v is not None and math.isfinite(v)}


class SamplePlacer:
    """Writes each summary step into the store once its train row exists.

    Steps are placed in order; a step whose train row has not arrived yet waits (and the
    ones after it). A new revision of the summary (earlier steps re-judged, or the file
    started over) or a store that dropped rows (a resumed run) places everything again.
    """

    def __init__(self) -> None:
        self.placed = 0
        self._revision: int | None = None
        self._replaced_rows = 0
        self._last: StepSampleStats | None = None

    def place(self, summary: CompletionsSummary | None, store: MetricStore) -> bool:
        """Place what can be placed; True when anything was written."""
        if summary is None:
            return False
        if summary.revision != self._revision or store.replaced_rows != self._replaced_rows:
            self._revision = summary.revision
            self._replaced_rows = store.replaced_rows
            self.placed = 0
        wrote = False
        steps = summary.steps
        if 0 < self.placed <= len(steps):
            newest = steps[self.placed - 1]
            if not _same(newest, self._last):
                # the newest placed step can still grow (a Megatron-Ray batch, ms-swift
                # 3.1's several lines per step): write it again when its statistics changed
                self._last = newest
                self._annotate(store, summary, self.placed - 1)
                wrote = True
        while self.placed < len(steps):
            stats = steps[self.placed]
            if not self._annotate(store, summary, self.placed):
                break
            self.placed += 1
            self._last = stats
            wrote = True
        return wrote

    @staticmethod
    def _annotate(store: MetricStore, summary: CompletionsSummary, index: int) -> bool:
        stats = summary.steps[index]
        functions = {name: float(means[index]) for name, means in summary.function_means.items()}
        derived = derived_values(stats, functions, store)
        if not store.annotate(stats.step, sample_values(stats)):
            return False
        if derived:
            store.annotate(stats.step, derived, source=DERIVED_SOURCE)
        return True


def _same(stats: StepSampleStats, other: StepSampleStats | None) -> bool:
    """The same statistics, NaN (no value) matching NaN: a summary builds its steps anew
    each time one is looked at."""
    return other is not None and StepColumns.of([stats]) == StepColumns.of([other])
