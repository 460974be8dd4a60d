"""Helper processes for big backfills: a large chunk of complete lines is cut into parts,
this process parses the first and forked children parse the others at the same time.

JSON parsing holds the GIL, so threads cannot help; processes can. A child is forked with
the chunk already in its memory (copy-on-write: nothing is sent to it); it parses its part,
writes the pickled result (a few numpy arrays) into a pipe and leaves with `os._exit`, so
it runs nothing else this process would run: no exit handlers (the terminal's restore),
no flushing of streams another thread may hold the lock of, no stdin handling.

Only on Linux, only when this process may use more than one CPU, and only for chunks big
enough that a fork pays for itself (a live run's few new lines never get here). A child
that cannot start, dies or fails costs nothing but time: this process parses its part.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
from collections.abc import Callable
from typing import TypeVar

#: the least bytes worth a part of its own (a fork costs ~20 ms; 8 MB parse ≈ 100 ms)
PART_MIN_BYTES = 8 << 20
#: parts per chunk at most: this process and up to three children
MAX_PARTS = 4

T = TypeVar("T")
#: parse(bytes of complete lines, number of the first line) → result
Parse = Callable[[bytes, int], T]


def usable_cpus() -> int:
    """CPUs this process may run on (1 where that cannot be known)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return 1


def part_count(size: int) -> int:
    """How many parts a chunk of `size` bytes is parsed in."""
    if not sys.platform.startswith("linux"):
        return 1  # fork is unsafe on macOS and missing on Windows
    return max(1, min(MAX_PARTS, usable_cpus(), size // PART_MIN_BYTES))


def parse_in_parts(parse: Parse[T], data: bytes, first_line_no: int) -> list[T]:
    """Parse complete lines, in parts when that helps. Returns results in line order."""
    bounds = _cut(data, part_count(len(data)))
    if len(bounds) == 1:
        return [parse(data, first_line_no)]
    line_nos = [first_line_no]
    for start, stop in bounds[:-1]:
        line_nos.append(line_nos[-1] + data.count(b"\n", start, stop))
    children = [_fork(parse, data, start, stop, line_no) for (start, stop), line_no in zip(bounds[1:], line_nos[1:])]
    try:
        start, stop = bounds[0]
        results = [parse(data[start:stop], line_nos[0])]
        for child, (start, stop), line_no in zip(children, bounds[1:], line_nos[1:]):
            result = _collect(child)
            if isinstance(result, _Failed):
                results.append(parse(data[start:stop], line_no))
            else:
                results.append(result)  # type: ignore[arg-type]  # what `parse` returned there
        return results
    finally:
        for child in children:
            _reap(child)


def _cut(data: bytes, parts: int) -> list[tuple[int, int]]:
    """`parts` byte ranges of about equal size, each ending just after a newline (equal
    parts measured best: bench/ingest.py)."""
    bounds: list[tuple[int, int]] = []
    start = 0
    for k in range(1, parts):
        stop = data.find(b"\n", max(start, len(data) * k // parts)) + 1
        if stop <= start or stop >= len(data):
            break
        bounds.append((start, stop))
        start = stop
    bounds.append((start, len(data)))
    return bounds


class _Child:
    __slots__ = ("done", "pid", "read_fd")

    def __init__(self, pid: int, read_fd: int) -> None:
        self.pid = pid
        self.read_fd = read_fd
        #: its whole result was read: it is exiting by itself
        self.done = False


class _Failed:
    """What a child sends when parsing raised (and what `_collect` returns for any failure)."""


_FAILED = _Failed()


def _fork(parse: Parse[T], data: bytes, start: int, stop: int, line_no: int) -> _Child | None:
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the child: parse, hand the result over, leave at once
        code = 0
        try:
            gc.disable()  # it lives for one parse: collecting cycles would only cost time
            os.close(read_fd)
            try:
                result: object = parse(data[start:stop], line_no)
            except Exception:  # noqa: BLE001 - any failure: the parent parses this part
                result = _FAILED
            payload = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(payload)
            while view:
                view = view[os.write(write_fd, view) :]
        except BaseException:  # noqa: BLE001 - never return into the parent's code
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    return _Child(pid, read_fd)


def _collect(child: _Child | None) -> object:
    """The child's result, or `_FAILED` if there is none."""
    if child is None:
        return _FAILED
    chunks: list[bytes] = []
    try:
        while block := os.read(child.read_fd, 1 << 20):
            chunks.append(block)
        child.done = True
        return pickle.loads(b"".join(chunks)) if chunks else _FAILED
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, AttributeError):
        return _FAILED


def _reap(child: _Child | None) -> None:
    """Close the pipe and wait for the child (killed if the parent stopped early)."""
    if child is None:
        return
    try:
        os.close(child.read_fd)
    except OSError:
        pass
    try:
        if not child.done:
            os.kill(child.pid, signal.SIGKILL)
        os.waitpid(child.pid, 0)
    except (ChildProcessError, ProcessLookupError, OSError):
        pass
