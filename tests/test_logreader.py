"""The JSON-lines reader (logreader.py) reads every line as if it were read alone.

The reference below reads one line at a time with a plan made from that very line, the
scalar progress parsers and the step rule, which is what a line means. The reader stacks
lines of one plan, parses progress strings a column at a time, reads a chunk a slice at a
time and settles steps afterwards: for any input it must give the same rows, bad lines
and end-of-run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from helpers import MS_SWIFT, block_records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_tui.sources import logreader
from grpo_tui.sources.formats import MSSWIFT, TRL
from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.values import parse_fraction
from grpo_tui.sources.logreader import BadJson, LogReader, parse_object
from grpo_tui.sources.records import Batch
from grpo_tui.vocabulary import LineKind

Row = tuple[int, float, dict[str, float]]


@dataclass
class Reading:
    rows: list[Row]
    bad: list[int]
    finished: bool


def read_alone(adapter: FormatAdapter, data: bytes) -> Reading:
    """The meaning of each line, one line at a time."""
    rows: list[Row] = []
    bad: list[int] = []
    finished = False
    last_step = 0
    for line_no, raw in enumerate(data.split(b"\n")[:-1], 1):
        if not raw.strip():
            continue
        try:
            obj = parse_object(raw)
        except BadJson:
            bad.append(line_no)
            continue
        plan = logreader._make_plan(adapter, obj)
        if plan.kind == LineKind.SUMMARY:
            finished = True
            continue
        values: dict[str, float] = {}
        for column, key in zip(plan.columns, plan.number_keys):
            values[column] = _as_float(obj[key])
        for i in plan.inverted:
            column = plan.columns[i]
            values[column] = 1.0 / values[column] if values[column] != 0 else math.nan
        for key, column, parser in plan.parsed:
            values[column] = float(parser([obj[key]])[0])
        step: float | None = None
        for key in plan.step_keys:
            parsed = parse_fraction(obj[key])
            if parsed is not None:
                step = parsed[0]
                break
        if step is None:
            step = last_step + 1 if plan.kind == LineKind.TRAIN else last_step
        last_step = int(step)
        rows.append((int(plan.kind), float(step), values))
    return Reading(rows, bad, finished)


def _as_float(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:
        return math.inf if value > 0 else -math.inf  # type: ignore[operator]


def read_log(adapter: FormatAdapter, data: bytes) -> Reading:
    batch: Batch = LogReader(adapter, "test").read_chunk(data)
    rows = [
        (int(record.kind), record.step, record.values)
        for block in batch.blocks
        for record in block_records(block)
    ]
    return Reading(rows, [bad.line_no for bad in batch.bad_lines], batch.finished)


def same(a: Reading, b: Reading) -> bool:
    if a.bad != b.bad or a.finished != b.finished or len(a.rows) != len(b.rows):
        return False
    for (kind_a, step_a, values_a), (kind_b, step_b, values_b) in zip(a.rows, b.rows):
        if (kind_a, step_a) != (kind_b, step_b) or values_a.keys() != values_b.keys():
            return False
        for name, value in values_a.items():
            other = values_b[name]
            if not (value == other or (math.isnan(value) and math.isnan(other))):
                return False
    return True


# -- generated logs ----------------------------------------------------------------------
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.just(10**400),  # bigger than any float: stdlib parses it, stored as inf
)
OTHER_VALUES = st.one_of(st.none(), st.booleans(), st.text(max_size=5), st.just([1, 2]))
DURATIONS = st.one_of(
    st.builds(
        lambda d, h, m, s: (f"{d}d " if d else "") + (f"{h}h " if d or h else "") + f"{m}m {s}s",
        st.integers(0, 30),
        st.integers(0, 23),
        st.integers(0, 59),
        st.integers(0, 60),
    ),
    st.sampled_from(["0s", "", "5", "1m  2s", "x", "1h\t2m 3s", "٥s"]),
)
FRACTIONS = st.one_of(
    st.builds(lambda a, b: f"{a}/{b}", st.integers(0, 10**6), st.integers(1, 10**6)),
    st.integers(0, 1000),
    st.sampled_from(["12", "12/", "/5", "1/2/3", "x/y", "1e3/5"]),
)
PERCENTAGES = st.one_of(
    st.builds(lambda x: f"{x:.2f}%", st.floats(0, 100)), st.sampled_from(["abc", "", "nan%"])
)
#: key → what it usually holds; the shapes below draw from these in this order
KEYS: dict[str, st.SearchStrategy[object]] = {
    "loss": NUMBERS,
    "reward": NUMBERS,
    "reward_std": NUMBERS,
    "kl": NUMBERS,
    "rewards/Acc": NUMBERS,
    "rewards/Fmt/mean": NUMBERS,
    "clip_ratio/region_mean": NUMBERS,
    "clip_ratio": NUMBERS,
    "train_speed(iter/s)": NUMBERS,
    "memory(GiB)": NUMBERS,
    "eval_loss": NUMBERS,
    "eval_reward": NUMBERS,
    "train_runtime": NUMBERS,
    "my/custom": OTHER_VALUES,
    "global_step/max_steps": FRACTIONS,
    "iteration": FRACTIONS,
    "step": FRACTIONS,
    "elapsed_time": DURATIONS,
    "remaining_time": DURATIONS,
    "percentage": PERCENTAGES,
}
SHAPES = [
    [
        "loss",
        "reward",
        "reward_std",
        "kl",
        "rewards/Acc",
        "global_step/max_steps",
        "elapsed_time",
        "remaining_time",
    ],
    [
        "loss",
        "reward",
        "reward_std",
        "kl",
        "rewards/Fmt/mean",
        "global_step/max_steps",
        "elapsed_time",
        "percentage",
    ],
    [
        "eval_loss",
        "eval_reward",
        "global_step/max_steps",
        "elapsed_time",
        "remaining_time",
        "my/custom",
        "kl",
        "reward",
    ],
    [
        "loss",
        "clip_ratio/region_mean",
        "clip_ratio",
        "train_speed(iter/s)",
        "memory(GiB)",
        "iteration",
    ],
    ["loss", "reward", "my/custom", "step"],
    ["reward", "kl"],
    ["train_runtime", "global_step/max_steps"],
]


@st.composite
def log_lines(draw: st.DrawFn) -> bytes:
    """A log: lines of a few shapes, values mostly of their usual type, some not."""
    lines: list[bytes] = []
    for _ in range(draw(st.integers(0, 40))):
        pick = draw(st.integers(0, 99))
        if pick < 3:
            lines.append(
                draw(
                    st.sampled_from(
                        [b"", b"  ", b"not json", b"[1, 2]", b"7", b'{"loss": 0.1', b"\r"]
                    )
                )
            )
            continue
        if pick < 5:
            lines.append(json.dumps({"log_history": [{"loss": 1.0}], "step": 3}).encode())
            continue
        shape = draw(st.sampled_from(SHAPES))
        obj: dict[str, object] = {}
        for key in shape:
            odd = draw(st.integers(0, 19)) == 0  # now and then a key holds another type
            obj[key] = draw(OTHER_VALUES if odd else KEYS[key])
        lines.append(json.dumps(obj).encode())
    return b"".join(line + b"\n" for line in lines)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=log_lines(), slice_lines=st.integers(1, 50))
def test_every_line_reads_as_if_alone(
    monkeypatch: pytest.MonkeyPatch, slice_lines: int, data: bytes
) -> None:
    """Whatever the slices (one line each, a few, the whole log at once)."""
    monkeypatch.setattr(logreader, "SLICE_LINES", slice_lines)
    for adapter in (MSSWIFT, TRL):
        expected = read_alone(adapter, data)
        assert same(read_log(adapter, data), expected)


# -- real files --------------------------------------------------------------------------
REAL_LOGS = sorted(MS_SWIFT.glob("*.jsonl"))


@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda p: p.name)
def test_real_ms_swift_files_read_as_if_alone(path: Path) -> None:
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        data += b"\n"
    assert same(read_log(MSSWIFT, data), read_alone(MSSWIFT, data))


def test_a_shape_first_seen_with_null_keeps_later_numbers() -> None:
    """The plan of the first line says kl is not a number; later lines of the same key
    set that do log a number for it must keep it."""
    lines = [{"loss": 1.0, "kl": None}, {"loss": 2.0, "kl": 0.5}, {"loss": 3.0, "kl": None}]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    rows = read_log(MSSWIFT, data).rows
    assert [values.get("kl") for _, _, values in rows] == [None, 0.5, None]


# -- a log in pieces ----------------------------------------------------------------------
def _bench_like_log(lines: int) -> bytes:
    """Real 4.6.0 train and eval lines repeated with rising steps, a NaN line and a bad one."""
    source = (
        (MS_SWIFT / "local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl")
        .read_text()
        .splitlines()
    )
    train, evaluation = json.loads(source[0]), json.loads(source[2])
    out: list[str] = []
    for step in range(1, lines + 1):
        row = dict(train, **{"global_step/max_steps": f"{step}/{lines}", "loss": step / 7})
        if step % 97 == 0:
            row["kl"] = float("nan")
        out.append(json.dumps(row))
        if step % 50 == 0:
            out.append(json.dumps(dict(evaluation, **{"global_step/max_steps": f"{step}/{lines}"})))
        if step % 333 == 0:
            out.append('{"cut off')
    return "".join(line + "\n" for line in out).encode()


def read_in_chunks(adapter: FormatAdapter, data: bytes, cuts: list[int]) -> Reading:
    """One reader fed the log in pieces cut after the given line indices (as the tail
    hands out a growing file)."""
    reader = LogReader(adapter, "test")
    lines = data.splitlines(keepends=True)
    batch = Batch()
    start = 0
    for stop in [*cuts, len(lines)]:
        batch.extend(reader.read_chunk(b"".join(lines[start:stop]), start + 1))
        start = stop
    rows = [(int(r.kind), r.step, r.values) for block in batch.blocks for r in block_records(block)]
    return Reading(rows, [bad.line_no for bad in batch.bad_lines], batch.finished)


def test_a_log_read_in_pieces_reads_as_one() -> None:
    data = _bench_like_log(2000)
    one = read_log(MSSWIFT, data)
    assert len(one.rows) == 2040 and len(one.bad) == 6
    assert same(read_in_chunks(MSSWIFT, data, [1, 2, 333, 334, 1000, 2039]), one)


def _line_numbers(call: Callable[[], Batch]) -> list[int]:
    return [bad.line_no for bad in call().bad_lines]


def test_bad_line_numbers_count_blank_lines_and_continue_across_chunks() -> None:
    reader = LogReader(MSSWIFT, "test")
    first = b'{"loss": 1.0}\n\nnope\n'
    second = b'{"loss": 2.0}\n[1]\n'
    assert _line_numbers(lambda: reader.read_chunk(first, 1)) == [3]
    assert _line_numbers(lambda: reader.read_chunk(second, 4)) == [5]


# -- plans per adapter ---------------------------------------------------------------------
def test_a_derived_adapter_reads_by_its_own_tables() -> None:
    """Plans are cached per adapter: one made with `replace` (no cache reset by hand)
    reads its own step keys and aliases, and the original still reads its own."""
    data = b'{"score": 0.5, "progress": "3/10"}\n'
    derived = replace(
        TRL, name="trl-progress", fraction_step_keys=("progress",), aliases={"reward": ("score",)}
    )
    for adapter, step, name in ((TRL, 1.0, "score"), (derived, 3.0, "reward"), (TRL, 1.0, "score")):
        [(_, got_step, values)] = read_log(adapter, data).rows
        assert (got_step, list(values)) == (step, [name])
