"""An index over a growing `completions.jsonl`: offsets in memory, texts parsed on demand.

A line is one batch of completions in the column shape ms-swift writes; the adapter
module sources/formats/msswift_completions.py reads every version's shape into rows, and
other frameworks' files are converted to it. Files of several GB are normal, so
the index keeps, per line, only its byte range, step, row count, a 64-bit content digest
and a small tally of its sample statistics, computed once when the line is first read:
one packed numpy record per line, in blocks, and the tally summed into its step's row of
the summary (no Python object per line: about 190 bytes a line, summary included). Step
labels are kept as numbers, the few that are not a number's plain decimal apart. Texts
are re-read from disk when a line's groups are asked for; at most `cache_lines` parsed
lines stay in memory (LRU).

The lines come through a `LineSource`: the file itself, or a folder of one file per step
(TRL's parquet files, verl's rollout dumps) presented as one growing file whose lines are
those files converted to this column shape (sources/batch_files.py).

Which lines count for the per-step summary (ms-swift 4.x gives no mode field):
- A line whose rollouts are identical to the previous line's, hashed on (prompt,
  completion, advantage) per row, is a *repeat*: the end-of-train line repeats the last
  one verbatim, and with `num_iterations > 1` consecutive steps log the same rollouts.
  The first line carries them (its step is when they were generated).
- A later line carrying a step already seen is the eval (or end-of-train) line of that
  step: rollouts from an eval at a step without a train log cannot be told apart and stay.
- ms-swift 3.1-3.2 (`messages` shape) logged during generation, possibly several lines
  per step: those are all train rollouts, merged into their step.
- Megatron-Ray writes one line per completion; consecutive lines with the same `gen_step`
  form one batch (one index entry, one step).

Every line stays reachable through `groups(line)`; `line_info(line).kind` says which role
it was given.

Groups are keyed on the full prompt text. A prompt drawn twice in one batch then forms one
group of 2 x num_generations rows unless `group_size` (num_generations, from args.json)
is given, which splits it into its real GRPO groups. Total reward per row is the logged
`reward` (old shapes) or the unweighted sum of the reward columns (see `_totals`).

The reader thread polls the index while the completions panel asks it for pages (from a
worker thread): every public method holds the index's lock, and a poll takes it per chunk
so a page is never kept waiting for a whole backlog.

Newest first: a file of many GB takes a while to index from the start, so the first poll
of a big file also reads its newest batch from the end (`preview`), which `newest_page`
hands out until the index has caught up with it.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from grpo_tui.run.completion_stats import STEP_FIELDS, CompletionsSummary, StepColumns
from grpo_tui.run.text_stats import REPETITIVE_SHARE, GroupTextStats, group_text_stats
from grpo_tui.sources.batch_files import FileLines, LineSource
from grpo_tui.sources.formats.msswift_completions import (
    NotCompletionsError,
    Rows,
    Shape,
    concat_rows,
    decode_line,
    parse_record,
)
from grpo_tui.sources.records import BadLine
from grpo_tui.sources.tail import TailLine

#: parsed lines kept in memory by default (one line can hold thousands of long completions)
DEFAULT_CACHE_LINES = 4
#: bad lines kept with their reason (the count goes on); the most recent ones
BAD_LINES_KEPT = 100
#: distinct step labels remembered per index entry
_STEP_LABELS_KEPT = 8
#: characters of a bad line quoted with its reason
_EXCERPT_CHARS = 80
#: a group's totals closer than this (relative to their size) count as tied
_TIE_TOLERANCE = 1e-9
#: files at least this big get a preview of their newest batch before indexing from the start
PREVIEW_FROM_BYTES = 8 << 20
#: bytes read back from the end for the preview (a batch longer than this waits for the index)
PREVIEW_MAX_BYTES = 64 << 20
#: a search parses entries for about this long before it reports how far it got
SEARCH_BUDGET_S = 0.5
#: how long a poll sleeps between chunks while another thread waits for the index
_GIVE_WAY_S = 0.002
_LEADING_NUMBER = re.compile(r"\s*(-?\d+(?:\.\d+)?)")

EntryKind = Literal["new", "repeat", "eval_or_end"]


# --------------------------------------------------------------------------- public types


@dataclass(frozen=True, slots=True)
class Sample:
    """One completion with what was logged about it."""

    text: str
    #: raw (unweighted) value per reward function; None = not logged / NaN
    rewards: dict[str, float | None]
    #: sum of the logged reward values (or the logged total in old shapes); None = unknown
    total: float | None
    advantage: float | None
    entropy: float | None = None
    solution: str | None = None
    #: follows the tag format; None when its group uses no known marker
    follows_format: bool | None = None
    #: an opened tag never closed; None when its group uses no known marker
    truncated: bool | None = None
    #: share of its word 3-grams that repeat an earlier one (0 = none)
    repetition: float = 0.0

    @property
    def repetitive(self) -> bool:
        return self.repetition >= REPETITIVE_SHARE


@dataclass(frozen=True, slots=True, eq=False)
class Group:
    """The completions of one prompt within one logged line (a GRPO group)."""

    prompt: str
    #: short stable hash of the full prompt text (follows one prompt across lines)
    prompt_id: str
    step: str
    completions: tuple[Sample, ...]
    #: per reward function, one value per completion (NaN = not logged)
    rewards: dict[str, np.ndarray]
    #: total reward per completion (NaN = unknown)
    totals: np.ndarray
    #: population std of the known totals (NaN when none is known)
    spread: float
    #: at least two known totals and all equal: no advantage signal
    zero_spread: bool
    #: zero spread at the bottom of the totals observed in the file so far
    all_fail: bool
    #: zero spread at the top of the totals observed in the file so far
    all_pass: bool
    truncated_rate: float | None
    format_rate: float | None
    distinct_2: float
    pairwise_overlap: float

    @property
    def size(self) -> int:
        return len(self.completions)

    @property
    def mean_total(self) -> float:
        finite = self.totals[np.isfinite(self.totals)]
        return float(finite.mean()) if finite.size else math.nan


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
    shape: Shape
    #: "new" rollouts, a "repeat" of the previous line, or the "eval_or_end" line of a step
    kind: EntryKind
    #: lists of unequal length were cut to the shortest (the line is kept)
    malformed: bool
    #: prompt groups and of those the zero-spread ones (None until the entry was tallied)
    groups: int | None = None
    zero_spread_groups: int | None = None


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


# --------------------------------------------------------------------------- parsing


@dataclass(slots=True)
class _GroupStats:
    """What one group's rows say, computed once per parse."""

    rows: list[int]
    spread: float
    zero_spread: bool
    #: the shared total of a zero-spread group (NaN otherwise)
    tied_total: float
    text: GroupTextStats


@dataclass(slots=True)
class _Analysed:
    """A parsed line with its groups: what the LRU cache holds."""

    rows: Rows
    groups: list[_GroupStats]
    #: 64-bit digest of the rollouts (see `_content_hash`)
    content_hash: int


@dataclass(slots=True)
class _Tally:
    """Sums over one line's groups: enough to build (and merge) its StepSampleStats.
    Transient: the index sums it into its step's summary row and keeps a few fields."""

    groups: int = 0
    completions: int = 0
    #: the shared total of each zero-spread group (judged all-fail / all-pass later)
    tied_totals: list[float] = field(default_factory=list)
    distinct_2_sum: float = 0.0
    distinct_2_count: int = 0
    overlap_sum: float = 0.0
    overlap_count: int = 0
    repetition_sum: float = 0.0
    follows_format: int = 0
    uses_markers: int = 0
    truncated: int = 0
    chars: int = 0
    #: the groups' reward std (GRPO's advantage scale), summed over groups that have one
    std_sum: float = 0.0
    std_count: int = 0
    #: reward function → (sum, count) of its known values over the line's completions
    functions: dict[str, tuple[float, int]] = field(default_factory=dict)


def _partition(prompts: list[str], group_size: int | None) -> list[list[int]]:
    """Row indices per prompt (keyed on the full prompt text), in order of first appearance.

    With a known group size (num_generations), a prompt drawn twice in one batch is split
    into consecutive chunks: each chunk is its own GRPO group.
    """
    by_prompt: dict[str, list[int]] = {}
    for row, prompt in enumerate(prompts):
        by_prompt.setdefault(prompt, []).append(row)
    if not group_size or group_size < 1:
        return list(by_prompt.values())
    return [
        rows[start : start + group_size]
        for rows in by_prompt.values()
        for start in range(0, len(rows), group_size)
    ]


def _content_hash(rows: Rows) -> int:
    """A 64-bit digest of (prompt, completion, advantage) per row: enough to tell a repeat
    of the previous line, and a line rewritten under a lazy re-read."""
    digest = hashlib.blake2b(digest_size=8)
    for prompt, completion in zip(rows.prompts, rows.completions, strict=True):
        digest.update(prompt.encode("utf-8", errors="surrogatepass"))
        digest.update(b"\x00")
        digest.update(completion.encode("utf-8", errors="surrogatepass"))
        digest.update(b"\x01")
    if rows.advantages is not None:
        digest.update(rows.advantages.tobytes())
    return int.from_bytes(digest.digest(), "little", signed=True)


def _spread(values: list[float]) -> tuple[float, bool, float]:
    """(population std, tied, shared value if tied) of a group's known totals.

    Plain Python: groups hold a handful of values, where numpy's per-call cost dominates.
    """
    if not values:
        return math.nan, False, math.nan
    # plain sums and products: huge logged values give inf, never an OverflowError
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) * (v - mean) for v in values) / len(values))
    low, high = min(values), max(values)
    tied = len(values) >= 2 and high - low <= _TIE_TOLERANCE * max(1.0, abs(low), abs(high))
    return spread, tied, mean if tied else math.nan


def _analyse(rows: Rows, group_size: int | None) -> _Analysed:
    totals = rows.totals.tolist()
    groups: list[_GroupStats] = []
    for indices in _partition(rows.prompts, group_size):
        spread, tied, tied_total = _spread([totals[i] for i in indices if math.isfinite(totals[i])])
        groups.append(
            _GroupStats(
                rows=indices,
                spread=spread,
                zero_spread=tied,
                tied_total=tied_total,
                text=group_text_stats([rows.completions[i] for i in indices]),
            )
        )
    return _Analysed(rows=rows, groups=groups, content_hash=_content_hash(rows))


def _tally(analysed: _Analysed) -> _Tally:
    tally = _Tally(groups=len(analysed.groups), completions=len(analysed.rows))
    for group in analysed.groups:
        if group.zero_spread:
            tally.tied_totals.append(group.tied_total)
        if not math.isnan(group.text.distinct_2):
            tally.distinct_2_sum += group.text.distinct_2
            tally.distinct_2_count += 1
        if not math.isnan(group.text.pairwise_overlap):
            tally.overlap_sum += group.text.pairwise_overlap
            tally.overlap_count += 1
        for check in group.text.checks:
            tally.follows_format += check.follows
            tally.uses_markers += check.uses_markers
            tally.truncated += check.cut_off
        tally.repetition_sum += sum(group.text.repetition)
        if not math.isnan(group.spread):
            tally.std_sum += group.spread
            tally.std_count += 1
    tally.chars = sum(len(text) for text in analysed.rows.completions)
    for name, column in analysed.rows.rewards.items():
        known = column[np.isfinite(column)]
        if known.size:
            tally.functions[name] = (float(known.sum()), int(known.size))
    return tally


def _step_number(label: str) -> float:
    """The number a step label starts with ("12", "12/500" → 12.0), else NaN."""
    match = _LEADING_NUMBER.match(label)
    return float(match.group(1)) if match else math.nan


# --------------------------------------------------------------------------- the index


_KINDS: tuple[EntryKind, ...] = ("new", "repeat", "eval_or_end")
_SHAPES: tuple[Shape, ...] = (
    "columns",
    "prompt_messages",
    "messages",
    "advantage_singular",
    "megatron",
    "ray",
)
_KIND_CODE: dict[str, int] = {kind: code for code, kind in enumerate(_KINDS)}
_SHAPE_CODE: dict[str, int] = {shape: code for code, shape in enumerate(_SHAPES)}
_REPEAT = _KIND_CODE["repeat"]
_RAY = _SHAPE_CODE["ray"]
#: rows the growing arrays start with; they grow by half again when full
_FIRST_CAPACITY = 256
#: entries (and summary steps) per block: blocks are added, never moved or grown (growing
#: one array by copying would hold both copies at once, and leave holes behind)
_BLOCK_SHIFT = 10
_BLOCK = 1 << _BLOCK_SHIFT
_IN_BLOCK = _BLOCK - 1
#: columns of a summary row (StepSampleStats' fields, in order)
_STAT_WIDTH = len(STEP_FIELDS)
_COL = {name: position for position, name in enumerate(STEP_FIELDS)}
#: the columns a revision re-judges (the totals' range, the format seen so far)
_JUDGED = [_COL["zero_spread_all_fail"], _COL["zero_spread_all_pass"], _COL["format_rate"]]


def _grown(array: np.ndarray, used: int, needed: int) -> np.ndarray:
    """`array` with room for `needed` rows (its first `used` rows kept)."""
    if needed <= array.shape[0]:
        return array
    capacity = max(needed, _FIRST_CAPACITY, array.shape[0] + array.shape[0] // 2)
    bigger = np.empty((capacity, *array.shape[1:]), dtype=array.dtype)
    bigger[:used] = array[:used]
    return bigger


def _decimal(number: float) -> str:
    """How a step number is usually written ("6", "6.5")."""
    return str(int(number)) if number.is_integer() else repr(number)


def _step_key(label: str) -> tuple[float, bool]:
    """The number a step label starts with, and whether the label is just its decimal
    (then the number alone stands for the label)."""
    number = _step_number(label)
    return number, not math.isnan(number) and _decimal(number) == label


#: the columns of an index entry (a line, or a Megatron-Ray batch of consecutive lines)
_ENTRY_COLUMNS: dict[str, type] = {
    # byte range [start, end) in the file, line endings of the last line excluded
    "start": np.int64,
    "end": np.int64,
    "line_no": np.int64,
    "rows": np.int32,
    # the number the newest row's step label starts with (NaN: none); see _step_key
    "step": np.float64,
    "kind": np.uint8,
    "shape": np.uint8,
    "malformed": np.bool_,
    # 64-bit digest of the rollouts; none for Megatron-Ray batches (never repeated)
    "content_hash": np.int64,
    # the step slot it counts towards (-1: none, for repeats and eval/end lines)
    "slot": np.int32,
    # what of its tally a revision re-judges (the rest went into its step's summary row);
    # false while a Megatron-Ray batch grows (or its re-read failed)
    "tallied": np.bool_,
    "groups": np.int32,
    # the shared totals of its zero-spread groups: [tied_start, +tied_count) of a flat array
    "tied_start": np.int32,
    "tied_count": np.int32,
    "follows_format": np.int32,
}


#: one index entry, packed (68 bytes)
_ENTRY = np.dtype(list(_ENTRY_COLUMNS.items()))


class _Column:
    """One field of every entry, indexed like an array: by entry (a numpy scalar), by a
    range of entries or an array of them (a new array)."""

    __slots__ = ("_entries", "_name")

    def __init__(self, entries: _Entries, name: str) -> None:
        self._entries = entries
        self._name = name

    def __getitem__(self, index: int | slice | np.ndarray) -> Any:
        blocks = self._entries.blocks
        if isinstance(index, (int, np.integer)):
            index = int(index)
            return blocks[index >> _BLOCK_SHIFT][self._name][index & _IN_BLOCK]
        if isinstance(index, slice):
            start, stop, _ = index.indices(self._entries.count)
            if stop <= start:
                return np.empty(0, dtype=_ENTRY[self._name])
            first, last = start >> _BLOCK_SHIFT, (stop - 1) >> _BLOCK_SHIFT
            offset = first << _BLOCK_SHIFT
            if first == last:
                return blocks[first][self._name][start - offset : stop - offset].copy()
            parts = [block[self._name] for block in blocks[first : last + 1]]
            return np.concatenate(parts)[start - offset : stop - offset]
        block_of = index >> _BLOCK_SHIFT
        if index.size and block_of[0] == block_of[-1] and (block_of == block_of[0]).all():
            return blocks[int(block_of[0])][self._name][index & _IN_BLOCK]
        out = np.empty(index.shape[0], dtype=_ENTRY[self._name])
        for block in np.unique(block_of).tolist():
            chosen = block_of == block
            out[chosen] = blocks[block][self._name][index[chosen] & _IN_BLOCK]
        return out

    def __setitem__(self, index: int, value: object) -> None:
        self._entries.blocks[index >> _BLOCK_SHIFT][self._name][index & _IN_BLOCK] = value


class _Entries:
    """The index entries (a line, or a Megatron-Ray batch of consecutive lines) as packed
    records in blocks of _BLOCK; one _Column per field of _ENTRY_COLUMNS."""

    __slots__ = ("blocks", "count", *_ENTRY_COLUMNS)
    blocks: list[np.ndarray]
    count: int
    start: _Column
    end: _Column
    line_no: _Column
    rows: _Column
    step: _Column
    kind: _Column
    shape: _Column
    malformed: _Column
    content_hash: _Column
    slot: _Column
    tallied: _Column
    groups: _Column
    tied_start: _Column
    tied_count: _Column
    follows_format: _Column

    def __init__(self) -> None:
        self.blocks = []
        self.count = 0
        for name in _ENTRY_COLUMNS:
            setattr(self, name, _Column(self, name))

    def __len__(self) -> int:
        return self.count

    def append(self) -> int:
        """Room for one more entry (its fields still to be written); its index."""
        index = self.count
        if index >> _BLOCK_SHIFT == len(self.blocks):
            self.blocks.append(np.zeros(_BLOCK, dtype=_ENTRY))
        self.count = index + 1
        return index

    def blocks_between(self, start: int, stop: int) -> Iterator[tuple[int, np.ndarray]]:
        """(first entry, records) of the entries in [start, stop), a block at a time."""
        while start < stop:
            block = start >> _BLOCK_SHIFT
            offset = block << _BLOCK_SHIFT
            end = min(stop, offset + _BLOCK)
            yield start, self.blocks[block][start - offset : end - offset]
            start = end

    def blocks_back(self, start: int, stop: int) -> Iterator[tuple[int, np.ndarray]]:
        """As `blocks_between`, newest block first."""
        while start < stop:
            block = (stop - 1) >> _BLOCK_SHIFT
            offset = block << _BLOCK_SHIFT
            begin = max(start, offset)
            yield begin, self.blocks[block][begin - offset : stop - offset]
            stop = begin


class _StepMap:
    """Step label → the slot of its step (-1: seen, counting towards no step).

    Labels that are the decimal of their number ("6") are kept as that number in a
    sorted array (steps mostly rise: an append); other labels in a dict.
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
        self._numbers = _grown(self._numbers, count, count + 1)
        self._slots = _grown(self._slots, count, count + 1)
        if position < count:
            self._numbers[position + 1 : count + 1] = self._numbers[position:count].copy()
            self._slots[position + 1 : count + 1] = self._slots[position:count].copy()
        self._numbers[position] = number
        self._slots[position] = slot
        self._count = count + 1
        self._last = max(self._last, number)


class CompletionsIndex:
    """Follows one completions.jsonl: `poll()` to read, `summary()` / `groups()` to look."""

    def __init__(
        self,
        path: Path,
        *,
        cache_lines: int = DEFAULT_CACHE_LINES,
        group_size: int | None = None,
        chunk_size: int | None = None,
        source: LineSource | None = None,
    ) -> None:
        """`group_size`: num_generations when known (args.json); see `_partition`.
        `source`: where the lines come from when they are not the file at `path` (a folder
        of one file per step: sources/batch_files.py); `path` then names it in messages."""
        self.path = Path(path)
        self.cache_cap = max(1, cache_lines)
        self.group_size = group_size
        self._reader: LineSource
        if source is not None:
            self._reader = source
        elif chunk_size is None:
            self._reader = FileLines(self.path)
        else:
            self._reader = FileLines(self.path, chunk_size=chunk_size)
        #: unread complete data remained after the last poll (its byte budget ran out)
        self.more = False
        #: polls so far
        self.polls = 0
        #: times the file started over, and why the last time
        self.restarts = 0
        self.last_restart: str | None = None
        self._lock = threading.RLock()
        #: threads waiting for the lock (a poll gives way to them between chunks)
        self._waiting = 0
        self._waiting_lock = threading.Lock()
        #: the newest batch read from the end of a big file, until the index reaches it
        self._preview: Page | None = None
        self._preview_end = 0
        self._preview_tried = False
        #: bumped whenever earlier steps' statistics were re-judged (or the file restarted)
        self._revision = 0
        self._reset()

    def _reset(self) -> None:
        self._entries = _Entries()
        #: step labels that are not the decimal of their number (entry → label)
        self._odd_labels: dict[int, str] = {}
        #: distinct step labels of an entry's rows, where they are not just its step label
        self._odd_steps: dict[int, tuple[str, ...]] = {}
        #: the shared totals of zero-spread groups, every entry's run after the other
        self._tied = np.empty(0, dtype=np.float64)
        self._tied_used = 0
        #: reward function → its mean per summary slot (NaN where not logged)
        self._function_means: dict[str, np.ndarray] = {}
        self._newest_shown: int | None = None
        self._shown_count = 0
        #: steps of the summary ("slots"): the entry whose rollouts count for each, and
        #: the entries merged into it after that (ms-swift 3.1's several lines per step)
        self._slot_count = 0
        self._slot_entry = np.empty(0, dtype=np.int32)
        self._slot_more: dict[int, list[int]] = {}
        #: one summary row per slot (StepSampleStats' fields; groups 0 = no statistics), in
        #: blocks of _BLOCK rows. The first `_stats_shared` rows are held by the summary
        #: handed out last: a block holding one of them is copied before it is written
        #: (`_stats_owned`: blocks copied since). Rows from `_stats_clean` on, and the
        #: slots in `_stats_dirty`, are stale.
        self._stats: list[np.ndarray] = []
        self._stats_shared = 0
        self._stats_owned: set[int] = set()
        self._stats_clean = 0
        self._stats_dirty: set[int] = set()
        #: every step label seen, with its slot
        self._step_map = _StepMap()
        self._cache: OrderedDict[int, _Analysed] = OrderedDict()
        #: entries whose tally is pending (a growing Megatron-Ray batch, or a failed re-read)
        self._untallied: set[int] = set()
        self._good_lines = 0
        self._malformed_lines = 0
        self._bad_count = 0
        self._bad: list[BadLine] = []
        self._reward_names: dict[str, None] = {}
        self._total_min = math.inf
        self._total_max = -math.inf
        self._format_seen = False
        self._stats_key: tuple[float, float, bool] | None = None
        self._revision = getattr(self, "_revision", 0) + 1

    # ----------------------------------------------------------------- reading

    def poll(self, max_bytes: int | None = None) -> int:
        """Read newly appended lines; returns how many (bad ones included).

        With `max_bytes`, reads about that much (one long line is always finished) and
        sets `more` when data is left; without, reads everything available.
        """
        count = 0
        self.polls += 1
        if not self._preview_tried:
            self._read_preview()
        while True:
            with self._lock:
                chunk = self._reader.poll(max_bytes)
                if chunk.restarted is not None:
                    self.restarts += 1
                    self.last_restart = chunk.restarted
                    self._preview = None
                    self._reset()
                lines = chunk.lines
                for line in lines:
                    self._ingest(line)
                count += len(lines)
                self.more = chunk.more
                if self._preview is not None and self._reader.offset >= self._preview_end:
                    self._preview = None  # the index has the newest batch itself now
            if self._waiting:
                time.sleep(_GIVE_WAY_S)
            if max_bytes is not None or not chunk.more:
                break
        return count

    def _read_preview(self) -> None:
        """Parse the newest batch at the end of a big file, before indexing from the start."""
        self._preview_tried = True
        try:
            size = self.path.stat().st_size
        except OSError:
            return
        if size < PREVIEW_FROM_BYTES:
            return  # indexed from the start in well under a second
        lines = self._reader.tail_lines(PREVIEW_MAX_BYTES)
        parts: list[Rows] = []
        for line in reversed(lines):
            try:
                value, lenient = decode_line(line.data)
                if not isinstance(value, dict):
                    continue
                rows = parse_record(value, clean=lenient)
            except ValueError:
                continue
            if parts and (rows.shape != "ray" or rows.steps[:1] != parts[0].steps[:1]):
                break  # a Megatron-Ray batch is every line of its step; others are one line
            parts.insert(0, rows)
            if rows.shape != "ray":
                break
        if not parts:
            return
        rows = concat_rows(parts)
        analysed = _analyse(rows, self.group_size)
        step = rows.steps[-1] if rows.steps else "?"
        known = rows.totals[np.isfinite(rows.totals)]
        span = (float(known.min()), float(known.max())) if known.size else None
        info = LineInfo(
            index=-1,
            line_no=0,
            step=step,
            steps=tuple(dict.fromkeys(rows.steps))[:_STEP_LABELS_KEPT],
            rows=len(rows),
            shape=rows.shape,
            kind="new",
            malformed=rows.malformed,
            groups=len(analysed.groups),
            zero_spread_groups=sum(group.zero_spread for group in analysed.groups),
        )
        groups = tuple(self._build_group(rows, group, span) for group in analysed.groups)
        with self._lock:
            self._preview = Page(info, groups, preview=True)
            self._preview_end = lines[-1].offset + len(lines[-1].data)

    def _ingest(self, line: TailLine) -> None:
        try:
            value, lenient = decode_line(line.data)
        except ValueError as exc:
            self._add_bad(line, f"invalid JSON: {exc}")
            return
        if not isinstance(value, dict):
            self._add_bad(line, f"not a JSON object ({type(value).__name__})")
            return
        try:
            rows = parse_record(value, clean=lenient)
        except NotCompletionsError as exc:
            self._add_bad(line, str(exc))
            return
        self._good_lines += 1
        self._malformed_lines += rows.malformed
        self._reward_names.update(dict.fromkeys(rows.rewards))
        known = rows.totals[np.isfinite(rows.totals)]
        if known.size:
            self._total_min = min(self._total_min, float(known.min()))
            self._total_max = max(self._total_max, float(known.max()))
        if rows.shape == "ray":
            self._ingest_ray_row(line, rows)
        else:
            self._ingest_line(line, rows)

    def _ingest_line(self, line: TailLine, rows: Rows) -> None:
        self._finish_open_batch()
        analysed = _analyse(rows, self.group_size)
        tally = _tally(analysed)
        step = rows.steps[-1] if rows.steps else "?"
        key = _step_key(step)
        entries = self._entries
        last = entries.count - 1
        kind: EntryKind
        if (
            last >= 0
            and entries.shape[last] != _RAY
            and int(entries.content_hash[last]) == analysed.content_hash
        ):
            kind = "repeat"
        elif rows.shape != "messages" and self._step_map.get(step, key) is not None:
            kind = "eval_or_end"
        else:
            kind = "new"
        index = self._add_entry(line, step, key, len(rows), rows.shape, kind, rows.malformed)
        entries.content_hash[index] = analysed.content_hash
        steps = tuple(dict.fromkeys(rows.steps))[:_STEP_LABELS_KEPT]
        if steps != (step,):
            self._odd_steps[index] = steps
        self._store_tally(index, tally)
        self._count_shown(index, kind)
        self._remember(index, analysed)
        if kind == "new":
            slot = self._assign_slot(index, step, key, merge=rows.shape == "messages")
            self._fill_row(slot, {index: tally})
        elif self._step_map.get(step, key) is None:
            self._step_map.put(step, key, -1)

    def _add_entry(
        self,
        line: TailLine,
        step: str,
        key: tuple[float, bool],
        rows: int,
        shape: Shape,
        kind: EntryKind,
        malformed: bool,
    ) -> int:
        """A new entry of one line, untallied (the tally is written by `_store_tally`)."""
        entries = self._entries
        index = entries.append()
        entries.start[index] = line.offset
        entries.end[index] = line.offset + len(line.data)
        entries.line_no[index] = line.line_no
        entries.rows[index] = rows
        entries.step[index] = key[0]
        entries.kind[index] = _KIND_CODE[kind]
        entries.shape[index] = _SHAPE_CODE[shape]
        entries.malformed[index] = malformed
        entries.content_hash[index] = 0
        entries.slot[index] = -1
        entries.tallied[index] = False
        entries.tied_start[index] = self._tied_used
        entries.tied_count[index] = 0
        if not key[1]:
            self._odd_labels[index] = step
        return index

    def _label(self, index: int) -> str:
        """The step label of an entry's newest row, as logged."""
        odd = self._odd_labels.get(index)
        return odd if odd is not None else _decimal(float(self._entries.step[index]))

    def _store_tally(self, index: int, tally: _Tally) -> None:
        """Keep what a revision re-judges of an entry's tally (and what its page shows)."""
        entries = self._entries
        tied = tally.tied_totals
        start = int(entries.tied_start[index])
        if start + int(entries.tied_count[index]) != self._tied_used:
            start = self._tied_used  # its earlier run is not the last one: a new run
        self._tied = _grown(self._tied, start, start + len(tied))
        self._tied[start : start + len(tied)] = tied
        self._tied_used = start + len(tied)
        entries.tied_start[index] = start
        entries.tied_count[index] = len(tied)
        entries.groups[index] = tally.groups
        entries.follows_format[index] = tally.follows_format
        entries.tallied[index] = True
        self._format_seen = self._format_seen or tally.uses_markers > 0

    def _ingest_ray_row(self, line: TailLine, rows: Rows) -> None:
        step = rows.steps[0] if rows.steps else "?"
        entries = self._entries
        last = entries.count - 1
        if last >= 0 and entries.shape[last] == _RAY and self._label(last) == step:
            entries.end[last] = line.offset + len(line.data)
            entries.rows[last] += len(rows)
            entries.malformed[last] |= rows.malformed
            entries.tallied[last] = False
            self._untallied.add(last)
            self._cache.pop(last, None)
            slot = int(entries.slot[last])
            if slot >= 0:
                self._stale(slot)
            return
        self._finish_open_batch()
        key = _step_key(step)
        kind: EntryKind = "eval_or_end" if self._step_map.get(step, key) is not None else "new"
        index = self._add_entry(line, step, key, len(rows), "ray", kind, rows.malformed)
        self._count_shown(index, kind)
        self._untallied.add(index)
        if kind == "new":
            self._assign_slot(index, step, key, merge=False)
        elif self._step_map.get(step, key) is None:
            self._step_map.put(step, key, -1)

    def _count_shown(self, index: int, kind: EntryKind) -> None:
        if kind != "repeat":
            self._newest_shown = index
            self._shown_count += 1

    def _finish_open_batch(self) -> None:
        """Tally the growing Megatron-Ray batch once the next entry shows it is complete."""
        last = self._entries.count - 1
        if last >= 0 and not self._entries.tallied[last]:
            self._ensure_tally(last)

    def _assign_slot(self, index: int, step: str, key: tuple[float, bool], *, merge: bool) -> int:
        slot = self._step_map.get(step, key) if merge else None
        if slot is None or slot < 0:
            slot = self._slot_count
            count = slot + 1
            self._slot_entry = _grown(self._slot_entry, slot, count)
            self._slot_entry[slot] = index
            if slot >> _BLOCK_SHIFT == len(self._stats):
                self._stats.append(np.empty((_BLOCK, _STAT_WIDTH)))
            # (a row no summary holds yet: written in place); no statistics until filled
            number = key[0]
            row = self._stats[slot >> _BLOCK_SHIFT][slot & _IN_BLOCK]
            row[_COL["step"]] = float(slot) if math.isnan(number) else number
            row[_COL["groups"]] = 0
            self._slot_count = count
            self._step_map.put(step, key, slot)
        else:
            self._slot_more.setdefault(slot, []).append(index)
        self._entries.slot[index] = slot
        return slot

    def _stale(self, slot: int) -> None:
        """The slot's summary row needs computing again."""
        if slot < self._stats_clean:
            self._stats_dirty.add(slot)

    def _add_bad(self, line: TailLine, reason: str) -> None:
        self._bad_count += 1
        excerpt = line.data[:_EXCERPT_CHARS].decode("utf-8", errors="replace")
        self._bad.append(BadLine(self.path.name, line.line_no, reason[:200], excerpt))
        if len(self._bad) > BAD_LINES_KEPT:
            del self._bad[0]

    # ----------------------------------------------------------------- lazy parsing

    def _remember(self, index: int, analysed: _Analysed) -> None:
        self._cache[index] = analysed
        self._cache.move_to_end(index)
        while len(self._cache) > self.cache_cap:
            self._cache.popitem(last=False)

    def _read_range(self, index: int) -> list[Rows]:
        start = int(self._entries.start[index])
        size = int(self._entries.end[index]) - start
        try:
            data = self._reader.read_range(start, size)
        except OSError:
            return []
        if len(data) != size:
            return []
        parts: list[Rows] = []
        for raw in data.split(b"\n"):
            raw = raw.removesuffix(b"\r")
            if not raw.strip():
                continue
            try:
                value, lenient = decode_line(raw)
                if isinstance(value, dict):
                    parts.append(parse_record(value, clean=lenient))
            except ValueError:
                continue  # counted as bad when first read
        return parts

    def _load(self, index: int) -> _Analysed | None:
        """The parsed entry, from the cache or the file; None if the file changed under us."""
        cached = self._cache.get(index)
        if cached is not None:
            self._cache.move_to_end(index)
            return cached
        entries = self._entries
        parts = self._read_range(index)
        if not parts:
            return None
        rows = concat_rows(parts)
        if len(rows) != entries.rows[index]:
            return None  # rewritten since it was indexed: the next poll restarts
        analysed = _analyse(rows, self.group_size)
        if entries.shape[index] != _RAY and analysed.content_hash != int(
            entries.content_hash[index]
        ):
            return None
        self._remember(index, analysed)
        return analysed

    def _ensure_tally(self, index: int) -> bool:
        """Tally the entry if it is not; False when it could not be read again."""
        if self._entries.tallied[index]:
            return True
        slot = int(self._entries.slot[index])
        analysed = self._load(index)
        if analysed is None:
            if slot >= 0:
                self._fill_row(slot, {})  # its step counts it no more
            return False
        tally = _tally(analysed)
        self._store_tally(index, tally)
        self._untallied.discard(index)
        if slot >= 0:
            self._fill_row(slot, {index: tally})
        return True

    def _slot_tallies(self, slot: int, known: dict[int, _Tally]) -> list[_Tally]:
        """The tallies of a slot's tallied entries, oldest first: from `known`, else from
        their parse (cached: a step's lines are consecutive)."""
        entries = self._entries
        tallies = []
        for member in (int(self._slot_entry[slot]), *self._slot_more.get(slot, ())):
            tally = known.get(member)
            if tally is None and entries.tallied[member]:
                analysed = self._load(member)
                tally = None if analysed is None else _tally(analysed)
            if tally is not None:
                tallies.append(tally)
        return tallies

    def _fill_row(self, slot: int, known: dict[int, _Tally]) -> None:
        """Write a step's summary row from the tallies of its entries, all but the columns a
        revision re-judges (all-fail, all-pass, format rate: see `summary`)."""
        groups = completions = tied = distinct_count = overlap_count = 0
        markers = truncated = chars = std_count = 0
        distinct_sum = overlap_sum = repetition_sum = std_sum = 0.0
        functions: dict[str, tuple[float, int]] = {}
        for tally in self._slot_tallies(slot, known):
            std_sum += tally.std_sum
            std_count += tally.std_count
            for name, (total, count) in tally.functions.items():
                held = functions.get(name, (0.0, 0))
                functions[name] = (held[0] + total, held[1] + count)
            groups += tally.groups
            completions += tally.completions
            tied += len(tally.tied_totals)
            distinct_sum += tally.distinct_2_sum
            distinct_count += tally.distinct_2_count
            overlap_sum += tally.overlap_sum
            overlap_count += tally.overlap_count
            repetition_sum += tally.repetition_sum
            markers += tally.uses_markers
            truncated += tally.truncated
            chars += tally.chars
        row = self._writable(slot)
        if groups == 0 or completions == 0:
            row[_COL["groups"]] = 0  # no statistics: left out of the summary
        else:
            row[_COL["groups"]] = groups
            row[_COL["completions"]] = completions
            row[_COL["zero_spread_fraction"]] = tied / groups
            row[_COL["distinct_2"]] = distinct_sum / distinct_count if distinct_count else math.nan
            row[_COL["pairwise_overlap"]] = (
                overlap_sum / overlap_count if overlap_count else math.nan
            )
            row[_COL["mean_chars"]] = chars / completions
            row[_COL["truncated_rate"]] = truncated / completions if markers else math.nan
            row[_COL["repetition"]] = repetition_sum / completions
            row[_COL["group_std"]] = std_sum / std_count if std_count else math.nan
        self._put_function_means(slot, functions)
        self._stale(slot)

    def _put_function_means(self, slot: int, functions: dict[str, tuple[float, int]]) -> None:
        """Each reward function's mean at this step, in a float column per function (8
        bytes a step: no Python object per step)."""
        for name, column in self._function_means.items():
            if slot < column.shape[0] and name not in functions:
                column[slot] = math.nan
        for name, (total, count) in functions.items():
            held = self._function_means.get(name)
            if held is None or held.shape[0] <= slot:
                grown = np.full(max(_FIRST_CAPACITY, 2 * (slot + 1)), math.nan)
                if held is not None:
                    grown[: held.shape[0]] = held
                held = self._function_means[name] = grown
            held[slot] = total / count

    def _writable(self, slot: int) -> np.ndarray:
        """The slot's summary row, to write: its block copied first when the summary handed
        out last holds the row."""
        block = slot >> _BLOCK_SHIFT
        if slot < self._stats_shared and block not in self._stats_owned:
            self._stats[block] = self._stats[block].copy()
            self._stats_owned.add(block)
        row: np.ndarray = self._stats[block][slot & _IN_BLOCK]
        return row

    # ----------------------------------------------------------------- looking

    def __len__(self) -> int:
        """Index entries: one per line (a Megatron-Ray batch of lines is one entry)."""
        return self._entries.count

    def _resolve(self, line: int) -> int:
        index = line + len(self._entries) if line < 0 else line
        if not 0 <= index < len(self._entries):
            raise IndexError(f"completions line {line} out of range ({len(self._entries)} entries)")
        return index

    def line_info(self, line: int = -1) -> LineInfo:
        """What the index holds about one entry (negative = from the newest)."""
        with self._locked():
            index = self._resolve(line)
            return self._info(index)

    def _info(self, index: int) -> LineInfo:
        entries = self._entries
        tallied = bool(entries.tallied[index])
        step = self._label(index)
        return LineInfo(
            index=index,
            line_no=int(entries.line_no[index]),
            step=step,
            steps=self._odd_steps.get(index, (step,)),
            rows=int(entries.rows[index]),
            shape=_SHAPES[entries.shape[index]],
            kind=_KINDS[entries.kind[index]],
            malformed=bool(entries.malformed[index]),
            groups=int(entries.groups[index]) if tallied else None,
            zero_spread_groups=int(entries.tied_count[index]) if tallied else None,
        )

    def groups(self, line: int = -1) -> list[Group]:
        """The groups of one entry (newest by default; negative counts from the newest).

        Parses the entry if it is not cached. Returns [] for an empty index or when the
        file changed under the index (the next poll restarts it).
        """
        with self._locked():
            if not self._entries.count:
                return []
            analysed = self._load(self._resolve(line))
            if analysed is None:
                return []
            return [self._build_group(analysed.rows, group) for group in analysed.groups]

    def page(self, line: int = -1) -> Page | None:
        """One entry with its groups (negative counts from the newest); None when the index
        is empty or the file changed under it."""
        with self._locked():
            if not self._entries.count:
                return None
            index = self._resolve(line)
            analysed = self._load(index)
            if analysed is None:
                return None
            self._ensure_tally(index)
            groups = tuple(self._build_group(analysed.rows, g) for g in analysed.groups)
            return Page(self._info(index), groups)

    def newest_page(self) -> Page | None:
        """The newest batch: from the index, or the preview read from the end of a big file
        while the index has not reached it yet."""
        with self._locked():
            if self._preview is not None:
                return self._preview
        return self.page(-1)

    def newest_entry(self) -> int | None:
        """The newest entry worth showing (a verbatim repeat of the line before is not)."""
        with self._locked():
            return self._newest_shown

    def state(self) -> IndexState:
        """A copy of what the index holds now, for the screen (see IndexState)."""
        with self._locked():
            return IndexState(
                lines=self._good_lines,
                newest_entry=self._newest_shown,
                shown_entries=self._shown_count,
                previewing=self._preview is not None,
                progress=(self._reader.offset, max(self._reader.size, self._reader.offset)),
                file_exists=self._reader.exists,
                bad_line_count=self._bad_count,
                problem=self._reader.problem,
            )

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The lock, asked for from another thread than the poller's: a poll in a backlog
        gives way between chunks while someone waits (Python's locks are not fair)."""
        with self._waiting_lock:
            self._waiting += 1
        try:
            with self._lock:
                yield
        finally:
            with self._waiting_lock:
                self._waiting -= 1

    def neighbour(
        self, current: int | None, *, forward: bool, zero_spread_only: bool = False
    ) -> int | None:
        """The next (or, not `forward`, the previous) entry from `current` worth showing;
        with `zero_spread_only`, one holding a group whose completions all got the same
        reward. `current` None stands for the preview: every entry is before it."""
        with self._locked():
            entries = self._entries
            count = entries.count
            if current is None:
                if forward:
                    return None
                current = count
            if forward:
                blocks = entries.blocks_between(max(0, current + 1), count)
            else:
                blocks = entries.blocks_back(0, min(current, count))
            for first, records in blocks:
                wanted = records["kind"] != _REPEAT
                if zero_spread_only:
                    # an untallied entry is tallied (read again) to tell
                    wanted &= ~records["tallied"] | (records["tied_count"] > 0)
                found = np.flatnonzero(wanted) + first
                for index in (found if forward else found[::-1]).tolist():
                    if (
                        zero_spread_only
                        and not entries.tallied[index]
                        and (not self._ensure_tally(index) or not entries.tied_count[index])
                    ):
                        continue
                    return int(index)
            return None

    def shown_between(self, after: int, upto: int) -> int:
        """Entries worth showing in (after, upto]: what "N new" counts (repeats are not new)."""
        with self._locked():
            entries = self._entries
            stop = min(upto + 1, entries.count)
            return sum(
                int(np.count_nonzero(records["kind"] != _REPEAT))
                for _, records in entries.blocks_between(max(0, after + 1), stop)
            )

    @property
    def file_exists(self) -> bool:
        """The completions file was there at the last poll."""
        with self._locked():
            return self._reader.exists

    @property
    def previewing(self) -> bool:
        """The newest page is the preview: older entries are still being indexed."""
        with self._locked():
            return self._preview is not None

    @property
    def progress(self) -> tuple[int, int]:
        """(bytes indexed, bytes in the file at the last poll)."""
        with self._locked():
            return self._reader.offset, max(self._reader.size, self._reader.offset)

    def search(
        self,
        text: str,
        start: int,
        *,
        backwards: bool = True,
        after_group: int | None = None,
        time_budget: float = SEARCH_BUDGET_S,
    ) -> SearchHit:
        """The first group, from entry `start` on (older entries when `backwards`), whose
        prompt or one of whose completions contains `text` (case-insensitive). In the
        start entry, groups after `after_group` (before it, backwards) are searched first.
        Stops after `time_budget` seconds and says how far it got."""
        needle = text.casefold()
        started = time.perf_counter()
        searched = 0
        with self._locked():
            count = self._entries.count
        index = start
        while 0 <= index < count:
            with self._locked():
                if index >= self._entries.count:
                    break
                analysed = self._load(index)
            searched += 1
            if analysed is not None:
                order = list(range(len(analysed.groups)))
                if backwards:
                    order.reverse()
                if index == start and after_group is not None:
                    order = [
                        g for g in order if (g < after_group if backwards else g > after_group)
                    ]
                for position in order:
                    if _group_contains(analysed, analysed.groups[position], needle):
                        return SearchHit(index, position, searched, False)
            index += -1 if backwards else 1
            if 0 <= index < count and time.perf_counter() - started >= time_budget:
                return SearchHit(None, None, searched, False)
        return SearchHit(None, None, searched, True)

    def _tie_position(
        self, value: float, span: tuple[float, float] | None = None
    ) -> tuple[bool, bool]:
        """(at bottom, at top) of the totals observed so far (or of `span`); neither while
        they are all equal."""
        low, high = span if span is not None else (self._total_min, self._total_max)
        if math.isnan(value) or not high > low:
            return False, False
        tolerance = _TIE_TOLERANCE * max(1.0, abs(low), abs(high))
        return abs(value - low) <= tolerance, abs(value - high) <= tolerance

    def _build_group(
        self, rows: Rows, stats: _GroupStats, span: tuple[float, float] | None = None
    ) -> Group:
        indices = stats.rows
        rewards = {name: column[indices] for name, column in rows.rewards.items()}
        totals = rows.totals[indices]
        known_format = stats.text.format_known
        samples = tuple(
            Sample(
                text=rows.completions[row],
                rewards={name: _optional_float(column[pos]) for name, column in rewards.items()},
                total=_optional_float(totals[pos]),
                advantage=None
                if rows.advantages is None
                else _optional_float(rows.advantages[row]),
                entropy=None if rows.entropy is None else _optional_float(rows.entropy[row]),
                solution=None if rows.solutions is None else rows.solutions[row],
                follows_format=check.follows if known_format else None,
                truncated=check.cut_off if known_format else None,
                repetition=repeated,
            )
            for pos, (row, check, repeated) in enumerate(
                zip(indices, stats.text.checks, stats.text.repetition, strict=True)
            )
        )
        all_fail, all_pass = (
            self._tie_position(stats.tied_total, span) if stats.zero_spread else (False, False)
        )
        prompt = rows.prompts[indices[0]]
        return Group(
            prompt=prompt,
            prompt_id=hashlib.blake2b(
                prompt.encode("utf-8", errors="surrogatepass"), digest_size=8
            ).hexdigest(),
            step=rows.steps[indices[-1]],
            completions=samples,
            rewards=rewards,
            totals=totals,
            spread=stats.spread,
            zero_spread=stats.zero_spread,
            all_fail=all_fail,
            all_pass=all_pass,
            truncated_rate=stats.text.truncated_rate,
            format_rate=stats.text.format_rate,
            distinct_2=stats.text.distinct_2,
            pairwise_overlap=stats.text.pairwise_overlap,
        )

    def summary(self) -> CompletionsSummary:
        """Lines read and one StepSampleStats per logged step, oldest first.

        Repeats and eval/end lines are left out (module docstring). The all-fail / all-pass
        split uses the totals observed so far, and once any completion in the file used a
        format marker, every step's format rate counts its completions (a step that drops
        the tags scores 0, not "unknown"); both are re-judged here, not frozen at read time.
        Only the steps that changed since the last summary are computed again; the steps
        handed out are never written (see `_reset`).
        """
        with self._locked():
            for index in sorted(self._untallied):
                if self._entries.slot[index] >= 0:
                    self._ensure_tally(index)
            count = self._slot_count
            key = (self._total_min, self._total_max, self._format_seen)
            if key != self._stats_key:
                if self._stats_key is not None:
                    self._revision += 1
                self._stats_key = key
                # every step re-judged, in copies (the summaries keep the old blocks)
                for number, block in enumerate(self._stats):
                    self._stats[number] = block.copy()
                    self._stats_owned.add(number)
                stale: Sequence[int] = range(count)
            else:
                stale = sorted(self._stats_dirty) + list(range(self._stats_clean, count))
            # a block of slots at a time: what a revision of a long run computes stays small
            for first in range(0, len(stale), _BLOCK):
                self._judge(np.array(stale[first : first + _BLOCK], dtype=np.int64))
            self._stats_dirty.clear()
            self._stats_owned.clear()
            self._stats_clean = self._stats_shared = count
            steps = StepColumns(self._stats, count)
            known = steps.column("groups") > 0  # 0 where a step has no statistics
            if not known.all():
                steps = steps.select(known)
            means = {}
            for name, column in self._function_means.items():
                padded = np.full(count, math.nan)
                used = min(count, column.shape[0])
                padded[:used] = column[:used]
                means[name] = padded[known]
            return CompletionsSummary(
                lines=self._good_lines, steps=steps, revision=self._revision, function_means=means
            )

    def _judge(self, slots: np.ndarray) -> None:
        """Write the columns of these slots' summary rows that depend on the whole file so
        far: all-fail and all-pass (against the totals observed) and the format rate
        (known once any completion used a marker). Vectorised: a revision re-judges all."""
        entries = self._entries
        members = self._slot_entry[slots].astype(np.int64)
        places = np.arange(slots.size)
        if self._slot_more:
            more: list[int] = []
            more_places: list[int] = []
            for place, slot in enumerate(slots.tolist()):
                merged = self._slot_more.get(slot)
                if merged:
                    more += merged
                    more_places += [place] * len(merged)
            if more:
                members = np.concatenate([members, np.array(more, dtype=np.int64)])
                places = np.concatenate([places, np.array(more_places, dtype=np.int64)])
        tallied = entries.tallied[members]
        members, places = members[tallied], places[tallied]
        width = slots.size
        block_of = slots >> _BLOCK_SHIFT
        groups, completions = np.empty(width), np.empty(width)
        for block in np.unique(block_of).tolist():
            chosen = block_of == block
            rows = self._stats[block][slots[chosen] & _IN_BLOCK]
            groups[chosen] = rows[:, _COL["groups"]]
            completions[chosen] = rows[:, _COL["completions"]]
        tied = entries.tied_count[members]
        at_low: np.ndarray = np.zeros(width)
        at_high: np.ndarray = at_low
        low, high = self._total_min, self._total_max
        if tied.any() and high > low:
            # every tied total of these entries: its entry's run in the flat array
            firsts = np.cumsum(tied) - tied
            where = np.repeat(entries.tied_start[members] - firsts, tied) + np.arange(tied.sum())
            values = self._tied[where]
            tolerance = _TIE_TOLERANCE * max(1.0, abs(low), abs(high))
            owner = np.repeat(places, tied)
            with np.errstate(over="ignore", invalid="ignore"):  # huge logged totals: inf
                bottom, top = np.abs(values - low) <= tolerance, np.abs(values - high) <= tolerance
            at_low = np.bincount(owner, weights=bottom, minlength=width)
            at_high = np.bincount(owner, weights=top, minlength=width)
        judged = np.empty((width, 3))
        with np.errstate(divide="ignore", invalid="ignore"):
            judged[:, 0] = at_low / groups
            judged[:, 1] = at_high / groups
            follows = np.bincount(places, weights=entries.follows_format[members], minlength=width)
            judged[:, 2] = follows / completions if self._format_seen else math.nan
        for block in np.unique(block_of).tolist():
            chosen = block_of == block
            if block not in self._stats_owned and slots[chosen].min() < self._stats_shared:
                self._stats[block] = self._stats[block].copy()
                self._stats_owned.add(block)
            self._stats[block][np.ix_(slots[chosen] & _IN_BLOCK, _JUDGED)] = judged[chosen]

    # ----------------------------------------------------------------- bookkeeping

    @property
    def lines(self) -> int:
        """Completions lines read in the current file (bad lines excluded)."""
        return self._good_lines

    @property
    def bad_lines(self) -> tuple[BadLine, ...]:
        """The most recent lines that could not be used (up to BAD_LINES_KEPT), with reasons."""
        return tuple(self._bad)

    @property
    def bad_line_count(self) -> int:
        return self._bad_count

    @property
    def malformed_lines(self) -> int:
        """Lines kept although their lists had unequal lengths (cut to the shortest)."""
        return self._malformed_lines

    @property
    def reward_names(self) -> tuple[str, ...]:
        """Reward function columns seen so far, in order of discovery."""
        return tuple(self._reward_names)

    @property
    def total_range(self) -> tuple[float, float] | None:
        """Lowest and highest total reward seen so far (None before any)."""
        return None if self._total_max < self._total_min else (self._total_min, self._total_max)

    @property
    def cached_lines(self) -> int:
        """Parsed entries held in memory right now (never more than `cache_cap`)."""
        return len(self._cache)

    def entry_indices(self, kinds: Iterable[EntryKind] = ("new",)) -> list[int]:
        """Indices of the entries of the given kinds, oldest first (e.g. to skip repeats)."""
        codes = [_KIND_CODE[kind] for kind in set(kinds) if kind in _KIND_CODE]
        found: list[int] = []
        for first, records in self._entries.blocks_between(0, self._entries.count):
            found += (np.flatnonzero(np.isin(records["kind"], codes)) + first).tolist()
        return found


def _group_contains(analysed: _Analysed, group: _GroupStats, needle: str) -> bool:
    rows = analysed.rows
    if needle in rows.prompts[group.rows[0]].casefold():
        return True
    return any(needle in rows.completions[row].casefold() for row in group.rows)


def _optional_float(value: float | np.floating) -> float | None:
    number = float(value)
    return None if math.isnan(number) else number
