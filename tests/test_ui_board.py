"""The board as one app of screens (issue 45): a run opened from the board is a screen over
the session the board holds (nothing read or judged twice, the row's verdict at once, esc
back), and the board as a table people read (columns as data, keyed cell updates, the whole
verdict, names cut where they tell least, `s` sorts, ETA, check's text and JSON in one
order), on real corpus runs laid out as a sweep."""

from __future__ import annotations

import io
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from helpers import BOARD_SWEEP, FIXED_MTIME, screen_text, wait_until
from textual.pilot import Pilot

from grpo_tui.commands.board import check_board_command
from grpo_tui.health.rules import Rules
from grpo_tui.monitor.board import (
    SORT_WORDS,
    SORTS,
    Board,
    BoardSettings,
    eta_seconds,
    sort_rows,
)
from grpo_tui.run import follow
from grpo_tui.run.follow import load_run
from grpo_tui.sources.runs import find_runs
from grpo_tui.ui.app import GrpoTuiApp
from grpo_tui.ui.screens.run import RunScreen
from grpo_tui.ui.widgets.board_table import COLUMNS, WIDE_BOARD, layout, verdict_lines
from grpo_tui.views.naming import fit_run_names

CORPUS = Path(__file__).parent / "corpus"
SWEEP = BOARD_SWEEP


def make_sweep(parent: Path) -> Path:
    """The sweep's runs copied into `parent`/sweep, every file at FIXED_MTIME."""
    folder = parent / "sweep"
    for name in SWEEP:
        run = folder / name
        shutil.copytree(CORPUS / name, run)
        for path in [run, *run.rglob("*")]:
            os.utime(path, (FIXED_MTIME, FIXED_MTIME))
    return folder


def judged_board(folder: Path, settings: BoardSettings | None = None) -> Board:
    """A board of the folder's runs, every run read and diagnosed on this thread."""
    board = Board([folder], Rules(), settings=settings or BoardSettings())
    board.add(find_runs([folder]))
    while board.read_all():
        board.take_inbox()
    board.take_inbox()
    while (chosen := board.next_diagnosis()) is not None:
        board.diagnosed(chosen[0], chosen[1]())
    assert board.settled
    return board


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sweep(tmp_path_factory.mktemp("board-ui"))


@pytest.fixture
def board(sweep: Path) -> Iterator[Board]:
    """The sweep judged, its reader not started (nothing changes unless a test says)."""
    judged = judged_board(sweep)
    yield judged
    judged.close()


class Clock:
    """A wall clock a test moves."""

    def __init__(self) -> None:
        self.now = FIXED_MTIME + 42

    def __call__(self) -> float:
        return self.now


def board_app(board: Board, now: Clock | None = None) -> GrpoTuiApp:
    return GrpoTuiApp(board=board, now=now or Clock(), environ={}, title="sweep/")


async def settled_board(pilot: Pilot[None], app: GrpoTuiApp) -> None:
    await wait_until(
        pilot,
        lambda: app.settled and len(app.board_screen.rows) == len(SWEEP),
        what="the settled board",
    )
    await pilot.pause()


class TestBoardToRunAndBack:
    """enter opens the row's run over the board's session; esc comes back to the board."""

    async def test_the_run_shows_its_rows_verdict_at_once_and_reads_nothing_again(
        self, board: Board, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # every reader made, and every read of the runs' files, counted from here on
        followers: list[object] = []
        loops: list[object] = []
        reads: list[object] = []
        made_follower, made_loop = follow.RunFollower.__init__, follow.FollowLoop.__init__
        read = follow.RunFollower.read

        def count_follower(self: follow.RunFollower, *args: object, **kwargs: object) -> None:
            followers.append(self)
            made_follower(self, *args, **kwargs)  # type: ignore[arg-type]

        def count_loop(self: follow.FollowLoop, *args: object, **kwargs: object) -> None:
            loops.append(self)
            made_loop(self, *args, **kwargs)  # type: ignore[arg-type]

        def count_read(self: follow.RunFollower, *args: object, **kwargs: object) -> object:
            reads.append(self)
            return read(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(follow.RunFollower, "__init__", count_follower)
        monkeypatch.setattr(follow.FollowLoop, "__init__", count_loop)
        monkeypatch.setattr(follow.RunFollower, "read", count_read)
        app = board_app(board)
        async with app.run_test(size=(120, 40)) as pilot:
            await settled_board(pilot, app)
            row = app.board_screen.rows[1]
            (compared,) = board.to_compare([row.ref])
            diagnosis = compared.diagnosis
            await pilot.press("down", "enter")
            # the first frame the run's screen draws: no wait for a read or a diagnosis
            await wait_until(
                pilot,
                lambda: isinstance(app.screen, RunScreen) and app.screen.settled,
                what="the run's first frame",
            )
            screen = app.screen
            assert isinstance(screen, RunScreen)
            # the board's own Run and diagnosis: the same objects, nothing judged again
            assert screen.session.run is compared.run
            assert screen.session.diagnosis is diagnosis
            assert screen.verdict() == row.verdict
            header = screen_text(app).splitlines()[1]
            assert header.startswith(row.verdict.lead) and row.verdict.parts[0] in header
            assert followers == [] and loops == [] and reads == []
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.board_screen, what="the board")
            await wait_until(pilot, lambda: app.settled, what="the board drawn again")
            assert board.opened is None
            assert "BOARD" in screen_text(app).splitlines()[0]
        assert followers == [] and loops == []

    async def test_the_opened_run_is_read_at_a_monitors_pace(self, tmp_path: Path) -> None:
        """The board looks at its runs every minute here; the run opened is looked at every
        second, and what the reads bring is drawn on its screen."""
        folder = make_sweep(tmp_path)
        board = judged_board(folder, BoardSettings(poll_s=60, rescan_s=60))
        board.start()
        try:
            app = board_app(board)
            async with app.run_test(size=(100, 30)) as pilot:
                await settled_board(pilot, app)
                await pilot.press("enter")
                await wait_until(pilot, lambda: isinstance(app.screen, RunScreen), what="run")
                screen = app.screen
                assert isinstance(screen, RunScreen)
                run = screen.session.run
                (state_file,) = run.path.rglob("trainer_state.json")
                before = run.version
                state = json.loads(state_file.read_text())
                state["log_history"].append(dict(state["log_history"][-1], step=10_000))
                state_file.write_text(json.dumps(state))
                await wait_until(
                    pilot,
                    lambda: run.version > before and screen.settled,
                    timeout=10,
                    what="the appended step on the run's screen",
                )
                assert run.store.last_step() == 10_000
        finally:
            board.close()


class TestTheTable:
    """Columns as data, cells updated by key, the verdict whole from 120 columns."""

    def test_columns_are_declared_once_with_keys_labels_widths_and_cells(self) -> None:
        keys = [column.key for column in COLUMNS]
        assert len(set(keys)) == len(keys) and keys[-1] == "verdict"
        wide = {column.key for column in COLUMNS if column.wide_only}
        assert wide == {"eta", "data", "reward"}
        narrow = [column.key for column, _, _ in layout(80, [])[0]]
        assert narrow == ["mark", "status", "run", "state", "step", "verdict"]

    def test_the_whole_verdict_at_120_columns_and_wider(self, board: Board) -> None:
        rows = board.rows(FIXED_MTIME + 42)
        for width in (WIDE_BOARD, 160, 200):
            columns, _ = layout(width, rows)
            assert sum(cells + 2 for _, _, cells in columns) + 1 <= width
            cells = next(cells for column, _, cells in columns if column.key == "verdict")
            for row in rows:
                lines = verdict_lines(row, cells)
                assert all(len(line) <= cells for line in lines)
                words = " ".join(lines)
                assert all(part in words for part in row.verdict.parts), (width, row.name)

    async def test_values_alone_update_cells_by_key(self, board: Board) -> None:
        clock = Clock()
        app = board_app(board, clock)
        async with app.run_test(size=(120, 40)) as pilot:
            await settled_board(pilot, app)
            table = app.board_screen.table
            refills = table.refills
            row_key = str(app.board_screen.rows[0].ref)
            assert table.get_cell(row_key, "data").plain == "42s ago"
            clock.now += 100  # time alone: every age changes, nothing else does
            app.board_screen.refresh_rows()
            await wait_until(
                pilot, lambda: table.get_cell(row_key, "data").plain == "2m ago", what="age"
            )
            assert table.refills == refills
            await pilot.press("s")  # another order: the table is laid out anew
            await wait_until(pilot, lambda: table.refills > refills, what="a refill")

    async def test_the_selected_runs_whole_verdict_and_facts_under_the_table(
        self, board: Board
    ) -> None:
        app = board_app(board)
        async with app.run_test(size=(80, 24)) as pilot:
            await settled_board(pilot, app)
            await pilot.press("down")
            row = app.board_screen.rows[1]
            text = " ".join(screen_text(app).split())
            assert " ".join(row.verdict.text().split()) in text
            assert f"{row.name} · {row.state_label}" in text

    async def test_s_cycles_the_sort_and_says_which(self, board: Board) -> None:
        app = board_app(board)
        async with app.run_test(size=(120, 40)) as pilot:
            await settled_board(pilot, app)
            screen = app.board_screen
            assert screen.sort == "status" and SORT_WORDS["status"] in screen_text(app)
            for order in (*SORTS[1:], SORTS[0]):
                await pilot.press("s")
                await wait_until(pilot, lambda: app.settled, what=f"sorted by {order}")
                assert screen.sort == order
                assert screen.rows == sort_rows(screen.rows, order)
                assert SORT_WORDS[order] in screen_text(app)
            names = [row.name for row in sort_rows(screen.rows, "name")]
            assert names == sorted(names)


class TestNames:
    """A run's name whole, or cut where it tells least."""

    def test_a_sweeps_shared_head_is_cut_and_its_tail_kept(self) -> None:
        names = [
            "trl-qwen35-9b-gsm8k-rho07-s44-latecollapse",
            "trl-qwen35-9b-gsm8k-rho1-s43-json",
            "trl-qwen35-9b-gsm8k-learning",
        ]
        fitted = fit_run_names(names, 22)
        assert fitted[names[1]] == "trl-…m8k-rho1-s43-json"
        assert fitted[names[2]] == "trl-…9b-gsm8k-learning"
        assert all(len(cut) <= 22 for cut in fitted.values())
        assert len(set(fitted.values())) == len(names)
        assert fit_run_names(names, 60) == {name: name for name in names}

    def test_a_name_alone_keeps_more_of_its_end(self) -> None:
        (cut,) = fit_run_names(["verl-qwen3-8b-dapomath-grpo-A"], 19).values()
        assert cut == "verl-q…omath-grpo-A"


class TestEta:
    """An ETA where the run gives max_steps and a rate."""

    def test_from_the_logged_remaining_time(self) -> None:
        run = load_run(CORPUS / "msswift4-issue9261-paste")
        assert eta_seconds(run, run.progress()) == run.progress().remaining_s

    def test_from_max_steps_and_the_logged_step_time(self) -> None:
        run = load_run(CORPUS / "trl-tb-wordle-qwen05b-lr5e-3-nan")
        progress = run.progress()
        assert progress.max_steps is None and eta_seconds(run, progress) is None
        step_time = run.store.window("step_time", 20).values
        eta = eta_seconds(run, replace(progress, max_steps=150))
        assert eta is not None and progress.step is not None
        rate = float(np.median(step_time[np.isfinite(step_time) & (step_time > 0)]))
        assert eta == pytest.approx((150 - progress.step) * rate)

    def test_none_at_the_end(self) -> None:
        run = load_run(CORPUS / "trl-qwen35-9b-gsm8k-learning")
        assert eta_seconds(run, run.progress()) is None


class TestCheckOrder:
    """`check DIR` as text and as JSON list the runs in the board's default order."""

    def test_text_and_json_in_one_order(self, sweep: Path, board: Board) -> None:
        runs = find_runs([sweep])
        text, documents = io.StringIO(), io.StringIO()
        check_board_command(runs, as_json=False, rules_file=None, now=FIXED_MTIME + 42, out=text)
        check_board_command(
            runs, as_json=True, rules_file=None, now=FIXED_MTIME + 42, out=documents
        )
        in_json = [Path(d["path"]).name for d in json.loads(documents.getvalue())]
        lines = text.getvalue().splitlines()
        in_text = [name for line in lines for name in SWEEP if line[2:].startswith(name + " ")]
        on_board = [row.name for row in board.rows(FIXED_MTIME + 42)]
        assert in_json == in_text == on_board
