"""The records sources hand to the run: one canonical metric row per log line."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class LineKind(enum.IntEnum):
    """What a log line is. The value is stored per row in the metric store."""

    TRAIN = 0
    EVAL = 1
    END = 2  # end-of-train line (`train_runtime`)
    SUMMARY = 3  # final summary (`log_history`): marks the run finished, not a metric row


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

    records: list[Record] = field(default_factory=list)
    bad_lines: list[BadLine] = field(default_factory=list)
    #: a source restarted (truncated, replaced, re-created, a newer run dir); human text
    events: list[str] = field(default_factory=list)
    #: the summary line arrived: the run ended (or crashed: ms-swift writes it in `finally`)
    finished: bool = False
    #: a new generation of the metrics file started (truncation/replacement): older rows stay,
    #: re-logged steps replace them
    restarted: bool = False

    def __bool__(self) -> bool:
        return bool(self.records or self.bad_lines or self.events or self.finished)
