"""`MetricStore.add_block` ≡ `MetricStore.add` row by row (property + example tests).

The contract: adding a `RowBlock` with `add_block` leaves the store in exactly the state that
adding `block_records(block)` one by one with `add` does, and so does adding the same rows as
several smaller blocks cut anywhere, or on top of rows the store already holds. "State" is
everything the store shows: rows, steps, kinds, metric names, every column (NaN-aware),
counts, last / latest values, the steps of logged NaN / ±Infinity, replaced rows, source
keys, points, windows and buckets.

Rows are drawn like real logs: mostly train lines with rising steps, some eval / end lines,
steps that repeat, jump, or go back (a resumed run re-logging steps), metrics sometimes not
logged, sometimes NaN or ±Infinity. Blocks group the rows by key shape the way
`sources/logreader.py` does (one `ColumnGroup` per shape, its rows increasing).

The examples at the end are the bugs this property found (now fixed), kept as
regressions. Long-run bucket means may differ in the last bits: block summaries are summed
pairwise by numpy, `add` keeps a running sum.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import pytest
from helpers import (
    EVAL,
    INF,
    NAMES,
    NAN,
    TRAIN,
    Row,
    Scenario,
    assert_same_state,
    block_of,
    block_records,
    block_rows,
    make_block,
    one_column_block,
    scenarios,
    slice_block,
    store_of,
    train_rows,
)
from hypothesis import HealthCheck, given, settings

from grpo_tui.run.metric_column import BLOCK, FINE
from grpo_tui.run.metrics import MetricStore
from grpo_tui.sources.records import ColumnGroup, Record, RowBlock
from grpo_tui.vocabulary import LineKind


def run_scenario(case: Scenario) -> None:
    block = make_block(case.rows, shuffle_groups=random.Random(case.group_seed))
    n = len(block)

    reference = MetricStore()
    for record in block_records(block):
        reference.add(record)

    whole = MetricStore()
    whole.add_block(block)
    assert_same_state(whole, reference, "one block")

    held = MetricStore()
    for record in block_records(block)[: case.held]:
        held.add(record)
    held.add_block(slice_block(block, case.held, n))
    assert_same_state(held, reference, f"{case.held} rows held, then one block")

    pieces = MetricStore()
    for start, stop in pairwise(case.cuts):
        pieces.add_block(slice_block(block, start, stop))
    assert_same_state(pieces, reference, f"blocks cut at {case.cuts}")


def added_like_add(held: Sequence[Row], block: RowBlock, label: str) -> MetricStore:
    """A store holding `held` (added one by one) takes `block` with `add_block`; checked
    against adding the block's records one by one. Returns the store."""
    store = store_of(*held)
    store.add_block(block)
    reference = store_of(*held)
    for record in block_records(block):
        reference.add(record)
    assert_same_state(store, reference, label)
    return store


# -- properties --------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=scenarios())
def test_add_block_leaves_the_store_as_adding_records_one_by_one(case: Scenario) -> None:
    """Whole block, block on top of held rows, random sub-blocks, groups in any order, NaN
    and ±Infinity in any shape: all equal `add` row by row."""
    run_scenario(case)


# -- examples ----------------------------------------------------------------------------------
def test_block_whose_first_train_step_relogs_an_earlier_step_truncates_like_add() -> None:
    held = [*train_rows(1, 2, 3), Row(EVAL, 3.0, {"eval_loss": 0.9}), *train_rows(4, 5, 6)]
    resumed = block_of(
        Row(TRAIN, 4.0, {"loss": 4.4}),
        Row(TRAIN, 5.0, {"loss": 5.5}),
        Row(EVAL, 5.0, {"eval_loss": 0.7}),
        Row(TRAIN, 6.0, {"loss": 6.6}),
    )
    store = added_like_add(held, resumed, "resumed block")
    assert store.steps.tolist() == [1, 2, 3, 3, 4, 5, 5, 6]
    assert store.kinds.tolist() == [TRAIN, TRAIN, TRAIN, EVAL, TRAIN, TRAIN, EVAL, TRAIN]
    assert store.replaced_rows == 3
    assert store.column("loss")[[4, 5, 7]].tolist() == [4.4, 5.5, 6.6]
    assert store.last("eval_loss") == (5.0, 0.7)


def test_block_relogging_a_step_mid_block_truncates_like_add() -> None:
    """The re-logged train step comes after rows that append: only it goes the slow way."""
    block = block_of(*train_rows(1, 2, 3, 4), Row(EVAL, 4.0, {"eval_loss": 1.0}), *train_rows(2, 3))
    store = MetricStore()
    store.add_block(block)
    assert_same_state(store, store_of(*block_rows(block)), "mid-block resume")
    assert store.steps.tolist() == [1, 2, 3]
    assert store.replaced_rows == 4
    assert "eval_loss" not in store.names()


def test_eval_row_for_a_step_holding_an_eval_row_replaces_it() -> None:
    held = [
        *train_rows(1),
        Row(EVAL, 1.0, {"eval_loss": 0.5}),
        *train_rows(2),
        Row(EVAL, 2.0, {"eval_loss": NAN}),
    ]
    block = block_of(Row(EVAL, 2.0, {"eval_loss": 0.3, "reward": 1.0}), *train_rows(3))
    store = added_like_add(held, block, "eval replaced")
    assert store.steps.tolist() == [1, 1, 2, 2, 3]
    assert store.kinds.tolist() == [TRAIN, EVAL, TRAIN, EVAL, TRAIN]
    assert store.column("eval_loss").tolist()[3] == 0.3
    assert store.nonfinite_steps("eval_loss").tolist() == []  # the NaN was replaced
    assert store.last("reward") == (2.0, 1.0)
    assert store.replaced_rows == 0


def test_eval_row_repeated_inside_one_block_keeps_the_newer() -> None:
    block = block_of(
        *train_rows(1, 2),
        Row(EVAL, 2.0, {"eval_loss": 0.8}),
        Row(EVAL, 2.0, {"eval_loss": 0.6}),
        *train_rows(3),
    )
    store = MetricStore()
    store.add_block(block)
    assert_same_state(store, store_of(*block_rows(block)), "eval twice in a block")
    assert store.steps.tolist() == [1, 2, 2, 3]
    assert store.count("eval_loss") == 1 and store.last("eval_loss") == (2.0, 0.6)


def test_block_starting_with_eval_for_the_last_stored_train_step_appends() -> None:
    held = train_rows(1, 2, 3, 4, 5)
    block = block_of(Row(EVAL, 5.0, {"eval_loss": 0.4}), *train_rows(6, 7))
    store = added_like_add(held, block, "eval for the last train step")
    assert store.steps.tolist() == [1, 2, 3, 4, 5, 5, 6, 7]
    assert store.kinds.tolist()[5] == EVAL
    assert store.replaced_rows == 0


def test_block_starting_with_eval_for_a_stored_eval_step_replaces_it() -> None:
    held = [*train_rows(1, 2, 3), Row(EVAL, 3.0, {"eval_loss": 0.9})]
    block = block_of(Row(EVAL, 3.0, {"eval_loss": 0.2}), *train_rows(4))
    store = added_like_add(held, block, "eval re-logged first in a block")
    assert store.steps.tolist() == [1, 2, 3, 3, 4]
    assert store.last("eval_loss") == (3.0, 0.2)


@pytest.mark.parametrize("held", [[], train_rows(1, 2, 3)], ids=["empty store", "store with rows"])
def test_empty_block_changes_nothing(held: list[Row]) -> None:
    store = store_of(*held)
    store.add_block(RowBlock(np.empty(0, np.uint8), np.empty(0), []))
    store.add_block(make_block([]))
    assert_same_state(store, store_of(*held), "empty block")


@pytest.mark.parametrize("seed", range(4))
def test_long_blocks_match_add_in_block_summary_buckets(seed: int) -> None:
    """Past 2 × BLOCK rows per bucket, buckets come from the per-block summaries: those
    built by `add_block` (one rebuild per span) match those `add` keeps row by row, up to
    the order floats are summed in."""
    rng = np.random.default_rng(seed)
    n = 2 * BLOCK * 3 + int(rng.integers(0, 2000))  # past the initial capacity too
    rows: list[Row] = []
    step = 0
    for _ in range(n):
        kind = TRAIN if rng.random() < 0.85 else EVAL
        step = step + 1 if kind == TRAIN else step
        if kind == TRAIN and rng.random() < 0.003:
            step = max(1, step - int(rng.integers(1, 300)))  # a resume
        value = float(rng.normal())
        if rng.random() < 0.02:
            value = NAN if rng.random() < 0.5 else INF
        name = "loss" if kind == TRAIN else "eval_loss"
        rows.append(Row(kind, float(step), {name: value, "kl": float(rng.random())}))
    block = make_block(rows)
    reference = store_of(*rows)
    cuts = [0, *sorted(rng.integers(0, n, size=5).tolist()), n]
    whole, pieces = MetricStore(), MetricStore()
    whole.add_block(block)
    for start, stop in pairwise(cuts):
        pieces.add_block(slice_block(block, start, stop))
    assert len(reference) >= 2 * BLOCK  # the width-1 buckets come from block summaries
    assert_same_state(whole, reference, "long block", mean_rtol=1e-12)
    assert_same_state(pieces, reference, "long block in pieces", mean_rtol=1e-12)
    # block summaries are built when first read: reading between the pieces (so some are
    # built, then rows change, a resume clears some) ends where reading only at the end does
    read_between = MetricStore()
    for start, stop in pairwise(cuts):
        read_between.add_block(slice_block(block, start, stop))
        for name in [n for n in NAMES if n in read_between]:
            read_between.buckets(name, 1)
    assert_same_state(read_between, pieces, "long block in pieces, read between")


def test_a_resume_that_drops_a_metrics_rows_updates_its_read_block_summaries() -> None:
    """`kl` is logged only near the end; its summaries are read; a resume drops those rows
    and logs no `kl` again: its buckets must not keep the dropped values."""
    n = 2 * BLOCK + 100
    rows = [
        Row(TRAIN, float(step), {"loss": 1.0, **({"kl": 5.0} if step > n - 50 else {})})
        for step in range(1, n + 1)
    ]
    store = MetricStore()
    store.add_block(make_block(rows))
    assert store.buckets("kl", 1).count.tolist() == [50]
    store.add_block(
        make_block([Row(TRAIN, float(step), {"loss": 2.0}) for step in range(n - 60, n + 10)])
    )
    assert store.replaced_rows == 61
    kl = store.buckets("kl", 1)
    assert kl.count.tolist() == [0] and np.isnan(kl.max).all()
    assert store.buckets("loss", 1).max.tolist() == [2.0]


def test_block_summaries_read_from_another_thread_while_rows_arrive() -> None:
    """The diagnosis worker reads buckets while the reader appends: no change is lost."""
    rng = np.random.default_rng(7)
    n = 2 * BLOCK * 8
    rows = [
        Row(TRAIN, float(step), {"loss": float(rng.normal()), "kl": float(rng.random())})
        for step in range(1, n + 1)
    ]
    rows[n // 2 :] = [
        Row(TRAIN, float(step), row.values) for step, row in enumerate(rows[n // 2 :], n // 4)
    ]  # a resume
    block = make_block(rows)
    cuts = [*list(range(0, n, 97)), n]
    quiet, busy = MetricStore(), MetricStore()
    stop = threading.Event()

    def read_all_the_time() -> None:
        while not stop.is_set():
            for name in ("loss", "kl"):
                if name in busy:
                    busy.buckets(name, 1)

    reader = threading.Thread(target=read_all_the_time)
    reader.start()
    try:
        for start, end in pairwise(cuts):
            busy.add_block(slice_block(block, start, end))
            quiet.add_block(slice_block(block, start, end))
    finally:
        stop.set()
        reader.join()
    assert quiet.replaced_rows > 0
    assert_same_state(busy, quiet, "read from a thread while rows arrived")


# -- bugs the property found (fixed): regressions ---------------------------------------------
def test_block_starting_with_eval_for_a_relogged_train_step_matches_add() -> None:
    held = train_rows(1, 2, 3, 4, 5, 6, 7)
    block = block_of(Row(EVAL, 5.0, {"eval_loss": 1.0}), Row(TRAIN, 5.0, {"loss": 9.0}))
    store = store_of(*held)
    store.add_block(block)
    reference = store_of(*held, *block_rows(block))
    assert reference.steps.tolist() == [1, 2, 3, 4, 5] and reference.replaced_rows == 4
    assert_same_state(store, reference, "eval first, then a re-logged train step")


def test_nonfinite_values_of_one_metric_in_two_shapes_keep_row_order() -> None:
    block = RowBlock(
        np.zeros(3, np.uint8),
        np.array([1.0, 2.0, 3.0]),
        [
            ColumnGroup(np.array([0, 2]), ("x", "y"), {}, np.array([[1.0, 0.0], [INF, 0.0]])),
            ColumnGroup(np.array([1]), ("x",), {}, np.array([[NAN]])),
        ],
    )
    store = MetricStore()
    store.add_block(block)
    assert store.latest("x") == (3.0, INF)
    assert store.nonfinite_steps("x").tolist() == [2.0, 3.0]


def test_names_keep_first_appearance_order_whatever_the_group_order() -> None:
    block = RowBlock(
        np.zeros(2, np.uint8),
        np.array([1.0, 2.0]),
        [
            ColumnGroup(np.array([1]), ("a",), {}, np.array([[1.0]])),
            ColumnGroup(np.array([0]), ("b",), {}, np.array([[1.0]])),
        ],
    )
    store = MetricStore()
    store.add_block(block)
    assert store.names() == ["b", "a"]  # what add() of block_records(block) gives


def test_long_run_bucket_min_max_ignore_logged_infinity() -> None:
    n = 2 * BLOCK
    values = np.ones(n)
    values[:2] = [INF, -INF]
    block = one_column_block(values)
    reference = MetricStore()
    for record in block_records(block):
        reference.add(record)
    assert reference.buckets("x", 1).max.tolist() == [1.0]  # add: finite values only
    store = MetricStore()
    store.add_block(block)
    buckets = store.buckets("x", 1)
    assert (buckets.min.tolist(), buckets.max.tolist()) == ([1.0], [1.0])


def test_resume_after_a_late_eval_line_drops_the_stretch_from_the_step_on() -> None:
    """Steps are not always in row order (an eval line for an earlier step can come late):
    re-logging train step 1 drops the first row at or past step 1 and everything after it,
    through `add` and `add_block` alike (found by the property test: bisecting unsorted
    steps cut in different places)."""
    held = [
        *train_rows(0, 1),
        Row(EVAL, 0.0, {"eval_loss": 0.5}),
        Row(EVAL, 1.0, {"eval_loss": 0.4}),
    ]
    store = added_like_add(held, block_of(*train_rows(1)), "resume after a late eval line")
    assert store.steps.tolist() == [0.0, 1.0]
    assert store.kinds.tolist() == [TRAIN, TRAIN]
    assert store.replaced_rows == 3


@pytest.mark.parametrize("size", [FINE, BLOCK])
@pytest.mark.parametrize("seed", range(3))
def test_block_buckets_summarise_exactly_the_rows_they_span(size: int, seed: int) -> None:
    """Medium runs bucket from the fine blocks, long ones from the coarse: either way a
    bucket's count, mean, min, max and last are those of the rows it spans."""
    rng = np.random.default_rng(seed)
    width = 7
    n = 2 * size * width + int(rng.integers(0, 2 * size * width if size == FINE else 3000))
    values = rng.normal(size=n)
    values[rng.random(n) < 0.1] = NAN  # not logged on some rows
    values[rng.random(n) < 0.01] = INF  # logged infinity: not part of the statistics
    store = MetricStore()
    store.add_block(
        RowBlock(
            np.zeros(n, np.uint8),
            np.arange(1, n + 1, dtype=float),
            [ColumnGroup(np.arange(n), ("x",), {}, values[:, None])],
        )
    )
    buckets = store.buckets("x", width)
    assert 1 < len(buckets) <= width
    covered = 0
    for i in range(len(buckets)):
        lo, hi = int(buckets.step_lo[i]) - 1, int(buckets.step_hi[i])  # step k is row k - 1
        assert lo == covered  # buckets tile the rows
        covered = hi
        span = values[lo:hi]
        finite = span[np.isfinite(span)]
        assert buckets.count[i] == finite.size
        assert buckets.mean[i] == pytest.approx(finite.mean(), rel=1e-12)
        assert (buckets.min[i], buckets.max[i]) == (finite.min(), finite.max())
        assert buckets.last[i] == finite[-1]
    assert covered == n


def test_compact_keeps_every_value_and_gives_back_the_headroom() -> None:
    """A read history grew the store in quarters; compacting keeps every row and value
    and leaves a little room, and the store grows again as a live run adds rows."""
    store = MetricStore()
    for step in range(1, 5001):
        store.add(Record(LineKind.TRAIN, step, {"reward": step / 10, "kl": 0.1}))
    before = store.column("reward").copy()
    store.compact()
    held, size = store.holding()["reward"]  # a value a row: its bytes say the capacity
    assert size < 5001 * 1.1 * {"dense": 8, "scaled": 4}[held]
    assert np.array_equal(store.column("reward"), before)
    for step in range(5001, 7001):
        store.add(Record(LineKind.TRAIN, step, {"reward": step / 10}))
    assert len(store) == 7000 and store.column("reward")[-1] == 700.0
    assert np.isnan(store.column("kl")[-1])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=scenarios())
def test_short_run_buckets_of_every_metric_share_one_step_axis(case: Scenario) -> None:
    """Every metric's cells are the store's step axis; each finite point is counted once,
    in the cell its step falls in, between that cell's min and max."""
    store = MetricStore()
    store.add_block(make_block(case.rows, shuffle_groups=random.Random(case.group_seed)))
    for width in (3, 60):
        if len(store) >= 2 * FINE * width:  # long runs: buckets of block summaries
            continue
        lo, hi = store.step_axis(width)
        assert len(lo) <= width and bool(np.all(np.diff(lo) > 0)) and bool(np.all(hi >= lo))
        for name in store.names():
            buckets = store.buckets(name, width)
            assert buckets.step_lo.tolist() == lo.tolist()
            points = store.points(name)
            assert int(buckets.count.sum()) == len(points)
            cell = np.maximum(np.searchsorted(lo, points.steps, side="right") - 1, 0)
            for at, value in zip(cell.tolist(), points.values.tolist(), strict=True):
                assert buckets.min[at] <= value <= buckets.max[at]
