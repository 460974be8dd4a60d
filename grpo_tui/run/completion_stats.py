"""What the logged completions say, summarised for health (run/completions/ builds it).

Kept in its own module so the health engine depends on these plain types only, not on how
completions files are indexed and parsed.

A run logs a step's completions tens of thousands of times, so the summary keeps its steps
as columns (`StepColumns`: one float row per step) and builds a `StepSampleStats` only
when one step is looked at.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import overload

import numpy as np


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
    #: mean over groups of distinct-n (unique character shingles / all shingles across the
    #: group's completions; text_stats.py)
    distinct_2: float
    #: mean over groups of the mean pairwise Jaccard overlap of character shingle sets
    #: (1 = identical)
    pairwise_overlap: float
    #: fraction of completions that follow the expected tag format, None when no format is recognisable
    format_rate: float | None
    #: fraction of completions that look cut off (an opened tag never closed), None when unknown
    truncated_rate: float | None
    #: mean share of repeated character shingles inside a completion (0 = no loops)
    repetition: float = 0.0
    #: mean over groups of the std of their total rewards (GRPO's advantage scale), None
    #: when no group had a known total
    group_std: float | None = None
    #: fraction of completions that are at most one token once role prefixes and template
    #: markers are left out (empty ones included): no answer at all in a reasoning task
    one_token: float = 0.0


#: the columns of a StepColumns row, in StepSampleStats' field order
STEP_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(StepSampleStats))
STEP_COLUMN = {name: position for position, name in enumerate(STEP_FIELDS)}


def _row_of(stats: StepSampleStats) -> list[float]:
    return [math.nan if (value := getattr(stats, name)) is None else value for name in STEP_FIELDS]


def _stats_of(row: list[float]) -> StepSampleStats:
    step, groups, completions, zero, fail, passed, d2, overlap, fmt, cut, rep, std, one = row
    return StepSampleStats(
        step,
        int(groups),
        int(completions),
        zero,
        fail,
        passed,
        d2,
        overlap,
        None if math.isnan(fmt) else fmt,
        None if math.isnan(cut) else cut,
        rep,
        None if math.isnan(std) else std,
        one,
    )


#: steps built at a time when a StepColumns is iterated
_ITER_CHUNK = 1024


class StepColumns(Sequence[StepSampleStats]):
    """Per-step statistics, oldest first: one float64 row per step (columns in STEP_FIELDS
    order, None as NaN). Indexing builds a StepSampleStats; slicing and `select` give
    StepColumns over the same matrix, which is never written once handed in."""

    __slots__ = ("_matrix", "_rows")

    def __init__(self, matrix: np.ndarray, rows: np.ndarray | None = None) -> None:
        """`matrix`: shape (steps, len(STEP_FIELDS)); of its rows, `rows` in order (all
        when None)."""
        self._matrix = matrix
        self._rows = rows

    @staticmethod
    def of(stats: Iterable[StepSampleStats]) -> StepColumns:
        rows = [_row_of(s) for s in stats]
        data = np.array(rows, dtype=np.float64) if rows else np.empty((0, len(STEP_FIELDS)))
        return StepColumns(data)

    def __len__(self) -> int:
        return int(self._matrix.shape[0] if self._rows is None else self._rows.shape[0])

    @overload
    def __getitem__(self, index: int) -> StepSampleStats: ...

    @overload
    def __getitem__(self, index: slice) -> StepColumns: ...

    def __getitem__(self, index: int | slice) -> StepSampleStats | StepColumns:
        if isinstance(index, slice):
            return self._subset(np.arange(len(self), dtype=np.int64)[index])
        count = len(self)
        position = index + count if index < 0 else index
        if not 0 <= position < count:
            raise IndexError(f"step {index} out of range ({count} steps)")
        if self._rows is not None:
            position = int(self._rows[position])
        row: list[float] = self._matrix[position].tolist()
        return _stats_of(row)

    def __iter__(self) -> Iterator[StepSampleStats]:
        # a chunk at a time: a long run's steps as Python objects all at once would be big
        matrix = self.matrix()
        for start in range(0, len(matrix), _ITER_CHUNK):
            chunk: list[list[float]] = matrix[start : start + _ITER_CHUNK].tolist()
            yield from map(_stats_of, chunk)

    def __eq__(self, other: object) -> bool:
        """The same steps with the same values (NaN equals NaN, None is NaN)."""
        if not isinstance(other, StepColumns):
            return NotImplemented
        return bool(np.array_equal(self.matrix(), other.matrix(), equal_nan=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StepColumns({len(self)} steps)"

    def _subset(self, positions: np.ndarray) -> StepColumns:
        rows = positions if self._rows is None else self._rows[positions]
        return StepColumns(self._matrix, rows)

    def matrix(self) -> np.ndarray:
        """Every step's row, shape (len, len(STEP_FIELDS))."""
        if self._rows is None:
            return self._matrix
        taken: np.ndarray = self._matrix[self._rows]
        return taken

    def column(self, name: str) -> np.ndarray:
        """One field over the steps, as float64 (None as NaN)."""
        values: np.ndarray = self._matrix[:, STEP_COLUMN[name]]
        return values if self._rows is None else values[self._rows]

    def select(self, keep: np.ndarray) -> StepColumns:
        """The steps where the boolean mask `keep` is true."""
        return self._subset(np.flatnonzero(keep))

    def upto(self, step: float) -> StepColumns:
        """The steps at or before `step` (in file order)."""
        return self.select(self.column("step") <= step)


@dataclass(frozen=True, slots=True)
class CompletionsSummary:
    """Samples over the run: the early and recent windows and every step in between."""

    #: completions lines read (each a log call's batch of rollouts)
    lines: int
    #: per logged step, oldest first (eval rollouts excluded where they can be told apart);
    #: always a StepColumns once built (a sequence of StepSampleStats is converted)
    steps: Sequence[StepSampleStats]
    #: changes whenever earlier steps were re-judged (e.g. a new highest total moves what
    #: counts as all-pass) or the file started over: earlier copies are stale
    revision: int = 0
    #: reward function → its mean over each step's completions, aligned with `steps`
    #: (NaN where a step did not log it)
    function_means: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.steps, StepColumns):
            object.__setattr__(self, "steps", StepColumns.of(self.steps))

    @property
    def columns(self) -> StepColumns:
        """The steps as columns (what `steps` holds)."""
        steps = self.steps
        assert isinstance(steps, StepColumns)
        return steps
