"""TensorBoard event files as a record store: scalars, one dict per step, read as they grow.

ms-swift writes event files by default (TRL, verl and OpenRLHF when asked): framed,
checksummed protobuf records, one scalar per event. TensorBoard's own reader returns only
the records completed since its last call (a half-written one is read again next time). It
reopens the file by name, so every poll first checks that it is a regular file (a FIFO
would block the reader forever).

A step's scalars come as several events, so its dict is held back until an event of
another step (or a second value for one key) shows the writer moved on, or until the files
did not grow for a poll (a finished run's last step). It is handed out once: a late value
for that step (an eval) becomes a record of its own, merged by step downstream. A resumed
run writes a newer file: a directory is read file by file in the order of the wall time in
their names, following the newest. tensorboard is optional: imported on the first poll, its
absence is a `problem`, never an ImportError.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grpo_tui.files import NotRegularFile, describe_os_error, file_kind, open_regular
from grpo_tui.sources.formats.tensorboard import find_event_files, name_time, scan_events
from grpo_tui.sources.polled import PolledRecords

#: records read per poll at most: TensorBoard's reader checksums in pure Python (~25 µs a
#: record, ~0.5 s for a full bite), so a large backlog is read in bites (`more`)
MAX_EVENTS_PER_POLL = 20_000
MISSING_TENSORBOARD = (
    "TensorBoard event files need the tensorboard package: pip install 'grpo-tui[tensorboard]'"
)
_FRAME = 16  # bytes around a record's data: length (8) and its CRC (4), the data's CRC (4)
_SCALAR_PLUGINS = ("", "scalars")  # hparams, text, histograms... have plugins of their own
_FLOAT_DTYPES = (1, 2, 19)  # DT_FLOAT, DT_DOUBLE, DT_HALF (tensorboard's types.proto)


@dataclass(frozen=True, slots=True)
class _TensorBoard:
    """The few pieces of the (optional) tensorboard package used here."""

    loader: Callable[[str], Any]  # RawEventFileLoader: yields each new record's bytes
    parse_event: Callable[[bytes], Any]
    make_ndarray: Callable[[Any], Any]
    masked_crc: Callable[[bytes], int]
    errors: tuple[type[Exception], ...]  # what its reader raises besides OSError
    decode_error: type[Exception]


def load_tensorboard() -> _TensorBoard | str:
    """The tensorboard pieces, or the problem to show when the package cannot be used."""
    try:  # `import a.b as c` fails when a is missing, or set to None in sys.modules
        import google.protobuf.message as protobuf  # type: ignore[import-untyped]
        import tensorboard.backend.event_processing.event_file_loader as loader  # type: ignore[import-untyped]
        import tensorboard.compat.proto.event_pb2 as event_pb2  # type: ignore[import-untyped]
        import tensorboard.compat.tensorflow_stub.pywrap_tensorflow as stub  # type: ignore[import-untyped]
        import tensorboard.util.tensor_util as tensor_util  # type: ignore[import-untyped]
        from tensorboard.compat import tf

        errors = (tf.errors.OpError,)
    except ImportError:
        return MISSING_TENSORBOARD
    except Exception as error:  # a broken install (protobuf too old...) is said, not raised
        return f"the tensorboard package cannot be loaded ({type(error).__name__}: {error})"
    return _TensorBoard(
        loader.RawEventFileLoader,
        event_pb2.Event.FromString,
        tensor_util.make_ndarray,
        stub.masked_crc32c,
        errors,
        protobuf.DecodeError,
    )


def _float32(number: float) -> float:
    """A float32 as the shortest decimal that is it (1e-06, not 9.99999997e-07): what the
    trainer logged, as its JSON log would say it."""
    return float(str(np.float32(number)))


def _scalar(value: Any, tb: _TensorBoard) -> float | None:
    """The number of a scalar summary value (TF1 simple_value or a TF2 0-d float tensor)."""
    kind, tensor = value.WhichOneof("value"), value.tensor
    if kind == "simple_value":
        return _float32(value.simple_value)
    plugin = value.metadata.plugin_data.plugin_name
    if kind != "tensor" or plugin not in _SCALAR_PLUGINS or tensor.dtype not in _FLOAT_DTYPES:
        return None
    try:
        array = tb.make_ndarray(tensor)
    except (ValueError, TypeError):
        return None
    if array.shape != ():
        return None
    return float(array) if array.dtype == np.float64 else _float32(float(array))


def _key(tag: str) -> str:
    """`train/loss` → `loss`, `eval/loss` → `eval_loss`, any other tag kept whole."""
    if tag.startswith("train/") and tag != "train/step":
        return tag[6:]
    return "eval_" + tag[5:] if tag.startswith("eval/") else tag


class TensorBoardStore:
    """Scalars of one event file, or of the event files of a run directory (see above)."""

    def __init__(self, path: Path, *, max_events: int = MAX_EVENTS_PER_POLL) -> None:
        self.path = path
        #: records skipped: not an event, or a bad checksum (the reader stops at one)
        self.unreadable_records = 0
        self._max_events = max_events
        self._reset()

    def _reset(self) -> None:
        self._files: list[Path] = []  # in reading order; _files[_index] is being read
        self._index = 0
        self._loader: Any = None
        self._ident = (0, 0)  # st_dev, st_ino of the file being read
        self._offset = 0  # bytes of its records read so far
        self._size = -1  # its size at the last poll
        self._pending: dict[str, Any] | None = None  # the newest step, not handed out yet
        self._idle = False  # the last poll found nothing grown
        self._stuck: tuple[Path, int] | None = None  # the bad record counted
        self._data_time: float | None = None

    def _discover(self) -> None:
        """Queue event files not seen yet: the path itself, or the run in the directory
        (when idle, a later run directory too: transformers names one per start)."""
        if not self.path.is_dir():
            self._files = self._files or [self.path]
            return
        current = self._files[-1] if self._files else None
        found = [] if current is None else scan_events(current.parent)[0]
        if current is None or self._idle:
            found += find_event_files(self.path)
        for path in found:
            if path not in self._files and (
                current is None
                or path.parent == current.parent
                or name_time(path) > name_time(current)  # not a run going on beside it
            ):
                self._files.append(path)

    def poll(self) -> PolledRecords:
        tb = load_tensorboard()
        if isinstance(tb, str):
            return PolledRecords(problem=tb)
        out = PolledRecords()
        self._discover()
        budget, grew = self._max_events, False
        while self._index < len(self._files):
            path = self._files[self._index]
            try:
                info = os.stat(path)
                if not stat.S_ISREG(info.st_mode):
                    kind = file_kind(info.st_mode)
                    raise NotRegularFile(errno.EINVAL, f"not a regular file ({kind})", str(path))
                ident = (info.st_dev, info.st_ino)
                if self._loader is not None and (
                    ident != self._ident or info.st_size < self._offset
                ):
                    self._reset()  # replaced or truncated: everything is read again
                    out.restarted, out.records = True, []
                    self._discover()
                    continue
                if self._loader is None:
                    self._loader, self._ident = tb.loader(str(path)), ident
                read = self._read(tb, out.records, budget)
                # stopped before the end of what was there before reading: a bad record?
                bad = (
                    read < budget
                    and info.st_size > self._offset
                    and self._bad(tb, path, info.st_size)
                )
            except OSError as error:
                out.problem = describe_os_error(error, path)
                break
            except tb.errors as error:  # TensorBoard's own: the file vanished after the stat...
                out.problem = describe_os_error(OSError(errno.EIO, str(error)), path)
                break
            grew |= info.st_size != self._size
            self._size, budget = info.st_size, budget - read
            self._data_time = info.st_mtime if read else self._data_time
            if bad:
                out.problem = (
                    f"corrupted record at byte {self._offset}, the rest is unreadable: {path}"
                )
            elif budget <= 0:
                out.more = True
                break
            if self._index + 1 == len(self._files):
                break
            # read to its end and a newer file exists (a resumed run): that one is next
            self._index, self._loader, self._offset, self._size = self._index + 1, None, 0, -1
        if not grew and not out.more and self._pending is not None:
            out.records.append(self._pending)  # nothing new for a poll: the step is complete
            self._pending = None
        elif grew and self._pending is not None:
            # poll again soon: if nothing more comes, that poll hands out the held step (a
            # one-shot reader such as `check` stops at the first poll without `more`)
            out.more = True
        self._idle = not grew and not out.more
        out.data_time = self._data_time
        return out

    def _read(self, tb: _TensorBoard, records: list[dict[str, Any]], budget: int) -> int:
        """Read up to `budget` new records into step dicts; how many records were read."""
        count = 0
        for raw in itertools.islice(self._loader.Load(), budget):
            count += 1
            self._offset += len(raw) + _FRAME
            try:
                event = tb.parse_event(raw)
            except tb.decode_error:
                self.unreadable_records += 1
                continue
            for value in event.summary.value:
                number, key = _scalar(value, tb), _key(value.tag)
                if number is None or key == "step":
                    continue
                pending = self._pending
                if pending is not None and (pending["step"] != event.step or key in pending):
                    records.append(pending)  # the writer moved on: that step is complete
                    pending = None
                if pending is None:
                    pending = self._pending = {"step": event.step}
                pending[key] = number
        return count

    def _bad(self, tb: _TensorBoard, path: Path, size: int) -> bool:
        """Whether the reader stopped at a whole record it refuses (a bad checksum: it never
        reads past one), not at the start of one still being written."""
        with open_regular(path) as handle:
            handle.seek(self._offset)
            header = handle.read(12)
        length, crc = int.from_bytes(header[:8], "little"), int.from_bytes(header[8:], "little")
        if len(header) < 12 or (
            length + _FRAME > size - self._offset and tb.masked_crc(header[:8]) == crc
        ):
            return False
        if self._stuck != (path, self._offset):
            self._stuck = (path, self._offset)
            self.unreadable_records += 1
        return True
