"""The part of W&B's Record schema a run file is read with, built at run time on protobuf.

A record's data is a `wandb.internal.Record` protobuf (`wandb/proto/wandb_internal.proto`
at wandb/wandb b6e2950). Only the records that carry a run's numbers and settings are
decoded; field numbers are part of the wire format (W&B's own readers of old files depend
on them), and every field not declared here is skipped by the parser:

    Record         num 1; oneof: history 2, summary 3, config 5, run 17, exit 18 (others
                   — output, stats, telemetry, files… — are never decoded)
    HistoryRecord  item 1 (repeated HistoryItem), step 2 (HistoryStep: num 1)
    HistoryItem, ConfigItem, SummaryItem
                   key 1, nested_key 2 (repeated: a path into nested dicts), value_json 16
    ConfigRecord, SummaryRecord
                   update 1, remove 2 (repeated items)
    RunRecord      run_id 1, project 3, config 4, summary 5, display_name 8, resumed 18
    RunExitRecord  exit_code 1, runtime 2, not_complete 3

Most history rows are not decoded here at all: store.py cuts wandb-core's plain items out
of the bytes (it says how, and when it hands a row to this parser instead).

Why not the `wandb` package's own classes (`wandb.proto.wandb_internal_pb2`): importing
them imports `wandb` itself (0.4 s here), and a pip install of `wandb` is ~100 MB (a 34 MB
Go binary, OpenTelemetry, pydantic) to read a file. The messages here are built from a
descriptor with protobuf's `message_factory`, which every protobuf from 4.21 to 7 has
(the `grpo-tui[wandb]` extra asks for it); the parser is protobuf's compiled one (upb).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MISSING_PROTOBUF = "W&B run files need the protobuf package: pip install 'grpo-tui[wandb]'"
_PACKAGE = "grpo_tui.wandb"

#: the Record oneof's field numbers decoded here (wandb_internal.proto `record_type`)
HISTORY, SUMMARY, CONFIG, RUN, EXIT = 2, 3, 5, 17, 18
#: every field number of the `record_type` oneof (2–27, and `request` 100): the first of
#: them in a record says its type (wandb-core writes fields in number order, `num` first)
_RECORD_TYPES = frozenset((*range(2, 16), *range(17, 28), 100))

_STRING, _INT64, _INT32, _BOOL, _MESSAGE = 9, 3, 5, 8, 11
_OPTIONAL, _REPEATED = 1, 3

#: message → its fields (name, number, type, label, message type)
_MESSAGES: dict[str, tuple[tuple[str, int, int, int, str], ...]] = {
    "Item": (
        ("key", 1, _STRING, _OPTIONAL, ""),
        ("nested_key", 2, _STRING, _REPEATED, ""),
        ("value_json", 16, _STRING, _OPTIONAL, ""),
    ),
    "Step": (("num", 1, _INT64, _OPTIONAL, ""),),
    "History": (
        ("item", 1, _MESSAGE, _REPEATED, "Item"),
        ("step", 2, _MESSAGE, _OPTIONAL, "Step"),
    ),
    "Items": (
        ("update", 1, _MESSAGE, _REPEATED, "Item"),
        ("remove", 2, _MESSAGE, _REPEATED, "Item"),
    ),
    "Run": (
        ("run_id", 1, _STRING, _OPTIONAL, ""),
        ("project", 3, _STRING, _OPTIONAL, ""),
        ("config", 4, _MESSAGE, _OPTIONAL, "Items"),
        ("summary", 5, _MESSAGE, _OPTIONAL, "Items"),
        ("display_name", 8, _STRING, _OPTIONAL, ""),
        ("resumed", 18, _BOOL, _OPTIONAL, ""),
    ),
    "Exit": (
        ("exit_code", 1, _INT32, _OPTIONAL, ""),
        ("runtime", 2, _INT32, _OPTIONAL, ""),
        ("not_complete", 3, _BOOL, _OPTIONAL, ""),
    ),
    "Record": (
        ("num", 1, _INT64, _OPTIONAL, ""),
        ("history", HISTORY, _MESSAGE, _OPTIONAL, "History"),
        ("summary", SUMMARY, _MESSAGE, _OPTIONAL, "Items"),
        ("config", CONFIG, _MESSAGE, _OPTIONAL, "Items"),
        ("run", RUN, _MESSAGE, _OPTIONAL, "Run"),
        ("exit", EXIT, _MESSAGE, _OPTIONAL, "Exit"),
    ),
}


@dataclass(frozen=True, slots=True)
class Schema:
    """The parsers (a Record; a HistoryRecord's bytes) and the error they raise for bytes
    that are no such message."""

    parse_record: Callable[[bytes], Any]
    parse_history: Callable[[bytes], Any]
    decode_error: type[Exception]


_LOADED: list[Schema | str] = []


def load_schema() -> Schema | str:
    """The Record parser, or the problem to show when protobuf cannot be used (built once)."""
    if not _LOADED:
        _LOADED.append(_build())
    return _LOADED[0]


def _build() -> Schema | str:
    try:  # `import a.b as c` fails when a is missing, or set to None in sys.modules
        import google.protobuf.descriptor_pb2 as descriptor_pb2  # type: ignore[import-untyped]
        import google.protobuf.message as message  # type: ignore[import-untyped]
        import google.protobuf.message_factory as message_factory  # type: ignore[import-untyped]
    except ImportError:
        return MISSING_PROTOBUF
    except Exception as error:  # a broken install is said, not raised
        return f"the protobuf package cannot be loaded ({type(error).__name__}: {error})"
    file = descriptor_pb2.FileDescriptorProto(
        name="grpo_tui/wandb_record_subset.proto", package=_PACKAGE, syntax="proto3"
    )
    for name, fields in _MESSAGES.items():
        described = file.message_type.add(name=name)
        for field_name, number, kind, label, type_name in fields:
            added = described.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                added.type_name = f".{_PACKAGE}.{type_name}"
    record = file.message_type[-1]
    record.oneof_decl.add(name="record_type")
    for added in record.field[1:]:
        added.oneof_index = 0
    try:
        classes = message_factory.GetMessages([file])
    except Exception as error:  # an old protobuf (< 4.21) without this API
        return f"the protobuf package here cannot build W&B's records ({error}): {MISSING_PROTOBUF}"
    return Schema(
        classes[f"{_PACKAGE}.Record"].FromString,
        classes[f"{_PACKAGE}.History"].FromString,
        message.DecodeError,
    )


def record_type(data: bytes) -> tuple[int, int, int]:
    """The type of a record (the number of its `record_type` field: HISTORY, SUMMARY…)
    and where that field's bytes are, from its first fields, without decoding it; type 0
    when it has none (or is damaged: the parser then says so)."""
    # wandb-core's records: `num` (a varint), then the type field with a one-byte tag
    end = len(data)
    pos = 0
    if end and data[0] == 0x08:
        pos = 1
        while pos < end and data[pos] & 0x80:
            pos += 1
        pos += 1
    if pos < end and data[pos] & 7 == 2 and data[pos] < 0x80 and data[pos] >> 3 in _RECORD_TYPES:
        length, start = _varint(data, pos + 1)
        return data[pos] >> 3, start, min(start + length, end)
    return _record_type(data)


def _record_type(data: bytes) -> tuple[int, int, int]:
    """`record_type` field by field (any order, any tag or length size)."""
    pos, end = 0, len(data)
    while pos < end:
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if number in _RECORD_TYPES:
                return number, pos, min(pos + length, end)
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            return 0, 0, 0
        if number in _RECORD_TYPES:
            return number, pos, pos  # not a message (a damaged record)
    return 0, 0, 0


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A base-128 varint at `pos`, and the position after it (past the end: the end)."""
    result = shift = 0
    end = len(data)
    while pos < end:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
    return result, end
