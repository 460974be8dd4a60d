"""What the completions index hands out (LineInfo, Page, IndexState, SearchHit) and what
it keeps per batch: one row of a structured numpy array (`ENTRY`, about 60 bytes a batch,
no Python object per batch: a 2 GB file of small batches holds hundreds of thousands) and
the map from step labels to the slots of their steps."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from grpo_tui.run.completions.groups import Group
from grpo_tui.run.completions.summary import grown
from grpo_tui.sources.records import CompletionShape

EntryKind = Literal["new", "repeat", "eval_or_end", "eval"]
_LEADING_NUMBER = re.compile(r"\s*(-?\d+(?:\.\d+)?)")


# --------------------------------------------------------------------------- public types


@dataclass(frozen=True, slots=True)
class LineInfo:
    """What the index knows about one entry without parsing it again."""

    index: int
    #: line number (1-based) of the entry's first line in the current file
    line_no: int
    #: step label of the newest row ("6"), as logged
    step: str
    #: distinct step labels of its rows (a few), in order
    steps: tuple[str, ...]
    rows: int
    shape: CompletionShape
    #: "new" rollouts, a "repeat" of the previous line, the "eval_or_end" line of a step,
    #: or "eval" rollouts (the metrics log has an eval line at its step; module docstring)
    kind: EntryKind
    #: lists of unequal length were cut to the shortest (the line is kept)
    malformed: bool
    #: prompt groups (None until the entry was tallied)
    groups: int | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Page:
    """One entry's groups, as the completions panel shows them."""

    info: LineInfo
    groups: tuple[Group, ...]
    #: read from the end of a file not indexed that far yet (`info.index` is a guess)
    preview: bool = False


@dataclass(frozen=True, slots=True)
class IndexState:
    """What the index holds, as of one poll: a copy the screen reads without the lock
    (the reader thread may hold it for a whole chunk while it indexes a backlog)."""

    lines: int
    #: the newest entry worth showing (None before any), and how many are worth showing
    newest_entry: int | None
    shown_entries: int
    previewing: bool
    #: bytes indexed, bytes in the file
    progress: tuple[int, int]
    file_exists: bool
    bad_line_count: int
    #: why the file cannot be read (a FIFO skipped, permission denied), None when it can
    problem: str | None = None
    #: prompt groups in the tallied entries worth showing (what "N new groups" counts)
    shown_groups: int = 0
    #: batches kept although their lists had unequal lengths (cut to the shortest)
    cut_batches: int = 0


@dataclass(frozen=True, slots=True)
class SearchHit:
    """Where a search found its text, or how far it looked."""

    #: entry and group index of the match; None when nothing matched in what was searched
    entry: int | None
    group: int | None
    #: entries parsed
    searched: int
    #: every entry in the direction was searched (no match means there is none)
    exhausted: bool


# --------------------------------------------------------------------------- the entries


#: an entry's kind and shape as the uint8 codes it keeps: their place in these tuples
KINDS: tuple[EntryKind, ...] = get_args(EntryKind)
SHAPES: tuple[CompletionShape, ...] = get_args(CompletionShape)
KIND_CODE: dict[str, int] = {kind: code for code, kind in enumerate(KINDS)}
SHAPE_CODE: dict[str, int] = {shape: code for code, shape in enumerate(SHAPES)}
REPEAT = KIND_CODE["repeat"]
NEW = KIND_CODE["new"]
EVAL_OR_END = KIND_CODE["eval_or_end"]
EVAL = KIND_CODE["eval"]

#: the fields of an index entry (a batch)
ENTRY = np.dtype(
    [
        # the source's reference to read it again (BatchRef)
        ("ref", np.int64, (2,)),
        ("line_no", np.int64),
        ("rows", np.int32),
        # the number the newest row's step label starts with (NaN: none); see step_key
        ("step", np.float64),
        ("kind", np.uint8),
        ("shape", np.uint8),
        ("malformed", np.bool_),
        # written a line per completion: never a repeat, and its digest is not kept
        ("growing", np.bool_),
        # 64-bit digest of the rollouts (see groups.content_hash)
        ("content_hash", np.int64),
        # the step slot it counts towards (-1: none, for repeats and eval/end batches)
        ("slot", np.int32),
        # its groups were counted (false while a growing batch grows, or its re-read failed)
        ("tallied", np.bool_),
        ("groups", np.int32),
        ("zero_spread_groups", np.int32),
    ]
)


def decimal_label(number: float) -> str:
    """How a step number is usually written ("6", "6.5")."""
    return str(int(number)) if number.is_integer() else repr(number)


def step_key(label: str) -> tuple[float, bool]:
    """The number a step label starts with ("12", "12/500" → 12.0; else NaN), and whether
    the label is just its decimal (then the number alone stands for the label)."""
    match = _LEADING_NUMBER.match(label)
    number = float(match.group(1)) if match else math.nan
    return number, not math.isnan(number) and decimal_label(number) == label


class StepMap:
    """Step label → the slot of its step (-1: seen, counting towards no step).

    Labels that are the decimal of their number ("6") are kept as that number in a sorted
    array (steps mostly rise: an append), other labels in a dict: a dict of every label
    would cost more than the entries themselves on a file of small batches.
    """

    __slots__ = ("_count", "_last", "_numbers", "_odd", "_slots")

    def __init__(self) -> None:
        self._numbers = np.empty(0, dtype=np.float64)
        self._slots = np.empty(0, dtype=np.int32)
        self._count = 0
        self._last = -math.inf
        self._odd: dict[str, int] = {}

    def _find(self, number: float) -> tuple[int, bool]:
        if number > self._last:
            return self._count, False
        position = int(np.searchsorted(self._numbers[: self._count], number))
        return position, position < self._count and self._numbers[position] == number

    def get(self, label: str, key: tuple[float, bool]) -> int | None:
        """The label's slot, -1 when seen without one, None when never seen."""
        number, decimal = key
        if not decimal:
            return self._odd.get(label)
        position, found = self._find(number)
        return int(self._slots[position]) if found else None

    def put(self, label: str, key: tuple[float, bool], slot: int) -> None:
        number, decimal = key
        if not decimal:
            self._odd[label] = slot
            return
        position, found = self._find(number)
        if found:
            self._slots[position] = slot
            return
        count = self._count
        self._numbers = grown(self._numbers, count, count + 1)
        self._slots = grown(self._slots, count, count + 1)
        if position < count:
            self._numbers[position + 1 : count + 1] = self._numbers[position:count].copy()
            self._slots[position + 1 : count + 1] = self._slots[position:count].copy()
        self._numbers[position] = number
        self._slots[position] = slot
        self._count = count + 1
        self._last = max(self._last, number)
