"""A W&B run file as a record store: its history rows, mapped by the trainer that wrote them.

Each poll reads the records completed since the last one (framing.py), decodes those that
matter (schema.py) and hands out one log dict per `wandb.log` row, under the trainer
adapter's key names (formats/wandb.py says how W&B names them). The trainer is decided
once, before the first row is handed out: from the config (it comes first: in the run
record, or in a config record transformers writes before training), else from the first
rows' keys. `adapter` is then the trainer's adapter for W&B rows; the feed reads the
rows with it. The config's settings (max_steps, group size, completion cap…) come out
once the trainer is known, and again when a later config record changes them.

The exit record ends the run: a record with EXIT_KEY (the adapter's summary key) is handed
out, and an event says the exit code (0: finished; else failed). A summary holding one of
the trainer's end keys (transformers' `train/train_runtime`) is its end-of-train line;
other summaries (wandb-core writes one per row, with the row's values) are not decoded.

Speed (bench/wandb_file.py): a row's items come in no fixed order (wandb-core writes a Go
map), so a row's keys are put in one order per key set, with their names, from a plan made
once per key set; its values are parsed as one JSON array.

A replaced file (another inode) or one shorter than what was read is read again from its
start, with `restarted`. protobuf is optional (`grpo-tui[wandb]`): its absence is a
`problem`, never an ImportError.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

import orjson

from grpo_tui.files import check_regular, describe_os_error, open_regular, stat_path
from grpo_tui.sources.formats import ADAPTERS, FormatAdapter
from grpo_tui.sources.formats import wandb as conventions
from grpo_tui.sources.formats.generic import GENERIC
from grpo_tui.sources.polled import PolledRecords
from grpo_tui.sources.records import BadLine
from grpo_tui.sources.wandb.framing import NotWandbFile, RecordReader
from grpo_tui.sources.wandb.schema import (
    CONFIG,
    EXIT,
    HISTORY,
    RUN,
    SUMMARY,
    Schema,
    load_schema,
    record_type,
)

#: records read per poll at most (a row and its summary are two): a backlog is read in
#: bites (`more`), so the screen stays responsive
MAX_RECORDS_PER_POLL = 20_000
#: W&B writes JSON's missing literals as these bare words
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
#: values that can be a metric (or a progress string an adapter parses); dicts, lists and
#: nulls cannot
_SCALARS = frozenset({int, float, bool, str})
#: row plans kept (key sets are few: a train row, an eval row… per trainer)
_PLANS_KEPT = 256
_DECODED = (HISTORY, SUMMARY, CONFIG, RUN, EXIT)
#: a varint (a length)
_VARINT = rb"[\x80-\xff]*[\x00-\x7f]"
#: a HistoryItem as wandb-core writes one that is a plain key and number: field 1 of the
#: HistoryRecord (0x0a, length), its nested_key (0x12, a length under 128, bytes that are
#: no control character, no 0x82 and nothing JSON escapes), its value_json (0x82 0x01, a
#: length under 128, a number or true/false/NaN/Infinity/null)
_ITEM = re.compile(
    rb"\x0a" + _VARINT + rb'\x12[\x00-\x7f]([^\x00-\x1f\x82"\\]*)'
    rb"\x82\x01[\x00-\x7f]([-+.0-9A-Za-z]*)"
)
_PAIR = b'":'
#: what may follow the items: the step (field 2) and `_info` (field 200)
_TAIL = re.compile(rb"(?:\x12" + _VARINT + rb"\x08" + _VARINT + rb")?(?:\xc2\x0c[\s\S]*)?")

#: what a poll found, in file order: ("row", W&B key → value), ("summary", items),
#: ("exit", exit code)
_Entry = tuple[str, Any]


@functools.cache
def _end_keys(adapter: FormatAdapter) -> tuple[bytes, ...]:
    return tuple(key.encode() for key in adapter.end_keys)


#: every adapter's end keys (a summary before the trainer is known may hold one)
_END_KEYS = tuple({key for adapter in ADAPTERS.values() for key in _end_keys(adapter)})


def parse_value(text: str | bytes) -> Any:
    """A `value_json`: JSON, with W&B's bare NaN/Infinity. Raises ValueError."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        word = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        if word in _NON_FINITE:
            return _NON_FINITE[word]
        return json.loads(text)  # NaN inside a list or dict; raises ValueError if bad


def plain_row(data: bytes) -> dict[str, Any] | None:
    """A HistoryRecord's items as a dict, when wandb-core wrote every item of it as a plain
    key and number (_ITEM), else None.

    The items are cut out by one regular expression and joined into a JSON object that
    orjson parses, all of it in C: about half the time protobuf's per-item objects take
    (~60 µs a row of 90 keys). The cut is taken only when it is the whole record: the
    items follow each other from its start, and only the step and `_info` come after
    them. Then each cut is the item protobuf reads: a key ends at the value tag (a key
    byte the pattern refuses, or a key holding the tag's bytes, leaves bytes between
    items), and a value at the next item's tag (a value of other characters leaves the
    rest of it between items); the lengths are the writer's, checked by the CRC."""
    parts = _ITEM.split(data)
    between = parts[0::3]
    if len(between) < 2 or any(between[:-1]) or not _TAIL.fullmatch(between[-1]):
        return None
    body = b'{"' + b',"'.join(map(_PAIR.join, zip(parts[1::3], parts[2::3]))) + b"}"
    try:
        row: dict[str, Any] = orjson.loads(body)
    except orjson.JSONDecodeError:
        try:
            row = json.loads(body)  # NaN/Infinity
        except ValueError:
            return None
    return row if len(row) == len(between) - 1 else None


def item_key(item: Any) -> str:
    """An item's key: `key`, or its nested path joined with "." (W&B's flattening)."""
    path = item.nested_key
    if len(path) == 1:
        return str(path[0])
    return ".".join(path) if path else str(item.key)


def set_nested(target: dict[str, Any], item: Any, value: Any) -> None:
    """A config item into a nested config dict (a nested key is a path into it)."""
    path = list(item.nested_key) or [item.key]
    for part in path[:-1]:
        child = target.get(part)
        if not isinstance(child, dict):
            child = target[part] = {}
        target = child
    target[path[-1]] = value


def _picker(keys: list[str]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """A row's values at these keys, as a tuple (in C: itemgetter)."""
    if len(keys) > 1:
        getter: Callable[[dict[str, Any]], tuple[Any, ...]] = itemgetter(*keys)
        return getter
    return lambda row: tuple(row[key] for key in keys)


@dataclass(frozen=True, slots=True)
class _RowPlan:
    """How to read every row with one key set: its metric keys in one order (a getter on
    the row's dict), their names for the trainer's adapter, and the key of its step."""

    pick: Callable[[dict[str, Any]], tuple[Any, ...]]
    names: tuple[str, ...]
    step_key: str | None


class WandbRunStore:
    """One `.wandb` file followed record by record (see above)."""

    def __init__(self, path: Path, *, max_records: int = MAX_RECORDS_PER_POLL) -> None:
        self.path = path
        self._max_records = max_records
        self._reset()

    def _reset(self) -> None:
        self._records: RecordReader | None = None
        self._ident = (0, 0)
        self._data_time: float | None = None
        #: the trainer's adapter for W&B rows, once known
        self.adapter: FormatAdapter | None = None
        self._trainer: FormatAdapter | None = None
        self._config: dict[str, Any] = {}
        self._settings_sent: dict[str, Any] | None = None
        self._run_name: str | None = None
        self._plans: dict[frozenset[str], _RowPlan] = {}
        #: the type and span of each record the current read kept (see `_wanted`)
        self._kinds: list[tuple[int, int, int]] = []
        self._last_step: int | None = None
        self._ended = False

    # -- the poll ------------------------------------------------------------------------
    def poll(self) -> PolledRecords:
        schema = load_schema()
        if isinstance(schema, str):
            return PolledRecords(problem=schema)
        out = PolledRecords()
        try:
            info = stat_path(self.path)
            check_regular(info.st_mode, self.path)
            ident = (info.st_dev, info.st_ino)
            reader = self._records
            if reader is not None and (ident != self._ident or info.st_size < reader.offset):
                self._reset()  # replaced or truncated: everything is read again
                out.restarted = True
                reader = None
            if reader is None:
                reader = self._records = RecordReader()
                self._ident = ident
            bad_before = len(reader.bad)
            taken_before = reader.offset
            self._kinds = []
            with open_regular(self.path) as handle:
                raws = reader.read(handle, info.st_size, self._max_records, self._wanted)
        except NotWandbFile as error:
            out.problem = f"not a W&B run file ({error}): {self.path}"
            return out
        except OSError as error:
            out.problem = describe_os_error(error, self.path)
            return out
        for at in reader.bad[bad_before:]:
            out.bad.append(
                BadLine(self.path.name, 0, f"a damaged record at byte {at}, skipped", "")
            )
        out.more = reader.offset < info.st_size and reader.stopped_early
        if reader.offset != taken_before:
            self._data_time = info.st_mtime
        entries = self._decode(schema, raws, out)
        if self._trainer is None and (entries or self._identified_by_config()):
            self._decide([entry for kind, entry in entries if kind == "row"])
        out.records = [record for kind, entry in entries if (record := self._record(kind, entry))]
        self._send_settings(out)
        out.run = self._run_name
        out.data_time = self._data_time
        return out

    # -- records -------------------------------------------------------------------------
    def _decode(self, schema: Schema, raws: Iterable[bytes], out: PolledRecords) -> list[_Entry]:
        """What the records hold, in file order: history rows (W&B keys and values),
        summaries that may end the training, the exit; config and run records are taken
        in on the way."""
        entries: list[_Entry] = []
        for raw, (kind, start, end) in zip(raws, self._kinds):
            try:
                if kind == HISTORY:
                    entries.append(("row", self._items(schema, raw[start:end])))
                    continue
                record = schema.parse_record(raw)
            except schema.decode_error:
                out.bad.append(BadLine(self.path.name, 0, "a record that is no W&B record", ""))
                continue
            if kind == CONFIG:
                self._configure(record.config)
            elif kind == RUN:
                run = record.run
                self._run_name = str(run.display_name or run.run_id) or None
                self._configure(run.config)
                if run.resumed:
                    out.events.append(f"{self.path.name}: a resumed W&B run")
            elif kind == SUMMARY:
                entries.append(("summary", self._summary_items(record.summary)))
            elif kind == EXIT:
                code = int(record.exit.exit_code)
                words = "finished" if code == 0 else f"failed (exit code {code})"
                out.events.append(f"{self.path.name}: the W&B run {words}")
                entries.append(("exit", code))
        return entries

    @staticmethod
    def _items(schema: Schema, data: bytes) -> dict[str, Any]:
        """A HistoryRecord's items, W&B key → value, in file order: `plain_row`, else
        decoded by protobuf (a nested dict, a string, a long key, the old SDK's `key`
        items): nested paths joined with ".", media objects (a path ending in `_type`)
        left out, a value that is no JSON left out."""
        row = plain_row(data)
        if row is not None:
            return row
        row, media = {}, []
        for item in schema.parse_history(data).item:
            key = item_key(item)
            path = item.nested_key
            if len(path) > 1 and path[-1] == conventions.MEDIA_TYPE_KEY:
                media.append(key[: -len(conventions.MEDIA_TYPE_KEY)])
            try:
                row[key] = parse_value(item.value_json)
            except ValueError:
                continue
        if media:
            prefixes = tuple(media)
            row = {key: value for key, value in row.items() if not key.startswith(prefixes)}
        return row

    def _configure(self, config: Any) -> None:
        for item in config.update:
            try:
                value = parse_value(item.value_json)
            except ValueError:
                continue
            if item_key(item) != "_wandb":
                set_nested(self._config, item, value)
        for item in config.remove:
            self._config.pop(item_key(item), None)

    def _wanted(self, raw: bytes) -> bool:
        """A record worth decoding (the framing keeps no other): a row, the config, the
        run, the exit, a summary that may end the training. The framing asks once per
        record in file order, so each kept record's type and span go to `_kinds`, in the
        order of the records it returns."""
        found = record_type(raw)
        kind = found[0]
        if kind in _DECODED and (kind != SUMMARY or self._may_end(raw)):
            self._kinds.append(found)
            return True
        return False

    def _may_end(self, raw: bytes) -> bool:
        """A summary worth decoding: it names an end key (of the trainer, else of any
        adapter; a substring test on the bytes: most summaries repeat a row's values)."""
        if self._ended:
            return False
        keys = _END_KEYS if self._trainer is None else _end_keys(self._trainer)
        return any(key in raw for key in keys)

    @staticmethod
    def _summary_items(summary: Any) -> list[tuple[str, Any]]:
        pairs = []
        for item in summary.update:
            try:
                pairs.append((item_key(item), parse_value(item.value_json)))
            except ValueError:
                continue
        return pairs

    # -- the trainer ---------------------------------------------------------------------
    def _identified_by_config(self) -> bool:
        return conventions.trainer_from_config(self._config, ADAPTERS) is not None

    def _decide(self, rows: list[dict[str, Any]]) -> None:
        """The trainer: from the config, else the rows' keys, else the common GRPO keys."""
        name = conventions.trainer_from_config(self._config, ADAPTERS)
        trainer = ADAPTERS.get(name or "")
        if trainer is None:
            keys = {key for row in rows for key in row}
            trainer = conventions.trainer_from_keys(keys, ADAPTERS) or GENERIC
        self._trainer = trainer
        self.adapter = conventions.for_trainer(trainer)

    def _send_settings(self, out: PolledRecords) -> None:
        """The config's settings, when they are new (the first time, or a later config)."""
        trainer = self._trainer
        if trainer is None or not self._config or self._config == self._settings_sent:
            return
        self._settings_sent = {**self._config}
        out.settings = conventions.trainer_settings(trainer, self._settings_sent)

    # -- what is handed out --------------------------------------------------------------
    def _record(self, kind: str, entry: Any) -> dict[str, Any] | None:
        """An entry as the log dict handed out (None: nothing to hand out), in file order:
        the end of the run is at the step of the row before it."""
        trainer = self._trainer
        if trainer is None:
            return None
        if kind == "row":
            return self._row(entry)
        at = {} if self._last_step is None else {"step": self._last_step}
        if kind == "exit":
            return {**at, conventions.EXIT_KEY: entry}
        ends = {
            name: value
            for key, value in entry
            if (name := conventions.key_name(trainer, key)) in trainer.end_keys
        }
        if not ends or self._ended:
            return None
        self._ended = True
        return {**at, **ends}

    def _row(self, logged: dict[str, Any]) -> dict[str, Any] | None:
        """One log dict: the adapter's key names, one order per key set, the step last;
        None for a row with no metric (media only)."""
        if not _SCALARS.issuperset(map(type, logged.values())):
            logged = {key: value for key, value in logged.items() if type(value) in _SCALARS}
        key_set = frozenset(logged)
        plan = self._plans.get(key_set) or self._plan(key_set)
        row = dict(zip(plan.names, plan.pick(logged)))
        step = logged.get(plan.step_key) if plan.step_key is not None else None
        if isinstance(step, (int, float)) and not isinstance(step, bool) and math.isfinite(step):
            self._last_step = int(step)
            row["step"] = self._last_step
        return row if plan.names else None

    def _plan(self, keys: frozenset[str]) -> _RowPlan:
        trainer = self._trainer
        assert trainer is not None  # rows are handed out once it is known
        metrics = sorted(
            key
            for key in keys
            if not key.startswith(conventions.BOOKKEEPING_PREFIX)
            and key not in conventions.STEP_KEYS
        )
        step_key = next((key for key in conventions.STEP_KEYS if key in keys), None)
        names = tuple(conventions.key_name(trainer, key) for key in metrics)
        if len(self._plans) >= _PLANS_KEPT:
            self._plans.clear()
        plan = self._plans[keys] = _RowPlan(_picker(metrics), names, step_key)
        return plan
