"""The adapter engine: framework key tables (data) → canonical records.

An adapter is data: which keys alias which canonical metric, which keys carry the step,
the progress strings, and what marks an eval, end-of-train or summary line. The engine
below is shared by every framework, so adding one is adding a table, not a branch.

Speed matters (a backfill can be 100 000 lines): a line's key set is turned once into a
`LinePlan` (which keys are numbers, where each goes, which strings to parse), cached by
key set, so the per-line work is a key-set comparison and one C-level `itemgetter` call.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from grpo_tui.sources.records import LineKind

_DURATION_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


_PART_SECONDS: dict[str, int] = {}


def _part_seconds(part: str) -> int:
    seconds = _PART_SECONDS.get(part)
    if seconds is None:
        seconds = int(part[:-1]) * _DURATION_UNITS[part[-1]]
        if len(_PART_SECONDS) < 100_000:  # parts are few ("51s", "16m", "2d"): a cheap cache
            _PART_SECONDS[part] = seconds
    return seconds


def parse_duration(text: str) -> float | None:
    """ms-swift `format_time`: "1d 21h 10m 47s", "45m 20s", "0s", also "1m 60s"."""
    try:
        return float(sum(map(_part_seconds, text.split())))
    except (KeyError, ValueError, IndexError):
        return None


def parse_percentage(text: str) -> float | None:
    """"2.40%" → 2.4."""
    try:
        return float(text.rstrip("% "))
    except ValueError:
        return None


def parse_fraction(text: Any) -> tuple[int, int | None] | None:
    """"12/500" → (12, 500); an int → (int, None)."""
    if text.__class__ is str:
        head, sep, tail = text.partition("/")
        try:
            return int(head), (int(tail) if sep else None)
        except ValueError:
            return None
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text, None
    if isinstance(text, float) and math.isfinite(text):
        return int(text), None
    return None


@dataclass(frozen=True, slots=True)
class LinePlan:
    """How to read every line that has one particular key set."""

    kind: LineKind
    #: keys whose values are numbers, and the canonical column each goes to
    number_keys: tuple[str, ...]
    columns: tuple[str, ...]
    #: string keys with a parser: (key, canonical column, parser)
    parsed: tuple[tuple[str, str, Callable[[str], float | None]], ...]
    #: keys that give the step: "N/M" strings or ints, in priority order
    step_keys: tuple[str, ...]
    #: positions in `number_keys` holding a rate to invert (iterations/s → s/iteration)
    inverted: tuple[int, ...]
    #: key → canonical, for `inspect`
    source_keys: Mapping[str, str]
    #: C-level getters: the number values, and the strings to parse, as tuples
    getter: Callable[[Mapping[str, Any]], tuple[Any, ...]] | None
    string_getter: Callable[[Mapping[str, Any]], tuple[Any, ...]] | None

    @property
    def all_columns(self) -> tuple[str, ...]:
        """Numbers first, then the parsed strings: the order of a row's values."""
        return self.columns + tuple(canonical for _, canonical, _ in self.parsed)


@dataclass(frozen=True)
class FormatAdapter:
    """One framework's log-line vocabulary."""

    name: str
    """Short id (`ms-swift`, `trl`)."""
    aliases: Mapping[str, tuple[str, ...]]
    """canonical metric → the framework keys that mean it, highest priority first."""
    log_files: tuple[str, ...] = ()
    """Names of the JSONL metric logs this framework writes (`logging.jsonl`)."""
    args_file: str | None = None
    """The run-context file it writes beside its logs and checkpoints (`args.json`)."""
    suffixes: tuple[str, ...] = ()
    """Kinds of metric file it reads when nothing more specific says whose a file is."""
    families: tuple[tuple[str, str], ...] = ()
    """(regex, template) for keyed families, e.g. legacy `rewards/<fn>` → `rewards/<fn>/mean`."""
    fraction_step_keys: tuple[str, ...] = ("global_step/max_steps", "iteration")
    """Keys holding "step/max_steps" strings."""
    int_step_keys: tuple[str, ...] = ("step", "global_step")
    """Keys holding a plain step number (log_history items, summary lines)."""
    string_parsers: Mapping[str, tuple[str, Callable[[str], float | None]]] = field(
        default_factory=dict
    )
    """String-valued keys that carry a number: key → (canonical, parser)."""
    number_transforms: Mapping[str, tuple[str, bool]] = field(default_factory=dict)
    """Numeric keys stored under another name: key → (canonical, invert). `invert` turns
    iterations per second into seconds per iteration."""
    eval_prefix: str = "eval_"
    """Eval lines are the lines with keys starting with this."""
    end_keys: tuple[str, ...] = ("train_runtime",)
    """Any of these marks the end-of-train line."""
    summary_keys: tuple[str, ...] = ("log_history",)
    """Any of these marks the final summary line (the run ended; not a metric row)."""
    ignored_keys: frozenset[str] = frozenset()
    """Keys that are never metrics (bookkeeping numbers)."""
    version_hints: tuple[tuple[str, str], ...] = ()
    """(key, what its presence says about the version) for `inspect`."""
    _plans: dict[tuple[str, ...], LinePlan] = field(default_factory=dict, repr=False, compare=False)
    _canonical: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    # -- canonical names -------------------------------------------------------------
    def canonical(self, key: str) -> str:
        """The canonical name of a framework key (unknown keys keep their own name)."""
        found = self._canonical.get(key)
        if found is None:
            found = self._resolve(key)
            self._canonical[key] = found
        return found

    def _resolve(self, key: str) -> str:
        if key.startswith(self.eval_prefix):
            return self.eval_prefix + self.canonical(key[len(self.eval_prefix) :])
        for canonical, keys in self.aliases.items():
            if key in keys:
                return canonical
        for pattern, template in self.families:
            if re.fullmatch(pattern, key):
                return re.sub(pattern, template, key)
        if key in self.number_transforms:
            return self.number_transforms[key][0]
        return key

    def _priority(self, key: str) -> int:
        bare = key.removeprefix(self.eval_prefix)
        for keys in self.aliases.values():
            if bare in keys:
                return keys.index(bare)
        return 0

    # -- lines ------------------------------------------------------------------------
    def classify(self, obj: Mapping[str, Any]) -> LineKind:
        keys = obj.keys()
        if any(k in keys for k in self.summary_keys):
            return LineKind.SUMMARY
        if any(k in keys for k in self.end_keys):
            return LineKind.END
        prefix = self.eval_prefix
        if any(k.startswith(prefix) for k in keys):
            return LineKind.EVAL
        return LineKind.TRAIN

    def plan(self, obj: Mapping[str, Any]) -> LinePlan:
        """The cached reading plan for this line's key set. The plan assumes the number
        keys hold numbers again; `fresh_plan` re-reads the types when they do not."""
        # keyed by the keys in order: one tuple build and hash per line, no set
        keys = tuple(obj)
        plan = self._plans.get(keys)
        if plan is None:
            plan = self._make_plan(obj)
            if len(self._plans) > 512:  # key shapes are few in practice; bound it anyway
                self._plans.clear()
            self._plans[keys] = plan
        return plan

    def fresh_plan(self, obj: Mapping[str, Any]) -> LinePlan:
        """A plan built from this very line's value types (not cached)."""
        return self._make_plan(obj)

    def _make_plan(self, obj: Mapping[str, Any]) -> LinePlan:
        kind = self.classify(obj)
        step_keys = tuple(
            k for k in (*self.fraction_step_keys, *self.int_step_keys) if k in obj
        )
        chosen: dict[str, str] = {}  # canonical → key
        parsed: list[tuple[str, str, Callable[[str], float | None]]] = []
        for key, value in obj.items():
            if key in step_keys or key in self.ignored_keys:
                continue
            if isinstance(value, str):
                parser = self.string_parsers.get(key)
                if parser is not None:
                    parsed.append((key, parser[0], parser[1]))
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue  # lists, dicts, None this time: not a number in this shape
            canonical = self.canonical(key)
            held = chosen.get(canonical)
            if held is None or self._priority(key) < self._priority(held):
                chosen[canonical] = key
        number_keys = tuple(chosen.values())
        columns = tuple(chosen)
        getter = _tuple_getter(number_keys)
        string_getter = _tuple_getter(tuple(key for key, _, _ in parsed))
        source_keys = {c: k for c, k in chosen.items()}
        source_keys.update({c: k for k, c, _ in parsed})
        inverted = tuple(
            i for i, key in enumerate(number_keys) if self.number_transforms.get(key, ("", False))[1]
        )
        return LinePlan(
            kind,
            number_keys,
            columns,
            tuple(parsed),
            step_keys,
            inverted,
            source_keys,
            getter,
            string_getter,
        )

    def numbers(self, plan: LinePlan, obj: Mapping[str, Any]) -> tuple[Any, ...]:
        """The line's numeric values in `plan.columns` order, as written (no inversion)."""
        return plan.getter(obj) if plan.getter is not None else ()

    def step_of(self, plan: LinePlan, obj: Mapping[str, Any]) -> tuple[int | None, int | None]:
        """(step, max_steps) from the first step key that parses."""
        for key in plan.step_keys:
            parsed = parse_fraction(obj[key])
            if parsed is not None:
                return parsed
        return None, None


def _tuple_getter(keys: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]] | None:
    """itemgetter that always returns a tuple (itemgetter of one key returns the value)."""
    if not keys:
        return None
    if len(keys) == 1:
        key = keys[0]
        return lambda obj: (obj[key],)
    return itemgetter(*keys)
