"""The adapter engine: framework key tables (data) → canonical records.

An adapter is data: which keys alias which canonical metric, which keys carry the step,
the progress strings, and what marks an eval, end-of-train or summary line. The engine
below is shared by every framework, so adding one is adding a table, not a branch.

Speed matters (a backfill can be 100 000 lines): a line's key set is turned once into a
`LinePlan` (which keys are numbers, where each goes, which strings to parse), cached by
key set. The plan's getters and its `struct` packer let a reader take a whole group of
lines of one shape through C-level `map`s (see sources/shapes.py), with no Python code per
line.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, Protocol

from grpo_tui.sources.formats.layout import BatchFolder, Found, Probe, Reading
from grpo_tui.sources.formats.values import ColumnParser
from grpo_tui.sources.polled import RecordStore
from grpo_tui.vocabulary import LineKind

#: a getter that returns some of a line's values as a tuple (raises KeyError when missing)
TupleGetter = Callable[[Mapping[str, Any]], tuple[Any, ...]]


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


@dataclass(frozen=True, slots=True)
class TextDict:
    """One log dict a text parser found in a console log, with the line it started on."""

    line_no: int
    values: dict[str, Any]


class TextParser(Protocol):
    """Finds log dicts in console text fed line by line (its state carries over)."""

    #: (line number, reason, excerpt) of records that could not be read, in order
    bad: list[tuple[int, str, str]]

    def feed(self, line: str, line_no: int) -> Iterable[TextDict]:
        """The log dicts completed by one line (without its newline)."""
        ...

    def flush(self) -> Iterable[TextDict]:
        """The text ended (a one-shot read reached the end of the file): what a record
        still open holds, read as far as it goes."""
        ...


@dataclass(frozen=True)
class FormatAdapter:
    """One framework's vocabulary and files: which files it reads and how, which keys
    mean which canonical metric, and what its lines look like."""

    name: str
    """Short id (`ms-swift`, `trl`, `verl`): what `--format` takes."""
    aliases: Mapping[str, tuple[str, ...]]
    """canonical metric → the framework keys that mean it, highest priority first."""
    title: str = ""
    """What the header and `check` call it ("TRL console log"); the name when empty."""
    reading: Reading = Reading.JSONL
    """How its metrics files are read (a file `--format` forces on it is read so)."""
    families: tuple[tuple[str, str], ...] = ()
    """(regex, template) for keyed families, e.g. legacy `rewards/<fn>` → `rewards/<fn>/mean`."""
    fraction_step_keys: tuple[str, ...] = ("global_step/max_steps", "iteration")
    """Keys holding "step/max_steps" strings."""
    int_step_keys: tuple[str, ...] = ("step", "global_step")
    """Keys holding a plain step number (log_history items, summary lines)."""
    string_parsers: Mapping[str, tuple[str, ColumnParser]] = field(default_factory=dict)
    """String-valued keys that carry a number: key → (canonical, column parser)."""
    number_transforms: Mapping[str, tuple[str, bool]] = field(default_factory=dict)
    """Numeric keys stored under another name: key → (canonical, invert). `invert` turns
    iterations per second into seconds per iteration."""
    eval_prefix: str = "eval_"
    """Eval lines are the lines with keys starting with this."""
    eval_needs_all: bool = False
    """A line is an eval line only when every key but the step is an eval key (verl merges
    validation keys into train steps); else any eval key makes it one (HF's eval dicts)."""
    end_keys: tuple[str, ...] = ("train_runtime",)
    """Any of these marks the end-of-train line."""
    summary_keys: tuple[str, ...] = ("log_history",)
    """Any of these marks the final summary line (the run ended; not a metric row)."""
    ignored_keys: frozenset[str] = frozenset()
    """Keys that are never metrics (bookkeeping numbers)."""
    version_hints: tuple[tuple[str, str], ...] = ()
    """(key, what its presence says about the version) for `inspect`."""
    document_records: Callable[[Any], list[Any] | None] | None = None
    """The log records of a document it rewrites whole (Reading.DOCUMENT), None when the
    document holds none."""
    flatten: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """Turns one parsed record into a flat log dict (verl's `{"step", "data": {…}}`,
    EasyR1's nested dicts); None when records are flat already."""
    parser: Callable[[], TextParser] | None = None
    """Makes the text parser of its console logs (Reading.CONSOLE files)."""
    completion_folders: tuple[BatchFolder, ...] = ()
    """Its kinds of completions folder (one file per step), for a folder given by hand."""
    claim: Callable[[Path, Probe], Found | None] | None = None
    """Whether a file is one of its metrics files, and how it is read (PATH is a file)."""
    find: Callable[[Path], list[Found]] | None = None
    """Its metrics files in a directory (PATH is a directory), in any order."""
    open_store: Callable[[Path, str | None], RecordStore] | None = None
    """Opens a record store it reads (Reading.STORE), given the run name `--run` chose."""
    flavour: Callable[[Collection[str]], str | None] | None = None
    """The name of the tool on top of this framework that the logged keys show
    ("Unsloth"), or None; shown as "Unsloth (TRL)"."""
    _plans: dict[tuple[str, ...], LinePlan] = field(default_factory=dict, repr=False, compare=False)
    _canonical: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def shown_name(self) -> str:
        return self.title or self.name

    # -- canonical names -------------------------------------------------------------
    def canonical(self, key: str) -> str:
        """The canonical name of a framework key (unknown keys keep their own name)."""
        found = self._canonical.get(key)
        if found is None:
            found = self._resolve(key)
            self._canonical[key] = found
        return found

    def _resolve(self, key: str) -> str:
        # whole keys first: an eval key can have a name of its own (verl's
        # `val-core/<data>/acc/mean@N` is the eval reward)
        for canonical, keys in self.aliases.items():
            if key in keys:
                return canonical
        for pattern, template in self.families:
            if re.fullmatch(pattern, key):
                return re.sub(pattern, template, key)
        if key.startswith(self.eval_prefix):
            return self.eval_prefix + self.canonical(key[len(self.eval_prefix) :])
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
        if self.eval_needs_all:
            named = [k for k in keys if k not in self.int_step_keys]
            if named and all(k.startswith(prefix) for k in named):
                return LineKind.EVAL
            return LineKind.TRAIN
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
        step_keys = tuple(k for k in (*self.fraction_step_keys, *self.int_step_keys) if k in obj)
        chosen: dict[str, str] = {}  # canonical → key
        parsed: list[tuple[str, str, ColumnParser]] = []
        for key, value in obj.items():
            if key in step_keys or key in self.ignored_keys:
                continue
            if isinstance(value, str):
                parser = self.string_parsers.get(key)
                if parser is not None:
                    parsed.append((key, parser[0], parser[1]))
                continue
            if not isinstance(value, (int, float)):
                continue  # lists, dicts, None this time: not a number in this shape
            # true/false are logged values too (1/0): a packed number cannot tell them
            # apart, so a line reads the same whether its shape was first seen with a bool
            canonical = self.canonical(key)
            held = chosen.get(canonical)
            if held is None or self._priority(key) < self._priority(held):
                chosen[canonical] = key
        number_keys = tuple(chosen.values())
        string_keys = tuple(key for key, _, _ in parsed)
        covered = {*number_keys, *string_keys, *step_keys}
        rest_keys = tuple(key for key in obj if key not in covered)
        source_keys = {c: k for c, k in chosen.items()}
        source_keys.update({c: k for k, c, _ in parsed})
        inverted = tuple(
            i
            for i, key in enumerate(number_keys)
            if self.number_transforms.get(key, ("", False))[1]
        )
        return LinePlan(
            kind=kind,
            number_keys=number_keys,
            columns=tuple(chosen),
            parsed=tuple(parsed),
            step_keys=step_keys,
            inverted=inverted,
            source_keys=source_keys,
            getter=_tuple_getter(number_keys),
            string_getters=tuple(map(itemgetter, string_keys)),
            step_getters=tuple(map(itemgetter, step_keys)),
            rest_getter=_tuple_getter(rest_keys),
            rest_parsable=tuple(i for i, key in enumerate(rest_keys) if key in self.string_parsers),
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
