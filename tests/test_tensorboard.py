"""TensorBoard event files: scalars grouped by step, read incrementally without loss or
duplicates, resumed runs, several writers in one folder, run directories, FIFOs, bad
records, hparams as settings, and tensorboard missing.

Files are written with TensorBoard's own writers (RecordWriter frames and checksums each
record; EventFileWriter names files as trainers do), never with TensorFlow or tensorboardX.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2  # type: ignore[import-untyped]
from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2  # type: ignore[import-untyped]
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tensorboard.plugins.hparams import summary_v2 as hparams_v2
from tensorboard.plugins.scalar.summary_v2 import scalar_pb  # type: ignore[import-untyped]
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # type: ignore[import-untyped]
from tensorboard.summary.writer.record_writer import RecordWriter  # type: ignore[import-untyped]
from tensorboard.util import tensor_util  # type: ignore[import-untyped]

from grpo_tui.sources.formats.tensorboard import find_event_files
from grpo_tui.sources.tensorboard import (
    HPARAMS_TAG,
    MISSING_TENSORBOARD,
    SETTLE_S,
    TensorBoardStore,
)

Record = dict[str, Any]


def simple(step: int, tag: str, value: float) -> bytes:
    """A TF1-style event: one `simple_value` (what torch's SummaryWriter writes)."""
    value_pb = summary_pb2.Summary.Value(tag=tag, simple_value=value)
    summary = summary_pb2.Summary(value=[value_pb])
    event = event_pb2.Event(wall_time=1.7e9 + step, step=step, summary=summary)
    return bytes(event.SerializeToString())


def tensor(step: int, tag: str, value: float, *, metadata: bool = True) -> bytes:
    """A TF2-style event: a 0-d float tensor (metadata only on a tag's first event, as TF2
    writers do)."""
    summary = scalar_pb(tag, value)
    if not metadata:
        summary.value[0].ClearField("metadata")
    return bytes(event_pb2.Event(wall_time=1.7e9, step=step, summary=summary).SerializeToString())


def other(step: int, tag: str, plugin: str, tensor_pb: tensor_pb2.TensorProto) -> bytes:
    """A non-scalar summary (text, histogram, hparams) the reader must ignore."""
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor_pb)
    value.metadata.plugin_data.plugin_name = plugin
    summary = summary_pb2.Summary(value=[value])
    return bytes(event_pb2.Event(step=step, summary=summary).SerializeToString())


def frame(data: bytes) -> bytes:
    """One record exactly as TensorBoard's RecordWriter writes it."""

    class Sink:
        written = b""

        def write(self, chunk: bytes) -> None:
            self.written += chunk

    sink = Sink()
    RecordWriter(sink).write(data)
    return sink.written


def append(path: Path, *events: bytes) -> None:
    with path.open("ab") as handle:
        for event in events:
            handle.write(frame(event))


def drain(store: TensorBoardStore, polls: int = 3) -> list[Record]:
    records: list[Record] = []
    for _ in range(polls):
        result = store.poll()
        assert result.problem is None
        records += result.records
    return records


def newest_wins(records: list[Record]) -> dict[int, Record]:
    """What the metric store keeps of records handed out in order (run/metrics.py
    MetricStore.add): a train record at or before the newest train step drops that step and
    every row after it; an eval record (only `eval_` keys) replaces its step's eval."""
    rows: list[Record] = []
    evals: dict[int, Record] = {}
    for record in records:
        keys = [key for key in record if key != "step"]
        if keys and all(key.startswith("eval_") for key in keys):
            evals[record["step"]] = record
            continue
        if rows and record["step"] <= rows[-1]["step"]:
            rows = [row for row in rows if row["step"] < record["step"]]
        rows.append(record)
    merged = {row["step"]: dict(row) for row in rows}
    for step, record in evals.items():
        merged.setdefault(step, {"step": step}).update(record)
    return merged


def event_file(directory: Path, wall_time: int, host: str = "host") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"events.out.tfevents.{wall_time}.{host}.4242.0"
    append(
        path, event_pb2.Event(wall_time=wall_time, file_version="brain.Event:2").SerializeToString()
    )
    return path


def test_tags_map_to_framework_keys(tmp_path: Path) -> None:
    path = event_file(tmp_path, 1700000000)
    append(
        path,
        simple(1, "train/loss", 0.5),
        simple(1, "train/reward", 0.25),
        simple(1, "actor/pg_loss", -0.125),  # verl logs its own namespaces
        simple(1, "train/rewards/Format/mean", 0.75),  # ms-swift
        simple(2, "train/loss", 0.375),
        simple(2, "eval/loss", 0.625),
        simple(2, "eval/reward", 1.0),
    )
    assert drain(TensorBoardStore(path)) == [
        {
            "step": 1,
            "loss": 0.5,
            "reward": 0.25,
            "actor/pg_loss": -0.125,
            "rewards/Format/mean": 0.75,
        },
        {"step": 2, "loss": 0.375, "eval_loss": 0.625, "eval_reward": 1.0},
    ]


def test_tf2_tensor_and_tf1_simple_value_scalars_only(tmp_path: Path) -> None:
    path = event_file(tmp_path, 1700000000)
    text = tensor_util.make_tensor_proto(np.array("hello", dtype=object))
    histogram = tensor_util.make_tensor_proto(np.zeros((3, 3), dtype=np.float64))
    hparams_null = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT)
    hparams_null.tensor_shape.dim.add(size=0)
    # TF2's C++ writer stores a scalar's bytes in tensor_content, not float_val
    packed = tensor_pb2.TensorProto(
        dtype=types_pb2.DT_FLOAT, tensor_content=np.float32(0.3).tobytes()
    )
    append(
        path,
        tensor(1, "train/kl", 0.001),
        simple(1, "train/learning_rate", 1e-6),
        other(1, "train/completion", "text", text),
        other(1, "train/logits", "histograms", histogram),
        other(1, "_hparams_/session_start_info", "hparams", hparams_null),
        other(1, "_hparams_/scalar_like", "hparams", tensor_util.make_tensor_proto(np.float32(9))),
        tensor(2, "train/kl", 0.002, metadata=False),
        simple(2, "train/learning_rate", 2e-6),
        other(2, "train/entropy", "", tensor_util.make_tensor_proto(np.float64(0.1))),
        other(2, "train/clip_ratio", "scalars", packed),
    )
    # float32 values come back as the shortest decimal that is them (1e-06, not 9.99e-07)
    assert drain(TensorBoardStore(path)) == [
        {"step": 1, "kl": 0.001, "learning_rate": 1e-6},
        {"step": 2, "kl": 0.002, "learning_rate": 2e-6, "entropy": 0.1, "clip_ratio": 0.3},
    ]


def test_step_held_until_the_writer_moves_on_or_stops(tmp_path: Path) -> None:
    path = event_file(tmp_path, 1700000000)
    store = TensorBoardStore(path)
    append(path, simple(1, "train/loss", 1.0), simple(1, "train/reward", 0.0))
    assert store.poll().records == []  # step 1 may have more scalars coming
    append(path, simple(2, "train/loss", 0.5))
    assert store.poll().records == [{"step": 1, "loss": 1.0, "reward": 0.0}]
    assert store.poll().records == [{"step": 2, "loss": 0.5}]  # no growth: step 2 is done
    assert store.poll().records == []  # handed out once
    append(path, simple(2, "eval/loss", 0.75), simple(1, "eval/loss", 0.875))
    assert store.poll().records == [{"step": 2, "eval_loss": 0.75}]  # late: a record of its own
    assert store.poll().records == [{"step": 1, "eval_loss": 0.875}]
    assert store.poll().records == []


def test_same_key_twice_in_a_step_keeps_both(tmp_path: Path) -> None:
    path = event_file(tmp_path, 1700000000)
    append(path, simple(0, "train/loss", 1.0), simple(0, "train/loss", 2.0))
    assert drain(TensorBoardStore(path)) == [{"step": 0, "loss": 1.0}, {"step": 0, "loss": 2.0}]


#: one written scalar: (step, tag, value), and where the file is flushed after it
Scalar = tuple[int, str, float]


@st.composite
def schedules(draw: st.DrawFn) -> tuple[list[Scalar], list[int]]:
    """Scalars a trainer logs (steps ascending, a few tags each, now and then an eval for an
    earlier step), and the byte offsets at which the reader polls, mid-record included."""
    scalars: list[Scalar] = []
    for step in range(draw(st.integers(1, 12))):
        tags = draw(
            st.lists(
                st.sampled_from(["train/loss", "train/reward", "actor/kl"]),
                min_size=1,
                max_size=3,
                unique=True,
            )
        )
        for tag in tags:
            scalars.append((step, tag, float(len(scalars))))
        if step and draw(st.booleans()):
            scalars.append((step - 1, "eval/loss", float(len(scalars))))
    size = sum(len(frame(simple(*scalar))) for scalar in scalars)
    cuts = draw(st.lists(st.integers(0, size), max_size=12))
    return scalars, sorted(cuts)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(schedule=schedules())
def test_incremental_polls_lose_nothing(
    tmp_path: Path, schedule: tuple[list[Scalar], list[int]]
) -> None:
    """Polled at any byte: what the metric store keeps is every scalar written, at its step
    (a step whose rest came after a poll handed it out is handed out again, whole)."""
    scalars, cuts = schedule
    run = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    path = event_file(run, 1700000000)
    data = b"".join(frame(simple(*scalar)) for scalar in scalars)
    start = path.stat().st_size
    store = TensorBoardStore(run)
    records: list[Record] = []
    written = 0
    for cut in [*cuts, len(data)]:
        with path.open("ab") as handle:
            handle.write(data[written:cut])
        written = max(written, cut)
        result = store.poll()
        assert result.problem is None
        records += result.records
    records += drain(store)
    assert path.stat().st_size == start + len(data)
    keys = {
        "train/loss": "loss",
        "train/reward": "reward",
        "actor/kl": "actor/kl",
        "eval/loss": "eval_loss",
    }
    expected: dict[int, Record] = {}
    for step, tag, value in scalars:
        expected.setdefault(step, {"step": step})[keys[tag]] = value
    assert newest_wins(records) == expected


def test_a_backlog_is_read_in_the_order_written(tmp_path: Path) -> None:
    """Read whole, each step's scalars come once, in one record, in the order written."""
    path = event_file(tmp_path, 1700000000)
    append(
        path,
        simple(0, "train/loss", 1.0),
        simple(0, "train/reward", 2.0),
        simple(1, "train/loss", 3.0),
        simple(0, "eval/loss", 4.0),
        simple(2, "train/loss", 5.0),
    )
    assert drain(TensorBoardStore(path)) == [
        {"step": 0, "loss": 1.0, "reward": 2.0},
        {"step": 1, "loss": 3.0},
        {"step": 0, "eval_loss": 4.0},
        {"step": 2, "loss": 5.0},
    ]


def test_last_step_appears_once_the_file_stops_growing(tmp_path: Path) -> None:
    writer = EventFileWriter(str(tmp_path))
    for step in (1, 2, 3):
        summary = summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="train/reward", simple_value=step / 4)]
        )
        writer.add_event(event_pb2.Event(step=step, summary=summary))
    writer.close()
    store = TensorBoardStore(tmp_path)
    first = store.poll()
    assert first.records == [{"step": 1, "reward": 0.25}, {"step": 2, "reward": 0.5}]
    assert first.data_time == max(p.stat().st_mtime for p in tmp_path.iterdir())
    assert store.poll().records == [{"step": 3, "reward": 0.75}]
    assert store.poll().records == []


def test_resumed_run_reads_the_next_file_in_name_time_order(tmp_path: Path) -> None:
    first = event_file(tmp_path, 1700000000, host="zeta")  # names sort the other way round
    append(first, simple(1, "train/loss", 1.0), simple(2, "train/loss", 0.5))
    store = TensorBoardStore(tmp_path)
    assert drain(store) == [{"step": 1, "loss": 1.0}, {"step": 2, "loss": 0.5}]
    second = event_file(tmp_path, 1700000900, host="alpha")
    append(second, simple(2, "train/loss", 0.4), simple(3, "train/loss", 0.25))
    append(first, simple(9, "train/loss", 9.0))  # the old file is read to its end first
    assert drain(store) == [
        {"step": 9, "loss": 9.0},
        {"step": 2, "loss": 0.4},
        {"step": 3, "loss": 0.25},
    ]
    assert find_event_files(tmp_path) == [first, second]
    append(first, simple(10, "train/loss", 10.0))  # then left: only the newest is followed
    append(second, simple(4, "train/loss", 0.125))
    assert drain(store) == [{"step": 4, "loss": 0.125}]


def test_run_directory_found_one_or_two_levels_down(tmp_path: Path) -> None:
    old = event_file(tmp_path / "output" / "runs" / "Jan01_host", 1700000000)
    new = event_file(tmp_path / "output" / "runs" / "Jan02_host", 1700000500)
    os.utime(old, (1.0, 2e9))  # the most recently modified file decides, not the name
    os.utime(new, (1.0, 1e9))
    (tmp_path / "output" / "checkpoint-10").mkdir()
    assert find_event_files(tmp_path / "output") == [old]
    assert find_event_files(tmp_path / "output" / "runs") == [old]
    assert find_event_files(tmp_path / "output" / "checkpoint-10") == []
    append(old, simple(5, "train/reward", 0.5))
    assert drain(TensorBoardStore(tmp_path / "output")) == [{"step": 5, "reward": 0.5}]


def test_a_newer_run_directory_is_followed(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    old = event_file(runs / "a", 1700000000)
    append(old, simple(1, "train/loss", 1.0))
    store = TensorBoardStore(runs)
    assert drain(store) == [{"step": 1, "loss": 1.0}]
    new = event_file(runs / "b", 1700000900)  # transformers: a resume logs to a new dir
    append(new, simple(2, "train/loss", 0.5))
    assert drain(store) == [{"step": 2, "loss": 0.5}]


def run_with_timeout(store: TensorBoardStore) -> Any:
    """poll() in a thread: a FIFO opened for reading would block forever."""
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(store.poll()), daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive(), "poll() blocked"
    return results[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_named_like_an_event_file_is_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "events.out.tfevents.1700000000.x"
    os.mkfifo(fifo)
    result = run_with_timeout(TensorBoardStore(fifo))
    assert result.problem == f"not a regular file (a FIFO), skipped: {fifo}"
    assert result.records == []
    real = event_file(tmp_path, 1600000000)
    append(real, simple(1, "train/loss", 0.5))
    assert find_event_files(tmp_path) == [real]
    store = TensorBoardStore(tmp_path)
    assert run_with_timeout(store).records == []
    assert run_with_timeout(store).records == [{"step": 1, "loss": 0.5}]


def test_missing_tensorboard_is_a_problem_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = event_file(tmp_path, 1700000000)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    assert TensorBoardStore(path).poll().problem == MISSING_TENSORBOARD
    # and the module itself imports without it
    code = (
        "import sys; from pathlib import Path; sys.modules['tensorboard'] = None\n"
        "from grpo_tui.sources.tensorboard import TensorBoardStore\n"
        f"print(TensorBoardStore(Path({str(path)!r})).poll().problem)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == MISSING_TENSORBOARD
    assert MISSING_TENSORBOARD.endswith("pip install 'grpo-tui[tensorboard]'")


def test_truncated_last_record_is_read_once_complete(tmp_path: Path) -> None:
    path = event_file(tmp_path, 1700000000)
    append(path, simple(1, "train/loss", 1.0))
    tail = frame(simple(2, "train/loss", 0.5))
    for cut in (5, 13, len(tail) - 1):  # in the length, in the data, in the data's checksum
        with path.open("ab") as handle:
            handle.write(tail[:cut])
        store = TensorBoardStore(path)
        assert drain(store) == [{"step": 1, "loss": 1.0}]
        with path.open("ab") as handle:
            handle.write(tail[cut:])
        assert drain(store) == [{"step": 2, "loss": 0.5}]
        path.write_bytes(path.read_bytes()[: -len(tail)])


def test_a_corrupted_record_is_counted_and_the_rest_read(tmp_path: Path) -> None:
    """A flipped bit in a record's data: that record is a bad line, the ones after it are
    read (TensorBoard's own reader stopped there for good), and so is a newer file."""
    bad = event_file(tmp_path, 1700000000)
    good_part = frame(simple(1, "train/loss", 1.0))
    broken = bytearray(frame(simple(2, "train/loss", 0.5)))
    broken[-6] ^= 0xFF  # a flipped bit in the data: the checksum fails
    with bad.open("ab") as handle:
        handle.write(good_part + broken + frame(simple(3, "train/loss", 0.25)))
    store = TensorBoardStore(tmp_path)
    first = store.poll()
    offset = bad.stat().st_size - len(frame(simple(3, "train/loss", 0.25))) - len(broken)
    assert first.problem is None
    assert [(b.origin, b.reason) for b in first.bad] == [
        (bad.name, f"a corrupted record at byte {offset}, skipped")
    ]
    assert first.records + drain(store) == [{"step": 1, "loss": 1.0}, {"step": 3, "loss": 0.25}]
    newer = event_file(tmp_path, 1700000500)
    append(newer, simple(4, "train/loss", 0.125))
    assert drain(store) == [{"step": 4, "loss": 0.125}]


def test_a_corrupted_length_and_garbage_are_skipped_to_the_next_record(tmp_path: Path) -> None:
    """A length whose checksum is wrong (an absurd one, or bytes that are no record) is
    one bad record; reading resumes at the next record with a right checksum."""
    path = event_file(tmp_path, 1700000000)
    absurd = bytearray(frame(simple(2, "train/loss", 0.5)))
    absurd[0:8] = (2**62).to_bytes(8, "little")  # a length of 4 EB, its checksum now wrong
    garbage = bytes(range(256)) * 40
    with path.open("ab") as handle:
        handle.write(frame(simple(1, "train/loss", 1.0)) + bytes(absurd) + garbage)
        handle.write(frame(simple(3, "train/loss", 0.25)))
    store = TensorBoardStore(path)
    first = store.poll()
    assert len(first.bad) == 1  # one run of corrupted bytes, counted once
    assert first.records + drain(store) == [{"step": 1, "loss": 1.0}, {"step": 3, "loss": 0.25}]


def test_unparseable_event_with_good_checksum_is_a_bad_line(tmp_path: Path) -> None:
    """A record whose checksum holds but which is no event is shown as a bad line (it was
    counted where nothing showed it), and the events around it are read."""
    path = event_file(tmp_path, 1700000000)
    append(path, simple(1, "train/loss", 1.0), b"\xff\xff\xff", simple(2, "train/loss", 0.5))
    store = TensorBoardStore(path)
    first = store.poll()
    assert [(b.origin, b.reason) for b in first.bad] == [
        (path.name, "a record that is not an event, skipped")
    ]
    assert first.records + drain(store) == [{"step": 1, "loss": 1.0}, {"step": 2, "loss": 0.5}]


def test_large_backlog_is_read_in_bounded_bites(tmp_path: Path) -> None:
    path = event_file(tmp_path, 1700000000)
    append(path, *(simple(step, "train/loss", step) for step in range(23)))
    store = TensorBoardStore(path, max_events=5)
    records: list[Record] = []
    mores = []
    for _ in range(8):
        result = store.poll()
        records += result.records
        mores.append(result.more)
    assert mores == [True, True, True, True, False, False, False, False]  # 24 records: 5 bites
    assert records == [{"step": step, "loss": float(step)} for step in range(23)]


def test_replaced_file_restarts(tmp_path: Path) -> None:
    path = event_file(tmp_path, 1700000000)
    append(path, simple(1, "train/loss", 1.0), simple(2, "train/loss", 0.5))
    store = TensorBoardStore(path)
    assert drain(store) == [{"step": 1, "loss": 1.0}, {"step": 2, "loss": 0.5}]
    replacement = tmp_path / "new"
    replacement.write_bytes(frame(simple(1, "train/loss", 7.0)))
    os.replace(replacement, path)
    result = store.poll()
    assert result.restarted
    assert result.records + drain(store) == [{"step": 1, "loss": 7.0}]


def test_unreadable_file_is_said_in_words(tmp_path: Path) -> None:
    missing = tmp_path / "events.out.tfevents.1700000000.gone"
    result = TensorBoardStore(missing).poll()
    assert result.problem == f"cannot read (no such file or directory): {missing}"
    assert result.records == []


def test_python_checksums_are_said_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without google-crc32c the checksums run in Python: the user hears it, once."""
    import grpo_tui.sources.tensorboard as module

    monkeypatch.setattr(module, "COMPILED", False)
    path = event_file(tmp_path, 1700000000)
    append(path, simple(1, "train/loss", 1.0))
    store = TensorBoardStore(path)
    assert store.poll().events == [module.SLOW_CHECKSUMS]
    assert store.poll().events == []


def test_miles_all_fail_and_all_pass_shares_are_the_sample_series(tmp_path: Path) -> None:
    """miles logs the share of all-0 and all-1 groups (rollout/zero_std/...): they are the
    all-fail / all-pass series grpo-tui otherwise derives from the completions."""
    from grpo_tui.run.follow import load_run

    path = event_file(tmp_path, 1700000000)
    for step in (1, 2, 3):
        append(
            path,
            simple(step, "rollout/zero_std/all_zero_percentage", 0.5),
            simple(step, "rollout/zero_std/all_one_percentage", 0.25),
        )
    run = load_run(path)
    assert list(run.store.points("samples/all_fail").values) == [0.5, 0.5, 0.5]
    assert list(run.store.points("samples/all_pass").values) == [0.25, 0.25, 0.25]


# -- several writers in one folder ------------------------------------------------------------


def writer_file(directory: Path, opened: int, pid: int) -> Path:
    """An event file as a process's writer opens it (its wall time in the name and its
    first event), several of them in one folder."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"events.out.tfevents.{opened}.host.{pid}.0"
    event = event_pb2.Event(wall_time=opened, file_version="brain.Event:2")
    append(path, event.SerializeToString())
    return path


def at(step: int, tag: str, value: float, wall: float) -> bytes:
    """One scalar event logged at `wall`."""
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
    return bytes(event_pb2.Event(wall_time=wall, step=step, summary=summary).SerializeToString())


class TestSeveralWriters:
    """Two processes writing a file each into one folder: merged by step, never a restart."""

    def test_own_tags_make_a_second_writer(self, tmp_path: Path) -> None:
        """Both files read whole: one record a step with both writers' keys."""
        trainer = writer_file(tmp_path, 1700000000, 1)
        manager = writer_file(tmp_path, 1700000001, 2)
        for step in range(5):
            append(trainer, at(step, "train/loss", step / 8, 1.7e9 + 10 * step))
            append(manager, at(step, "rollout/len", 100.0 + step, 1.7e9 + 10 * step + 5))
        store = TensorBoardStore(tmp_path)
        first = store.poll()
        records = first.records + drain(store)
        assert records == [
            {"step": step, "loss": step / 8, "rollout/len": 100.0 + step} for step in range(5)
        ]
        assert any("a second TensorBoard writer" in event for event in first.events)

    def test_a_writer_behind_holds_its_steps(self, tmp_path: Path) -> None:
        """A step goes out once both writers are past it; a lagging writer's step waits."""
        trainer = writer_file(tmp_path, 1700000000, 1)
        manager = writer_file(tmp_path, 1700000001, 2)
        append(
            manager, at(0, "rollout/len", 100.0, 1.7e9 + 2), at(1, "rollout/len", 101.0, 1.7e9 + 12)
        )
        append(trainer, at(0, "train/loss", 0.5, 1.7e9 + 3))
        store = TensorBoardStore(tmp_path)
        assert drain(store) == [{"step": 0, "loss": 0.5, "rollout/len": 100.0}]
        append(trainer, at(1, "train/loss", 0.25, 1.7e9 + 13))
        assert drain(store) == [{"step": 1, "loss": 0.25, "rollout/len": 101.0}]

    def test_a_writer_that_stopped_holds_nothing_back(self, tmp_path: Path) -> None:
        """Once a writer's file has not changed for SETTLE_S, the others' steps go out."""
        now = [2e9]
        trainer = writer_file(tmp_path, 1700000000, 1)
        manager = writer_file(tmp_path, 1700000001, 2)
        append(trainer, at(0, "train/loss", 0.5, 1.7e9 + 3))
        append(manager, *(at(s, "rollout/len", 100.0 + s, 1.7e9 + 10 * s) for s in range(3)))
        for path in (trainer, manager):
            os.utime(path, (now[0], now[0]))
        store = TensorBoardStore(tmp_path, clock=lambda: now[0])
        assert drain(store) == [{"step": 0, "loss": 0.5, "rollout/len": 100.0}]
        now[0] += SETTLE_S
        assert drain(store) == [
            {"step": 1, "rollout/len": 101.0},
            {"step": 2, "rollout/len": 102.0},
        ]

    def test_a_file_of_the_same_tags_writing_on_is_a_second_writer(self, tmp_path: Path) -> None:
        """Tags shared, but the older file wrote after the newer one began: both at once."""
        first = writer_file(tmp_path, 1700000000, 1)
        second = writer_file(tmp_path, 1700000005, 2)
        for step in range(3):
            append(first, at(step, "perf/time", 1.0, 1.7e9 + 10 * step))
            append(first, at(step, "train/loss", step / 4, 1.7e9 + 10 * step))
            append(second, at(step, "perf/time", 2.0, 1.7e9 + 10 * step + 6))
            append(second, at(step, "rollout/len", 10.0 * step, 1.7e9 + 10 * step + 6))
        store = TensorBoardStore(tmp_path)
        first_poll = store.poll()
        records = first_poll.records + drain(store)
        assert any("wrote on after it began" in event for event in first_poll.events)
        merged = newest_wins(records)
        assert sorted(merged) == [0, 1, 2]
        assert all({"loss", "rollout/len", "perf/time"} <= merged[s].keys() for s in merged)

    def test_a_processs_tenth_writer_comes_after_its_ninth(self, tmp_path: Path) -> None:
        """Files opened in one second are read in the order the writer's counter says."""
        ninth = tmp_path / "events.out.tfevents.1700000000.host.4242.9"
        tenth = tmp_path / "events.out.tfevents.1700000000.host.4242.10"
        for path in (tenth, ninth):
            path.write_bytes(b"")
        assert find_event_files(tmp_path) == [ninth, tenth]

    def test_both_writers_restarting_is_a_restart(self, tmp_path: Path) -> None:
        """Both processes start again from a checkpoint: newer files with the same tags,
        steps from below where the old ones stood, opened after the old ones stopped."""
        old = (writer_file(tmp_path, 1700000000, 1), writer_file(tmp_path, 1700000001, 2))
        for step in range(10):
            append(old[0], at(step, "train/loss", 1.0, 1.7e9 + 10 * step))
            append(old[1], at(step, "rollout/len", 1.0, 1.7e9 + 10 * step + 5))
        store = TensorBoardStore(tmp_path)
        before = drain(store)
        assert sorted(newest_wins(before)) == list(range(10))
        new = (writer_file(tmp_path, 1700001000, 3), writer_file(tmp_path, 1700001001, 4))
        for step in range(5, 15):
            append(new[0], at(step, "train/loss", 2.0, 1.700001e9 + 10 * step))
            append(new[1], at(step, "rollout/len", 2.0, 1.700001e9 + 10 * step + 5))
        result = store.poll()
        after = result.records + drain(store, polls=5)
        assert any("restarted at step 5" in event for event in result.events)
        merged = newest_wins(before + after)
        assert sorted(merged) == list(range(15))
        expected = [1.0] * 5 + [2.0] * 10
        assert [merged[s]["loss"] for s in range(15)] == expected
        assert [merged[s]["rollout/len"] for s in range(15)] == expected


#: a poll of the folder, or the next event of writer 0 or 1 written and flushed
Move = int


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(moves=st.lists(st.sampled_from([0, 1, -1]), min_size=1, max_size=40))
def test_two_writers_growing_read_live_lose_nothing(tmp_path: Path, moves: list[Move]) -> None:
    """Two writers appending at random, polled between, then stopping: what the metric
    store keeps is every scalar each wrote (nothing lost, nothing moved to another step)."""
    run = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    files = (writer_file(run, 1700000000, 1), writer_file(run, 1700000001, 2))
    tags = (("train/loss", "train/kl"), ("rollout/len", "rollout/cut"))
    written = [0, 0]  # events written by each writer: event i is step i // 2, tag i % 2
    now = [time.time()]
    store = TensorBoardStore(run, clock=lambda: now[0])
    records: list[Record] = []
    for move in [*moves, 0, 1, 0, 1]:  # each writer's first events at least
        if move < 0:
            records += store.poll().records
            continue
        i = written[move]
        step, tag = i // 2, tags[move][i % 2]
        append(files[move], at(step, tag, 1000.0 * move + i, 1.7e9 + 10 * step + move))
        written[move] += 1
    records += drain(store, polls=2)
    # the writers stopped: once their files are SETTLE_S old, their open steps are complete
    now[0] = max(path.stat().st_mtime for path in files) + SETTLE_S
    records += drain(store, polls=2)
    expected: dict[int, Record] = {}
    for writer, count in enumerate(written):
        for i in range(count):
            step = i // 2
            key = _key_of(tags[writer][i % 2])
            expected.setdefault(step, {"step": step})[key] = 1000.0 * writer + i
    assert newest_wins(records) == expected


def _key_of(tag: str) -> str:
    return tag.removeprefix("train/")


# -- hparams ------------------------------------------------------------------------------------


def hparams_folder(folder: Path, hparams: dict[str, Any], name: str = "1700000123.456") -> Path:
    """What torch's `SummaryWriter.add_hparams` writes: a subfolder named by the time with
    the HParams plugin's experiment, session-start and session-end records (here made by
    tensorboard's own hparams summary_v2, which needs no TensorFlow)."""
    writer = EventFileWriter(str(folder / name))
    experiment = hparams_v2.hparams_config_pb(
        hparams=[hparams_v2.HParam(k) for k in hparams], metrics=[]
    )
    end = hparams_metadata.create_summary_metadata(
        plugin_data_pb2.HParamsPluginData(
            session_end_info=plugin_data_pb2.SessionEndInfo(status=api_pb2.STATUS_SUCCESS)
        )
    )
    end_summary = summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=hparams_metadata.SESSION_END_INFO_TAG, metadata=end)]
    )
    for summary in (experiment, hparams_v2.hparams_pb(hparams), end_summary):
        writer.add_event(event_pb2.Event(wall_time=1.7e9, summary=summary))
    writer.close()
    return folder / name


class TestHParams:
    """The HParams plugin's session-start record gives the run's settings."""

    def test_torchs_subfolder(self, tmp_path: Path) -> None:
        """`<folder>/<time>/`: read once, through the adapter's mapping, never as scalars."""
        path = event_file(tmp_path, 1700000000)
        append(path, simple(1, "train/loss", 0.5))
        hparams_folder(tmp_path, {"grpo.max_num_steps": 40, "policy.model_name": "Qwen"})
        store = TensorBoardStore(
            tmp_path, settings=lambda c: {"max_steps": c["grpo.max_num_steps"]}
        )
        first = store.poll()
        assert first.settings == {
            "grpo.max_num_steps": 40,
            "policy.model_name": "Qwen",
            "max_steps": 40,
        }
        assert first.records + drain(store) == [{"step": 1, "loss": 0.5}]
        assert store.poll().settings is None  # said once

    def test_in_the_followed_file(self, tmp_path: Path) -> None:
        """A writer that logs hparams in its own file: read as they come, the newest wins."""
        path = event_file(tmp_path, 1700000000)
        start = hparams_v2.hparams_pb({"lr": 1e-6, "flag": True})
        append(path, event_pb2.Event(step=0, summary=start).SerializeToString())
        store = TensorBoardStore(tmp_path)
        assert store.poll().settings == {"lr": 1e-6, "flag": True}
        again = hparams_v2.hparams_pb({"lr": 2e-6})
        append(path, event_pb2.Event(step=0, summary=again).SerializeToString())
        assert store.poll().settings == {"lr": 2e-6}

    def test_damaged_hparams_are_no_settings(self, tmp_path: Path) -> None:
        """A session-start record whose content is no plugin data: ignored, the rest read."""
        path = event_file(tmp_path, 1700000000)
        value = summary_pb2.Summary.Value(tag=HPARAMS_TAG)
        value.metadata.plugin_data.plugin_name = "hparams"
        value.metadata.plugin_data.content = b"\xff\xff\xff"
        summary = summary_pb2.Summary(value=[value])
        append(
            path, event_pb2.Event(summary=summary).SerializeToString(), simple(1, "train/loss", 1.0)
        )
        store = TensorBoardStore(tmp_path)
        polls = [store.poll() for _ in range(3)]
        assert [p.settings for p in polls] == [None, None, None]
        assert [r for p in polls for r in p.records] == [{"step": 1, "loss": 1.0}]
