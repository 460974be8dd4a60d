"""One metric's values over the store's rows, held densely, as scaled decimals, or sparsely.

A metric logged on most lines (loss, reward) is a float64 array over every row, NaN where
a line did not log it. A metric logged on few lines (an eval metric every 50 steps, a
reward function that stopped) would be mostly NaN that way: 8 bytes per row of the run
for a value every fiftieth row. It is held as its logged rows and values instead (12 bytes
per value). A metric whose every value has a few decimals (ms-swift rounds what it logs
to 8; lengths, counts and fractions of a group have fewer) is held as 32-bit integers of
its last decimal: 4 bytes a row, and each value read back is the very float the line
held (checked value by value before, and at every write: a value that does not fit turns
the column back into floats). The store picks the shape by how many rows log the metric
and what they logged (`MetricStore`'s `fit`); all three answer the same questions, so
nothing above the store knows which it holds.

The scaled shape earns its lines: a log of 100 000 ms-swift steps × 60 metrics read, the
app holds 113.4-113.6 MB (3 runs), and 137.9-138.2 MB with float64 and sparse cells alone,
past the 130 MB it is meant to stay under (bench/footprint.py, side by side, 2026-12-06).
"""

from __future__ import annotations

import numpy as np

#: sparse arrays grow by this factor (as the store's rows do): a few copies, little slack
_GROWTH = 1.25
#: a sparse metric's rows: 32 bits (a log of 2**31 lines is not in sight), 12 bytes a value
_ROW = np.int32


class DenseCells:
    """A value per row (NaN = not logged), `capacity` rows long."""

    __slots__ = ("values",)

    def __init__(self, capacity: int) -> None:
        self.values = np.full(capacity, np.nan)

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)

    def get(self, row: int) -> float:
        return float(self.values[row])

    def take(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.values[rows])

    def segment(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as an array (a view: callers do not write into it)."""
        return self.values[start:stop]

    def logged(self, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, values) of the first `n_rows` rows that hold a value (NaN aside)."""
        vals = self.values[:n_rows]
        rows = np.flatnonzero(~np.isnan(vals))
        return rows, vals[rows]

    def put(self, rows: np.ndarray, values: np.ndarray) -> None:
        self.values[rows] = values

    def clear(self, start: int, stop: int) -> None:
        self.values[start:stop] = np.nan

    def resize(self, capacity: int) -> None:
        self.values = _resized(self.values, capacity, np.nan)


class SparseCells:
    """The rows that hold a value and their values, in row order."""

    __slots__ = ("_rows", "_size", "_values")

    def __init__(self, rows: np.ndarray | None = None, values: np.ndarray | None = None) -> None:
        self._rows = np.empty(0, _ROW) if rows is None else rows.astype(_ROW)
        self._values = np.empty(0) if values is None else values.astype(np.float64)
        self._size = int(self._rows.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self._rows.nbytes + self._values.nbytes)

    @property
    def rows(self) -> np.ndarray:
        return self._rows[: self._size]

    @property
    def values(self) -> np.ndarray:
        return self._values[: self._size]

    def get(self, row: int) -> float:
        rows = self.rows
        at = int(np.searchsorted(rows, row))
        return float(self._values[at]) if at < self._size and rows[at] == row else float("nan")

    def take(self, rows: np.ndarray) -> np.ndarray:
        if self._size == 0:
            return np.full(rows.shape, np.nan)
        held = self.rows
        at = np.minimum(np.searchsorted(held, rows), self._size - 1)
        return np.where(held[at] == rows, self._values[at], np.nan)

    def segment(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as a new dense array (NaN where not logged)."""
        out = np.full(max(stop - start, 0), np.nan)
        rows = self.rows
        lo, hi = np.searchsorted(rows, [start, stop])
        out[rows[lo:hi] - start] = self._values[lo:hi]
        return out

    def logged(self, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
        rows = self.rows
        hi = int(np.searchsorted(rows, n_rows))
        keep = ~np.isnan(self._values[:hi])
        return rows[:hi][keep], self._values[:hi][keep]

    def put(self, rows: np.ndarray, values: np.ndarray) -> None:
        """Write values into rows that hold nothing yet (increasing rows)."""
        n = int(rows.shape[0])
        if n == 0:
            return
        if self._size == 0 or rows[0] > self._rows[self._size - 1]:
            self._reserve(self._size + n)  # appending: the live path
            self._rows[self._size : self._size + n] = rows
            self._values[self._size : self._size + n] = values
            self._size += n
            return
        # a row between held ones (a derived value written into an older row): merge
        merged_rows = np.concatenate([self.rows, rows.astype(_ROW)])
        order = np.argsort(merged_rows, kind="stable")
        self._rows = merged_rows[order]
        self._values = np.concatenate([self.values, values])[order]
        self._size = int(self._rows.shape[0])

    def clear(self, start: int, stop: int) -> None:
        rows = self.rows
        lo, hi = (int(i) for i in np.searchsorted(rows, [start, stop]))
        if hi == lo:
            return
        kept = self._size - (hi - lo)
        self._rows[lo:kept] = self._rows[hi : self._size].copy()
        self._values[lo:kept] = self._values[hi : self._size].copy()
        self._size = kept

    def resize(self, capacity: int) -> None:
        """Rows are not held by position: only slack is given back (`compact`)."""
        if self._rows.shape[0] > self._size:
            self._rows = self._rows[: self._size].copy()
            self._values = self._values[: self._size].copy()

    def _reserve(self, size: int) -> None:
        if size <= self._rows.shape[0]:
            return
        capacity = max(size, int(self._rows.shape[0] * _GROWTH) + 16)
        rows = np.empty(capacity, _ROW)
        values = np.empty(capacity)
        rows[: self._size] = self.rows
        values[: self._size] = self.values
        self._rows, self._values = rows, values


class ScaledCells:
    """A value per row as an int32 multiple of 10**-decimals (`_GAP` = not logged)."""

    __slots__ = ("ints", "scale")

    #: not logged, or a logged NaN (the store keeps those rows apart)
    _GAP = np.iinfo(np.int32).min
    #: the largest integer held (the gap's neighbours are kept clear of it)
    _TOP = np.iinfo(np.int32).max - 1

    def __init__(self, capacity: int, decimals: int) -> None:
        self.scale = 10.0**decimals
        self.ints = np.full(capacity, self._GAP, dtype=np.int32)

    @classmethod
    def decimals_of(cls, values: np.ndarray, most: int = 9) -> int | None:
        """The fewest decimals (≤ `most`) that hold every value exactly as an int32 (NaN
        aside), or None: ±Infinity, too many decimals, or too big."""
        return next((d for d in range(most + 1) if _held_at(values, 10.0**d)), None)

    def fits(self, values: np.ndarray) -> bool:
        """Every value (NaN aside) is held exactly at this column's decimals."""
        return _held_at(values, self.scale)

    @property
    def nbytes(self) -> int:
        return int(self.ints.nbytes)

    def _floats(self, ints: np.ndarray) -> np.ndarray:
        out = ints / self.scale
        out[ints == self._GAP] = np.nan
        return out

    def get(self, row: int) -> float:
        value = int(self.ints[row])
        return float("nan") if value == self._GAP else value / self.scale

    def take(self, rows: np.ndarray) -> np.ndarray:
        return self._floats(self.ints[rows])

    def segment(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as a new float array."""
        return self._floats(self.ints[start:stop])

    def logged(self, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
        ints = self.ints[:n_rows]
        rows = np.flatnonzero(ints != self._GAP)
        return rows, ints[rows] / self.scale

    def put(self, rows: np.ndarray, values: np.ndarray) -> None:
        """Write values that `fits` said fit (NaN: a gap)."""
        ints = np.full(values.shape, self._GAP, dtype=np.int32)
        held = ~np.isnan(values)
        ints[held] = np.round(values[held] * self.scale)
        self.ints[rows] = ints

    def clear(self, start: int, stop: int) -> None:
        self.ints[start:stop] = self._GAP

    def resize(self, capacity: int) -> None:
        self.ints = _resized(self.ints, capacity, self._GAP)


def _resized(array: np.ndarray, capacity: int, fill: float) -> np.ndarray:
    """`array` cut or padded with `fill` to `capacity` (a copy, unless it is that long)."""
    old = array.shape[0]
    if capacity > old:
        return np.concatenate([array, np.full(capacity - old, fill, array.dtype)])
    return array[:capacity].copy() if capacity < old else array


def _held_at(values: np.ndarray, scale: float) -> bool:
    """Every value (NaN aside) is an int32 over `scale`, read back bit for bit (so -0.0,
    ms-swift's rounded tiny negative loss, is not read back as 0.0). Exact where it holds:
    IEEE division rounds correctly and 10**k (k ≤ 22) is exact, so an integer over 10**k
    is the float the same decimal text parses to."""
    held = values[~np.isnan(values)]
    if not np.isfinite(held).all():
        return False
    scaled = np.round(held * scale)
    if np.abs(scaled).max(initial=0) > ScaledCells._TOP:
        return False
    read_back = scaled.astype(np.int64) / scale
    return bool(np.array_equal(read_back.view(np.int64), held.view(np.int64)))


def to_scaled(cells: DenseCells, decimals: int) -> ScaledCells:
    scaled = ScaledCells(cells.values.shape[0], decimals)
    scaled.put(np.arange(cells.values.shape[0]), cells.values)
    return scaled


def to_floats(cells: ScaledCells) -> DenseCells:
    dense = DenseCells(0)
    dense.values = cells.segment(0, cells.ints.shape[0])
    return dense


def to_sparse(cells: DenseCells | ScaledCells, n_rows: int) -> SparseCells:
    rows, values = cells.logged(n_rows)
    return SparseCells(rows, values)


def to_dense(cells: SparseCells, capacity: int) -> DenseCells:
    dense = DenseCells(capacity)
    dense.put(cells.rows, cells.values)
    return dense
