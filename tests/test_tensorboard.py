"""TensorBoard event files: scalars grouped by step, read incrementally without loss or
duplicates, resumed runs, run directories, FIFOs, bad records, and tensorboard missing.

Files are written with TensorBoard's own writers (RecordWriter frames and checksums each
record; EventFileWriter names files as trainers do), never with TensorFlow or tensorboardX.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2  # type: ignore[import-untyped]
from tensorboard.plugins.scalar.summary_v2 import scalar_pb  # type: ignore[import-untyped]
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # type: ignore[import-untyped]
from tensorboard.summary.writer.record_writer import RecordWriter  # type: ignore[import-untyped]
from tensorboard.util import tensor_util  # type: ignore[import-untyped]

from grpo_tui.sources.formats.tensorboard import find_event_files
from grpo_tui.sources.tensorboard import MISSING_TENSORBOARD, TensorBoardStore

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
                st.sampled_from(["train/loss", "train/reward", "actor/kl"]), min_size=1, max_size=4
            )
        )
        scalars += [(step, tag, float(len(scalars))) for tag in tags]
        if step and draw(st.booleans()):
            scalars.append((step - 1, "eval/loss", float(len(scalars))))
    size = sum(len(frame(simple(*scalar))) for scalar in scalars)
    cuts = draw(st.lists(st.integers(0, size), max_size=12))
    return scalars, sorted(cuts)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(schedule=schedules())
def test_incremental_polls_lose_and_repeat_nothing(
    tmp_path: Path, schedule: tuple[list[Scalar], list[int]]
) -> None:
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
    read = [
        (record["step"], key, value)
        for record in records
        for key, value in record.items()
        if key != "step"
    ]
    # every scalar once, in the order written (each is identified by its unique value)
    assert read == [(step, keys[tag], value) for step, tag, value in scalars]


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
