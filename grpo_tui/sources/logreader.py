"""One metrics log → Batches: every line read as if it were read alone, in line order.

A line means what its keys and its values' types say: which keys are numbers and which
canonical column each goes to, which strings carry a number, which key gives the step.
That reading (a `_Plan`) is made once per key set and value types and cached, and lines
that share one are stacked: their numbers become one matrix, their progress strings are
parsed a column at a time (formats/values.py). What depends on earlier lines is settled
afterwards, in order: a line that names no step takes the step of the line before (eval
and end lines) or the next one (a train line of a log that counts no steps), and
max_steps and the version hints carry over from chunk to chunk.

Lines are parsed with orjson. Python's `json.dumps` (what ms-swift and EasyR1 write with)
emits bare `NaN`, `Infinity` and `-Infinity`, which orjson rejects: those lines, and lines
with invalid UTF-8 inside a string, go through the standard library, which accepts them.
Anything else that fails is a bad line, with a reason a user can act on.

Why no faster reader (issue 20: one only if `check` on 100 000 lines is 2× faster with
it). Measured side by side, `bench/ingest.py --check --repeat 9 --baseline 64e4dbe`, best
of 9 on a 2-core box: `check` took 2.21 s with this reader, 1.94 s with the line-shape
fast path it replaced (shapes.py and plans.py, ≈300 more lines: 1.14×), and 2.64 s with
pyarrow.json reading blocks of lines and this reader for the blocks it refuses (it
refuses the bare NaN that Python's json.dumps writes, so most blocks of a real ms-swift
log fall back; on the same log with no NaN, in whole 8 MB chunks, it read in 0.84 s to
this reader's 0.79 s). The read alone (bench/ingest.py, best of 9): 0.76 s here, 0.55 s
the fast path, 1.24 s pyarrow; the fast path's 0.2 s is a tenth of a whole `check`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np
import orjson

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.values import ColumnParser, fraction_column
from grpo_tui.sources.records import BadLine, Batch, ColumnGroup, RowBlock
from grpo_tui.vocabulary import LineKind

#: lines parsed at a time: their dicts are freed before the next ones are made
SLICE_LINES = 1024
_EXCERPT_CHARS = 120
#: key sets × value types are few in practice (a handful per adapter); bounded anyway
_PLANS_KEPT = 512
_PLANS: dict[tuple[FormatAdapter, tuple[str, ...], tuple[type, ...]], _Plan] = {}


# -- a line → a JSON object ---------------------------------------------------------------
class BadJson(ValueError):
    """The line is not a JSON object; the message says why."""


def parse_json(data: bytes) -> Any:
    """Parse JSON text; NaN/Infinity tokens and bytes that are not UTF-8 (replaced) go
    through the standard library. Raises BadJson."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as fast_error:
        try:
            return json.loads(data.decode("utf-8", errors="replace"))
        except json.JSONDecodeError as error:
            raise BadJson(describe_json_error(error, data)) from fast_error
        except RecursionError as error:
            raise BadJson("nested too deeply") from error


def parse_object(data: bytes) -> dict[str, Any]:
    """Parse a line that must hold one JSON object. Raises BadJson."""
    obj = parse_json(data)
    if not isinstance(obj, dict):
        raise BadJson(f"a JSON {type(obj).__name__}, not an object")
    return obj


def describe_json_error(error: json.JSONDecodeError, data: bytes) -> str:
    """Why a line (or file) is not JSON, in words: "cut off: …" or "not JSON: …", with where.
    (The standard library's messages end in " at" for some errors: "Invalid control
    character at"; the position is added here once.)"""
    message = error.msg.removesuffix(" at")
    where = (
        f"line {error.lineno} column {error.colno}" if error.lineno > 1 else f"column {error.colno}"
    )
    # the text stopped where more was expected: an unterminated string, or a value or
    # delimiter expected at the very end (not "Extra data", which is more than expected)
    at_end = error.pos >= len(error.doc.rstrip())
    if "Unterminated" in error.msg or (error.msg.startswith("Expecting") and at_end):
        return f"cut off: {message} at {where}"
    return f"not JSON: {message} at {where}"


# -- plans ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, eq=False)
class _Plan:
    """How to read every line with one key set and one type per value."""

    kind: LineKind
    #: keys whose values are numbers, and the canonical column each goes to
    number_keys: tuple[str, ...]
    columns: tuple[str, ...]
    #: string keys with a column parser: (key, canonical column, parser)
    parsed: tuple[tuple[str, str, ColumnParser], ...]
    #: keys that give the step: "N/M" strings or ints, in priority order
    step_keys: tuple[str, ...]
    #: positions in `number_keys` holding a rate to invert (iterations/s → s/iteration)
    inverted: tuple[int, ...]
    #: canonical → the key it came from, for `inspect`
    source_keys: Mapping[str, str]


def _plan(adapter: FormatAdapter, obj: Mapping[str, Any]) -> _Plan:
    """The (cached) reading of a line with this line's keys and value types."""
    key = (adapter, tuple(obj), tuple(map(type, obj.values())))
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= _PLANS_KEPT:
            _PLANS.clear()
        plan = _PLANS[key] = _make_plan(adapter, obj)
    return plan


def _make_plan(adapter: FormatAdapter, obj: Mapping[str, Any]) -> _Plan:
    step_keys = tuple(k for k in (*adapter.fraction_step_keys, *adapter.int_step_keys) if k in obj)
    chosen: dict[str, str] = {}  # canonical → key
    parsed: list[tuple[str, str, ColumnParser]] = []
    for key, value in obj.items():
        if key in step_keys or key in adapter.ignored_keys:
            continue
        if isinstance(value, str):
            parser = adapter.string_parsers.get(key)
            if parser is not None:
                parsed.append((key, parser[0], parser[1]))
            continue
        if not isinstance(value, (int, float)):
            continue  # lists, dicts, None: not a number on this line
        # true/false are logged values too (1/0)
        canonical = adapter.canonical(key)
        held = chosen.get(canonical)
        if held is None or adapter.priority(key) < adapter.priority(held):
            chosen[canonical] = key
    number_keys = tuple(chosen.values())
    source_keys = {**chosen, **{c: k for k, c, _ in parsed}}
    transforms = adapter.number_transforms
    return _Plan(
        kind=adapter.classify(obj),
        number_keys=number_keys,
        columns=tuple(chosen),
        parsed=tuple(parsed),
        step_keys=step_keys,
        inverted=tuple(
            i for i, key in enumerate(number_keys) if transforms.get(key, ("", False))[1]
        ),
        source_keys=source_keys,
    )


class _Stack:
    """The lines of one plan: row numbers, numbers as matrices, strings still raw (they
    are parsed a whole column at a time in `group`)."""

    __slots__ = ("numbers", "plan", "rows", "steps", "strings")

    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        self.rows: list[int] = []
        self.numbers: list[np.ndarray] = []
        #: per parsed string key / step key: its values, line after line
        self.strings: list[list[Any]] = [[] for _ in plan.parsed]
        self.steps: list[list[Any]] = [[] for _ in plan.step_keys]

    def add(self, rows: list[int], objs: list[Mapping[str, Any]]) -> None:
        plan = self.plan
        self.rows.extend(rows)
        if plan.number_keys:
            self.numbers.append(_numbers(plan.number_keys, objs))
        for held, (key, _, _) in zip(self.strings, plan.parsed):
            held.extend(map(itemgetter(key), objs))
        for held, key in zip(self.steps, plan.step_keys):
            held.extend(map(itemgetter(key), objs))

    def group(self) -> tuple[ColumnGroup, np.ndarray, np.ndarray]:
        """The rows as a column group, with the step and max_steps each line named (NaN
        where it named none)."""
        plan = self.plan
        n_rows, n_numbers = len(self.rows), len(plan.columns)
        values = np.empty((n_rows, n_numbers + len(plan.parsed)))
        if n_numbers:
            values[:, :n_numbers] = np.concatenate(self.numbers)
        for i in plan.inverted:
            with np.errstate(divide="ignore", over="ignore"):  # 1/tiny rate is inf
                rate = values[:, i]
                values[:, i] = np.where(rate != 0, 1.0 / np.where(rate != 0, rate, 1.0), np.nan)
        for j, (_, _, parser) in enumerate(plan.parsed):
            values[:, n_numbers + j] = parser(self.strings[j])
        steps = np.full(n_rows, np.nan)
        maxes = np.full(n_rows, np.nan)
        for column in self.steps:
            # the first step key that parses wins, line by line
            found, found_max = fraction_column(column)
            open_ = np.isnan(steps)
            steps[open_] = found[open_]
            maxes[open_] = found_max[open_]
        rows = np.array(self.rows, dtype=np.intp)
        # numbers first, then the parsed strings: the order of a row's values
        columns = plan.columns + tuple(canonical for _, canonical, _ in plan.parsed)
        return ColumnGroup(rows, columns, plan.source_keys, values), steps, maxes


def _numbers(keys: tuple[str, ...], objs: list[Mapping[str, Any]]) -> np.ndarray:
    """The number values of these lines as a float64 matrix (ints too big for a float are
    ±inf)."""
    get = itemgetter(*keys) if len(keys) > 1 else lambda obj: (obj[keys[0]],)
    rows = list(map(get, objs))
    try:
        return np.array(rows, dtype=np.float64).reshape(len(objs), len(keys))
    except OverflowError:
        return np.array([[_float(value) for value in row] for row in rows])


def _float(value: Any) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


class LogReader:
    """Reads one metrics log (a JSONL file, or a list of log_history items).

    Keeps the little state lines need from each other: the last step (eval lines and
    lines without a step key take it from the line before), max_steps, and the version
    hints the key sets gave away.
    """

    def __init__(self, adapter: FormatAdapter, origin: str) -> None:
        self.adapter = adapter
        self.origin = origin
        self.last_step: int = 0
        self.max_steps: int | None = None
        self.version_hints: list[str] = []
        #: the framework's own keys seen so far, and what they say of the tool on top
        #: of it ("Unsloth (TRL)"; None when nothing more than the adapter)
        self.keys_seen: set[str] = set()
        self.flavour: str | None = None
        #: a train line named no step, so the reader counted (generic logs)
        self.counted_steps = False

    def restart(self) -> None:
        """The file started over: steps count from the start again."""
        self.last_step = 0

    def read_chunk(self, data: bytes, first_line_no: int = 1) -> Batch:
        """Complete lines (bytes, each line ending in a newline) → a Batch. Bad lines are
        counted with their line number and a reason, never fatal."""
        lines = data.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        batch = Batch()
        stacks: dict[_Plan, _Stack] = {}
        n_rows = 0
        for start in range(0, len(lines), SLICE_LINES):
            objs = self._parse(lines[start : start + SLICE_LINES], first_line_no + start, batch)
            n_rows = self._stack(objs, n_rows, stacks, batch)
        return self._settle(stacks, n_rows, batch)

    def finish(self) -> Batch:
        """The end of a one-shot read: nothing waits in a line reader."""
        return Batch()

    def read_objects(self, objs: Sequence[Mapping[str, Any]]) -> Batch:
        """Already parsed log dicts (log_history items, a store's records) → a Batch."""
        batch = Batch()
        stacks: dict[_Plan, _Stack] = {}
        return self._settle(stacks, self._stack(objs, 0, stacks, batch), batch)

    def carry_over(self, previous: LogReader) -> None:
        """Go on from another reader of the same run (a resumed run's new file)."""
        self.last_step = previous.last_step
        self.max_steps = previous.max_steps
        self.version_hints = previous.version_hints
        self.keys_seen = previous.keys_seen
        self.flavour = previous.flavour

    # -- lines -----------------------------------------------------------------------
    def _parse(self, lines: Sequence[bytes], first_line_no: int, batch: Batch) -> list[Any]:
        """The JSON objects of these lines; blank lines skipped, bad ones into the batch."""
        objs: list[Any] = []
        loads = orjson.loads
        for line_no, line in enumerate(lines, first_line_no):
            try:
                obj = loads(line)
            except orjson.JSONDecodeError:
                if not line.strip():
                    continue
                obj = None  # NaN/Infinity tokens, invalid UTF-8, or bad
            if type(obj) is not dict:
                try:
                    obj = parse_object(line)  # the slow path, or why the line is bad
                except BadJson as error:
                    excerpt = line.rstrip(b"\r")[:_EXCERPT_CHARS].decode("utf-8", "replace")
                    batch.bad_lines.append(BadLine(self.origin, line_no, str(error), excerpt))
                    continue
            objs.append(obj)
        return objs

    def _stack(
        self,
        objs: Sequence[Mapping[str, Any]],
        n_rows: int,
        stacks: dict[_Plan, _Stack],
        batch: Batch,
    ) -> int:
        """Stack the objects by plan after the `n_rows` rows stacked so far; the rows then."""
        flatten = self.adapter.flatten
        if flatten is not None:
            # nested records (verl's {"step", "data"}, EasyR1's dicts) become log dicts
            objs = [flatten(dict(obj)) for obj in objs]
        groups: dict[_Plan, tuple[list[int], list[Mapping[str, Any]]]] = {}
        for obj in objs:
            plan = _plan(self.adapter, obj)
            if plan.kind == LineKind.SUMMARY:
                batch.finished = True  # the run ended; the summary is not a metric row
                continue
            group = groups.get(plan)
            if group is None:
                group = groups[plan] = ([], [])
                if plan not in stacks:
                    self._note_keys(obj)
            group[0].append(n_rows)
            group[1].append(obj)
            n_rows += 1
        for plan, (rows, group_objs) in groups.items():
            stacks.setdefault(plan, _Stack(plan)).add(rows, group_objs)
        return n_rows

    def _note_keys(self, obj: Mapping[str, Any]) -> None:
        """A new key set: the keys it brings and what they say of the version and tool."""
        for key, hint in self.adapter.version_hints:
            if key in obj and hint not in self.version_hints:
                self.version_hints.append(hint)
        before = len(self.keys_seen)
        self.keys_seen.update(obj)
        if self.adapter.flavour is not None and len(self.keys_seen) != before:
            self.flavour = self.adapter.flavour(self.keys_seen)

    # -- settling ----------------------------------------------------------------------
    def _settle(self, stacks: dict[_Plan, _Stack], n_rows: int, batch: Batch) -> Batch:
        """The stacked rows as one block, their open steps filled in line order."""
        if not n_rows:
            return batch
        kinds = np.zeros(n_rows, dtype=np.uint8)
        steps = np.full(n_rows, np.nan)
        maxes = np.full(n_rows, np.nan)
        groups: list[ColumnGroup] = []
        for stack in stacks.values():
            group, group_steps, group_maxes = stack.group()
            kinds[group.rows] = stack.plan.kind
            steps[group.rows] = group_steps
            maxes[group.rows] = group_maxes
            groups.append(group)
        named = np.flatnonzero(~np.isnan(maxes))
        if named.size and int(maxes[named[-1]]):
            self.max_steps = int(maxes[named[-1]])
        steps = self._fill_steps(kinds, steps)
        batch.blocks.append(RowBlock(kinds, steps, groups, self.max_steps))
        return batch

    def _fill_steps(self, kinds: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Steps for the lines that named none, in order; updates `last_step`."""
        if np.isnan(steps).any():
            filled = steps.tolist()
            last = self.last_step
            for i, (kind, step) in enumerate(zip(kinds.tolist(), filled)):
                if math.isnan(step):  # no step key: an eval/end line belongs to the step
                    # before it; a train line without one (generic logs) is counted
                    if kind == LineKind.TRAIN:
                        self.counted_steps = True
                    step = last + 1 if kind == LineKind.TRAIN else last
                    filled[i] = step
                last = int(step)
            steps = np.array(filled, dtype=np.float64)
        self.last_step = int(steps[-1])
        return steps
