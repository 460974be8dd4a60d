"""An adapter: one framework's key tables (data) and how its lines are classified.

An adapter is data: which keys alias which canonical metric, which keys carry the step,
the progress strings, and what marks an eval, end-of-train or summary line. The readers
(sources/logreader.py) are shared by every framework, so adding one is adding a
table, not a branch.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from grpo_tui.sources.formats.layout import BatchFolder, Found, Probe, Reading
from grpo_tui.sources.formats.values import ColumnParser
from grpo_tui.vocabulary import LineKind


@dataclass(frozen=True, slots=True)
class TextDict:
    """One log dict a text parser found in a console log, with the line it started on."""

    line_no: int
    values: dict[str, Any]


class TextParser(Protocol):
    """Finds log dicts in console text fed line by line (its state carries over)."""

    #: (line number, reason, excerpt) of records that could not be read, in order
    bad: list[tuple[int, str, str]]
    #: the run's settings the text printed (a config dump at its start), under args.json's
    #: names (`max_completion_length`, `num_generations`, …); None while none was seen
    settings: dict[str, Any] | None

    def feed(self, line: str, line_no: int) -> Iterable[TextDict]:
        """The log dicts completed by one line (without its newline)."""
        ...

    def flush(self) -> Iterable[TextDict]:
        """The text ended (a one-shot read reached the end of the file): what a record
        still open holds, read as far as it goes."""
        ...


@dataclass(frozen=True, slots=True)
class CheckpointFolders:
    """Where a framework keeps its checkpoints: folders named by the step they hold, at a
    place relative to the run folder (sources/checkpoints.py lists them)."""

    #: a checkpoint folder's whole name; its first group is the step it holds
    pattern: re.Pattern[str]
    #: where they sit, relative to the run folder ("" : in it); `{folder}` is the run
    #: folder's name, `{stem}` the metrics file's name without its suffix (verl's file
    #: logger writes `<project>/<experiment>.jsonl`, its checkpoints go to
    #: `checkpoints/<project>/<experiment>/`)
    under: tuple[str, ...] = ("",)
    #: the trainer's source that names them (file and commit), for docs/formats.md
    source: str = ""


@dataclass(frozen=True, eq=False)
class FormatAdapter:
    """One framework's vocabulary and files: which files it reads and how, which keys
    mean which canonical metric, and what its lines look like. Adapters compare and hash
    by identity: the caches of what is computed from them (names here, line plans in
    sources/logreader.py) are keyed on the adapter itself, so a derived adapter
    (`dataclasses.replace`) starts with caches of its own."""

    name: str
    """Short id (`ms-swift`, `trl`, `verl`): what `--format` takes."""
    aliases: Mapping[str, tuple[str, ...]]
    """canonical metric → the framework keys that mean it, highest priority first."""
    title: str
    """What the header and `check` call it ("TRL console log")."""
    reading: Reading = Reading.JSONL
    """How its metrics files are read (a file `--format` forces on it is read so)."""
    families: tuple[tuple[str, str], ...] = ()
    """(regex, template) for keyed families, e.g. legacy `rewards/<fn>` → `rewards/<fn>/mean`."""
    fraction_step_keys: tuple[str, ...] = ()
    """Keys holding "step/max_steps" strings."""
    int_step_keys: tuple[str, ...] = ("step",)
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
    settings: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """The framework's own config (a dump in its log, W&B's config.yaml) under args.json's
    names; None when its config already uses them (TRL's, ms-swift's)."""
    writers: tuple[tuple[str, ...], ...] = ()
    """For a log several processes append to (Reading.MERGED_JSONL): per process, key
    prefixes only its lines carry (a step is complete once each has moved past it)."""
    flavour: Callable[[Collection[str]], str | None] | None = None
    """The name of the tool on top of this framework that the logged keys show
    ("Unsloth"), or None; shown as "Unsloth (TRL)"."""
    checkpoints: tuple[CheckpointFolders, ...] = ()
    """Its kinds of checkpoint folder and where they sit (none known: nothing is listed)."""

    # -- canonical names -------------------------------------------------------------
    # cached per (adapter, key): adapters are module constants, so holding them costs
    # nothing, and the plain reader in bench/ingest.py asks once per key and line
    @functools.cache  # noqa: B019
    def canonical(self, key: str) -> str:
        """The canonical name of a framework key (unknown keys keep their own name)."""
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

    def priority(self, key: str) -> int:
        """Where a key stands among the aliases of its metric, or among the families that
        map onto one name (0: the first choice; verl's val-core before its val-aux)."""
        bare = key.removeprefix(self.eval_prefix)
        alias = next((keys.index(bare) for keys in self.aliases.values() if bare in keys), None)
        if alias is not None:
            return alias
        family = (i for i, (pattern, _) in enumerate(self.families) if re.fullmatch(pattern, key))
        return next(family, 0)

    # -- lines ------------------------------------------------------------------------
    def classify(self, obj: Mapping[str, Any]) -> LineKind:
        """What kind of line a log dict is (train, eval, end of train, summary)."""
        keys = obj.keys()
        if any(k in keys for k in self.summary_keys):
            return LineKind.SUMMARY
        if any(k in keys for k in self.end_keys):
            return LineKind.END
        evals = [k.startswith(self.eval_prefix) for k in keys if k not in self.int_step_keys]
        # verl merges validation keys into train steps: there, only a line of eval keys is one
        is_eval = bool(evals) and all(evals) if self.eval_needs_all else any(evals)
        return LineKind.EVAL if is_eval else LineKind.TRAIN
