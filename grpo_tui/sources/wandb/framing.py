"""The records of a W&B run file (`run-<id>.wandb`): its LevelDB-log framing, read past
damage and up to the last complete record.

W&B writes every record of a run (its config, each `wandb.log` row, the summary, the exit)
to this file before anything else happens to it, online or offline. The framing is
LevelDB's log format (leveldb `doc/log_format.md`) with W&B's changes, as wandb-core writes
and reads it (`core/pkg/leveldb/record.go`, `core/internal/transactionlog/` at wandb/wandb
b6e2950; the Python SDK's `wandb/sdk/internal/datastore.py` before it):
- the file starts with a 7-byte header: `:W&B`, the magic 0xBEE1 (little-endian) and the
  version 0; those bytes count towards the first 32 KiB block;
- the file is cut into 32 KiB blocks; a block holds whole chunks, each a 7-byte header (a
  CRC-32 of the chunk type and the data, little-endian; the data's length, 2 bytes; its
  type) and the data. W&B's checksum is the plain (IEEE, zlib's) CRC-32, not LevelDB's
  masked CRC-32C. Less than 7 bytes left at a block's end are zeros;
- a record is one FULL chunk, or a FIRST, MIDDLE… and LAST chunk across blocks.

wandb-core writes a block when it is full, or earlier when it flushes (a partial block,
continued in place later): a live file grows in blocks, and its last chunk can be
incomplete. Here:
- `offset` only moves past complete records: a record not all there yet (a chunk cut by
  the file's end, a FIRST without its LAST) is read whole at a later call;
- a chunk whose checksum, type or length is wrong is damage: it is counted once (with the
  stretch of bytes after it that holds no valid chunk), the record it belonged to is
  dropped, and reading goes on at the next valid FULL or FIRST chunk, found byte by byte
  (a CRC-32 that matches by chance has odds of 2⁻³²) rather than at the next block as
  LevelDB's readers do, so the good records of the damaged block are kept;
- a chunk header whose data runs past the end of the file is waited for, unless a complete
  valid chunk starts further on (then that header was damaged).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO, Literal

#: `:W&B`, magic 0xBEE1 little-endian, version 0 (datastore.py LEVELDBLOG_HEADER_*)
FILE_HEADER = b":W&B\xe1\xbe\x00"
BLOCK = 32 * 1024
CHUNK_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
#: the CRC-32 of each chunk type's byte: a chunk's checksum continues from it over the data
_SEEDS = tuple(zlib.crc32(bytes([kind])) for kind in range(LAST + 1))
_CHUNK = struct.Struct("<IHB")
#: bytes read at a time (doubled while one record does not fit: a big config)
WINDOW = 8 << 20
#: bytes of records one read keeps, about (memory stays bounded on a backlog)
MAX_KEPT_BYTES = 16 << 20


class NotWandbFile(ValueError):
    """The file does not start with W&B's header (the message says what it starts with)."""


#: why one pass over a window of the file stopped: "budget": enough records; "more": the
#: window ended inside a chunk or a record and the file goes on; "wait": the file ends
#: inside one (the writer is at it)
_Stop = Literal["budget", "more", "wait"]


@dataclass(slots=True)
class RecordReader:
    """Reads the complete records of one `.wandb` file from `offset` on (see above)."""

    #: bytes of the file taken so far: the next record starts here (0: header not read)
    offset: int = 0
    #: where each damaged stretch began (a byte offset), one per stretch
    bad: list[int] = field(default_factory=list)
    #: inside a damaged stretch (it was counted when it began)
    _damaged: bool = False
    #: the last read stopped at its budget, not at what the file holds: more is ready
    stopped_early: bool = False
    #: records taken and bytes kept by the current read
    _taken: int = 0
    _kept_bytes: int = 0

    def read(
        self,
        handle: BinaryIO,
        size: int,
        budget: int,
        keep: Callable[[bytes], bool] | None = None,
        max_bytes: int = MAX_KEPT_BYTES,
    ) -> list[bytes]:
        """The complete records from `offset` on, in a file of `size` bytes, that `keep`
        keeps (all without it; it is asked once per record, in file order): up to `budget`
        records taken (kept or not) and about `max_bytes` kept. Raises NotWandbFile when
        the file is something else, OSError as reads do."""
        if self.offset == 0:
            if size < len(FILE_HEADER):
                return []
            handle.seek(0)
            head = handle.read(len(FILE_HEADER))
            if len(head) < len(FILE_HEADER):
                return []  # shrank under us: the next poll sees a truncation
            if head != FILE_HEADER:
                raise NotWandbFile(f"it starts with {head!r}, not W&B's header {FILE_HEADER!r}")
            self.offset = len(FILE_HEADER)
        records: list[bytes] = []
        window = WINDOW
        self._taken = self._kept_bytes = 0
        self.stopped_early = False
        while self._taken < budget and self._kept_bytes < max_bytes and self.offset < size:
            start = self.offset
            handle.seek(start)
            data = handle.read(min(window, size - start))
            if not data:
                break
            at_end = start + len(data) >= size
            stop = self._scan(data, start, at_end, records, (budget, max_bytes, keep))
            if stop != "more":
                break
            if self.offset == start:
                window *= 2  # one record (or damaged stretch) larger than the window
        self.stopped_early = self._taken >= budget or self._kept_bytes >= max_bytes
        return records

    # -- one window ---------------------------------------------------------------------
    def _scan(
        self,
        view: bytes,
        base: int,
        at_end: bool,
        records: list[bytes],
        limits: tuple[int, int, Callable[[bytes], bool] | None],
    ) -> _Stop:
        """Read chunks of `view` (the file's bytes from `base`; `at_end`: up to its end)
        from `offset` on into `records` (`limits`: as `read`'s budget, max_bytes, keep)."""
        crc32, unpack, seeds = zlib.crc32, _CHUNK.unpack_from, _SEEDS
        budget, max_bytes, keep = limits
        stop: _Stop = "wait" if at_end else "more"
        end = base + len(view)
        pos = self.offset
        parts: list[bytes] = []  # the chunks of the record being put together
        while self._taken < budget and self._kept_bytes < max_bytes:
            left = BLOCK - pos % BLOCK
            if left < CHUNK_HEADER:
                pos += left  # a block's zero trailer
                left = BLOCK
                if not parts:
                    self.offset = min(pos, end)
            if pos + CHUNK_HEADER > end:
                return stop
            at = pos - base
            checksum, length, kind = unpack(view, at)
            after = pos + CHUNK_HEADER + length
            valid = FULL <= kind <= LAST and CHUNK_HEADER + length <= left
            if valid and after > end:
                # the data is not all there: wait for it, unless a complete chunk further
                # on shows this header was damaged (a finished file has no tail to wait for)
                if not at_end or self._next_chunk(view, base, pos + 1, complete=True) is None:
                    return stop
                valid = False
            if checksum == length == kind == 0 and at_end and not any(view[at:]):
                return stop  # zeros to the end: space the writer has not filled yet
            data = view[at + CHUNK_HEADER : at + CHUNK_HEADER + length] if valid else b""
            if not valid or crc32(data, seeds[kind]) != checksum:
                found = self._skip_damage(view, base, pos, at_end)
                parts = []
                if found is None:
                    return stop
                pos = found
                continue
            if kind in (FULL, FIRST):
                if parts:
                    self._count(pos)  # the record before never got its LAST chunk
                parts = [data]
            elif not parts:
                self._count(pos)  # the rest of a record whose start was lost
                self.offset = after
                pos = after
                continue
            else:
                parts.append(data)
            if kind in (FULL, LAST):
                record = parts[0] if len(parts) == 1 else b"".join(parts)
                self._taken += 1
                if keep is None or keep(record):
                    records.append(record)
                    self._kept_bytes += len(record)
                parts = []
                self._damaged = False
                self.offset = after
            pos = after
        return "budget"

    def _count(self, pos: int) -> None:
        """A damaged stretch begins at `pos` (counted once, however long it runs)."""
        if not self._damaged:
            self._damaged = True
            self.bad.append(pos)

    def _skip_damage(self, view: bytes, base: int, pos: int, at_end: bool) -> int | None:
        """Damage at `pos`: count it and return where the next valid FULL or FIRST chunk
        starts, or None when the window holds none (`offset` then marks how far it is
        known to be damaged, so the next read looks on from there)."""
        self._count(pos)
        found = self._next_chunk(view, base, pos + 1, complete=True)
        if found is not None:
            return found
        # a chunk that may still complete (its data runs past the window) is waited for
        waiting = self._next_chunk(view, base, pos + 1, complete=False)
        end = base + len(view)
        self.offset = waiting if waiting is not None else max(pos + 1, end - CHUNK_HEADER + 1)
        return None

    @staticmethod
    def _next_chunk(view: bytes, base: int, start: int, *, complete: bool) -> int | None:
        """The first position from `start` where a FULL or FIRST chunk starts: with data
        all in `view` and a right checksum (`complete`), else with data running past it."""
        end = base + len(view)
        for pos in range(start, end - CHUNK_HEADER + 1):
            at = pos - base
            kind = view[at + 6]
            if kind != FULL and kind != FIRST:
                continue
            length = view[at + 4] | view[at + 5] << 8
            if CHUNK_HEADER + length > BLOCK - pos % BLOCK:
                continue
            if pos + CHUNK_HEADER + length > end:
                if not complete:
                    return pos
                continue
            if complete:
                checksum = int.from_bytes(view[at : at + 4], "little")
                data = view[at + CHUNK_HEADER : at + CHUNK_HEADER + length]
                if zlib.crc32(data, _SEEDS[kind]) == checksum:
                    return pos
        return None
