"""Shared test helpers, the one module tests import them from (test modules never import
each other): where the copied real fixtures live, an ms-swift run folder rebuilt from one,
a corpus of hostile strings with a run directory built from them, for the tests that
walk every output path (tests/test_hostile_output.py, and the completions tests), the
tail app on a run of real lines (`make_run`, `app_for`, `screen_text`), simulated runs
written once a session (`simulated_run`), and the waits: a test waits on the condition it
needs (`wait_until`, `settle`, `read_again` in an app; `wait_for` outside one), looking
again in short steps up to a generous timeout, never for a fixed time.

Each hostile string is valid in a JSON key, a value, a file name (no "/" or NUL where it
names a file) or a completion, and each would act on a terminal or a renderer if printed raw.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import html
import importlib.util
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from hypothesis import strategies as st

from grpo_tui.health.diagnose import Diagnosis, diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.completions import CompletionsIndex, Group
from grpo_tui.run.follow import load_run
from grpo_tui.run.metrics import Buckets, MetricStore
from grpo_tui.run.text_stats import (
    SHINGLE_CHARS,
    Diversity,
    group_text_stats,
    measured_text,
    shingle_diversity,
)
from grpo_tui.sim import write_run
from grpo_tui.sources.completion_batches import BatchSource
from grpo_tui.sources.records import BatchChunk, ColumnGroup, Record, RowBlock
from grpo_tui.vocabulary import LineKind

if TYPE_CHECKING:
    from textual.app import App
    from textual.pilot import Pilot

    from grpo_tui.ui.app import GrpoTuiApp

FIXTURES = Path(__file__).parent / "fixtures"
#: whole real runs by other people, with an expert's labels (labels.json)
CORPUS = Path(__file__).parent / "corpus"
MS_SWIFT = FIXTURES / "ms-swift"
TRL = FIXTURES / "trl"
#: the run directory name of the recorded 4.6.0 runs (and of `msswift_run_dir`)
RUN_DIR_NAME = "v0-20261202-132949"
#: a file time the app tests and snapshots fix, so "last data 42s ago" is the same each run
FIXED_MTIME = 1_700_000_000.0


def msswift_run_dir(
    tmp_path: Path, name: str, args: dict[str, object], *, completions: bool
) -> Path:
    """An ms-swift output dir rebuilt from a fixture: its logging.jsonl (and completions), with
    the args.json its .source.txt command implies (ms-swift 4.6 defaults num_iterations 1)."""
    run_dir = tmp_path / "output" / RUN_DIR_NAME
    run_dir.mkdir(parents=True)
    shutil.copy(MS_SWIFT / f"{name}_logging.jsonl", run_dir / "logging.jsonl")
    if completions:
        shutil.copy(MS_SWIFT / f"{name}_completions.jsonl", run_dir / "completions.jsonl")
    (run_dir / "args.json").write_text(json.dumps(args), encoding="utf-8")
    return tmp_path / "output"


#: the args.json implied by the recorded command of the 4.6.0 "3rewards-eval" local run
THREE_REWARDS = "local-run-msswift-4.6.0_grpo-3rewards-eval"
THREE_REWARDS_ARGS: dict[str, object] = {
    "rlhf_type": "grpo",
    "reward_funcs": ["format", "length_bonus", "coin_flip"],
    "max_completion_length": 24,
    "num_generations": 4,
    "max_steps": 6,
    "logging_steps": 2,
    "learning_rate": 1e-4,
    "beta": 0.04,
    "temperature": 1.0,
    "num_iterations": 1,
    "epsilon": 0.2,
    "loss_type": "grpo",
}


#: name → the hostile text
HOSTILE: dict[str, str] = {
    "csi_clear": "\x1b[2J\x1b[H",
    "osc_title_bel": "\x1b]2;HACKED\x07",
    "osc_title_st": "\x1b]0;HACKED\x1b\\",
    "osc52_clipboard": "\x1b]52;c;SGFja2Vk\x07",
    "osc8_link": "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\",
    "dcs": "\x1bP1$r0m\x1b\\",
    "c1_csi": "\x9b2J",
    "c1_osc": "\x9d2;HACKED\x9c",
    "backspace": "good\x08\x08\x08\x08evil",
    "carriage_return": "shown\roverwritten",
    "bell_nul": "\x07\x00",
    "bidi_override": "abc\u202edcba\u202c",
    "bidi_isolate": "\u2067x\u2069",
    "zero_width": "in\u200bvis\u200dible\ufeff",
    "tag_chars": "\U000e0041\U000e0042",
    "line_separator": "a\u2028b\u2029c",
    "rich_markup": "[bold red]markup[/] [link=http://evil.example]x[/link]",
    "textual_markup": "$accent [@click=app.quit]quit[/]",
}
#: where a leak would show: any C0/C1 control, DEL, or the bidi / zero-width / tag characters
LEAK = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
#: what Rich and Textual write themselves: colours (SGR) and cursor moves (CUP); the hostile
#: strings hold none of these forms, so stripping them cannot hide a leak
OWN_SEQUENCES = re.compile(
    r"\x1b\[[0-9;?]*[mHhlJK]|\x1b[=>78]|\x1b\][0-9]+;[^\x07\x1b]*(?:\x07|\x1b\\)"
)

FIXTURE_LOG = MS_SWIFT / "local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl"
#: the completions.jsonl of the same run
FIXTURE_COMPLETIONS = MS_SWIFT / "local-run-msswift-4.6.0_grpo-3rewards-eval_completions.jsonl"


def leaks(text: str) -> list[str]:
    """The unsafe characters in `text` (empty when it is safe to print)."""
    return LEAK.findall(text)


def terminal_leaks(ansi: str) -> list[str]:
    """The unsafe characters in terminal output once the renderer's own sequences are
    removed. OSC sequences Textual itself writes (none in headless output) would be too."""
    return leaks(OWN_SEQUENCES.sub("", ansi))


def file_safe(text: str) -> str:
    return text.replace("/", "_").replace("\x00", "_")


def hostile_lines() -> list[str]:
    """Real ms-swift train lines whose keys, values and neighbours are hostile."""
    lines = FIXTURE_LOG.read_text(encoding="utf-8").splitlines()
    train = json.loads(lines[0])
    out: list[str] = []
    for step, (name, text) in enumerate(HOSTILE.items(), 1):
        record = dict(train)
        record["global_step/max_steps"] = f"{step}/{len(HOSTILE)}"
        record[f"rewards/{file_safe(text)}/mean"] = 0.5
        record[text] = 1.0  # a whole key
        record["note"] = text  # a string value nobody reads as a metric
        out.append(json.dumps(record))
        if name == "csi_clear":
            out.append("{not json " + text + "}")  # a bad line quoted in messages
    return out


def hostile_run(root: Path) -> Path:
    """An ms-swift output dir under a hostile directory name, with hostile keys, a bad line,
    and an args.json whose fields are hostile. Returns the output dir."""
    output = root / file_safe("out" + HOSTILE["osc_title_bel"] + HOSTILE["bidi_override"])
    run_dir = output / "v0-20260101-000000"
    run_dir.mkdir(parents=True)
    (run_dir / "logging.jsonl").write_text("\n".join(hostile_lines()) + "\n", encoding="utf-8")
    args = {
        "model": HOSTILE["osc52_clipboard"],
        "reward_funcs": [HOSTILE["csi_clear"], HOSTILE["rich_markup"]],
        "beta": HOSTILE["osc_title_st"],  # not a number: a note quotes it
        "max_completion_length": 24,
    }
    (run_dir / "args.json").write_text(json.dumps(args), encoding="utf-8")
    (run_dir / "completions.jsonl").write_text(
        "\n".join(json.dumps(record) for record in hostile_completions()) + "\n",
        encoding="utf-8",
    )
    return output


def hostile_completions() -> list[dict[str, object]]:
    """completions.jsonl lines (ms-swift 4.x shape) whose prompts, completions, step labels
    and reward-function names are the hostile strings: the panel, the full view, `check`
    (sample evidence) and `inspect` show them."""
    texts = list(HOSTILE.values())
    size = len(texts)
    records: list[dict[str, object]] = []
    for step in (1, 2):
        record: dict[str, object] = {
            "step": [str(step)] * (size - 1) + [texts[0]],
            "prompt": [f"<|im_start|>user\n{t}<|im_end|>\n" for t in texts],
            "completion": [f"<think>{t}</think><answer>{t}</answer>" for t in texts],
            "advantages": [(-1.0) ** i for i in range(size)],
        }
        for position, text in enumerate(texts[:4]):
            record[text] = [float((i + position + step) % 2) for i in range(size)]
        records.append(record)
    return records


# -- the live monitor on a run of real lines ------------------------------------------------


def fixture_lines() -> list[str]:
    """The lines of the recorded 4.6.0 "3rewards-eval" logging.jsonl (FIXTURE_LOG)."""
    return FIXTURE_LOG.read_text(encoding="utf-8").splitlines(keepends=True)


def make_run(tmp_path: Path, lines: list[str], *, mtime: float | None = None) -> Path:
    """An ms-swift output dir holding one run dir whose logging.jsonl has `lines` (its file
    time `mtime`, when given). Returns the output dir."""
    run_dir = tmp_path / "output" / RUN_DIR_NAME
    run_dir.mkdir(parents=True)
    log = run_dir / "logging.jsonl"
    log.write_text("".join(lines), encoding="utf-8")
    if mtime is not None:
        os.utime(log, (mtime, mtime))
    return tmp_path / "output"


def app_for(path: Path, **kwargs: Any) -> GrpoTuiApp:
    """The tail app on `path`, at a fixed time 42 s after FIXED_MTIME and without the
    user's environment (NO_COLOR) unless told otherwise."""
    from grpo_tui.ui.app import GrpoTuiApp

    kwargs.setdefault("now", lambda: FIXED_MTIME + 42)
    kwargs.setdefault("environ", {})
    return GrpoTuiApp(path, **kwargs)


# -- simulated runs ---------------------------------------------------------------------


@functools.cache
def _sims_dir() -> Path:
    """One folder of simulated runs for the test session, removed when it ends."""
    directory = Path(tempfile.mkdtemp(prefix="grpo-tui-test-sims-"))
    atexit.register(shutil.rmtree, directory, True)
    return directory


@functools.cache
def simulated_run(scenario: str, seed: int = 0, max_steps: int | None = None) -> Path:
    """The simulator's run of `scenario` (its `v0-...` run directory), written once per test
    session and shared by every test that asks for the same one: read it, never change it
    (copy it to tmp_path first to change it)."""
    out = _sims_dir() / f"{scenario}-seed{seed}-steps{max_steps}"
    return write_run(out, scenario, seed=seed, max_steps=max_steps)


# -- the corpus ----------------------------------------------------------------------------


#: the corpus runs' names, in order
CORPUS_RUNS = tuple(sorted(p.name for p in CORPUS.iterdir() if p.is_dir()))


@functools.cache
def corpus_diagnosis(name: str) -> Diagnosis:
    """The whole-run diagnosis of corpus run `name` under the default rules, made once per
    test session and shared by every test that asks (never change it)."""
    return diagnose(load_run(CORPUS / name), Rules())


# -- waiting on a condition ----------------------------------------------------------------

#: how long a wait may take before the test fails: generous, as a loaded CI machine is slow;
#: a passing test never waits this long, it goes on as soon as its condition holds
WAIT_S = 30.0
#: how often a wait looks again
STEP_S = 0.02


async def wait_until(
    pilot: Pilot[Any],
    condition: Callable[[], object],
    timeout: float = WAIT_S,
    *,
    what: str = "the expected state",
) -> None:
    """Let the app run, in short steps, until `condition()` holds; fail saying `what` never
    came when it does not within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never came (waited {timeout:g} s)")
        await pilot.pause(STEP_S)


async def settle(
    pilot: Pilot[None],
    app: GrpoTuiApp,
    until: Callable[[], object] = lambda: True,
    timeout: float = WAIT_S,
    *,
    what: str = "the expected state",
) -> None:
    """Wait until the app read, diagnosed and drew the newest data, and `until()` holds;
    then until its pending messages and layout are done (what a screenshot shows)."""
    await wait_until(
        pilot,
        lambda: app.run_screen.session.run.version > 0 and app.settled and until(),
        timeout,
        what=f"a settled app with {what}",
    )
    await pilot.pause()


async def read_again(pilot: Pilot[None], app: GrpoTuiApp) -> None:
    """Wait until the app's reader has read the files once more, from a read begun after
    this call (the one under way may have begun before), and the app took what it sent."""
    reader = app.run_screen.reader
    assert reader is not None, "a run screen alone reads its run itself"
    seen = reader.reads

    def read_since() -> bool:
        reader.wake()  # no waiting for the poll interval
        return reader.reads >= seen + 2

    await wait_until(pilot, read_since, what="a read of the files after the change")
    await pilot.pause()


def wait_for(
    condition: Callable[[], object], timeout: float = WAIT_S, *, what: str = "the condition"
) -> None:
    """Outside an app (a thread, a subprocess): look every `STEP_S` until `condition()`
    holds; fail saying `what` never came when it does not within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never came (waited {timeout:g} s)")
        time.sleep(STEP_S)


# -- what the app shows --------------------------------------------------------------------

_SVG_TEXT = re.compile(
    r'<text class="[^"]*" x="([\d.]+)" y="[\d.]+" textLength="[\d.]+" clip-path="url\(#[\w-]+?-line-(\d+)\)">(.*?)</text>'
)


def screen_text(app: App[Any]) -> str:
    """What the terminal shows, as plain text lines (from the SVG screenshot)."""
    svg = app.export_screenshot()
    lines: dict[int, list[tuple[float, str]]] = {}
    for match in _SVG_TEXT.finditer(svg):
        x, line, content = float(match.group(1)), int(match.group(2)), match.group(3)
        lines.setdefault(line, []).append((x, html.unescape(content).replace("\xa0", " ")))
    return "\n".join("".join(part for _, part in sorted(lines[n])) for n in sorted(lines))


# -- the metric store's cases (tests/test_store_blocks.py, tests/test_cells.py) ----------------
# Rows drawn like real logs, built into blocks the way sources/logreader.py builds them, and
# the store's whole visible state compared between two stores.

TRAIN, EVAL, END = LineKind.TRAIN, LineKind.EVAL, LineKind.END
NAN, INF = math.nan, math.inf
#: metric names rows draw from; shared by train and eval rows so columns span several groups
NAMES = ("loss", "reward", "kl", "eval_loss")
#: bucket widths compared: fewer buckets than points, about as many, more than points
WIDTHS = (1, 5, 64)


# -- building rows and blocks --------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    """One log line: what it logged, and which key shape (reading plan) it came in."""

    kind: LineKind
    step: float
    values: dict[str, float] = field(default_factory=dict)
    #: two plans can log the same metrics (other key spellings, another key order)
    shape: int = 0


def _group_key(row: Row) -> tuple[int, tuple[str, ...], int]:
    return int(row.kind), tuple(name for name in NAMES if name in row.values), row.shape


def make_block(rows: Sequence[Row], *, shuffle_groups: random.Random | None = None) -> RowBlock:
    """The rows as one RowBlock: a ColumnGroup per key shape, its rows increasing, groups in
    order of their first row (what logreader.py gives for a plain slice), or shuffled."""
    by_shape: dict[tuple[int, tuple[str, ...], int], list[int]] = {}
    for i, row in enumerate(rows):
        by_shape.setdefault(_group_key(row), []).append(i)
    groups: list[ColumnGroup] = []
    for (kind, names, shape), members in by_shape.items():
        columns = names if shape == 0 else names[::-1]
        prefix = "" if shape == 0 else f"{LineKind(kind).name.lower()}/"
        values = np.array([[rows[i].values[c] for c in columns] for i in members], dtype=np.float64)
        groups.append(
            ColumnGroup(
                rows=np.array(members, dtype=np.intp),
                columns=columns,
                source_keys={c: prefix + c for c in columns},
                values=values.reshape(len(members), len(columns)),
            )
        )
    if shuffle_groups is not None:
        shuffle_groups.shuffle(groups)
    return RowBlock(
        kinds=np.array([int(row.kind) for row in rows], dtype=np.uint8),
        steps=np.array([row.step for row in rows], dtype=np.float64),
        groups=groups,
        max_steps=100,
    )


def slice_block(block: RowBlock, start: int, stop: int) -> RowBlock:
    """Rows [start, stop) of a block as a block of their own (groups keep their order)."""
    groups = []
    for group in block.groups:
        inside = (group.rows >= start) & (group.rows < stop)
        if inside.any():
            rows = group.rows[inside] - start
            groups.append(ColumnGroup(rows, group.columns, group.source_keys, group.values[inside]))
    kinds, steps = block.kinds[start:stop].copy(), block.steps[start:stop].copy()
    return RowBlock(kinds, steps, groups, block.max_steps)


def records_block(records: list[Record]) -> RowBlock:
    """Records as a block (one column group per record)."""
    groups = [
        ColumnGroup(
            np.array([i]),
            tuple(r.values),
            r.source_keys,
            np.array([list(r.values.values())], dtype=float),
        )
        for i, r in enumerate(records)
        if r.values
    ]
    kinds = np.array([int(r.kind) for r in records], dtype=np.uint8)
    steps = np.array([float(r.step) for r in records], dtype=np.float64)
    max_steps = next((r.max_steps for r in reversed(records) if r.max_steps), None)
    return RowBlock(kinds, steps, groups, max_steps)


def block_records(block: RowBlock) -> list[Record]:
    """One Record per row of a block."""
    values: list[dict[str, float]] = [{} for _ in range(len(block))]
    keys: list[dict[str, str]] = [{} for _ in range(len(block))]
    for group in block.groups:
        for pos, row in zip(group.rows.tolist(), group.values.tolist()):
            values[pos].update(zip(group.columns, row))
            keys[pos].update(group.source_keys)
    return [
        Record(LineKind(int(kind)), float(step), vals, src, block.max_steps)
        for kind, step, vals, src in zip(block.kinds, block.steps, values, keys)
    ]


def block_of(*rows: Row) -> RowBlock:
    return make_block(rows)


def store_of(*rows: Row) -> MetricStore:
    """A store fed the rows one by one through `add` (the reference path)."""
    store = MetricStore()
    for record in block_records(make_block(rows)):
        store.add(record)
    return store


def one_column_block(values: np.ndarray, name: str = "x") -> RowBlock:
    """Train rows at steps 1, 2, … logging one metric."""
    n = values.shape[0]
    group = ColumnGroup(np.arange(n), (name,), {}, values.reshape(-1, 1))
    return RowBlock(np.zeros(n, np.uint8), np.arange(1.0, n + 1), [group])


def block_rows(block: RowBlock) -> list[Row]:
    """A block's rows back as Rows (one key shape)."""
    return [Row(r.kind, r.step, r.values) for r in block_records(block)]


def train_rows(*steps: float, name: str = "loss") -> list[Row]:
    return [Row(TRAIN, float(s), {name: float(s) / 10}) for s in steps]


# -- comparing stores ------------------------------------------------------------------------
def _same_arrays(got: np.ndarray, want: np.ndarray, what: str, *, rtol: float = 0.0) -> None:
    """Exact (NaN == NaN, same shape and dtype), or within `rtol`; numpy's asserts only
    run to explain a mismatch (they are slow, and this runs thousands of times)."""
    assert (got.shape, got.dtype) == (want.shape, want.dtype), what
    if rtol:
        if not np.allclose(got, want, rtol=rtol, atol=0, equal_nan=True):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True, err_msg=what)
    elif not np.array_equal(got, want, equal_nan=got.dtype.kind == "f"):
        np.testing.assert_array_equal(got, want, err_msg=what, strict=True)


def _same_pair(
    got: tuple[float, float] | None, want: tuple[float, float] | None, what: str
) -> None:
    if want is None or got is None:
        assert got == want, what
        return
    _same_arrays(np.array(got), np.array(want), what)


def _same_buckets(got: Buckets, want: Buckets, what: str, *, mean_rtol: float) -> None:
    for part in ("step_lo", "step_hi", "min", "max", "last", "count"):
        _same_arrays(getattr(got, part), getattr(want, part), f"{what}.{part}")
    _same_arrays(got.mean, want.mean, f"{what}.mean", rtol=mean_rtol)


def assert_same_state(
    got: MetricStore, want: MetricStore, label: str, *, mean_rtol: float = 0.0
) -> None:
    """Everything the store shows is the same. `mean_rtol` loosens only the bucket means of
    long runs (block summaries sum in another order: see the module docstring)."""
    assert len(got) == len(want), f"{label}: rows"
    _same_arrays(got.steps, want.steps, f"{label}: steps")
    _same_arrays(got.kinds, want.kinds, f"{label}: kinds")
    assert got.last_step() == want.last_step(), f"{label}: last_step"
    assert got.replaced_rows == want.replaced_rows, f"{label}: replaced_rows"
    assert got.names() == want.names(), f"{label}: names"
    assert [n for n in NAMES if n in got] == [n for n in NAMES if n in want], f"{label}: contains"
    for name in [n for n in NAMES if n in want]:
        what = f"{label}: {name}"
        _same_arrays(got.column(name), want.column(name), f"{what} column")
        assert got.count(name) == want.count(name), f"{what} count"
        assert got.source_key(name) == want.source_key(name), f"{what} source_key"
        _same_pair(got.last(name), want.last(name), f"{what} last")
        _same_pair(got.latest(name), want.latest(name), f"{what} latest")
        _same_arrays(
            got.nonfinite_steps(name), want.nonfinite_steps(name), f"{what} nonfinite_steps"
        )
        got_points, want_points = got.points(name), want.points(name)
        _same_arrays(got_points.steps, want_points.steps, f"{what} points.steps")
        _same_arrays(got_points.values, want_points.values, f"{what} points.values")
        got_window, want_window = got.window(name, 5), want.window(name, 5)
        _same_arrays(got_window.steps, want_window.steps, f"{what} window.steps")
        _same_arrays(got_window.values, want_window.values, f"{what} window.values")
        for width in WIDTHS:
            got_buckets, want_buckets = got.buckets(name, width), want.buckets(name, width)
            _same_buckets(
                got_buckets, want_buckets, f"{what} buckets({width})", mean_rtol=mean_rtol
            )


# -- the scenario: rows, and where blocks are cut ----------------------------------------------
_KINDS = (TRAIN,) * 5 + (EVAL, EVAL, END)
_MOVES = ("rise",) * 6 + ("same",) * 2 + ("jump", "back")
#: which metrics a row logs: every subset of NAMES, each metric logged 2 times in 3
_LOGGED = tuple(
    subset
    for mask in range(2 ** len(NAMES))
    for subset in [tuple(name for bit, name in enumerate(NAMES) if mask >> bit & 1)]
    for _ in range(2 ** len(subset))
)
#: a logged value: finite 6 times in 9, else NaN, +Infinity or -Infinity
_NONFINITE = {6: NAN, 7: INF, 8: -INF}
_finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@st.composite
def log_rows(draw: st.DrawFn, max_rows: int = 24) -> list[Row]:
    """Rows like a log: steps mostly rising, sometimes repeating, jumping or going back."""
    n = draw(st.integers(0, max_rows))
    step = draw(st.integers(0, 3))
    rows = []
    for i in range(n):
        move = draw(st.sampled_from(_MOVES)) if i else "same"
        if move == "rise":
            step += 1
        elif move == "jump":
            step += draw(st.integers(2, 30))
        elif move == "back":
            step = max(0, step - draw(st.integers(1, 8)))
        kind = draw(st.sampled_from(_KINDS))
        values = {}
        for name in draw(st.sampled_from(_LOGGED)):
            what = draw(st.integers(0, 8))
            values[name] = _NONFINITE[what] if what in _NONFINITE else draw(_finite)
        shape = draw(st.sampled_from((0, 0, 0, 1)))
        rows.append(Row(kind, float(step), values, shape))
    return rows


@dataclass
class Scenario:
    rows: list[Row]
    #: rows the "held" store takes one by one through `add` before one block of the rest
    held: int
    #: block boundaries for the "pieces" store (repeats give empty blocks)
    cuts: list[int]
    group_seed: int


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    rows = draw(log_rows())
    n = len(rows)
    held = draw(st.integers(0, n))
    inner = draw(st.lists(st.integers(0, n), max_size=6))
    return Scenario(rows, held, [0, *sorted(inner), n], draw(st.integers(0, 2**16)))


# -- a real sshd (the fixture is tests/conftest.py `sshd`) ---------------------------------


@dataclass
class SshServer:
    """A running sshd and how to reach it."""

    port: int
    folder: Path
    process: subprocess.Popen[bytes]
    #: the client config (`ssh -F`): any host name → this sshd, key and known_hosts pinned
    client_config: Path
    sshd_config: Path

    @property
    def ssh_command(self) -> str:
        """What GRPO_TUI_SSH is set to."""
        return f"ssh -F {self.client_config}"

    def connection_pids(self, host: str) -> list[int]:
        """The processes of grpo-tui's connection to `host`: its ssh session (`ssh -F
        CONFIG … host sh`) and the shared connection (the ControlMaster, which renames
        itself `ssh: …/NAMEHASH.HASH [mux]`: transport.socket_name)."""
        from grpo_tui.sources.remote.address import SshTarget
        from grpo_tui.sources.remote.transport import socket_name

        named = socket_name(SshTarget(host)).split(".")[0]
        pids = []
        for proc in Path("/proc").iterdir():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            session = str(self.client_config).encode() in argv and host.encode() in argv
            master = (
                bool(argv) and argv[0].startswith(b"ssh: ") and f"/{named}.".encode() in argv[0]
            )
            if proc.name.isdigit() and (session or master):
                pids.append(int(proc.name))
        return pids

    def refusing_configs(self, folder: Path) -> tuple[Path, Path]:
        """Two client configs for this sshd, written in `folder`: one offering another key
        than the one it accepts (a refused login), one pinning another host key than its
        own (a changed host key)."""
        other_key = folder / "other_key"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other_key)], check=True
        )
        config = self.client_config.read_text()
        wrong_key = folder / "wrong_key.config"
        wrong_key.write_text(config.replace(str(self.folder / "client_key"), str(other_key)))
        changed = folder / "known_hosts"
        changed.write_text(f"grpo-tui-test-sshd {other_key.with_suffix('.pub').read_text()}")
        wrong_host = folder / "wrong_host.config"
        wrong_host.write_text(config.replace(str(self.folder / "known_hosts"), str(changed)))
        return wrong_key, wrong_host

    def session_pids(self) -> list[int]:
        """sshd's per-connection processes (children of the listener)."""
        found = subprocess.run(
            ["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True, check=False
        )
        return [int(pid) for pid in found.stdout.split()]

    def pause(self) -> None:
        """The listener stops answering (SIGSTOP): a host that does not answer."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """End sshd and its sessions (the shared connections to it end with them)."""
        self.process.send_signal(signal.SIGCONT)
        for pid in self.session_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        self.process.terminate()
        self.process.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            return conn.recv(7) == b"SSH-2.0"
    except OSError:
        return False


SSHD = Path("/usr/sbin/sshd")
#: seconds sshd gets to start listening
_START_S = 10.0


def start_sshd(folder: Path) -> SshServer:
    """Start sshd as a process of ours, everything it needs made in `folder` (see
    tests/conftest.py `sshd`); raises RuntimeError when it does not come up."""
    for name in ("host_key", "client_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True
        )
    (folder / "authorized_keys").write_bytes((folder / "client_key.pub").read_bytes())
    host_key = (folder / "host_key.pub").read_text().split()
    (folder / "known_hosts").write_text(f"grpo-tui-test-sshd {host_key[0]} {host_key[1]}\n")
    port = _free_port()
    user = (
        os.environ.get("USER")
        or subprocess.run(["id", "-un"], capture_output=True, text=True, check=False).stdout.strip()
    )
    root = os.getuid() == 0
    if root:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation folder
    drop = (
        "ForceCommand exec setpriv --bounding-set=-dac_override,-dac_read_search "
        '--inh-caps=-all /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n'
        if root and shutil.which("setpriv")
        else ""
    )
    sshd_config = folder / "sshd_config"
    sshd_config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\n"
        f"PidFile {folder / 'sshd.pid'}\nAuthorizedKeysFile {folder / 'authorized_keys'}\n"
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        f"PermitRootLogin prohibit-password\nAllowUsers {user}\nPrintMotd no\n"
        "LogLevel ERROR\nMaxSessions 50\nMaxStartups 50\n" + drop
    )
    client_config = folder / "ssh_config"
    client_config.write_text(
        f"Host *\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n"
        f"  IdentityFile {folder / 'client_key'}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {folder / 'known_hosts'}\n  GlobalKnownHostsFile /dev/null\n"
        "  HostKeyAlias grpo-tui-test-sshd\n  StrictHostKeyChecking yes\n"
        "  ConnectTimeout 3\n  LogLevel ERROR\n"
    )
    process = subprocess.Popen(
        [str(SSHD), "-D", "-e", "-f", str(sshd_config)],
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "sshd.log", "wb"),  # noqa: SIM115 (sshd's for its whole life)
    )
    deadline = time.monotonic() + _START_S
    while not _answers(port):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            log = (folder / "sshd.log").read_text(errors="replace")
            raise RuntimeError(f"sshd did not start: {log[-500:]}")
        time.sleep(0.05)
    return SshServer(port, folder, process, client_config, sshd_config)


# -- trackio, written by trackio itself ------------------------------------------------

#: the writer: one JSON command a line on stdin, one JSON answer a line on stdout (trackio's
#: own prints go to stderr)
TRACKIO_WRITER = r"""
import json, os, sys
answers = sys.stdout
sys.stdout = sys.stderr
import trackio
from trackio import fragments
for line in sys.stdin:
    command = json.loads(line)
    op = command.pop("op")
    answer = None
    if op == "init":
        os.environ["TRACKIO_STORAGE_MODE"] = command.pop("storage", "sqlite")
        run = trackio.init(embed=False, auto_log_gpu=False, auto_log_cpu=False, **command)
        answer = run.name
    elif op == "log":
        trackio.log(command["metrics"], step=command.get("step"))
    elif op == "log_table":
        trackio.log({"train/completions": trackio.Table(data=[["a", 1.0]], columns=["text", "r"])})
    elif op == "finish":
        trackio.finish()
    elif op == "import_inbox":
        answer = fragments.import_inbox_dir()
    answers.write(json.dumps({"ok": answer}) + "\n")
    answers.flush()
"""

#: what could send trackio to the network (a Space, a server, a bucket, a dataset, a
#: webhook) or change where and how it writes
TRACKIO_UNSET = (
    "TRACKIO_SPACE_ID",
    "TRACKIO_SERVER_URL",
    "TRACKIO_WRITE_TOKEN",
    "TRACKIO_BUCKET_ID",
    "TRACKIO_DATASET_ID",
    "TRACKIO_WEBHOOK_URL",
    "TRACKIO_STORAGE_MODE",
    "TRACKIO_SQLITE_JOURNAL_MODE",
    "TRACKIO_SQLITE_LOCKING_MODE",
    "TRACKIO_PAUSE_WRITES",
    "SPACE_ID",
    "SPACE_HOST",
    "SPACE_REPO_NAME",
    "SYSTEM",
)


class TrackioWriter:
    """A trackio process the tests drive: `init`, `log`, `finish`, as a trainer would."""

    def __init__(self, directory: Path) -> None:
        env = {key: value for key, value in os.environ.items() if key not in TRACKIO_UNSET}
        env.update(
            TRACKIO_DIR=str(directory),
            HF_HUB_OFFLINE="1",
            HF_HUB_DISABLE_TELEMETRY="1",
            GRADIO_ANALYTICS_ENABLED="False",
        )
        self.directory = directory
        self.process = subprocess.Popen(
            [sys.executable, "-c", TRACKIO_WRITER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )

    def send(self, op: str, **arguments: Any) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        assert answer, f"the trackio writer stopped at {op}"
        return json.loads(answer)["ok"]

    def init(self, project: str, name: str, **arguments: Any) -> str:
        return str(self.send("init", project=project, name=name, **arguments))

    def log(self, metrics: dict[str, Any], step: int | None = None) -> None:
        self.send("log", metrics=metrics, step=step)

    def finish(self) -> None:
        """trackio.finish(): every queued row is in the database when it returns."""
        self.send("finish")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def repetition(text: str) -> float:
    """Share of a completion's shingles that repeat an earlier one (0 ... <1), as the text
    statistics of a group of it alone give it."""
    return group_text_stats([text]).repetition[0]


def restarts_of(source: BatchSource) -> list[str]:
    """Why `source` started over, each time it is read from now on (the list grows)."""
    reasons: list[str] = []
    read = source.read

    def recording(max_bytes: int | None = None) -> BatchChunk:
        chunk = read(max_bytes)
        if chunk.restarted is not None:
            reasons.append(chunk.restarted)
        return chunk

    source.read = recording  # type: ignore[method-assign]
    return reasons


def groups_of(index: CompletionsIndex, line: int = -1) -> list[Group]:
    """The groups of one entry of the index (negative counts from the newest), read as the
    completions panel reads them (`page`); [] for an empty index or a batch that changed
    under it."""
    page = index.page(line)
    return [] if page is None else list(page.groups)


def diversity_of(texts: Sequence[str], n: int = SHINGLE_CHARS) -> Diversity:
    """The shingle statistics of completions, each measured as a group's are
    (`measured_text`)."""
    return shingle_diversity([measured_text(text) for text in texts], n)


def write_tb_events(folder: Path, rows: list[tuple[int, dict[str, float]]]) -> None:
    """Scalars as torch's SummaryWriter writes them: one simple_value event per key, by
    TensorBoard's own event writer (imported here: not every test has TensorBoard)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2  # type: ignore[import-untyped]
    from tensorboard.summary.writer.event_file_writer import (  # type: ignore[import-untyped]
        EventFileWriter,
    )

    folder.mkdir(parents=True, exist_ok=True)
    writer = EventFileWriter(str(folder))
    for step, values in rows:
        for tag, value in values.items():
            summary = summary_pb2.Summary(
                value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)]
            )
            writer.add_event(event_pb2.Event(wall_time=1.78e9 + step, step=step, summary=summary))
    writer.close()


#: the bench scripts (bench/*.py), which some tests run at a smaller size
BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"


def load_bench(name: str) -> ModuleType:
    """bench/<name>.py as a module (the benches are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while decorating
    spec.loader.exec_module(module)
    return module


#: a sweep of real corpus runs for the board: two that went wrong, two saturated, one
#: healthy
BOARD_SWEEP = (
    "trl-redteam-finance-sparse",
    "trl-qwen7b-gsm8k-lr1e-4-collapse",
    "trl-qwen7b-gsm8k-vanilla",
    "trl-qwen35-9b-gsm8k-learning",
    "verl-qwen3-8b-dapomath-grpo-A",
)
