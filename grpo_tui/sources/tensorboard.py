"""TensorBoard event files as a record store: scalars, one dict per step, read as they grow.

ms-swift writes event files by default (TRL, verl and OpenRLHF when asked): framed,
checksummed protobuf records, one scalar per event. The framing is read by tfrecord.py,
which returns the records completed since the last read (a half-written one is read
again next time) and skips, counting them, the ones it cannot read (a bad checksum, a
corrupted length: the records after them are read). The file is reopened each poll, once
it is known to be a regular file (a FIFO would block the reader forever); the events are
parsed by tensorboard's protobuf classes.

A step's scalars come as several events, so its dict is held back until an event of
another step (or a second value for one key) shows the writer moved on, or until the files
did not grow for a poll (a finished run's last step). It is handed out once: a late value
for that step (an eval) becomes a record of its own, merged by step downstream. A resumed
run writes a newer file: a directory is read file by file in the order of the wall time in
their names, following the newest. tensorboard is optional: imported on the first poll, its
absence is a `problem`, never an ImportError.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grpo_tui.files import check_regular, describe_os_error, open_regular, stat_path
from grpo_tui.sources.formats.layout import probe
from grpo_tui.sources.formats.tensorboard import (
    TIME_KEYED_PREFIXES,
    find_event_files,
    name_time,
    scan_events,
)
from grpo_tui.sources.polled import PolledRecords
from grpo_tui.sources.records import BadLine
from grpo_tui.sources.tfrecord import COMPILED, RecordReader

#: records read per poll at most: a large backlog is read in bites (`more`), so the screen
#: stays responsive (each record is parsed in Python, ~20 µs)
MAX_EVENTS_PER_POLL = 20_000
#: said once when the checksums are computed in Python (google-crc32c not installed)
SLOW_CHECKSUMS = (
    "TensorBoard files are checksummed in Python here (a few MB/s): "
    "pip install google-crc32c reads them about 50x faster"
)
MISSING_TENSORBOARD = (
    "TensorBoard event files need the tensorboard package: pip install 'grpo-tui[tensorboard]'"
)
_SCALAR_PLUGINS = ("", "scalars")  # hparams, text, histograms... have plugins of their own
_FLOAT_DTYPES = (1, 2, 19)  # DT_FLOAT, DT_DOUBLE, DT_HALF (tensorboard's types.proto)


@dataclass(frozen=True, slots=True)
class _TensorBoard:
    """The few pieces of the (optional) tensorboard package used here."""

    parse_event: Callable[[bytes], Any]
    make_ndarray: Callable[[Any], Any]
    decode_error: type[Exception]


def load_tensorboard() -> _TensorBoard | str:
    """The tensorboard pieces, or the problem to show when the package cannot be used."""
    try:  # `import a.b as c` fails when a is missing, or set to None in sys.modules
        import google.protobuf.message as protobuf  # type: ignore[import-untyped]
        import tensorboard.compat.proto.event_pb2 as event_pb2  # type: ignore[import-untyped]
        import tensorboard.util.tensor_util as tensor_util  # type: ignore[import-untyped]
    except ImportError:
        return MISSING_TENSORBOARD
    except Exception as error:  # a broken install (protobuf too old...) is said, not raised
        return f"the tensorboard package cannot be loaded ({type(error).__name__}: {error})"
    return _TensorBoard(event_pb2.Event.FromString, tensor_util.make_ndarray, protobuf.DecodeError)


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
        self._told_slow = False
        self._max_events = max_events
        self._reset()

    def _reset(self) -> None:
        self._files: list[Path] = []  # in reading order; _files[_index] is being read
        self._index = 0
        self._records: RecordReader | None = None  # the file being read, from where
        self._ident = (0, 0)  # st_dev, st_ino of the file being read
        self._size = -1  # its size at the last poll
        self._pending: dict[str, Any] | None = None  # the newest step, not handed out yet
        self._idle = False  # the last poll found nothing grown
        self._data_time: float | None = None

    def _discover(self) -> None:
        """Queue event files not seen yet: the path itself, or the run in the directory
        (when idle, a later run directory too: transformers names one per start)."""
        if not probe(self.path).is_dir:
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
        if not COMPILED and not self._told_slow:
            self._told_slow = True
            out.events.append(SLOW_CHECKSUMS)
        self._discover()
        budget, grew = self._max_events, False
        while self._index < len(self._files):
            path = self._files[self._index]
            try:
                info = stat_path(path)
                check_regular(info.st_mode, path)
                ident = (info.st_dev, info.st_ino)
                reader = self._records
                if reader is not None and (ident != self._ident or info.st_size < reader.offset):
                    self._reset()  # replaced or truncated: everything is read again
                    out.restarted, out.records = True, []
                    self._discover()
                    continue
                if reader is None:
                    reader = self._records = RecordReader()
                    self._ident = ident
                bad_before = len(reader.bad)
                with open_regular(path) as handle:
                    raws = reader.read(handle, info.st_size, budget)
                self._parse(tb, raws, out, path.name)
            except OSError as error:
                out.problem = describe_os_error(error, path)
                break
            for at in reader.bad[bad_before:]:
                out.bad.append(
                    BadLine(path.name, 0, f"a corrupted record at byte {at}, skipped", "")
                )
            grew |= info.st_size != self._size
            self._size, budget = info.st_size, budget - len(raws)
            self._data_time = info.st_mtime if raws else self._data_time
            if budget <= 0:
                out.more = True
                break
            if self._index + 1 == len(self._files):
                break
            # read to its end and a newer file exists (a resumed run): that one is next
            self._index, self._records, self._size = self._index + 1, None, -1
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

    def _parse(self, tb: _TensorBoard, raws: list[bytes], out: PolledRecords, origin: str) -> None:
        """The events of these records into step dicts (`out.records`). A record whose
        checksum holds but which is no event is a bad line of `origin`."""
        records = out.records
        for raw in raws:
            try:
                event = tb.parse_event(raw)
            except tb.decode_error:
                out.bad.append(BadLine(origin, 0, "a record that is not an event, skipped", ""))
                continue
            for value in event.summary.value:
                number, key = _scalar(value, tb), _key(value.tag)
                if number is None or key == "step" or value.tag.startswith(TIME_KEYED_PREFIXES):
                    continue  # not a value, or one logged at wall time (not a step)
                pending = self._pending
                if pending is not None and (pending["step"] != event.step or key in pending):
                    records.append(pending)  # the writer moved on: that step is complete
                    pending = None
                if pending is None:
                    pending = self._pending = {"step": event.step}
                pending[key] = number
