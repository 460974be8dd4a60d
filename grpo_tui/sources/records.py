"""The records sources hand to the run: one canonical metric row per log line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from grpo_tui.vocabulary import LineKind


@dataclass(slots=True)
class Record:
    """One log line, with its keys mapped onto canonical metric names.

    `values` holds only what the line logged: a metric absent from the line is absent
    here (the store records it as NaN, "not logged", never 0).
    """

    kind: LineKind
    step: float
    values: dict[str, float]
    #: canonical name -> the key it came from in the line (for `inspect`)
    source_keys: dict[str, str] = field(default_factory=dict)
    max_steps: int | None = None
    #: which file and line it came from (1-based line number), for messages
    origin: str = ""
    line_no: int = 0


@dataclass(slots=True)
class ColumnGroup:
    """Rows of a block that share one key shape: their numbers as a matrix."""

    #: row positions inside the block
    rows: np.ndarray
    columns: tuple[str, ...]
    #: canonical name -> the key it came from
    source_keys: Mapping[str, str]
    #: shape (len(rows), len(columns)); NaN where a line logged NaN
    values: np.ndarray


@dataclass(slots=True)
class RowBlock:
    """Many lines in matrix form: the fast path from a backfill or a burst of lines into
    the store (one numpy write per column and shape instead of one per value)."""

    kinds: np.ndarray
    steps: np.ndarray
    groups: list[ColumnGroup]
    max_steps: int | None = None

    def __len__(self) -> int:
        return int(self.steps.shape[0])

    @classmethod
    def of(cls, records: list[Record]) -> RowBlock:
        """Records as a block (one column group per record): tests and small writers."""
        groups = [
            ColumnGroup(
                np.array([i]),
                tuple(r.values),
                r.source_keys,
                np.array([list(r.values.values())], dtype=float),
            )
            for i, r in enumerate(records)
            if r.values
        ]
        kinds = np.array([int(r.kind) for r in records], dtype=np.uint8)
        steps = np.array([float(r.step) for r in records], dtype=np.float64)
        max_steps = next((r.max_steps for r in reversed(records) if r.max_steps), None)
        return cls(kinds, steps, groups, max_steps)

    def record(self, index: int) -> Record:
        """Row `index` as a Record (the slow path, for a row that replaces an earlier one)."""
        values: dict[str, float] = {}
        keys: dict[str, str] = {}
        for group in self.groups:
            pos = int(np.searchsorted(group.rows, index))
            if pos < group.rows.shape[0] and group.rows[pos] == index:
                values.update(zip(group.columns, group.values[pos].tolist()))
                keys.update(group.source_keys)
        return Record(
            LineKind(int(self.kinds[index])), float(self.steps[index]), values, keys, self.max_steps
        )

    def records(self) -> list[Record]:
        """One Record per row."""
        values: list[dict[str, float]] = [{} for _ in range(len(self))]
        keys: list[dict[str, str]] = [{} for _ in range(len(self))]
        for group in self.groups:
            for pos, row in zip(group.rows.tolist(), group.values.tolist()):
                values[pos].update(zip(group.columns, row))
                keys[pos].update(group.source_keys)
        return [
            Record(LineKind(int(kind)), float(step), vals, src, self.max_steps)
            for kind, step, vals, src in zip(self.kinds, self.steps, values, keys)
        ]


@dataclass(slots=True, frozen=True)
class BadLine:
    """A line that could not be used: counted and shown, never fatal."""

    origin: str
    line_no: int
    reason: str
    excerpt: str


@dataclass(slots=True)
class Batch:
    """What one poll of the sources produced, handed to the run in one go."""

    #: the lines read, in matrix form (the one way rows reach the store)
    blocks: list[RowBlock] = field(default_factory=list)
    bad_lines: list[BadLine] = field(default_factory=list)
    #: a source restarted (truncated, replaced, re-created, a newer run dir); human text
    events: list[str] = field(default_factory=list)
    #: the summary line arrived: the run ended (or crashed: ms-swift writes it in `finally`)
    finished: bool = False
    #: a new generation of the metrics file started (truncation/replacement): older rows stay,
    #: re-logged steps replace them
    restarted: bool = False

    def __bool__(self) -> bool:
        return bool(self.blocks or self.bad_lines or self.events or self.finished)

    def rows(self) -> int:
        return sum(len(block) for block in self.blocks)

    def extend(self, other: Batch) -> None:
        self.blocks.extend(other.blocks)
        self.bad_lines.extend(other.bad_lines)
        self.events.extend(other.events)
        self.finished = self.finished or other.finished
        self.restarted = self.restarted or other.restarted
