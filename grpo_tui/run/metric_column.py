"""One metric's column in the store: its values over the rows (dense, scaled decimals or
sparse: run/cells.py) and the per-block summaries at two sizes (`FINE`, `BLOCK` rows)
that keep a screen-sized view's cost bounded however long the run (run/metrics.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from grpo_tui.run.cells import (
    DenseCells,
    ScaledCells,
    SparseCells,
    to_dense,
    to_floats,
    to_scaled,
    to_sparse,
)

#: rows summarised per coarse block; 256 keeps the summaries at ~2% of the column's memory
BLOCK = 256
#: rows per fine block: medium runs (up to 2 × BLOCK rows per bucket) are bucketed from these
FINE = 16
#: a column whose values all have at most this many decimals is held as scaled int32
#: (ms-swift logs 8)
MAX_DECIMALS = 9


class BlockSummaries:
    """(count, sum, min, max, last row) of every `size` rows of a column, built when first
    read and rebuilt for the blocks whose rows changed since (`stale`)."""

    __slots__ = ("count", "last", "max", "min", "size", "stale_start", "stale_stop", "sum")

    def __init__(self, size: int) -> None:
        self.size = size
        self.min = np.empty(0)
        self.max = np.empty(0)
        self.sum = np.empty(0)
        # 32-bit counts and rows: a fifth less memory than 64-bit (a log of 2**31 lines is
        # not in sight), and the fine summaries of a million-row run are ~80 MB
        self.count = np.empty(0, dtype=np.int32)
        self.last = np.empty(0, dtype=np.int32)  # row of the last finite value
        #: rows [stale_start, stale_stop) changed since the summaries were built
        self.stale_start = 0
        self.stale_stop = 0

    def mark_stale(self, start: int, stop: int) -> None:
        if self.stale_stop <= self.stale_start:
            self.stale_start, self.stale_stop = start, stop
        else:
            self.stale_start = min(self.stale_start, start)
            self.stale_stop = max(self.stale_stop, stop)

    def read(
        self, segment: Callable[[int, int], np.ndarray], n_rows: int
    ) -> tuple[np.ndarray, ...]:
        """(count, sum, min, max, last row) of every block of the first `n_rows` rows,
        brought up to date first (the caller holds the store's lock)."""
        size = self.size
        nblocks = -(-max(n_rows, self.stale_stop) // size)
        extra = nblocks - self.min.shape[0]
        if extra > 0:
            self.min = np.concatenate([self.min, np.full(extra, np.nan)])
            self.max = np.concatenate([self.max, np.full(extra, np.nan)])
            self.sum = np.concatenate([self.sum, np.zeros(extra)])
            self.count = np.concatenate([self.count, np.zeros(extra, dtype=np.int32)])
            self.last = np.concatenate([self.last, np.full(extra, -1, dtype=np.int32)])
        if self.stale_stop > self.stale_start:
            self._rebuild(segment, self.stale_start, self.stale_stop)
            self.stale_start = self.stale_stop = 0
        used = -(-n_rows // size)
        return tuple(
            array[:used] for array in (self.count, self.sum, self.min, self.max, self.last)
        )

    def _rebuild(self, segment: Callable[[int, int], np.ndarray], start: int, stop: int) -> None:
        """Recompute the summaries of every block that rows [start, stop) touch."""
        size = self.size
        b0, b1 = start // size, -(-stop // size)
        seg = segment(b0 * size, b1 * size)
        if seg.shape[0] < (b1 - b0) * size:
            seg = np.concatenate([seg, np.full((b1 - b0) * size - seg.shape[0], np.nan)])
        seg = seg.reshape(b1 - b0, size)
        finite = np.isfinite(seg)
        count = finite.sum(axis=1)
        self.count[b0:b1] = count
        # summaries are of finite values only (a logged ±inf is kept apart, as in `put`)
        self.min[b0:b1] = np.where(count > 0, np.where(finite, seg, np.inf).min(axis=1), np.nan)
        self.max[b0:b1] = np.where(count > 0, np.where(finite, seg, -np.inf).max(axis=1), np.nan)
        self.sum[b0:b1] = np.where(finite, seg, 0.0).sum(axis=1)
        last = size - 1 - np.argmax(finite[:, ::-1], axis=1)
        self.last[b0:b1] = np.where(count > 0, b0 * size + np.arange(b1 - b0) * size + last, -1)


class MetricColumn:
    """One metric: its values over the rows plus per-block summaries at two sizes."""

    __slots__ = (
        "cells",
        "coarse",
        "fine",
        "finite_count",
        "floats_only",
        "last_row",
        "lock",
        "logged_count",
        "nonfinite_rows",
        "source_key",
    )

    def __init__(
        self, capacity: int, source_key: str, lock: threading.Lock, *, sparse: bool = False
    ) -> None:
        self.cells: DenseCells | ScaledCells | SparseCells = (
            SparseCells() if sparse else DenseCells(capacity)
        )
        #: a value was logged that no scaled decimal holds (full precision, ±Infinity):
        #: the column stays float64 (not looked at again at every growth)
        self.floats_only = False
        # the summaries are built when a view first needs them (`summaries`): most columns
        # of a long backfill are never drawn bucketed, and a short run never
        self.fine = BlockSummaries(FINE)
        self.coarse = BlockSummaries(BLOCK)
        #: the store's: writers mark rows stale under it, `summaries` builds under it (the
        #: diagnosis worker and the screen may both ask while the reader appends)
        self.lock = lock
        self.finite_count = 0
        self.logged_count = 0
        self.last_row = -1  # last row holding a finite value
        #: rows where the line logged NaN / Infinity (kept apart: a logged NaN is news,
        #: "not logged" is not)
        self.nonfinite_rows: list[int] = []
        self.source_key = source_key

    def fit(
        self,
        n_rows: int,
        capacity: int,
        sparse_below: float,
        dense_above: float,
        max_decimals: int = MAX_DECIMALS,
    ) -> None:
        """Hold the values in the shape their density and digits call for, `capacity` rows
        long."""
        cells = self.cells
        if isinstance(cells, SparseCells):
            if self.logged_count <= dense_above * n_rows:
                cells.resize(capacity)
                return
            cells = self.cells = to_dense(cells, capacity)
        elif self.logged_count < sparse_below * n_rows:
            self.cells = to_sparse(cells, n_rows)
            return
        cells.resize(capacity)
        if isinstance(cells, DenseCells) and not self.floats_only and max_decimals >= 0:
            decimals = ScaledCells.decimals_of(cells.segment(0, n_rows), max_decimals)
            if decimals is None:
                self.floats_only = True
            else:
                self.cells = to_scaled(cells, decimals)

    def _hold(self, values: np.ndarray) -> None:
        """Values about to be written that scaled decimals cannot hold turn the column
        back into floats (one copy; the next `fit` may find more decimals that do)."""
        cells = self.cells
        if isinstance(cells, ScaledCells) and not cells.fits(values):
            self.cells = to_floats(cells)

    def mark_stale(self, start: int, stop: int) -> None:
        """Rows [start, stop) changed: their blocks' summaries are rebuilt when next read."""
        with self.lock:
            self.fine.mark_stale(start, stop)
            self.coarse.mark_stale(start, stop)

    def summaries(self, n_rows: int, size: int = BLOCK) -> tuple[np.ndarray, ...]:
        """(count, sum, min, max, last row) of every `size`-row block (FINE or BLOCK) of
        the first `n_rows` rows, brought up to date first."""
        level = self.fine if size == FINE else self.coarse
        with self.lock:
            return level.read(self.cells.segment, n_rows)

    def put(self, row: int, value: float) -> None:
        """Write a value into a row that holds nothing for this column yet."""
        self.put_many(np.array([row]), np.array([value]))

    def put_many(self, rows: np.ndarray, values: np.ndarray) -> None:
        """Write values into rows that hold nothing for this column yet (increasing rows)."""
        self._hold(values)
        self.cells.put(rows, values)
        self.mark_stale(int(rows[0]), int(rows[-1]) + 1)
        finite = np.isfinite(values)
        n_finite = int(finite.sum())
        self.finite_count += n_finite
        self.logged_count += int(values.shape[0])
        if n_finite < values.shape[0]:
            added = rows[~finite].tolist()  # increasing: a group's rows are
            in_order = not self.nonfinite_rows or self.nonfinite_rows[-1] < added[0]
            self.nonfinite_rows.extend(added)
            if not in_order:  # an earlier row (another group of the block, a derived value)
                self.nonfinite_rows.sort()  # kept in row order: latest() takes the last
        if n_finite:
            self.last_row = max(self.last_row, int(rows[finite].max()))

    def clear_row(self, row: int) -> None:
        """Forget the row's value, if it holds one."""
        if not np.isnan(self.cells.get(row)) or row in self.nonfinite_rows:
            self.clear_rows(row, row + 1)

    def clear_rows(self, start: int, stop: int) -> None:
        """Forget rows [start, stop) and rebuild the summaries they touched."""
        finite = np.isfinite(self.cells.segment(start, stop))
        self.finite_count -= int(finite.sum())
        removed_nonfinite = [r for r in self.nonfinite_rows if start <= r < stop]
        self.logged_count -= int(finite.sum()) + len(removed_nonfinite)
        if removed_nonfinite:
            self.nonfinite_rows = [r for r in self.nonfinite_rows if not start <= r < stop]
        self.cells.clear(start, stop)
        self.mark_stale(start, stop)
        if start <= self.last_row < stop:
            rows, values = self.cells.logged(start)
            finite_rows = rows[np.isfinite(values)]
            self.last_row = int(finite_rows[-1]) if finite_rows.size else -1
