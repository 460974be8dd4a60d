"""Metric log lines → matrices, grouped by key shape: the reading hot path.

A backfill can be 100 000 lines, so on the usual path no Python code runs per line: lines
are parsed a slice at a time with `map(orjson.loads, …)`, grouped by key count and first
key, and each group is read with its plan's getters and `struct` packer in C-level maps.
The getters double as the shape check: a group's lines have as many keys as its first
line, so a line they all accept has exactly that key set; a `KeyError` splits the group by
exact key tuples instead. A line whose values take other roles than in the plan's line (a
number key holding null, a null key holding a number: the packer refuses it, or a type
check per column says so) goes through a plan made from its own types, so every line reads
as if it were read alone (tests/test_shapes.py holds the fast path to that). Progress
strings are parsed a column at a time (formats/values.py).

Steps a line does not name (an eval line without a step key, a generic log without any)
are left NaN here: they depend on the lines before (logreader.py settles them in order).

Everything here is a pure function of the bytes it is given. It earns its lines: a plain
reader (orjson per line, a Python loop over each line's keys into column lists, one block
into the store) takes about 4× as long on 100 000 real-shaped lines (bench/ingest.py).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, islice, repeat, starmap
from operator import itemgetter
from typing import Any

import numpy as np
import orjson

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.values import fraction_column
from grpo_tui.sources.jsonline import BadJson, parse_object
from grpo_tui.sources.plans import LinePlan, fresh_plan, line_plan
from grpo_tui.sources.records import BadLine, ColumnGroup
from grpo_tui.vocabulary import LineKind

#: lines parsed per slice: enough to amortise the per-slice numpy calls, few enough that
#: the slice's dicts are freed while their memory is still in cache
SLICE_LINES = 256
_EXCERPT_CHARS = 120
_NOT_NUMBERS = (struct.error, TypeError, OverflowError)  # what struct.pack raises on a non-number
#: what a plan reads as a number (true/false as 1/0, see plans.py)
_NUMBER_TYPES = {int, float, bool}


@dataclass(slots=True)
class Part:
    """What a stretch of lines gave, before the reader settles the steps lines left open."""

    kinds: np.ndarray
    #: the step each line named; NaN where it named none (the reader fills those in order)
    steps: np.ndarray
    groups: list[ColumnGroup]
    #: the last max_steps a line named
    max_steps: int | None = None
    bad_lines: list[BadLine] = field(default_factory=list)
    #: a final summary line was read: the run ended
    finished: bool = False
    version_hints: list[str] = field(default_factory=list)
    #: every key the lines had, as the framework wrote them (one key set per shape)
    keys: set[str] = field(default_factory=set)


class _Stack:
    """The rows of one plan, slice by slice: numbers as matrices, the strings still raw
    (they are parsed a whole column at a time when the stack is finished)."""

    __slots__ = ("numbers", "plan", "rows", "steps", "strings")

    def __init__(self, plan: LinePlan) -> None:
        self.plan = plan
        self.rows: list[np.ndarray] = []
        self.numbers: list[np.ndarray] = []
        #: per parsed string key / step key: its values, slice after slice
        self.strings: list[list[Any]] = [[] for _ in plan.parsed]
        self.steps: list[list[Any]] = [[] for _ in plan.step_keys]

    def finish(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(rows, values matrix, steps, max_steps) of everything stacked."""
        plan = self.plan
        rows = np.concatenate(self.rows)
        n_rows, n_numbers = rows.shape[0], len(plan.columns)
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
        return rows, values, steps, maxes


class ShapeStacker:
    """Parsed log objects in, one `Part` out. Feed it `add(objs)` in order, then `finish()`."""

    def __init__(self, adapter: FormatAdapter, origin: str) -> None:
        self.adapter = adapter
        self.origin = origin
        self.bad_lines: list[BadLine] = []
        self.finished = False
        self._rows = 0
        # keyed by the plan object (fresh plans for odd lines are new objects); a stack's
        # rows arrive in order, so every stack's rows are increasing
        self._stacks: dict[int, _Stack] = {}
        self._hints: list[str] = []
        self._keys: set[str] = set()

    # -- input ---------------------------------------------------------------------------
    def add_lines(self, lines: Sequence[bytes], first_line_no: int) -> None:
        """Raw lines (no line endings needed; blank lines are skipped)."""
        for start in range(0, len(lines), SLICE_LINES):
            self.add(self._parse(lines[start : start + SLICE_LINES], first_line_no + start))

    def add(self, objs: Sequence[Mapping[str, Any]]) -> None:
        """Log objects in order (a slice of lines or of log_history items)."""
        if not objs:
            return
        flatten = self.adapter.flatten
        if flatten is not None:
            # nested records (verl's {"step", "data"}, EasyR1's dicts) become log dicts
            objs = [flatten(dict(obj)) for obj in objs]
        slabs = self._slabs(objs)
        if any(slab.plan.kind == LineKind.SUMMARY for slab in slabs):
            # the summary line marks the run finished and is not a metric row
            self.finished = True
            self.add(_without_summaries(objs, slabs))
            return
        base = self._rows
        for slab in slabs:
            rows = (
                np.arange(base, base + len(objs))
                if slab.positions is None
                else np.asarray(slab.positions, dtype=np.intp) + base
            )
            self._stack(rows, slab)
        self._rows += len(objs)

    # -- output --------------------------------------------------------------------------
    def finish(self) -> Part:
        n = self._rows
        kinds = np.zeros(n, dtype=np.uint8)
        steps = np.full(n, np.nan)
        maxes = np.full(n, np.nan)
        groups: list[ColumnGroup] = []
        for stack in self._stacks.values():
            rows, values, stack_steps, stack_maxes = stack.finish()
            kinds[rows] = stack.plan.kind
            steps[rows] = stack_steps
            maxes[rows] = stack_maxes
            groups.append(ColumnGroup(rows, stack.plan.all_columns, stack.plan.source_keys, values))
        named = np.flatnonzero(~np.isnan(maxes))
        max_steps = int(maxes[named[-1]]) if named.size else None
        return Part(
            kinds, steps, groups, max_steps, self.bad_lines, self.finished, self._hints, self._keys
        )

    # -- parsing -------------------------------------------------------------------------
    def _parse(self, lines: Sequence[bytes], first_line_no: int) -> list[Mapping[str, Any]]:
        objs: list[Any] = []
        loads = orjson.loads
        bad_before = len(self.bad_lines)
        pos = 0
        while True:
            done = len(objs)
            try:
                # extend keeps what it parsed before a line fails: resume after that line
                objs.extend(map(loads, islice(lines, pos, None)))
            except orjson.JSONDecodeError:
                failed = pos + len(objs) - done
                self._slow_line(lines[failed], first_line_no + failed, objs)
                pos = failed + 1
                continue
            break
        if objs and set(map(type, objs)) != {dict}:
            # valid JSON that is not an object (a list, a number) is a bad line too. Rare:
            # redo the slice line by line to know each one's line number
            del self.bad_lines[bad_before:]
            kept: list[Any] = []
            for offset, line in enumerate(lines):
                self._slow_line(line, first_line_no + offset, kept)
            return kept
        return objs

    def _slow_line(self, line: bytes, line_no: int, objs: list[Any]) -> None:
        """A line orjson refused: blank, NaN/Infinity tokens, invalid UTF-8, or bad."""
        if not line.strip():
            return
        try:
            objs.append(parse_object(line))
        except BadJson as error:
            self._bad(line, line_no, str(error))

    def _bad(self, line: bytes, line_no: int, reason: str) -> None:
        excerpt = line.rstrip(b"\r")[:_EXCERPT_CHARS].decode("utf-8", errors="replace")
        self.bad_lines.append(BadLine(self.origin, line_no, reason, excerpt))

    # -- grouping ------------------------------------------------------------------------
    def _slabs(self, objs: Sequence[Mapping[str, Any]]) -> list[_Slab]:
        """The objects grouped by shape, each group read by its plan's getters."""
        # a cheap shape guess: key count and first key (train and eval lines can have as
        # many keys, but not the same first one)
        n = len(objs)
        lens = list(map(len, objs))
        firsts = list(map(next, map(iter, objs), repeat(None)))
        if lens.count(lens[0]) == n and firsts.count(firsts[0]) == n:
            by_guess: list[tuple[list[int] | None, Sequence[Mapping[str, Any]]]] = [(None, objs)]
        else:
            guesses = list(zip(lens, firsts))
            by_guess = []
            for guess in dict.fromkeys(guesses):
                same = np.fromiter(map(guess.__eq__, guesses), dtype=bool, count=n)
                positions = np.flatnonzero(same).tolist()
                by_guess.append((positions, list(map(objs.__getitem__, positions))))
        slabs: list[_Slab] = []
        for positions_, group in by_guess:
            # all have the first one's key count: a line every getter accepts has its keys
            slab = _read_slab(line_plan(self.adapter, group[0]), positions_, group)
            if slab is not None:
                slabs.append(slab)
            else:
                slabs.extend(self._split_by_keys(positions_, group))
        return slabs

    def _split_by_keys(
        self, positions: list[int] | None, group: Sequence[Mapping[str, Any]]
    ) -> Iterable[_Slab]:
        """Equal key counts, different key sets: group by the exact keys (rare)."""
        shapes: dict[tuple[str, ...], tuple[list[int], list[Mapping[str, Any]]]] = {}
        for i, obj in enumerate(group):
            entry = shapes.setdefault(tuple(obj), ([], []))
            entry[0].append(i if positions is None else positions[i])
            entry[1].append(obj)
        for pos, objs in shapes.values():
            slab = _read_slab(line_plan(self.adapter, objs[0]), pos, objs)
            assert slab is not None  # one exact key tuple: its own plan reads every line
            yield slab

    # -- stacking ------------------------------------------------------------------------
    def _stack(self, rows: np.ndarray, slab: _Slab) -> None:
        if slab.typed_like_plan:
            try:
                self._push(rows, slab, _pack(slab.plan, slab.numbers))
                return
            except _NOT_NUMBERS:
                pass
        # some line types a key unlike the plan's first line (a number key holding null,
        # a null key holding a number): stack the lines that are typed alike, re-plan the
        # others from their own value types, so every line reads as if alone
        for i, (row, obj) in enumerate(zip(rows.tolist(), slab.objs)):
            one = slab.row(i)
            if one.typed_like_plan:
                try:
                    self._push(np.array([row]), one, _pack(one.plan, one.numbers))
                    continue
                except _NOT_NUMBERS:
                    pass
            fresh = _read_slab(fresh_plan(self.adapter, obj), None, (obj,))
            assert fresh is not None  # a plan made from this very line reads it
            self._push(np.array([row]), fresh, _pack(fresh.plan, fresh.numbers, lenient=True))

    def _push(self, rows: np.ndarray, slab: _Slab, numbers: bytes) -> None:
        plan = slab.plan
        stack = self._stacks.get(id(plan))
        if stack is None:
            stack = self._stacks[id(plan)] = _Stack(plan)
            self._keys.update(slab.objs[0])
            for key, hint in self.adapter.version_hints:
                if key in slab.objs[0] and hint not in self._hints:
                    self._hints.append(hint)
        stack.rows.append(rows)
        stack.numbers.append(
            np.frombuffer(numbers, dtype=np.float64).reshape(rows.shape[0], len(plan.columns))
        )
        for held, column in zip(stack.strings, slab.strings):
            held.extend(column)
        for held, column in zip(stack.steps, slab.steps):
            held.extend(column)


@dataclass(slots=True)
class _Slab:
    """Objects of one shape from one slice, with what the plan's getters took from them."""

    plan: LinePlan
    #: their positions in the slice; None when the slice is all this shape
    positions: list[int] | None
    objs: Sequence[Mapping[str, Any]]
    #: the number tuples, row by row (None: the plan has no numbers)
    numbers: list[tuple[Any, ...]] | None
    #: one column per parsed string key, per step key
    strings: list[list[Any]]
    steps: list[list[Any]]
    #: the other keys' values, row by row (None: the plan has no other keys)
    rest: list[tuple[Any, ...]] | None

    @property
    def typed_like_plan(self) -> bool:
        """Every value has the role it had in the plan's line: the strings to parse are
        strings, no other key holds a number or a string to parse (the numbers themselves
        are checked by packing them)."""
        if any(set(map(type, column)) != {str} for column in self.strings):
            return False
        if self.rest is None:
            return True
        if set(map(type, chain.from_iterable(self.rest))) & _NUMBER_TYPES:
            return False
        return not any(
            str in set(map(type, map(itemgetter(i), self.rest))) for i in self.plan.rest_parsable
        )

    def row(self, i: int) -> _Slab:
        """Object `i` alone."""
        return _Slab(
            self.plan,
            None,
            (self.objs[i],),
            None if self.numbers is None else [self.numbers[i]],
            [[column[i]] for column in self.strings],
            [[column[i]] for column in self.steps],
            None if self.rest is None else [self.rest[i]],
        )


def _read_slab(
    plan: LinePlan, positions: list[int] | None, group: Sequence[Mapping[str, Any]]
) -> _Slab | None:
    """Run the plan's getters over the group in C; None if a line lacks one of its keys."""
    try:
        numbers = list(map(plan.getter, group)) if plan.getter is not None else None
        strings = [list(map(getter, group)) for getter in plan.string_getters]
        steps = [list(map(getter, group)) for getter in plan.step_getters]
        rest = list(map(plan.rest_getter, group)) if plan.rest_getter is not None else None
    except KeyError:
        return None
    return _Slab(plan, positions, group, numbers, strings, steps, rest)


def _pack(plan: LinePlan, numbers: list[tuple[Any, ...]] | None, *, lenient: bool = False) -> bytes:
    """The number values as float64 bytes, row after row (struct refuses non-numbers)."""
    if numbers is None:
        return b""
    rows: Iterable[tuple[Any, ...]] = numbers
    if lenient:
        rows = (tuple(map(_float, row)) for row in numbers)
    return b"".join(starmap(plan.packer.pack, rows))


def _float(value: Any) -> float:
    """A number from a plan made for this very line: ints too big for a float are ±inf."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _without_summaries(
    objs: Sequence[Mapping[str, Any]], slabs: list[_Slab]
) -> list[Mapping[str, Any]]:
    drop: set[int] = set()
    for slab in slabs:
        if slab.plan.kind == LineKind.SUMMARY:
            drop.update(range(len(objs)) if slab.positions is None else slab.positions)
    return [obj for i, obj in enumerate(objs) if i not in drop]


def read_part(adapter: FormatAdapter, origin: str, data: bytes, first_line_no: int) -> Part:
    """Complete lines (each ending in a newline) → a Part. `first_line_no` numbers the first."""
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    stacker = ShapeStacker(adapter, origin)
    stacker.add_lines(lines, first_line_no)
    return stacker.finish()
