"""The TFRecord framing of event files (sources/tfrecord.py): TensorBoard's own checksum,
records read whole and in order, bad ones skipped and counted, the ones around them kept,
written by TensorBoard's real RecordWriter."""

from __future__ import annotations

import importlib
import io
import os
import random
import sys

import pytest
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import (  # type: ignore[import-untyped]
    masked_crc32c,
)
from tensorboard.summary.writer.record_writer import RecordWriter  # type: ignore[import-untyped]

from grpo_tui.sources import tfrecord
from grpo_tui.sources.tfrecord import RecordReader, masked_crc


def framed(*records: bytes) -> bytes:
    sink = io.BytesIO()
    writer = RecordWriter(sink)
    for record in records:
        writer.write(record)
    return sink.getvalue()


def test_the_checksum_is_tensorboards_compiled_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    samples = [b"", b"a", b"123456789", os.urandom(4096)]
    assert [masked_crc(d) for d in samples] == [masked_crc32c(d) for d in samples]
    monkeypatch.setitem(sys.modules, "google_crc32c", None)  # not installed
    python = importlib.reload(tfrecord)
    try:
        assert not python.COMPILED
        assert [python.masked_crc(d) for d in samples] == [masked_crc32c(d) for d in samples]
    finally:
        monkeypatch.undo()
        importlib.reload(tfrecord)
    assert tfrecord.COMPILED


def test_records_come_whole_and_a_half_written_one_waits() -> None:
    records = [f"event {n}".encode() * (n + 1) for n in range(20)]
    data = framed(*records)
    reader = RecordReader()
    cut = len(data) - 7  # the last record half written
    assert reader.read(io.BytesIO(data[:cut]), cut, 100) == records[:-1]
    assert reader.read(io.BytesIO(data), len(data), 100) == records[-1:]
    assert reader.offset == len(data) and reader.bad == []
    again = RecordReader()
    assert again.read(io.BytesIO(data), len(data), 5) == records[:5]  # a budget per read


@pytest.mark.parametrize("seed", range(12))
def test_one_damaged_byte_costs_at_most_its_record(seed: int) -> None:
    """Any one byte of a stream flipped: every record but the one it hit is read."""
    rng = random.Random(seed)
    records = [rng.randbytes(rng.randint(1, 300)) for _ in range(40)]
    data = bytearray(framed(*records))
    at = rng.randrange(len(data))
    data[at] ^= 1 << rng.randrange(8)
    reader = RecordReader()
    got: list[bytes] = []
    for _ in range(10):
        got += reader.read(io.BytesIO(bytes(data)), len(data), 1000)
    assert len(reader.bad) == 1
    missing = [r for r in records if r not in got]
    assert len(missing) <= 1 and all(r in records for r in got)
