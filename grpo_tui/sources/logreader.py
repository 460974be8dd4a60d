"""Metric log lines → a Batch: parse, classify, map keys, and stack rows into matrices."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from grpo_tui.sources.formats.base import FormatAdapter, LinePlan
from grpo_tui.sources.jsonline import BadJson, parse_object
from grpo_tui.sources.records import BadLine, Batch, ColumnGroup, LineKind, RowBlock
from grpo_tui.sources.tail import TailLine

_EXCERPT_CHARS = 120


class _Group:
    """Rows sharing one plan while a batch is being built."""

    __slots__ = ("numbers", "objs", "plan", "rows", "strings")

    def __init__(self, plan: LinePlan) -> None:
        self.plan = plan
        self.rows: list[int] = []
        self.numbers: list[tuple[Any, ...]] = []
        self.strings: list[tuple[Any, ...]] = []
        self.objs: list[Mapping[str, Any]] = []


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
        self._seen_plans: set[int] = set()

    def read_lines(self, lines: Iterable[TailLine]) -> Batch:
        """Parse raw lines (bad ones are counted with a reason, never fatal)."""
        bad: list[BadLine] = []

        def parsed() -> Iterable[tuple[int, Mapping[str, Any]]]:
            for line in lines:
                try:
                    yield line.line_no, parse_object(line.data)
                except BadJson as error:
                    excerpt = line.data[:_EXCERPT_CHARS].decode("utf-8", errors="replace")
                    bad.append(BadLine(self.origin, line.line_no, str(error), excerpt))

        batch = self.read_objects(parsed())
        batch.bad_lines.extend(bad)
        return batch

    def read_objects(self, items: Iterable[tuple[int, Mapping[str, Any]]]) -> Batch:
        """Turn parsed log dicts into one Batch holding one RowBlock."""
        adapter = self.adapter
        batch = Batch()
        kinds: list[int] = []
        steps: list[int] = []
        groups: dict[int, _Group] = {}
        for _line_no, obj in items:
            plan = adapter.plan(obj)
            if id(plan) not in self._seen_plans:
                self._note_plan(plan, obj)
            if plan.kind == LineKind.SUMMARY:
                batch.finished = True
                continue
            step, max_steps = adapter.step_of(plan, obj)
            if max_steps:
                self.max_steps = max_steps
            if step is None:
                # no step key: an eval/end line belongs to the step before it; a train
                # line without one (generic logs) is counted
                step = self.last_step if plan.kind != LineKind.TRAIN else self.last_step + 1
            self.last_step = step
            group = groups.get(id(plan))
            if group is None:
                group = groups[id(plan)] = _Group(plan)
            group.rows.append(len(kinds))
            if plan.getter is not None:
                group.numbers.append(plan.getter(obj))
            if plan.string_getter is not None:
                group.strings.append(plan.string_getter(obj))
            group.objs.append(obj)
            kinds.append(int(plan.kind))
            steps.append(step)
        if kinds:
            block = RowBlock(
                kinds=np.array(kinds, dtype=np.uint8),
                steps=np.array(steps, dtype=np.float64),
                groups=[g for group in groups.values() for g in self._matrices(group)],
                max_steps=self.max_steps,
            )
            batch.blocks.append(block)
        return batch

    def _matrices(self, group: _Group) -> list[ColumnGroup]:
        plan = group.plan
        try:
            values = self._matrix(plan, group.numbers, group.strings, len(group.rows))
        except (TypeError, ValueError):
            # a key that held a number in the plan's first line holds something else in
            # another: re-plan those rows one by one from their own value types
            return [self._single_row(row, obj) for row, obj in zip(group.rows, group.objs)]
        rows = np.array(group.rows, dtype=np.int64)
        return [ColumnGroup(rows, plan.all_columns, plan.source_keys, values)]

    def _single_row(self, row: int, obj: Mapping[str, Any]) -> ColumnGroup:
        plan = self.adapter.fresh_plan(obj)
        numbers = [plan.getter(obj)] if plan.getter is not None else []
        strings = [plan.string_getter(obj)] if plan.string_getter is not None else []
        values = self._matrix(plan, numbers, strings, 1)
        return ColumnGroup(np.array([row], dtype=np.int64), plan.all_columns, plan.source_keys, values)

    @staticmethod
    def _matrix(
        plan: LinePlan, numbers: list[tuple[Any, ...]], strings: list[tuple[Any, ...]], n_rows: int
    ) -> np.ndarray:
        """(rows × columns) float64: the numbers in one conversion, rates inverted as a
        column, the progress strings parsed column by column."""
        values = np.empty((n_rows, len(plan.columns) + len(plan.parsed)))
        if plan.columns:
            values[:, : len(plan.columns)] = np.array(numbers, dtype=np.float64).reshape(
                n_rows, len(plan.columns)
            )
            for i in plan.inverted:
                with np.errstate(divide="ignore"):
                    rate = values[:, i]
                    values[:, i] = np.where(rate != 0, 1.0 / np.where(rate != 0, rate, 1.0), np.nan)
        for j, (_, _, parser) in enumerate(plan.parsed):
            values[:, len(plan.columns) + j] = [
                parser(row[j]) if row[j].__class__ is str else None for row in strings
            ]
        return values

    def _note_plan(self, plan: LinePlan, obj: Mapping[str, Any]) -> None:
        self._seen_plans.add(id(plan))
        for key, hint in self.adapter.version_hints:
            if key in obj and hint not in self.version_hints:
                self.version_hints.append(hint)
