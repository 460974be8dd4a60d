"""Incremental, lossless reading of a file that another process appends to.

The reader keeps a byte offset that only ever moves past complete lines (`\\n`): a
trailing fragment is read again at the next poll, once its newline has arrived. Lines are
split as bytes (UTF-8 never contains 0x0A inside a character), so a multi-byte character
cut by a chunk boundary is never decoded half-way.

The file is restarted from offset 0, and the restart is reported, when it was truncated
(size < offset), replaced (another inode at the path), deleted and created again, or
rewritten in place (the first bytes of the file, or the bytes just before the offset,
changed: that catches a truncation followed by growth past the old offset between two
polls, and a re-created file that got the old inode number back).

The file is opened for each poll and closed again: holding a descriptor would keep a
deleted file's space on the trainer's disk and, on NFS, make the client create `.nfs*`
files inside the run directory. Nothing is ever written, locked or created.

Only regular files are read. A FIFO, a device or a socket named like a log would block on
open or read forever (or never end), so it is opened without blocking, recognised and
skipped with a reason (`problem`), like a file this process may not read. A UTF-8 byte
order mark at the start of the file is skipped, not read as part of the first line.

A file on another machine is read the same way: `open_regular` hands its path to the
mount's file system (sources/remote/), whose handle seeks and reads like a local one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from grpo_tui.files import UTF8_BOM, describe_os_error, fstat, open_regular

#: bytes before the offset remembered to notice an in-place rewrite
_FINGERPRINT_BYTES = 64
#: default read size per poll; a poll reads more only to finish one very long line
DEFAULT_CHUNK = 4 * 1024 * 1024
#: a file at least this big (a metrics log, a completions file) gets its newest lines read
#: from its end (`read_tail_lines`) before its history from the start; a smaller one is
#: read whole in well under a second
PREVIEW_FROM_BYTES = 8 << 20


@dataclass(slots=True, frozen=True)
class TailLine:
    """One complete line: its bytes without the line ending, where it starts, its number."""

    data: bytes
    offset: int
    line_no: int


@dataclass(slots=True)
class TailChunk:
    """What one poll read: complete lines, as one block of bytes."""

    #: the complete lines read, each ending in a newline (b"" when there were none)
    data: bytes = b""
    #: the file offset of `data`, and the line number of its first line (1-based)
    offset: int = 0
    first_line_no: int = 1
    #: why the file started over before these lines ("truncated", "replaced", ...), or None
    restarted: str | None = None
    #: unread complete data remains (the poll stopped at its byte budget)
    more: bool = False

    @property
    def lines(self) -> list[TailLine]:
        """The non-blank lines one by one (line endings dropped), for line-wise readers.
        The metrics reader takes `data` whole instead (see logreader.py)."""
        lines: list[TailLine] = []
        offset = self.offset
        for line_no, raw in enumerate(self.data.split(b"\n")[:-1], self.first_line_no):
            data = raw[:-1] if raw.endswith(b"\r") else raw
            if data.strip():
                lines.append(TailLine(data, offset, line_no))
            offset += len(raw) + 1
        return lines


class TailReader:
    """Follows one file path by polling; call `poll()` whenever it may have grown."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        #: byte offset just past the last complete line handed out
        self.offset = 0
        #: lines handed out in the current generation of the file
        self.line_no = 0
        self.exists = False
        #: size and mtime at the last poll (for "last data" age)
        self.size = 0
        self.mtime: float | None = None
        #: why the path cannot be read right now ("permission denied: PATH"), None when it
        #: can or is simply not there yet
        self.problem: str | None = None
        self._identity: tuple[int, int] | None = None
        self._fingerprint = b""
        self._head = b""
        self._was_missing = False

    def poll(self, max_bytes: int | None = None) -> TailChunk:
        """Read the complete lines appended since the last poll (up to ~max_bytes)."""
        budget = DEFAULT_CHUNK if max_bytes is None else max(1, max_bytes)
        try:
            handle = open_regular(self.path)
        except OSError as error:
            self._was_missing |= self.exists
            self.exists = False
            missing = isinstance(error, (FileNotFoundError, NotADirectoryError))
            self.problem = None if missing else describe_os_error(error, self.path)
            return TailChunk()
        self.problem = None
        try:
            with handle:
                return self._read(handle, budget)
        except OSError as error:  # an I/O error mid-read (a failing disk, a dropped mount)
            self.problem = describe_os_error(error, self.path)
            return TailChunk()

    def _read(self, handle: BinaryIO, budget: int) -> TailChunk:
        info = fstat(handle)
        self.exists = True
        restarted = self._check_restart(handle, info)
        self.size = info.st_size
        self.mtime = info.st_mtime
        if info.st_size <= self.offset:
            return TailChunk(restarted=restarted)
        handle.seek(self.offset)
        data = handle.read(budget)
        read = len(data)
        skipped = b""
        if self.offset == 0 and data.startswith(UTF8_BOM):
            skipped, data = UTF8_BOM, data[len(UTF8_BOM) :]
        end = data.rfind(b"\n")
        # one line longer than the budget: keep reading until it ends (or the file does)
        while end < 0 and read >= budget:
            more = handle.read(budget)
            if not more:
                break
            pos = more.find(b"\n")
            if pos >= 0:
                data += more[: pos + 1]
                end = len(data) - 1
            else:
                data += more
        if end < 0:
            return TailChunk(restarted=restarted)
        chunk = self._take(data[: end + 1] if end + 1 < len(data) else data, skipped)
        chunk.restarted = restarted
        chunk.more = self.offset < info.st_size and read >= budget
        return chunk

    def _check_restart(self, handle: BinaryIO, info: os.stat_result) -> str | None:
        identity = (info.st_dev, info.st_ino)
        reason: str | None = None
        if self._identity is not None and identity != self._identity:
            reason = "re-created" if self._was_missing else "replaced"
        elif info.st_size < self.offset:
            reason = "truncated"
        elif self._fingerprint:
            fp_len = len(self._fingerprint)
            handle.seek(self.offset - fp_len)
            tail_ok = handle.read(fp_len) == self._fingerprint
            handle.seek(0)
            head_ok = handle.read(len(self._head)) == self._head
            if not (tail_ok and head_ok):
                reason = "rewritten"
        self._identity = identity
        self._was_missing = False
        if reason is not None:
            self.offset = self.line_no = 0
            self._fingerprint = self._head = b""
        return reason

    def _take(self, complete: bytes, skipped: bytes = b"") -> TailChunk:
        """Hand out complete lines: advance the offset, line count and fingerprints.
        `skipped` is a byte order mark before them (part of the file, not of a line)."""
        self.offset += len(skipped)
        chunk = TailChunk(complete, self.offset, self.line_no + 1)
        self.offset += len(complete)
        self.line_no += complete.count(b"\n")
        width = _FINGERPRINT_BYTES
        self._fingerprint = (self._fingerprint + complete[-width:])[-width:]
        if len(self._head) < width:
            self._head = (self._head + skipped + complete[:width])[:width]
        return chunk


def read_tail_lines(path: Path, max_bytes: int, *, block: int = 1 << 20) -> list[TailLine]:
    """The last complete lines of a file, read from its end (newest first on screen).

    Reads back in blocks until the window holds at least one whole line (a line starts
    after a newline, or at offset 0), at most `max_bytes`. Returns those lines in file
    order with their offsets (line numbers are unknown here: 0), or [] when the file
    cannot be read or its last line is longer than `max_bytes`. A trailing fragment
    without its newline is not a line yet and is left out, as the tail reader does.
    """
    try:
        handle = open_regular(path)
    except OSError:
        return []
    try:
        with handle:
            size = fstat(handle).st_size
            data = b""
            start = size
            # one byte more than max_bytes: the newline before a line that fills the window
            while start > 0 and len(data) < max_bytes + 1:
                step = min(block, start, max_bytes + 1 - len(data))
                start -= step
                handle.seek(start)
                data = handle.read(step) + data
                end = data.rfind(b"\n")
                if end >= 0 and (start == 0 or data.rfind(b"\n", 0, end) >= 0):
                    break
    except OSError:
        return []
    end = data.rfind(b"\n")
    if end < 0:
        return []
    data = data[: end + 1]
    # the window holds max_bytes: the one byte more read is for the newline before a line
    # that fills it, so when the read reached the file's start with that byte used, the
    # first line does not fit either (from the start no newline comes before it)
    if start > 0 or len(data) > max_bytes:
        first = data.find(b"\n")
        if first == end:
            return []  # the newest line is longer than the window
        start += first + 1
        data = data[first + 1 :]
    elif data.startswith(UTF8_BOM):
        start, data = start + len(UTF8_BOM), data[len(UTF8_BOM) :]
    chunk = TailChunk(data, start, 0)
    return [TailLine(line.data, line.offset, 0) for line in chunk.lines]
