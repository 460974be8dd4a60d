"""Per-step statistics of the sampled completions: one row per step, and the summary the
health engine reads (run/completion_stats.py), built anew each time it is asked for.

A batch is tallied once when it is read (`tally`: sums over its groups); a step's row is
written from the tallies of its batches (`StepTable.fill`). Two columns depend on the
whole file so far and are judged when a summary is built: all-fail / all-pass (a tied
group at the bottom or the top of the totals observed) and the format rate (known once any
completion used a marker: a step that drops the tags then scores 0, not "unknown"). Only
the steps written since the last summary are judged again, unless the totals' range or
the format changed, which re-judges every step and bumps `revision`.

The rows live in plain growing numpy arrays (a float row per step, a flat array of the
tied groups' totals): a long run has tens of thousands of steps, and a Python object per
step would cost more than the row. Each summary is a copy of them, so nothing handed out
is ever written again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from grpo_tui.run.completion_stats import STEP_COLUMN as _COL
from grpo_tui.run.completion_stats import STEP_FIELDS, CompletionsSummary, StepColumns
from grpo_tui.run.completions.groups import TIE_TOLERANCE, Analysed

#: rows the growing arrays start with; they grow by half again when full
_FIRST_CAPACITY = 256
#: the columns a summary judges (the totals' range, the format seen so far)
_JUDGED = np.array(
    [_COL["zero_spread_all_fail"], _COL["zero_spread_all_pass"], _COL["format_rate"]]
)


def grown(array: np.ndarray, used: int, needed: int) -> np.ndarray:
    """`array` with room for `needed` rows (its first `used` rows kept)."""
    if needed <= array.shape[0]:
        return array
    capacity = max(needed, _FIRST_CAPACITY, array.shape[0] + array.shape[0] // 2)
    bigger = np.empty((capacity, *array.shape[1:]), dtype=array.dtype)
    bigger[:used] = array[:used]
    return bigger


@dataclass(slots=True)
class Tally:
    """Sums over one batch's groups: enough to build (and merge) its step's row."""

    groups: int = 0
    completions: int = 0
    #: the shared total of each zero-spread group (judged all-fail / all-pass later), but
    #: those scoring 0 on every reward function: all-fail whatever the totals' range
    tied_totals: list[float] = field(default_factory=list)
    all_zero_groups: int = 0
    distinct_2_sum: float = 0.0
    distinct_2_count: int = 0
    overlap_sum: float = 0.0
    overlap_count: int = 0
    repetition_sum: float = 0.0
    #: completions that are at most one token once their markers are left out
    one_token: int = 0
    follows_format: int = 0
    uses_markers: int = 0
    truncated: int = 0
    #: the groups' reward std (GRPO's advantage scale), summed over groups that have one
    std_sum: float = 0.0
    std_count: int = 0
    #: reward function → (sum, count) of its known values over the batch's completions
    functions: dict[str, tuple[float, int]] = field(default_factory=dict)


def tally(analysed: Analysed) -> Tally:
    result = Tally(groups=len(analysed.groups), completions=len(analysed.rows))
    for group in analysed.groups:
        if group.all_zero:
            result.all_zero_groups += 1
        elif group.zero_spread:
            result.tied_totals.append(group.tied_total)
        if not math.isnan(group.text.distinct_2):
            result.distinct_2_sum += group.text.distinct_2
            result.distinct_2_count += 1
        if not math.isnan(group.text.pairwise_overlap):
            result.overlap_sum += group.text.pairwise_overlap
            result.overlap_count += 1
        for check in group.text.checks:
            result.follows_format += check.follows
            result.uses_markers += check.uses_markers
            result.truncated += check.cut_off
        result.repetition_sum += sum(group.text.repetition)
        result.one_token += sum(group.text.one_token)
        if not math.isnan(group.spread):
            result.std_sum += group.spread
            result.std_count += 1
    for name, column in analysed.rows.rewards.items():
        known = column[np.isfinite(column)]
        if known.size:
            result.functions[name] = (float(known.sum()), int(known.size))
    return result


def zero_spread_groups(done: Tally) -> int:
    """The zero-spread groups of a tallied batch, all-zero ones included."""
    return len(done.tied_totals) + done.all_zero_groups


#: the Tally fields a step logged in several batches sums over them
_SUMMED = tuple(f.name for f in fields(Tally) if f.name not in ("tied_totals", "functions"))


def _merged(tallies: list[Tally]) -> Tally:
    """One tally of several batches (a step logged in parts), summed in order."""
    merged = Tally()
    for part in tallies:
        for name in _SUMMED:
            setattr(merged, name, getattr(merged, name) + getattr(part, name))
        merged.tied_totals += part.tied_totals
        for name, (total, count) in part.functions.items():
            held = merged.functions.get(name, (0.0, 0))
            merged.functions[name] = (held[0] + total, held[1] + count)
    return merged


def _mean(total: float, count: int) -> float:
    return total / count if count else math.nan


class StepTable:
    """One row of statistics per step of the summary (a "slot"), in the order steps were
    first read; not thread-safe (the index holds its lock around every call)."""

    def __init__(self, revision: int = 0) -> None:
        self.count = 0
        #: bumped whenever earlier steps were re-judged: copies handed out are stale
        self.revision = revision
        self._stats = np.empty((0, len(STEP_FIELDS)))
        #: per slot: its zero-spread groups' totals, [start, +count) of `_tied`
        self._tied = np.empty(0)
        self._tied_used = 0
        self._tied_start = np.empty(0, dtype=np.int64)
        self._tied_count = np.empty(0, dtype=np.int64)
        self._follows = np.empty(0)
        #: per slot: its groups scoring 0 on every reward function (all fail, judged now)
        self._all_zero = np.empty(0)
        #: reward function → its mean per slot (NaN where not logged)
        self._means: dict[str, np.ndarray] = {}
        #: slots from `_clean` on, and those in `_dirty`, are to be judged again
        self._clean = 0
        self._dirty: set[int] = set()
        self._judged_for: tuple[float, float, bool] | None = None

    def add(self, step: float) -> int:
        """A new slot for a step (its number; NaN: not a number), no statistics yet."""
        slot = self.count
        self.count = slot + 1
        self._stats = grown(self._stats, slot, self.count)
        self._tied_start = grown(self._tied_start, slot, self.count)
        self._tied_count = grown(self._tied_count, slot, self.count)
        self._follows = grown(self._follows, slot, self.count)
        self._all_zero = grown(self._all_zero, slot, self.count)
        self._stats[slot, _COL["step"]] = float(slot) if math.isnan(step) else step
        self._stats[slot, _COL["groups"]] = 0  # no statistics: left out of the summary
        self._tied_start[slot] = self._tied_used
        self._tied_count[slot] = 0
        self._follows[slot] = 0
        self._all_zero[slot] = 0
        return slot

    def fill(self, slot: int, tallies: list[Tally]) -> None:
        """Write a step's row from the tallies of its batches (none: no statistics), all
        but the columns a summary judges."""
        merged = _merged(tallies)
        groups, completions = merged.groups, merged.completions
        row = self._stats[slot]
        if groups == 0 or completions == 0:
            row[_COL["groups"]] = 0
        else:
            row[_COL["groups"]] = groups
            row[_COL["completions"]] = completions
            row[_COL["zero_spread_fraction"]] = zero_spread_groups(merged) / groups
            row[_COL["distinct_2"]] = _mean(merged.distinct_2_sum, merged.distinct_2_count)
            row[_COL["pairwise_overlap"]] = _mean(merged.overlap_sum, merged.overlap_count)
            row[_COL["truncated_rate"]] = (
                merged.truncated / completions if merged.uses_markers else math.nan
            )
            row[_COL["repetition"]] = merged.repetition_sum / completions
            row[_COL["one_token"]] = merged.one_token / completions
            row[_COL["group_std"]] = _mean(merged.std_sum, merged.std_count)
        self._put_tied(slot, merged.tied_totals)
        self._all_zero[slot] = merged.all_zero_groups
        self._follows[slot] = merged.follows_format
        self._put_means(slot, merged.functions)
        if slot < self._clean:
            self._dirty.add(slot)

    def _put_tied(self, slot: int, tied: list[float]) -> None:
        start = int(self._tied_start[slot])
        if start + int(self._tied_count[slot]) != self._tied_used:
            start = self._tied_used  # its earlier run is not the last one: a new run
        self._tied = grown(self._tied, start, start + len(tied))
        self._tied[start : start + len(tied)] = tied
        self._tied_used = start + len(tied)
        self._tied_start[slot] = start
        self._tied_count[slot] = len(tied)

    def _put_means(self, slot: int, functions: dict[str, tuple[float, int]]) -> None:
        """Each reward function's mean at this step, a float column per function."""
        for name, column in self._means.items():
            if slot < column.shape[0] and name not in functions:
                column[slot] = math.nan
        for name, (total, count) in functions.items():
            held = self._means.get(name)
            if held is None or held.shape[0] <= slot:
                bigger = np.full(max(_FIRST_CAPACITY, 2 * (slot + 1)), math.nan)
                if held is not None:
                    bigger[: held.shape[0]] = held
                held = self._means[name] = bigger
            held[slot] = total / count

    def summary(self, lines: int, low: float, high: float, format_seen: bool) -> CompletionsSummary:
        """Every step with statistics, oldest first, judged against the totals observed so
        far (`low`, `high`) and whether any completion used a format marker."""
        count = self.count
        judged_for = (low, high, format_seen)
        if judged_for != self._judged_for:
            if self._judged_for is not None:
                self.revision += 1
            self._judged_for = judged_for
            stale = np.arange(count, dtype=np.int64)
        else:
            stale = np.array(sorted(self._dirty) + list(range(self._clean, count)), dtype=np.int64)
        if stale.size:
            self._judge(stale, low, high, format_seen)
        self._dirty.clear()
        self._clean = count
        known = self._stats[:count, _COL["groups"]] > 0
        means = {}
        for name, column in self._means.items():
            padded = np.full(count, math.nan)
            used = min(count, column.shape[0])
            padded[:used] = column[:used]
            means[name] = padded[known]
        return CompletionsSummary(
            lines=lines,
            steps=StepColumns(self._stats[:count][known]),  # a copy: never written again
            revision=self.revision,
            function_means=means,
        )

    def _judge(self, slots: np.ndarray, low: float, high: float, format_seen: bool) -> None:
        """Write the judged columns of these slots, vectorised (a revision judges all)."""
        width = slots.size
        groups = self._stats[slots, _COL["groups"]]
        completions = self._stats[slots, _COL["completions"]]
        tied = self._tied_count[slots]
        # groups scoring 0 on every function fail whatever the range: counted as they are
        at_low: np.ndarray = self._all_zero[slots].copy()
        at_high: np.ndarray = np.zeros(width)
        if tied.any() and high > low:
            # every tied total of these slots: its slot's run in the flat array
            firsts = np.cumsum(tied) - tied
            where = np.repeat(self._tied_start[slots] - firsts, tied) + np.arange(tied.sum())
            values = self._tied[where]
            tolerance = TIE_TOLERANCE * max(1.0, abs(low), abs(high))
            owner = np.repeat(np.arange(width), tied)
            with np.errstate(over="ignore", invalid="ignore"):  # huge logged totals: inf
                bottom, top = np.abs(values - low) <= tolerance, np.abs(values - high) <= tolerance
            at_low += np.bincount(owner, weights=bottom, minlength=width)
            at_high = np.bincount(owner, weights=top, minlength=width)
        judged = np.empty((width, 3))
        with np.errstate(divide="ignore", invalid="ignore"):
            judged[:, 0] = at_low / groups
            judged[:, 1] = at_high / groups
            judged[:, 2] = self._follows[slots] / completions if format_seen else math.nan
        self._stats[np.ix_(slots, _JUDGED)] = judged
