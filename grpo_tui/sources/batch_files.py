"""A folder of one file per step, read as if it were one growing completions.jsonl.

ms-swift appends one JSON line per batch to `completions.jsonl`; TRL ≥ 0.28 writes
`completions/completions_NNNNN.parquet` and verl `<rollout_data_dir>/<step>.jsonl`, one
file per step (frameworks.md §2.4, §3.3). The completions index already knows how to follow
a growing file of lines and to re-read one line later by its byte range, so instead of a
second index, `BatchFilesSource` presents the folder as that file: each step file becomes
one *virtual line*, `orjson.dumps(convert(file))` in the column-oriented shape
`parse_record` reads (`step`, `prompt`, `completion`, one column per reward function,
`advantages`), at a virtual byte offset (the lines' lengths summed, a newline each).
`read_range` maps an offset back to its file and converts that again; nothing but a small
window of recent lines is kept in memory.

The order of the virtual stream is the order files were read in, which is step order (the
step is the number in the file name) among the files one poll finds. The stream only ever
grows at its end: a file that turns up late with a lower step than one already read (it
was still being written, or copied in afterwards) becomes the next line all the same; the
index files its rows under their own step, it does not care where in the stream they are.

A file is read once it is complete. The converter says when it is not (it returns None: a
parquet file without its footer yet, a JSONL file whose last line has no newline yet); it
is tried again once its size, times or inode change, never half read. When `settle_s` is
given, a file is also left alone until it has not changed for that long (or across two
polls): a JSONL file written line by line can end on a newline half way through. A file
that changes while it is being converted is not taken; it is read again later.

A file that changes after it was read (same name, other size, times or inode):
- same content as before (TRL's end-of-train `log()` writes the last step again): nothing;
- its step is the newest read (TRL's eval `log()` at a train step rewrites that step's
  file): a NEW virtual line. The index sees a line whose step it already has, takes it as
  that step's eval/end line (kind "eval_or_end": shown in the panel, left out of the
  per-step summary, which keeps the train rollouts read first). The superseded version
  stays readable while its bytes are in the window of recent lines (`keep_bytes`); after
  that its page is empty, as for a line rewritten under the index;
- its step is lower than the newest read: a new run is writing the folder from its start
  again. The stream starts over (`restarted` = "started over") with the files written
  since that one (files older than it are the old run's, left out until rewritten).
The stream also starts over when the folder is replaced or re-created, or when every file
read has gone ("emptied").

A file that can never be read in its present version (pyarrow missing, not a completions
file, permission denied) becomes a virtual line `{PROBLEM_KEY: "name: reason"}`, which the
index counts as a bad line with that reason; the file is tried again when it changes.

Only regular files are opened (`open_regular`: a FIFO named like a step file is skipped,
never opened); nothing is ever created or written. Work per poll is bounded: files are
converted until `max_bytes` of them (their size on disk) were read, and `more` says that
complete files are left.

`LineSource` is what the completions index reads through; `FileLines` is that for a real
file (the tail reader, plus reads by byte range and from the end).
"""

from __future__ import annotations

import bisect
import errno
import hashlib
import os
import re
import stat
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import orjson

from grpo_tui.files import describe_os_error, open_regular
from grpo_tui.sources.tail import DEFAULT_CHUNK, TailChunk, TailLine, TailReader, read_tail_lines

#: the key of a virtual line that stands for a file that could not be read (its reason)
PROBLEM_KEY = "grpo_tui_problem"
_PROBLEM_START = b'{"' + PROBLEM_KEY.encode() + b'"'
#: bytes of recent virtual lines kept, so a version that was rewritten stays readable
KEEP_BYTES = 16 << 20

#: one file → its rows as columns; None while the file is not complete yet. Raises
#: BatchFileError when this version of the file can never be read (the reason), OSError
#: when it cannot be opened.
Converter = Callable[[Path], "dict[str, list[object]] | None"]
#: what tells one version of a file from another: (device, inode, size, mtime, ctime)
_Signature = tuple[int, int, int, int, int]


class LineSource(Protocol):
    """A growing stream of JSON lines, read by polling (what the completions index reads)."""

    #: what is read (a file, or a folder of step files), for messages
    path: Path
    #: stream offset just past the last line handed out, and the stream's size
    offset: int
    size: int
    exists: bool
    #: why it cannot be read ("permission denied: …", a FIFO skipped), None when it can
    problem: str | None

    def poll(self, max_bytes: int | None = None) -> TailChunk:
        """The complete lines added since the last poll (about `max_bytes` of work)."""
        ...

    def read_range(self, start: int, size: int) -> bytes:
        """The stream's bytes [start, start + size), fewer (or none) when they cannot be
        had again; raises OSError when the file cannot be read."""
        ...

    def tail_lines(self, max_bytes: int) -> list[TailLine]:
        """The newest complete lines within `max_bytes` of the end ([] when unknown)."""
        ...


class FileLines(TailReader):
    """One real file as a LineSource: the tail reader, plus reads by byte range and from
    the end (what the index needs to re-read a line and to preview the newest batch)."""

    def read_range(self, start: int, size: int) -> bytes:
        with open_regular(self.path) as handle:
            handle.seek(start)
            return handle.read(size)

    def tail_lines(self, max_bytes: int) -> list[TailLine]:
        return read_tail_lines(self.path, max_bytes)


class BatchFileError(ValueError):
    """This version of a step file can never be read as completions (the message says why)."""


def problem_line(reason: str) -> bytes:
    """The virtual line standing for a file that could not be read."""
    return orjson.dumps({PROBLEM_KEY: reason})


def _jsonable(value: object) -> object:
    """What orjson cannot write itself: bytes (an image in a message) become a placeholder,
    anything else its text."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"[{len(value)} bytes]"
    return str(value)


def _dump(name: str, step: int, columns: dict[str, list[object]]) -> bytes:
    """A file's rows as its virtual line (its step from the name when it has no column)."""
    if "step" not in columns:
        rows = columns.get("completion")
        columns["step"] = [step] * (len(rows) if isinstance(rows, list) else 1)
    try:
        return orjson.dumps(columns, default=_jsonable, option=orjson.OPT_NON_STR_KEYS)
    except (orjson.JSONEncodeError, TypeError) as error:
        return problem_line(f"{name}: cannot be written as JSON ({error})")


def _signature(info: os.stat_result) -> _Signature:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=8).digest()


@dataclass(slots=True)
class _File:
    """What is known of one step file of the current stream."""

    step: int
    #: its signature at the last scan (a file unchanged across two scans has settled)
    seen: _Signature | None = None
    #: the version last converted or tried (None: never): not tried again until it changes
    tried: _Signature | None = None
    #: digest of its newest virtual line, None before it was read (or while its line is a
    #: problem line: a version read later is new, not a rewrite)
    digest: bytes | None = None
    #: its newest virtual line
    line: int | None = None


@dataclass(slots=True)
class _Line:
    """One virtual line: where it is in the stream and which file version it holds."""

    start: int
    length: int
    name: str
    step: int
    signature: _Signature


@dataclass(frozen=True, slots=True)
class _Listed:
    """A step file the folder holds now."""

    name: str
    step: int
    signature: _Signature

    @property
    def size(self) -> int:
        return self.signature[2]

    @property
    def mtime_ns(self) -> int:
        return self.signature[3]


class BatchFilesSource:
    """Follows a folder of one file per step as a virtual growing JSONL stream (see the
    module docstring); a LineSource for `CompletionsIndex(..., source=...)`."""

    def __init__(
        self,
        directory: Path,
        match: re.Pattern[str] | str,
        convert: Converter,
        *,
        chunk_size: int = DEFAULT_CHUNK,
        settle_s: float = 0.0,
        keep_bytes: int = KEEP_BYTES,
    ) -> None:
        """`match`: the step files' names (the whole name must match); its group `step`,
        else its first group, is the step. `convert`: one file → its rows (see Converter).
        `chunk_size`: file bytes converted per poll when `poll` is given no budget.
        `settle_s`: seconds a file must be left unchanged before it is read (0: read as
        soon as the converter takes it). `keep_bytes`: recent virtual lines kept in memory."""
        self.path = Path(directory)
        self.pattern = re.compile(match) if isinstance(match, str) else match
        if not self.pattern.groups:
            raise ValueError(f"the file name pattern has no group for the step: {match!r}")
        self._step_group: int | str = "step" if "step" in self.pattern.groupindex else 1
        self.convert = convert
        self.chunk_size = chunk_size
        self.settle_ns = int(settle_s * 1e9)
        self.keep_bytes = keep_bytes
        #: stream offset just past the last line handed out, and lines handed out
        self.offset = 0
        self.line_no = 0
        #: the offset plus the size on disk of the files not read yet (an estimate: a
        #: file's line is not as long as the file)
        self.size = 0
        #: the folder was there at the last poll
        self.exists = False
        #: why the folder cannot be read right now, None when it can (or is not there yet)
        self.problem: str | None = None
        #: times the stream started over
        self.generation = 0
        self._identity: tuple[int, int] | None = None
        self._was_missing = False
        self._start_fresh(since_ns=None)

    def _start_fresh(self, since_ns: int | None) -> None:
        self.offset = 0
        self.line_no = 0
        self._files: dict[str, _File] = {}
        self._lines: list[_Line] = []
        self._starts: list[int] = []
        self._recent: OrderedDict[int, bytes] = OrderedDict()
        self._recent_bytes = 0
        #: files last changed before this (ns) belong to a run before the restart
        self._since_ns = since_ns
        #: the newest step read into this stream (its file may have gone since)
        self._newest = -1

    # ----------------------------------------------------------------- polling

    def poll(self, max_bytes: int | None = None) -> TailChunk:
        """Convert the step files that are new or changed (about `max_bytes` of them, at
        least one) into virtual lines; see the module docstring."""
        budget = self.chunk_size if max_bytes is None else max(1, max_bytes)
        scanned = self._scan()
        if scanned is None:
            return TailChunk()
        listed, identity = scanned
        restarted = self._check_folder(listed, identity)
        candidates = self._candidates(listed)
        spent = 0
        # a file read before, of a step older than the newest read, with other content: a
        # new run writes the folder from its start again
        converted: dict[str, tuple[_Signature, bytes]] = {}
        newest = self._newest
        for item in candidates:
            known = self._files[item.name]
            if known.digest is None or item.step >= newest:
                continue
            if spent and spent >= budget:
                break
            spent += item.size
            changed = self._convert(item)
            if changed is None:
                continue
            if changed.startswith(_PROBLEM_START):
                known.tried = item.signature  # unreadable now (permissions?): not a new run
                continue
            if _digest(changed) == known.digest:
                self._same_again(item)
                continue
            converted[item.name] = (item.signature, changed)
            self._start_fresh(since_ns=item.mtime_ns)
            self.generation += 1
            restarted = "started over"
            self._note(listed)
            candidates = self._candidates(listed)
            break
        first_offset, first_line_no = self.offset, self.line_no + 1
        out: list[bytes] = []
        more = False
        for item in candidates:
            known = self._files[item.name]
            if known.tried == item.signature or (known.digest is not None and item.step < newest):
                continue  # tried above, or an older step to be judged above at the next poll
            if spent and spent >= budget:
                more = True
                break
            done = converted.get(item.name)
            if done is not None and done[0] == item.signature:
                data: bytes | None = done[1]
            else:
                spent += item.size
                data = self._convert(item)
            if data is None:
                continue  # not complete yet (or it changed while read): tried again later
            if known.digest is not None and _digest(data) == known.digest:
                self._same_again(item)
                continue
            # new, or (an eval's) rewrite of the newest step: a line of its own
            known.tried = item.signature
            if data.startswith(_PROBLEM_START):
                known.digest = None
            else:
                known.digest = _digest(data)
                self._newest = max(self._newest, item.step)
            known.line = self._append(item, data)
            out.append(data)
        self._mark_seen(listed)
        pending = self._candidates(listed, settled_only=False)
        self.size = self.offset + sum(item.size for item in pending)
        return TailChunk(
            data=b"".join(line + b"\n" for line in out),
            offset=first_offset,
            first_line_no=first_line_no,
            restarted=restarted,
            more=more,
        )

    def _scan(self) -> tuple[list[_Listed], tuple[int, int]] | None:
        """The step files the folder holds, in step order, and the folder's identity;
        None when it cannot be listed."""
        try:
            info = os.stat(self.path)
            if not stat.S_ISDIR(info.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(self.path))
            with os.scandir(self.path) as found:
                entries = list(found)
        except OSError as error:
            if self.exists:
                self._was_missing = True
            self.exists = False
            missing = isinstance(error, FileNotFoundError)
            self.problem = None if missing else describe_os_error(error, self.path)
            return None
        self.exists = True
        self.problem = None
        listed: list[_Listed] = []
        for entry in entries:
            matched = self.pattern.fullmatch(entry.name)
            if matched is None:
                continue
            try:
                step = int(matched.group(self._step_group))
                entry_info = entry.stat()  # follows a symlink: its target must be regular
            except (OSError, ValueError, IndexError, TypeError):
                continue  # gone since the listing, or no number: not a step file
            if stat.S_ISREG(entry_info.st_mode):
                listed.append(_Listed(entry.name, step, _signature(entry_info)))
        listed.sort(key=lambda item: (item.step, item.name))
        return listed, (info.st_dev, info.st_ino)

    def _check_folder(self, listed: list[_Listed], identity: tuple[int, int]) -> str | None:
        """Start over when the folder was replaced or every file read has gone; then note
        the files it holds now."""
        reason: str | None = None
        if self._identity is not None and identity != self._identity:
            reason = "re-created" if self._was_missing else "replaced"
        self._identity = identity
        self._was_missing = False
        names = {item.name for item in listed}
        read_before = any(known.digest is not None for known in self._files.values())
        for name in [name for name in self._files if name not in names]:
            del self._files[name]  # gone: its lines stay, unreadable once out of the window
        if (
            reason is None
            and read_before
            and not any(known.digest is not None for known in self._files.values())
        ):
            reason = "emptied"
        if reason is not None:
            self._start_fresh(since_ns=None)
            self.generation += 1
        self._note(listed)
        return reason

    def _note(self, listed: list[_Listed]) -> None:
        """Track every listed file of this stream (a new one untried, never seen)."""
        for item in listed:
            if self._since_ns is not None and item.mtime_ns < self._since_ns:
                continue  # the run before the restart wrote it
            if item.name not in self._files:
                self._files[item.name] = _File(item.step)

    def _candidates(self, listed: list[_Listed], *, settled_only: bool = True) -> list[_Listed]:
        """Files of this stream in a version not read or tried yet (in step order); with
        `settled_only`, only those unchanged for `settle_s` or since the last scan."""
        now = time.time_ns()
        found: list[_Listed] = []
        for item in listed:
            known = self._files.get(item.name)
            if known is None or known.tried == item.signature:
                continue
            if (
                settled_only
                and self.settle_ns
                and known.seen != item.signature
                and now - item.mtime_ns < self.settle_ns
            ):
                continue
            found.append(item)
        return found

    def _mark_seen(self, listed: list[_Listed]) -> None:
        """Remember what each file looked like at this scan (settling is judged by it)."""
        for item in listed:
            known = self._files.get(item.name)
            if known is not None:
                known.seen = item.signature

    def _same_again(self, item: _Listed) -> None:
        """This version holds what its line holds: not tried again until it changes, and
        its line now stands for this version (re-read from it)."""
        known = self._files[item.name]
        known.tried = item.signature
        if known.line is not None:
            self._lines[known.line].signature = item.signature

    def _convert(self, item: _Listed) -> bytes | None:
        """One file version → its virtual line (a problem line when it cannot be read);
        None when it is not complete yet (or changed while read: not marked as tried)."""
        path = self.path / item.name
        try:
            columns = self.convert(path)
        except FileNotFoundError:
            return None  # gone since the listing: the next scan forgets it
        except BatchFileError as error:
            data: bytes | None = problem_line(f"{item.name}: {error}")
        except OSError as error:
            data = problem_line(describe_os_error(error, path))
        else:
            data = None if columns is None else _dump(item.name, item.step, columns)
        try:
            after = _signature(os.stat(path))
        except OSError:
            return None
        if after != item.signature:
            return None  # written while converted: read again once it is complete
        if data is None:
            self._files[item.name].tried = item.signature
        return data

    def _append(self, item: _Listed, data: bytes) -> int:
        index = len(self._lines)
        self._lines.append(_Line(self.offset, len(data), item.name, item.step, item.signature))
        self._starts.append(self.offset)
        self.offset += len(data) + 1
        self.line_no += 1
        self._keep(index, data)
        return index

    def _keep(self, index: int, data: bytes) -> None:
        """Keep a line's bytes in the window of recent lines (oldest dropped first)."""
        if len(data) > self.keep_bytes or index in self._recent:
            return
        self._recent[index] = data
        self._recent_bytes += len(data)
        while self._recent_bytes > self.keep_bytes:
            _, dropped = self._recent.popitem(last=False)
            self._recent_bytes -= len(dropped)

    # ----------------------------------------------------------------- reading again

    def read_range(self, start: int, size: int) -> bytes:
        """The stream's bytes [start, start + size): from the window of recent lines, else
        by converting the file again (b"" when its version is not the one read any more)."""
        if size <= 0 or not self._lines:
            return b""
        first = max(0, bisect.bisect_right(self._starts, start) - 1)
        parts: list[bytes] = []
        index = first
        while index < len(self._lines) and self._lines[index].start < start + size:
            data = self._line_bytes(index)
            if data is None:
                return b""
            parts.append(data + b"\n")
            index += 1
        skip = start - self._lines[first].start
        return b"".join(parts)[skip : skip + size]

    def _line_bytes(self, index: int) -> bytes | None:
        cached = self._recent.get(index)
        if cached is not None:
            self._recent.move_to_end(index)
            return cached
        line = self._lines[index]
        path = self.path / line.name
        try:
            if _signature(os.stat(path)) != line.signature:
                return None  # rewritten (or replaced) since: that version is gone
            columns = self.convert(path)
        except (OSError, ValueError):
            return None
        if columns is None:
            return None
        data = _dump(line.name, line.step, columns)
        if len(data) != line.length:
            return None
        self._keep(index, data)
        return data

    def tail_lines(self, max_bytes: int) -> list[TailLine]:
        """Always []: the newest file's virtual offset is known only once every file
        before it was converted, so the index reads a folder from its start (a file at a
        time, the first poll's budget buys at least one)."""
        return []
