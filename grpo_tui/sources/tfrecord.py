"""The records of a TensorBoard event file (the TFRecord framing), read past bad ones.

An event file is a run of records: an 8-byte little-endian length, a 4-byte masked CRC-32C
of those 8 bytes, the data, and a masked CRC-32C of the data. TensorBoard's own reader
(RawEventFileLoader) was used before this module; it stops for good at the first record it
refuses, so one corrupted record lost the rest of the file, a record with an absurd length
ended in a MemoryError, and its pure-Python checksum reads about 7 MB/s (a 1 GB run's
events took minutes). Here:
- a record whose data checksum is wrong is counted and skipped (its length was checked:
  the next record starts right after it);
- a length whose checksum is wrong, or beyond MAX_RECORD_BYTES, is counted as one bad
  record, and reading goes on at the next offset where a length with a right checksum
  starts (a resynchronisation, as TFRecord readers that recover do);
- a record not complete yet (the writer is at it) ends the read: it is read whole later;
- the checksum is google-crc32c's compiled one when that package is installed (the
  `tensorboard` extra asks for it), else a table-driven Python one (`compiled` says which).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO

try:  # compiled CRC-32C (C, SSE4.2): ~1 GB/s
    import google_crc32c

    def _crc32c(data: bytes) -> int:
        return int(google_crc32c.value(data))

    COMPILED = True
except ImportError:  # pragma: no cover - exercised by monkeypatching in the tests
    COMPILED = False

    def _table_entry(crc: int) -> int:
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        return crc

    _TABLE = [_table_entry(byte) for byte in range(256)]

    def _crc32c(data: bytes) -> int:
        crc = 0xFFFFFFFF
        table = _TABLE
        for byte in data:
            crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
        return crc ^ 0xFFFFFFFF


#: a record longer than this is not one (a scalar event is ~100 bytes; a big text or image
#: summary a few MB): its length is taken for corruption
MAX_RECORD_BYTES = 256 << 20
#: bytes read at a time while looking for the next record after a corrupted one
_SCAN_BYTES = 1 << 20
_HEADER = 12  # length (8) and its masked CRC (4)
_FOOTER = 4  # the data's masked CRC


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC-32C of `data`."""
    crc = _crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _length(header: bytes) -> int | None:
    """The record length a 12-byte header holds, None when its checksum is wrong."""
    if masked_crc(header[:8]) != int.from_bytes(header[8:12], "little"):
        return None
    return int.from_bytes(header[:8], "little")


@dataclass(slots=True)
class RecordReader:
    """Reads the complete records of one event file from `offset` on (see above)."""

    #: bytes of the file taken so far (records, and the corrupted bytes skipped)
    offset: int = 0
    #: records (or runs of corrupted bytes) that could not be read, with where they were
    bad: list[int] = field(default_factory=list)
    #: inside a run of corrupted bytes (counted once, when it began)
    _corrupted: bool = False

    def read(self, handle: BinaryIO, size: int, budget: int) -> list[bytes]:
        """Up to `budget` complete records from `offset` on in a file of `size` bytes."""
        records: list[bytes] = []
        while len(records) < budget and size - self.offset >= _HEADER:
            handle.seek(self.offset)
            header = handle.read(_HEADER)
            length = _length(header)
            if length is None or length > MAX_RECORD_BYTES:
                if not self._resync(handle, size):
                    break
                continue
            end = self.offset + _HEADER + length + _FOOTER
            if end > size:
                break  # still being written
            data = handle.read(length)
            footer = handle.read(_FOOTER)
            if len(data) < length or len(footer) < _FOOTER:
                break  # shrank under us: the next poll sees a truncation
            if masked_crc(data) == int.from_bytes(footer, "little"):
                records.append(data)
            else:
                self.bad.append(self.offset)
            self._corrupted = False
            self.offset = end
        return records

    def _resync(self, handle: BinaryIO, size: int) -> bool:
        """Skip a corrupted header towards the next offset where a header with a right
        checksum starts, at most _SCAN_BYTES a call (a run of corrupted bytes is counted
        once, as one bad record); False when the file ends before any."""
        if not self._corrupted:
            self._corrupted = True
            self.bad.append(self.offset)
        start = self.offset + 1
        handle.seek(start)
        window = handle.read(min(_SCAN_BYTES, size - start))
        for at in range(len(window) - _HEADER + 1):
            length = _length(window[at : at + _HEADER])
            if length is not None and length <= MAX_RECORD_BYTES:
                self.offset = start + at
                return True
        if start + len(window) >= size:
            return False  # no header in what is there yet: looked at again as it grows
        self.offset = start + len(window) - _HEADER
        return True
