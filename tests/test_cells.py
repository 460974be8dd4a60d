"""A column held sparsely or as scaled decimals shows what it shows held as floats
(run/cells.py, MetricStore.fit).

Three levels: the cell shapes under random operations; the store's block contract
(test_store_blocks' scenarios) with every column forced sparse, and with columns flipping
shape between blocks; long logs shaped like real ones. One has an eval metric every 50
steps, a metric that starts late, one that stops, and derived values written into older
rows: read with the default thresholds, it must hold its rare metrics sparsely and take
less memory. The other is real ms-swift 4.6 lines (8 decimals): read back bit for bit from
int32, until a value with more digits turns its column back into floats.
"""

from __future__ import annotations

import math
import random
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
from helpers import (
    EVAL,
    TRAIN,
    Row,
    Scenario,
    assert_same_state,
    make_block,
    scenarios,
    slice_block,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_tui import load_run
from grpo_tui.run.cells import (
    DenseCells,
    ScaledCells,
    SparseCells,
    to_dense,
    to_floats,
    to_scaled,
    to_sparse,
)
from grpo_tui.run.metrics import MetricStore
from grpo_tui.sources.records import ColumnGroup, Record, RowBlock

FIXTURES = Path(__file__).parent / "fixtures"
MSSWIFT_LOG = FIXTURES / "ms-swift" / "local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl"

CAPACITY = 40
_value = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([math.nan, math.inf, -math.inf])
)
#: a few decimals, as scaled cells hold them (ScaledCells(CAPACITY, 4))
_decimal = st.one_of(
    st.integers(-(10**7), 10**7).map(lambda i: i / 10**4), st.sampled_from([math.nan, 0.0])
)


def _writes(values: st.SearchStrategy[float]) -> st.SearchStrategy[list[tuple[int, float]]]:
    """(row, value) pairs of one write; built once per kind of value (building strategies
    while drawing, one per state of the rows, was most of these tests' time)."""
    return st.lists(st.tuples(st.integers(0, CAPACITY - 1), values), min_size=1, max_size=6)


_ANY_WRITE, _DECIMAL_WRITE = _writes(_value), _writes(_decimal)


def _same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape, what
    assert np.array_equal(got, want, equal_nan=True), f"{what}: {got} != {want}"


def _assert_same_cells(sparse: SparseCells | DenseCells | ScaledCells, dense: DenseCells) -> None:
    for row in range(CAPACITY):
        got, want = sparse.get(row), dense.get(row)
        assert got == want or (math.isnan(got) and math.isnan(want)), f"get({row})"
    rows = np.arange(CAPACITY)
    _same(sparse.take(rows), dense.take(rows), "take")
    for start, stop in ((0, CAPACITY), (3, 17), (10, 10), (CAPACITY - 5, CAPACITY)):
        _same(sparse.segment(start, stop), dense.segment(start, stop), f"segment({start}, {stop})")
    for n in (0, 7, CAPACITY):
        got_rows, got_values = sparse.logged(n)
        want_rows, want_values = dense.logged(n)
        _same(got_rows, want_rows, f"logged({n}).rows")
        _same(got_values, want_values, f"logged({n}).values")


@st.composite
def cell_operations(
    draw: st.DrawFn, writes: st.SearchStrategy[list[tuple[int, float]]] = _ANY_WRITE
) -> list[tuple[str, Any]]:
    """Writes into empty rows (appends and rows between held ones), clears, conversions."""
    free = set(range(CAPACITY))
    ops: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["put", "put", "put", "clear", "convert"]))
        if kind == "put":
            written = {row: value for row, value in draw(writes) if row in free}
            if not written:
                continue
            rows = sorted(written)
            free -= written.keys()
            ops.append(("put", (rows, [written[row] for row in rows])))
        elif kind == "clear":
            start = draw(st.integers(0, CAPACITY))
            stop = draw(st.integers(start, CAPACITY))
            free |= set(range(start, stop))
            ops.append(("clear", (start, stop)))
        else:
            ops.append(("convert", None))
    return ops


@settings(max_examples=150, deadline=None)
@given(ops=cell_operations())
def test_sparse_cells_answer_as_dense_cells_do(ops: list[tuple[str, Any]]) -> None:
    dense = DenseCells(CAPACITY)
    other: SparseCells | DenseCells = SparseCells()
    for kind, arg in ops:
        if kind == "put":
            rows, values = arg
            for cells in (dense, other):
                cells.put(np.array(rows, dtype=np.int64), np.array(values))
        elif kind == "clear":
            start, stop = arg
            dense.clear(start, stop)
            other.clear(start, stop)
        else:
            # a column changes shape (MetricStore.fit) and must keep every value
            other = (
                to_dense(other, CAPACITY)
                if isinstance(other, SparseCells)
                else to_sparse(other, CAPACITY)
            )
        _assert_same_cells(other, dense)


def _fed_in_pieces(case: Scenario, store: MetricStore, between: object = None) -> MetricStore:
    block = make_block(case.rows, shuffle_groups=random.Random(case.group_seed))
    for i, (start, stop) in enumerate(pairwise(case.cuts)):
        store.add_block(slice_block(block, start, stop))
        if callable(between):
            between(store, i)
    return store


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=scenarios())
def test_a_store_holding_columns_sparsely_shows_what_a_dense_one_shows(case: Scenario) -> None:
    """Every column sparse after every block (re-logged steps truncate, evals replace rows,
    NaN and ±Infinity logged), and columns flipping shape between blocks: the same state."""
    reference = _fed_in_pieces(case, MetricStore(sparse_below=0))

    def all_sparse(store: MetricStore, _: int) -> None:
        store.compact()

    sparse = _fed_in_pieces(case, MetricStore(sparse_below=2.0, dense_above=2.0), all_sparse)
    assert_same_state(sparse, reference, "every column sparse")

    def flip(store: MetricStore, i: int) -> None:
        store.sparse_below = store.dense_above = 2.0 if i % 2 == 0 else 0.0
        store.compact()

    assert_same_state(_fed_in_pieces(case, MetricStore(), flip), reference, "shapes flipping")


def _real_shaped_rows(n_steps: int) -> list[Row]:
    """A train line per step (loss always; `reward` for the first 300 steps only, `kl`
    from step 2000 on, a NaN now and then) and an eval line every 50 steps (the names are
    test_store_blocks.NAMES, which its blocks are built from)."""
    rng = np.random.default_rng(7)
    rows = []
    for step in range(1, n_steps + 1):
        values = {"loss": float(rng.normal())}
        if step <= 300:
            values["reward"] = float(rng.uniform())
        if step >= 2000:
            values["kl"] = math.nan if step % 97 == 0 else float(rng.uniform())
        rows.append(Row(TRAIN, float(step), values))
        if step % 50 == 0:
            rows.append(Row(EVAL, float(step), {"eval_loss": float(rng.uniform())}))
    return rows


def test_a_long_real_shaped_log_holds_its_rare_metrics_sparsely() -> None:
    rows = _real_shaped_rows(3_000)
    block = make_block(rows)
    cuts = [*range(0, len(block), 700), len(block)]
    reference, store = MetricStore(sparse_below=0), MetricStore()
    for start, stop in pairwise(cuts):
        reference.add_block(slice_block(block, start, stop))
        store.add_block(slice_block(block, start, stop))
    # derived values written into older train rows, out of order (run/sample_series.py)
    for step in (2500.0, 120.0, 2999.0, 1.0):
        for target in (reference, store):
            assert target.annotate(step, {"derived": step / 10})
    reference.compact()
    store.compact()

    for name in ("loss", "reward", "kl", "eval_loss", "derived"):
        for width in (1, 40, 500):
            got, want = store.buckets(name, width), reference.buckets(name, width)
            for part in ("step_lo", "step_hi", "min", "max", "last", "count"):
                _same(getattr(got, part), getattr(want, part), f"{name} buckets({width}).{part}")
            assert np.allclose(got.mean, want.mean, equal_nan=True, rtol=1e-12)
        _same(store.column(name), reference.column(name), f"{name} column")
        _same(store.points(name).values, reference.points(name).values, f"{name} points")
        _same(store.window(name, 30).steps, reference.window(name, 30).steps, f"{name} window")
        assert store.last(name) == reference.last(name)
        _same(store.nonfinite_steps(name), reference.nonfinite_steps(name), f"{name} NaN steps")

    holding = store.holding()
    assert {name: held for name, (held, _) in holding.items()} == {
        "loss": "dense",
        "reward": "sparse",  # stopped at step 300: 10% of the rows
        "kl": "sparse",  # a third of the rows: held as it started
        "eval_loss": "sparse",  # 2% of the rows
        "derived": "sparse",  # four rows
    }
    held = sum(size for _, size in holding.values())
    dense = sum(size for _, size in reference.holding().values())
    assert held < 0.45 * dense, (held, dense)


# -- scaled decimals ---------------------------------------------------------------------------
def test_the_fewest_decimals_that_hold_every_value_exactly() -> None:
    nan = math.nan
    assert ScaledCells.decimals_of(np.array([0.56656682, 9.33e-05, nan])) == 8  # ms-swift
    assert ScaledCells.decimals_of(np.array([21.625, 5.0, 24.0])) == 3  # group mean lengths
    assert ScaledCells.decimals_of(np.array([1.0, 512.0, nan, nan])) == 0
    assert ScaledCells.decimals_of(np.array([nan])) == 0
    assert ScaledCells.decimals_of(np.array([0.1234567890123])) is None  # TRL: full floats
    assert ScaledCells.decimals_of(np.array([0.5, math.inf])) is None
    assert ScaledCells.decimals_of(np.array([25.12345678])) is None  # 8 decimals overflow
    assert ScaledCells.decimals_of(np.array([3e9])) is None
    # bit for bit: ms-swift's rounded tiny negative loss is -0.0, which an int cannot hold
    assert ScaledCells.decimals_of(np.array([-0.0, 0.5])) is None
    assert not ScaledCells(1, 1).fits(np.array([-0.0]))
    assert not ScaledCells(1, 1).fits(np.array([1e300]))


@settings(max_examples=150, deadline=None)
@given(ops=cell_operations(_DECIMAL_WRITE))
def test_scaled_cells_answer_as_float_cells_do(ops: list[tuple[str, Any]]) -> None:
    dense = DenseCells(CAPACITY)
    scaled = ScaledCells(CAPACITY, 4)
    for kind, arg in ops:
        if kind == "put":
            rows, values = arg
            assert scaled.fits(np.array(values))
            for cells in (dense, scaled):
                cells.put(np.array(rows, dtype=np.int64), np.array(values))
        elif kind == "clear":
            start, stop = arg
            dense.clear(start, stop)
            scaled.clear(start, stop)
        else:
            scaled = to_scaled(to_floats(scaled), 4)  # and back: nothing lost either way
        _assert_same_cells(scaled, dense)
    assert not scaled.fits(np.array([0.12345]))  # a fifth decimal
    assert not scaled.fits(np.array([math.inf]))


def _msswift_block(n_steps: int) -> RowBlock:
    """The real ms-swift 4.6 train lines, cycled and restamped over `n_steps` steps, as a
    block with a column group per key shape (as sources/shapes.py reads them)."""
    store = load_run(MSSWIFT_LOG).store
    train_rows = np.flatnonzero(store.kinds == TRAIN)
    columns = {name: store.column(name) for name in store.names()}
    lines = [
        {name: float(v[row]) for name, v in columns.items() if not np.isnan(v[row])}
        for row in train_rows
    ]
    by_shape: dict[tuple[str, ...], list[int]] = {}
    for row in range(n_steps):
        by_shape.setdefault(tuple(lines[(row + 1) % len(lines)]), []).append(row)
    groups = [
        ColumnGroup(
            np.array(rows),
            names,
            {},
            np.array([[lines[(row + 1) % len(lines)][n] for n in names] for row in rows]),
        )
        for names, rows in by_shape.items()
    ]
    kinds = np.full(n_steps, int(TRAIN), np.uint8)
    return RowBlock(kinds, np.arange(1.0, n_steps + 1), groups)


def test_real_msswift_values_are_held_as_int32_and_read_back_bit_for_bit() -> None:
    block = _msswift_block(3_000)
    store, floats = MetricStore(), MetricStore(max_decimals=-1)
    for start, stop in pairwise([0, 1_000, 2_000, 3_000]):  # growing, a shape fitted each time
        store.add_block(slice_block(block, start, stop))
        floats.add_block(slice_block(block, start, stop))
    store.compact()
    floats.compact()
    shapes = {name: held for name, (held, _) in store.holding().items()}
    assert shapes["reward"] == shapes["grad_norm"] == "scaled", shapes
    assert {held for held, _ in floats.holding().values()} == {"dense"}
    held = sum(size for _, size in store.holding().values())
    assert held < 0.55 * sum(size for _, size in floats.holding().values())

    def same_views() -> None:
        for name in floats.names():
            _same(store.column(name), floats.column(name), f"{name} column")
            _same(store.points(name).values, floats.points(name).values, f"{name} points")
            for width in (1, 40, 500):
                got, want = store.buckets(name, width), floats.buckets(name, width)
                for part in ("min", "max", "last", "count", "mean"):
                    _same(getattr(got, part), getattr(want, part), f"{name} {part}({width})")
            assert store.last(name) == floats.last(name)

    same_views()
    # a line with more digits than int32 decimals hold: its column goes back to floats;
    # a value with few digits stays scaled
    odd = {"reward": 0.123456789012345, "grad_norm": math.inf, "loss": 0.25}
    for target in (store, floats):
        target.add(Record(TRAIN, 3_001.0, odd, {}))
    holding = store.holding()
    assert (holding["reward"][0], holding["grad_norm"][0], holding["loss"][0]) == (
        "dense",
        "dense",
        "scaled",
    )
    same_views()
    assert store.latest("grad_norm") == (3_001.0, math.inf)
