"""The tail reader: lossless, in order, restarts followed (unit + property tests)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from helpers import MS_SWIFT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_tui.sources.logreader import parse_object
from grpo_tui.sources.tail import TailReader

REAL_LINES = [
    *(MS_SWIFT / "local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl")
    .read_bytes()
    .splitlines(),
    *(MS_SWIFT / "ms-swift-issue-4465_grpo-v3.5_nan.jsonl").read_bytes().splitlines(),
    # multi-byte UTF-8 (3- and 4-byte characters) so chunk edges cut characters
    '{"loss": 0.1, "note": "训练 ✓ émoji 🚀🚀", "global_step/max_steps": "3/9"}'.encode(),
]
# the summary line is large; keep the pool to metric-sized lines so schedules stay quick
REAL_LINES = [line for line in REAL_LINES if b"log_history" not in line]


def numbered(seq: int) -> bytes:
    """A real line with a sequence number spliced in first (identifies it when read)."""
    base = REAL_LINES[seq % len(REAL_LINES)]
    return b'{"_seq": %d, ' % seq + base[1:] + b"\n"


def test_fragment_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "logging.jsonl"
    line = numbered(0)
    path.write_bytes(line[:10])
    reader = TailReader(path)
    assert reader.poll().lines == []
    assert reader.offset == 0
    with path.open("ab") as f:
        f.write(line[10:])
    lines = reader.poll().lines
    assert [parse_object(x.data)["_seq"] for x in lines] == [0]
    assert reader.offset == len(line)


def test_multibyte_character_split_across_polls(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    data = '{"t": "🚀训"}\n'.encode()
    cut = data.index("🚀".encode()) + 2  # inside the 4-byte rocket
    path.write_bytes(data[:cut])
    reader = TailReader(path)
    assert reader.poll().lines == []
    with path.open("ab") as f:
        f.write(data[cut:])
    assert parse_object(reader.poll().lines[0].data) == {"t": "🚀训"}


def test_truncation_restarts_and_reports(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_bytes(numbered(1) + numbered(2))
    reader = TailReader(path)
    assert len(reader.poll().lines) == 2
    path.write_bytes(numbered(3))
    chunk = reader.poll()
    assert chunk.restarted == "truncated"
    assert [parse_object(x.data)["_seq"] for x in chunk.lines] == [3]


def test_rewrite_past_old_offset_is_noticed(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_bytes(numbered(1))
    reader = TailReader(path)
    reader.poll()
    path.write_bytes(numbered(5) + numbered(6) + numbered(7))  # truncate + regrow between polls
    chunk = reader.poll()
    assert chunk.restarted in {"rewritten", "replaced"}
    assert [parse_object(x.data)["_seq"] for x in chunk.lines] == [5, 6, 7]


def test_replacement_and_recreation(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_bytes(numbered(1))
    reader = TailReader(path)
    reader.poll()
    other = tmp_path / "new.jsonl"
    other.write_bytes(numbered(2) + numbered(3))
    os.replace(other, path)
    chunk = reader.poll()
    assert chunk.restarted in {"replaced", "rewritten"}
    assert len(chunk.lines) == 2
    path.unlink()
    assert reader.poll().lines == [] and not reader.exists
    path.write_bytes(numbered(4))
    chunk = reader.poll()
    assert chunk.restarted is not None
    assert [parse_object(x.data)["_seq"] for x in chunk.lines] == [4]


def test_missing_file_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "later" / "logging.jsonl"
    reader = TailReader(path)
    assert reader.poll().lines == [] and not reader.exists
    path.parent.mkdir()
    path.write_bytes(numbered(9))
    assert [parse_object(x.data)["_seq"] for x in reader.poll().lines] == [9]
    assert not list(tmp_path.glob("later/.*")), "the reader must create nothing"


def test_byte_budget_splits_reading_but_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_bytes(b"".join(numbered(i) for i in range(50)))
    reader = TailReader(path)
    seen: list[int] = []
    while True:
        chunk = reader.poll(max_bytes=700)  # shorter than one line: still whole lines out
        seen += [parse_object(x.data)["_seq"] for x in chunk.lines]
        if not chunk.more and not chunk.lines:
            break
    assert seen == list(range(50))


def test_crlf_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_bytes(b'{"a": 1}\r\n\n{"a": 2}\n')
    lines = TailReader(path).poll().lines
    assert [orjson.loads(x.data)["a"] for x in lines] == [1, 2]
    assert [x.line_no for x in lines] == [1, 3]


# -- property test -----------------------------------------------------------------------

_EXAMPLES = int(os.environ.get("GRPO_TUI_TAIL_EXAMPLES", "300"))

operation = st.one_of(
    st.tuples(st.just("write"), st.integers(1, 2500)),
    st.tuples(st.just("poll"), st.integers(1, 3000)),
    st.tuples(st.just("truncate"), st.just(0)),
    st.tuples(st.just("replace"), st.just(0)),
    st.tuples(st.just("delete"), st.just(0)),
)


@dataclass
class WriterModel:
    """The writer side: what each generation of the file received."""

    path: Path
    next_seq: int = 0
    #: bytes of the current line not written yet
    pending: bytes = b""
    #: generation → sequence numbers completely written into it, in order
    generations: list[list[int]] = field(default_factory=lambda: [[]])
    #: generation → how many of its lines were complete when the reader last polled it
    required: list[int] = field(default_factory=lambda: [0])
    pending_seq: int = -1

    def write(self, nbytes: int) -> None:
        out = b""
        while nbytes > 0:
            if not self.pending:
                self.pending_seq = self.next_seq
                self.pending = numbered(self.next_seq)
                self.next_seq += 1
            piece, self.pending = self.pending[:nbytes], self.pending[nbytes:]
            out += piece
            nbytes -= len(piece)
            if not self.pending:
                self.generations[-1].append(self.pending_seq)
        with self.path.open("ab") as f:
            f.write(out)

    def new_generation(self) -> None:
        # a line half-written into the old file is lost with it, as in reality
        self.pending = b""
        self.generations.append([])
        self.required.append(0)


@settings(
    max_examples=_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(operation, min_size=1, max_size=40))
def test_reader_loses_and_duplicates_nothing(tmp_path_factory, ops) -> None:  # type: ignore[no-untyped-def]
    directory = tmp_path_factory.mktemp("run")
    path = directory / "logging.jsonl"  # created late, by the first write
    writer = WriterModel(path)
    reader = TailReader(path)
    seen: list[int] = []

    def poll(budget: int) -> None:
        while True:
            chunk = reader.poll(max_bytes=budget)
            seen.extend(parse_object(line.data)["_seq"] for line in chunk.lines)
            if not chunk.more:
                break
        if path.exists():
            writer.required[-1] = len(writer.generations[-1])

    for op, arg in ops:
        if op == "write":
            writer.write(arg)
        elif op == "poll":
            poll(arg)
        elif op == "truncate" and path.exists():
            path.write_bytes(b"")
            writer.new_generation()
        elif op == "replace":
            tmp = directory / "replacement.tmp"
            tmp.write_bytes(b"")
            os.replace(tmp, path)
            writer.new_generation()
        elif op == "delete" and path.exists():
            path.unlink()
            writer.new_generation()
    poll(1 << 20)

    # in order, never twice
    assert seen == sorted(set(seen))
    # per generation: a prefix of what was written, at least what the reader had a chance to see
    for written, required in zip(writer.generations, writer.required):
        got = [seq for seq in seen if seq in set(written)]
        assert got == written[: len(got)]
        assert len(got) >= required
    # the final generation is read completely
    assert [s for s in seen if s in set(writer.generations[-1])] == writer.generations[-1]
    # read-only: nothing but the file itself in the directory
    assert {p.name for p in directory.iterdir()} <= {"logging.jsonl"}
