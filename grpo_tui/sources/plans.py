"""Line plans: how the reader takes every line of one key set, built from an adapter's tables.

Speed matters (a backfill can be 100 000 lines): a line's key set is turned once into a
`LinePlan` (which keys are numbers, where each goes, which strings to parse), cached here
by adapter and key set. The plan's getters and its `struct` packer let a reader take a
whole group of lines of one shape through C-level `map`s (see shapes.py), with no Python
code per line.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.values import ColumnParser
from grpo_tui.vocabulary import LineKind

#: a getter that returns some of a line's values as a tuple (raises KeyError when missing)
TupleGetter = Callable[[Mapping[str, Any]], tuple[Any, ...]]

#: key shapes are few in practice (a handful per adapter); the cache is bounded anyway
_PLANS_KEPT = 512
_PLANS: dict[tuple[FormatAdapter, tuple[str, ...]], LinePlan] = {}


@dataclass(frozen=True, slots=True)
class LinePlan:
    """How to read every line that has one particular key set."""

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
    #: key → canonical, for `inspect`
    source_keys: Mapping[str, str]
    #: how many keys the shape has: a line with as many keys that all getters accept has
    #: exactly this key set
    key_count: int
    #: C-level getters: the numbers as a tuple; one getter per parsed string key and per
    #: step key (a column each); every other key (read only to prove the line has it)
    getter: TupleGetter | None
    string_getters: tuple[Callable[[Mapping[str, Any]], Any], ...]
    step_getters: tuple[Callable[[Mapping[str, Any]], Any], ...]
    rest_getter: TupleGetter | None
    #: positions in the rest tuple of keys that have a string parser (they held no string
    #: in the plan's line; a line where they do reads differently)
    rest_parsable: tuple[int, ...]
    #: packs the numbers of one line into float64 bytes (raises on a non-number)
    packer: struct.Struct

    @property
    def all_columns(self) -> tuple[str, ...]:
        """Numbers first, then the parsed strings: the order of a row's values."""
        return self.columns + tuple(canonical for _, canonical, _ in self.parsed)


def line_plan(adapter: FormatAdapter, obj: Mapping[str, Any]) -> LinePlan:
    """The cached reading plan for this line's key set. The plan assumes the number keys
    hold numbers again; `fresh_plan` re-reads the types when they do not."""
    # keyed by the keys in order: one tuple build and hash per line, no set
    key = (adapter, tuple(obj))
    plan = _PLANS.get(key)
    if plan is None:
        plan = fresh_plan(adapter, obj)
        if len(_PLANS) >= _PLANS_KEPT:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


def fresh_plan(adapter: FormatAdapter, obj: Mapping[str, Any]) -> LinePlan:
    """A plan built from this very line's value types (not cached)."""
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
            continue  # lists, dicts, None this time: not a number in this shape
        # true/false are logged values too (1/0): a packed number cannot tell them
        # apart, so a line reads the same whether its shape was first seen with a bool
        canonical = adapter.canonical(key)
        held = chosen.get(canonical)
        if held is None or adapter.priority(key) < adapter.priority(held):
            chosen[canonical] = key
    number_keys = tuple(chosen.values())
    string_keys = tuple(key for key, _, _ in parsed)
    covered = {*number_keys, *string_keys, *step_keys}
    rest_keys = tuple(key for key in obj if key not in covered)
    source_keys = {c: k for c, k in chosen.items()}
    source_keys.update({c: k for k, c, _ in parsed})
    transforms = adapter.number_transforms
    return LinePlan(
        kind=adapter.classify(obj),
        number_keys=number_keys,
        columns=tuple(chosen),
        parsed=tuple(parsed),
        step_keys=step_keys,
        inverted=tuple(
            i for i, key in enumerate(number_keys) if transforms.get(key, ("", False))[1]
        ),
        source_keys=source_keys,
        key_count=len(obj),
        getter=_tuple_getter(number_keys),
        string_getters=tuple(map(itemgetter, string_keys)),
        step_getters=tuple(map(itemgetter, step_keys)),
        rest_getter=_tuple_getter(rest_keys),
        rest_parsable=tuple(i for i, key in enumerate(rest_keys) if key in adapter.string_parsers),
        packer=struct.Struct(f"={len(number_keys)}d"),
    )


def _tuple_getter(keys: tuple[str, ...]) -> TupleGetter | None:
    """itemgetter that always returns a tuple (itemgetter of one key returns the value)."""
    if not keys:
        return None
    if len(keys) == 1:
        key = keys[0]
        return lambda obj: (obj[key],)
    return itemgetter(*keys)
