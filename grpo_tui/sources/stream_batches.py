"""A completions source for a stream of records: one record per line, appended as each
rollout comes back, in one file or a folder of numbered chunks, with annotations appended
beside it later (prime-rl's trace stream; the adapter's `RecordStream` says which files
and how a line becomes rows: formats/primerl_traces.py).

Batches. A record names the step it belongs to. Consecutive records of one step are one
batch, handed over as it grows, as Megatron-Ray's lines are (sources/completion_batches.py):
the first line of a step starts a batch (`growing`), each further one `extends` it with its
own rows (the lines of one read together), and the ref covers every line so far. A line that holds nothing to show (an
eval episode) or cannot be read (a bad line: counted, never fatal) leaves the batch open;
a record of another step starts the next one.

Refs. A ref is the byte range from the batch's first line to the end of its last, in
stream coordinates: `part << PART_SHIFT | offset` (an offset into a sealed part is one
into its decompressed text), so a batch may run on into the next chunk. `reload` reads
that range again (a sealed part decompressed once for it), keeps the records of the
batch's step (the step of its first line), and puts the rows in order of their group, so
a GRPO group's rows are together whatever order they arrived in.

Live and lossless. The last part is followed with the tail reader (sources/tail.py): only
complete lines are taken, a line still being written waits. A part is left for the next
one only once the next exists (the writer opens it after closing this one) and this one is
read to its end. A part sealed (compressed, its plain text removed) never changes: it is
read whole when reached, through the adapter's `unseal` (the same lines and offsets as its
plain twin; a part sealed while followed goes on from where its plain text stopped), one
part decompressed at a time, none kept. A sealed part that cannot be read here (no
decompressor) or is damaged is said as the source's problem with its name (a damaged one
also as a bad line): the other parts are read. When the stream file is truncated, replaced
or re-created, the source starts over.

Annotations. An annotation names a row by its key and adds its advantage (prime-rl's
orchestrator writes them when it ships the batch, after the batch's records); they are
folded in after the stream is read, so a batch the index tallies once the next step begins
has them; one about a row of the batch still open is handed over as a batch of no new rows
that `extends` it, so the index reads it again when it is next shown. The newest ADVANTAGES_KEPT are kept (an older batch read again shows none).
Nothing is ever written, locked or created in the run's folder.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grpo_tui.files import UTF8_BOM, open_regular
from grpo_tui.sources.formats.layout import RecordStream, StreamParts, StreamRecord, probe
from grpo_tui.sources.formats.msswift_completions import decode_line, parse_record
from grpo_tui.sources.records import BatchChunk, BatchRef, CompletionBatch, CompletionRows
from grpo_tui.sources.tail import (
    DEFAULT_CHUNK,
    PREVIEW_FROM_BYTES,
    TailChunk,
    TailLine,
    TailReader,
    read_tail_lines,
)

#: a ref's offset bits: a part holds at most 1 TiB, a stream 2**23 parts
PART_SHIFT = 40
#: advantages from annotations kept, newest first (one a trace: ~150 bytes each)
ADVANTAGES_KEPT = 1 << 16
#: bytes read back from the end for the newest batch
PREVIEW_MAX_BYTES = 64 << 20
#: characters of a bad line quoted with its reason
_EXCERPT_CHARS = 80
#: sealed parts named in the problem
_NAMED = 3
#: what an annotation line must hold to be worth decoding (the trainer's carry only
#: per-token streams, often megabytes)
_ANNOTATION_MARK = b'"advantage"'


def _at(part: int, offset: int) -> int:
    return (part << PART_SHIFT) | offset


def _split(position: int) -> tuple[int, int]:
    return position >> PART_SHIFT, position & ((1 << PART_SHIFT) - 1)


@dataclass(slots=True)
class _Open:
    """The batch being handed over: its step, where it starts and ends, its first line, the
    keys of its rows (an annotation for one of them makes the index read it again)."""

    step: int
    start: int
    line_no: int
    end: int = 0
    keys: set[str] = field(default_factory=set)


class StreamBatches:
    """A record stream and its annotations (see the module docstring)."""

    def __init__(
        self,
        directory: Path,
        kind: RecordStream,
        *,
        reward_weights: Sequence[float] | None = None,
        advantages_kept: int = ADVANTAGES_KEPT,
    ) -> None:
        self.path = Path(directory)
        self.kind = kind
        self.reward_weights = reward_weights
        self.advantages_kept = max(1, advantages_kept)
        #: records are appended: a step's batch is never rewritten
        self.eval_rewrites_step = False
        self._notes: dict[Path, TailReader] = {}
        self._advantages: OrderedDict[str, float] = OrderedDict()
        #: sealed parts listed now, by number; those skipped (no decompressor) and those
        #: damaged, with what is said of them
        self._sealed: dict[int, Path] = {}
        self._skipped: dict[int, str] = {}
        self._damaged: dict[int, str] = {}
        self._part: int | None = None
        self._tail: TailReader | None = None
        #: every plain part seen, by number (reload reads them)
        self._paths: dict[int, Path] = {}
        self._open: _Open | None = None
        #: parts read to their end, their bytes, and the lines before the current part
        self._finished: set[int] = set()
        self._done_bytes = 0
        self._line_base = 0
        self._pending = 0

    # ----------------------------------------------------------------- state

    @property
    def exists(self) -> bool:
        return probe(self.path).is_dir

    @property
    def problem(self) -> str | None:
        """Why part of the stream cannot be read: a part that cannot be opened, sealed
        parts damaged or never read (counted, named)."""
        if self._tail is not None and self._tail.problem:
            return self._tail.problem
        said = []
        if self._damaged:
            said.append(f"{_parts(list(self._damaged.values()))} could not be read")
        if self._skipped:
            said.append(f"{self.kind.sealed_problem}: {_parts(list(self._skipped.values()))}")
        return "; ".join(said) or None

    @property
    def progress(self) -> tuple[int, int]:
        read = self._done_bytes + (self._tail.offset if self._tail is not None else 0)
        return read, read + self._pending

    def newest(self) -> CompletionBatch | None:
        """The newest step's rows read from the end of the last part, when it is big."""
        if not self._paths:
            self._note_parts(self.kind.parts(self.path))
        if not self._paths or max(self._sealed, default=-1) > max(self._paths):
            return None  # the newest part is sealed: read whole when reached
        part = max(self._paths)
        path = self._paths[part]
        if probe(path).size < PREVIEW_FROM_BYTES:
            return None
        lines = read_tail_lines(path, PREVIEW_MAX_BYTES)
        records: list[StreamRecord] = []
        first: TailLine | None = None
        for line in reversed(lines):
            record = self._record(line.data)
            if record is None or isinstance(record, str):
                continue
            if records and record.step != records[0].step:
                break
            records.insert(0, record)
            first = line
        if first is None:
            return None
        rows = self._rows(records)
        if isinstance(rows, str):
            return None
        end = lines[-1].offset + len(lines[-1].data)
        return CompletionBatch((_at(part, first.offset), _at(part, end)), 0, rows)

    # ----------------------------------------------------------------- reading

    def read(self, max_bytes: int | None = None) -> BatchChunk:
        budget = DEFAULT_CHUNK if max_bytes is None else max(1, max_bytes)
        # listed before the parts are read: a part followed by a later one is complete
        parts = self.kind.parts(self.path)
        self._note_parts(parts)
        out: list[CompletionBatch] = []
        restarted: str | None = None
        more = False
        spent = 0
        while self._tail is not None or self._next_part():
            tail = self._tail
            if tail is None:  # a sealed part: read whole, then left
                spent += self._read_sealed(out)
                if spent >= budget:
                    more = self._has_later()
                    break
                continue
            chunk = tail.poll(max(1, budget - spent))
            if chunk.restarted is not None:  # its lines are read again from its start
                restarted = f"{tail.path.name} {chunk.restarted}"
                self._open = None
            spent += len(chunk.data)
            for line in chunk.lines:
                self._hand_over(out, self._batch(line))
            if chunk.more:
                more = True
                break
            if spent >= budget:
                more = self._tail is not None and self._has_later()
                break
            if not self._leave_part(out):
                break
        if self._fold_annotations(parts) and self._open is not None:
            last = out[-1] if out else None
            if last is None or last.rows is None or last.line_no != self._open.line_no:
                out.append(self._refresh(self._open))
        self._pending = self._pending_bytes()
        return BatchChunk(out, restarted, more)

    @staticmethod
    def _hand_over(out: list[CompletionBatch], batch: CompletionBatch | None) -> None:
        """Add a line's batch to a read's; the lines of one batch read together are handed
        over as one (a backfill gives a batch a step, as the trainer made them)."""
        if batch is None:
            return
        last = out[-1] if out else None
        if (
            batch.extends
            and last is not None
            and last.rows is not None
            and batch.rows is not None
            and last.line_no == batch.line_no
        ):
            rows = CompletionRows.concat([last.rows, batch.rows])
            out[-1] = CompletionBatch(
                batch.ref, last.line_no, rows, extends=last.extends, growing=True
            )
            return
        out.append(batch)

    def _note_parts(self, parts: StreamParts) -> None:
        for number, path in parts.plain:
            self._paths.setdefault(number, path)
        self._sealed = dict(parts.sealed)
        for number in self._sealed:  # its plain text is gone: read sealed from now on
            self._paths.pop(number, None)

    def _has_later(self) -> bool:
        """A part after the current one exists (its writer closed the current one)."""
        current = -1 if self._part is None else self._part
        return any(n > current for n in self._paths) or any(n > current for n in self._sealed)

    def _next_part(self) -> bool:
        """Go to the first part after the current one: a plain one followed (`_tail`), a
        sealed one left to `_read_sealed` (no `_tail`); False when there is none."""
        after = -1 if self._part is None else self._part
        later = [number for number in self._paths.keys() | self._sealed.keys() if number > after]
        if not later:
            return False
        self._part = min(later)
        self._tail = None if self._part in self._sealed else TailReader(self._paths[self._part])
        return True

    def _read_sealed(self, out: list[CompletionBatch], offset: int = 0, line_no: int = 0) -> int:
        """The current part, sealed, read whole from `offset` (where its plain text was
        left, `line_no` lines in) and left; the bytes read. Skipped (said by `problem`)
        when it cannot be decompressed here; a damaged one is a bad line too."""
        part = self._part if self._part is not None else 0
        path = self._sealed[part]
        data = self.kind.unseal(path)
        if not isinstance(data, bytes):
            if data is None:
                self._skipped[part] = path.name
            else:
                self._damaged[part] = f"{path.name}: {data}"
                place = _at(part, offset)
                reason = f"sealed part {path.name} not read: {data}"
                out.append(
                    CompletionBatch((place, place), self._line_base + line_no + 1, None, reason)
                )
            self._done_bytes += offset
            self._line_base += line_no
            return 0
        self._damaged.pop(part, None)
        start = offset
        if start == 0 and data.startswith(UTF8_BOM):
            start = len(UTF8_BOM)  # as the tail reader skips it
        end = data.rfind(b"\n") + 1
        if end > start:
            chunk = TailChunk(data[start:end], start, line_no + 1)
            for line in chunk.lines:
                self._hand_over(out, self._batch(line))
            line_no += data.count(b"\n", start, end)
        if max(start, end) < len(data):  # sealed with a torn last line: it never ends
            place = _at(part, max(start, end))
            reason = "a cut last line: its writer went on to the next part"
            out.append(CompletionBatch((place, place), self._line_base + line_no + 1, None, reason))
        self._finished.add(part)
        self._done_bytes += len(data)
        self._line_base += line_no
        return max(0, len(data) - offset)

    def _leave_part(self, out: list[CompletionBatch]) -> bool:
        """Go on to the next part once a later one exists (its writer closed this one):
        this one is read to its end (a last line left without its newline never ends: a
        bad line), or gone (sealed: said by `problem`). False: stay and follow it."""
        tail = self._tail
        if tail is None or self._part is None:
            return True
        if self._part in self._sealed:  # sealed while followed: the rest from the twin
            self._tail = None
            self._read_sealed(out, tail.offset, tail.line_no)
            return True
        if not self._has_later():
            return False
        if tail.exists:
            self._finished.add(self._part)
            if tail.offset < tail.size:
                line_no = self._line_base + tail.line_no + 1
                place = _at(self._part, tail.offset)
                reason = "a cut last line: its writer went on to the next part"
                out.append(CompletionBatch((place, place), line_no, None, reason))
        self._done_bytes += tail.offset
        self._line_base += tail.line_no
        self._tail = None
        return True

    def _pending_bytes(self) -> int:
        pending = 0 if self._tail is None else max(0, self._tail.size - self._tail.offset)
        current = -1 if self._part is None else self._part
        for number, path in [*self._paths.items(), *self._sealed.items()]:
            if number > current:
                pending += probe(path).size
        return pending

    def _record(self, data: bytes) -> StreamRecord | str | None:
        try:
            value, _ = decode_line(data)
        except ValueError as error:
            return f"invalid JSON: {error}"
        return self.kind.convert(value)

    def _batch(self, line: TailLine) -> CompletionBatch | None:
        part = self._part if self._part is not None else 0
        start, end = _at(part, line.offset), _at(part, line.offset + len(line.data))
        line_no = self._line_base + line.line_no
        record = self._record(line.data)
        if record is None:
            return None
        rows = record if isinstance(record, str) else self._rows([record])
        if isinstance(rows, str):
            excerpt = line.data[:_EXCERPT_CHARS].decode("utf-8", errors="replace")
            return CompletionBatch((start, end), line_no, None, rows, excerpt)
        assert isinstance(record, StreamRecord)
        if self._open is not None and self._open.step == record.step:
            opened = self._open
            opened.end = end
            opened.keys.update(record.keys)
            return CompletionBatch(
                (opened.start, end), opened.line_no, rows, extends=True, growing=True
            )
        self._open = _Open(record.step, start, line_no, end, set(record.keys))
        return CompletionBatch((start, end), line_no, rows, growing=True)

    @staticmethod
    def _refresh(opened: _Open) -> CompletionBatch:
        """No new rows for the open batch, only news about them (their advantages): the
        index reads it again when it is next looked at."""
        empty = CompletionRows("columns", [], [], [], {}, np.empty(0), None, None, None)
        ref = (opened.start, opened.end)
        return CompletionBatch(ref, opened.line_no, empty, extends=True, growing=True)

    def _rows(self, records: list[StreamRecord]) -> CompletionRows | str:
        """The records' rows in order of their group, each advantage not in its record
        taken from the annotations."""
        columns: dict[str, list[object]] = {}
        keys: list[str] = []
        groups: list[str] = []
        count = 0
        for record in records:
            size = len(record.keys)
            for name, values in record.columns.items():
                columns.setdefault(name, [None] * count).extend(values[:size])
            for values in columns.values():
                values.extend([None] * (count + size - len(values)))
            keys.extend(record.keys)
            groups.extend(record.groups)
            count += size
        advantages = columns.get("advantages")
        if advantages is not None:
            for row, key in enumerate(keys):
                if advantages[row] is None or _nan(advantages[row]):
                    advantages[row] = self._advantages.get(key)
            if all(value is None for value in advantages):
                del columns["advantages"]
        first = {group: order for order, group in reversed(list(enumerate(groups)))}
        order = sorted(range(count), key=lambda row: first[groups[row]])
        ordered: dict[str, object] = {
            name: [values[row] for row in order] for name, values in columns.items()
        }
        extras = tuple(dict.fromkeys(name for record in records for name in record.extra_keys))
        try:
            return parse_record(ordered, weights=self.reward_weights, extra_keys=extras)
        except ValueError as error:  # NotCompletionsError
            return str(error)

    def _fold_annotations(self, parts: StreamParts) -> bool:
        """Read the annotations added since; True when one is about a row of the open
        batch."""
        touched = False
        for path in parts.annotations:
            reader = self._notes.setdefault(path, TailReader(path))
            chunk = reader.poll()
            for line in chunk.lines:
                if _ANNOTATION_MARK not in line.data:
                    continue
                try:
                    value, _ = decode_line(line.data)
                except ValueError:
                    continue  # an annotation that does not parse adds nothing
                note = self.kind.annotate(value)
                if note is None:
                    continue
                key, advantage = note
                self._advantages[key] = advantage
                self._advantages.move_to_end(key)
                touched |= self._open is not None and key in self._open.keys
                while len(self._advantages) > self.advantages_kept:
                    self._advantages.popitem(last=False)
        return touched

    # ----------------------------------------------------------------- reading again

    def reload(self, ref: BatchRef) -> CompletionRows | None:
        """One batch again: its byte range read, the records of its first line's step."""
        data = self._read_range(*ref)
        if data is None:
            return None
        records: list[StreamRecord] = []
        for raw in data.split(b"\n"):
            raw = raw.removesuffix(b"\r")
            if not raw.strip():
                continue
            record = self._record(raw)
            if record is None or isinstance(record, str):
                continue  # counted when it was read
            if records and record.step != records[0].step:
                continue
            records.append(record)
        if not records:
            return None
        rows = self._rows(records)
        return None if isinstance(rows, str) else rows

    def _read_range(self, start: int, end: int) -> bytes | None:
        """The stream's bytes from `start` to `end` (across parts), None when a part of it
        cannot be read any more (gone, shorter, sealed and not decompressed here)."""
        first, offset = _split(start)
        last, stop = _split(end)
        if last < first or (last == first and stop < offset):
            return None
        pieces: list[bytes] = []
        numbers = self._paths.keys() | self._sealed.keys()
        for number in sorted(n for n in numbers if first <= n <= last):
            begin = offset if number == first else 0
            piece = self._part_bytes(number, begin, stop if number == last else None)
            if piece is None or (number == last and len(piece) != stop - begin):
                return None
            pieces.append(piece)
        return b"\n".join(pieces) if pieces else None

    def _part_bytes(self, number: int, begin: int, stop: int | None) -> bytes | None:
        """A part's bytes from `begin` to `stop` (its end: None): a plain part read there,
        a sealed one decompressed whole (once, not kept); a plain part sealed since is
        found sealed."""
        path = self._paths.get(number)
        if path is not None:
            try:
                with open_regular(path) as handle:
                    handle.seek(begin)
                    return handle.read() if stop is None else handle.read(stop - begin)
            except OSError:
                self._note_parts(self.kind.parts(self.path))
        sealed = self._sealed.get(number)
        data = None if sealed is None else self.kind.unseal(sealed)
        if not isinstance(data, bytes):
            return None
        return data[begin:] if stop is None else data[begin:stop]


def _parts(names: list[str]) -> str:
    """ "2 sealed parts (a, b)": counted, the first few named."""
    named = ", ".join(names[:_NAMED]) + (" …" if len(names) > _NAMED else "")
    return f"{len(names)} sealed part{'' if len(names) == 1 else 's'} ({named})"


def _nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)
