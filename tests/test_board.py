"""The board of runs (issue 24): where the runs of a folder are, the Board core (one reader,
one diagnosis at a time, rows worst first), `check` on several runs, and the board app
(pilot tests and SVG snapshots) on real corpus runs laid out as a sweep."""

from __future__ import annotations

import io
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from helpers import (
    FIXED_MTIME,
    TrackioWriter,
    app_for,
    fixture_lines,
    make_run,
    screen_text,
    wait_for,
    wait_until,
)
from textual.pilot import Pilot

from grpo_tui.commands.board import check_board_command, worst_code
from grpo_tui.context import RunContext
from grpo_tui.health.rules import Rules
from grpo_tui.monitor.alerts import AlertSettings
from grpo_tui.monitor.board import Board, BoardSettings, board_counts, run_names
from grpo_tui.monitor.compare import (
    compare_runs,
    levels_on,
    logging_stride,
    overlay_series,
    setting_differences,
    step_edges,
)
from grpo_tui.monitor.events import EventRules
from grpo_tui.sources.runs import RunRef, find_runs, runs_in
from grpo_tui.ui.app import GrpoTuiApp
from grpo_tui.ui.screens.compare import CompareScreen, OverlayScreen, overlay_chart
from grpo_tui.ui.screens.run import RunScreen
from grpo_tui.vocabulary import Status

CORPUS = Path(__file__).parent / "corpus"
FIXED_NOW = FIXED_MTIME + 42
#: a small sweep of real runs: two that went wrong, one saturated, one healthy
SWEEP = (
    "trl-redteam-finance-sparse",
    "trl-qwen7b-gsm8k-lr1e-4-collapse",
    "trl-qwen35-9b-gsm8k-learning",
    "verl-qwen3-8b-dapomath-grpo-A",
)
#: quick looks, so a run created during a test is found at once
QUICK = BoardSettings(poll_s=0.1, rescan_s=0.2, diagnose_every_s=0.5)


def copy_run(name: str, into: Path) -> Path:
    """A corpus run copied into `into`, every file and folder at FIXED_MTIME."""
    run = into / name
    shutil.copytree(CORPUS / name, run)
    for path in [run, *run.rglob("*")]:
        os.utime(path, (FIXED_MTIME, FIXED_MTIME))
    return run


def make_sweep(parent: Path) -> Path:
    folder = parent / "sweep"
    folder.mkdir()
    for name in SWEEP:
        copy_run(name, folder)
    return folder


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """A sweep of its own (a test that adds a run to it)."""
    return make_sweep(tmp_path)


@pytest.fixture(scope="module")
def shared_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One sweep for the tests that only read it."""
    return make_sweep(tmp_path_factory.mktemp("board"))


@pytest.fixture(scope="module")
def judged(shared_sweep: Path) -> Board:
    """The shared sweep read and diagnosed once (its reader not running: nothing changes)."""
    board = board_on(shared_sweep)
    read_and_judge(board)
    return board


@pytest.fixture
def shared(judged: Board) -> Iterator[Board]:
    """The judged sweep for a test that opens a run: released after it (it is shared)."""
    yield judged
    if judged.opened is not None:
        judged.release(judged.opened)


@contextmanager
def running(board: Board) -> Iterator[Board]:
    board.start()
    try:
        yield board
    finally:
        board.stop()


def board_on(sweep: Path, settings: BoardSettings = QUICK) -> Board:
    board = Board([sweep], Rules(), settings=settings)
    board.add(find_runs([sweep]))
    return board


def read_and_judge(board: Board) -> None:
    """Read every run to its end and diagnose each, on this thread (a run judged a moment
    ago waits for its pacer: looked at again in short steps until every run is judged)."""
    while board.read_all():
        board.take_inbox()
    board.take_inbox()

    def judged() -> bool:
        while (chosen := board.next_diagnosis()) is not None:
            path, job = chosen
            board.diagnosed(path, job())
        return board.settled

    wait_for(judged, what="every run judged")


class TestWhereTheRunsAre:
    """A folder of run folders is a board; a run folder, however it is laid out, is one run."""

    def test_a_sweep_folder_holds_each_run(self, sweep: Path) -> None:
        assert sorted(r.path.name for r in find_runs([sweep])) == sorted(SWEEP)

    def test_a_run_folder_is_one_run(self, sweep: Path) -> None:
        run = sweep / SWEEP[0]  # a TRL output dir: checkpoints inside
        assert runs_in(run) == [RunRef(run)]

    def test_an_ms_swift_output_dir_with_its_version_folders_is_one_run(
        self, tmp_path: Path
    ) -> None:
        output = make_run(tmp_path, fixture_lines())
        assert runs_in(output) == [RunRef(output)]

    def test_a_folder_with_one_run_folder_is_that_one_run_as_before(self, tmp_path: Path) -> None:
        copy_run(SWEEP[0], tmp_path)
        assert runs_in(tmp_path) == [RunRef(tmp_path)]

    def test_a_path_not_there_yet_is_one_run_waited_for(self, tmp_path: Path) -> None:
        missing = tmp_path / "not-yet"
        assert runs_in(missing) == [RunRef(missing)]

    def test_several_paths_each_once(self, sweep: Path) -> None:
        one, two = sweep / SWEEP[0], sweep / SWEEP[1]
        assert find_runs([one, two, one]) == [RunRef(one), RunRef(two)]

    def test_names_share_a_parent_only_where_two_runs_share_a_name(self) -> None:
        a, b, other = RunRef(Path("a/run")), RunRef(Path("b/run")), RunRef(Path("b/other"))
        assert run_names([a, b, other]) == {a: "a/run", b: "b/run", other: "other"}


class TestTheBoard:
    """One reader for every run, one diagnosis at a time, rows worst first."""

    def test_rows_are_worst_first_with_the_real_verdicts(self, judged: Board) -> None:
        rows = judged.rows(FIXED_NOW)
        assert [row.rank for row in rows] == sorted(row.rank for row in rows)
        by_name = {row.name: row for row in rows}
        assert by_name["trl-redteam-finance-sparse"].status is Status.PROBLEM
        assert "Not learning" in by_name["trl-redteam-finance-sparse"].verdict.text()
        assert by_name["trl-qwen7b-gsm8k-lr1e-4-collapse"].status is Status.PROBLEM
        assert by_name["verl-qwen3-8b-dapomath-grpo-A"].status is Status.HEALTHY
        assert rows[-1].name == "verl-qwen3-8b-dapomath-grpo-A"
        # the reward first → now, and its sparkline over the run's steps
        healthy = by_name["verl-qwen3-8b-dapomath-grpo-A"]
        assert healthy.reward_first is not None and healthy.reward_now is not None
        assert healthy.reward_now > healthy.reward_first
        assert board_counts(rows) == "✗ 2 problem · ! 1 caution · ✓ 1 healthy"

    def test_a_quiet_board_owes_no_diagnosis(self, judged: Board) -> None:
        assert judged.settled
        judged.read_all()  # nothing new on disk: nothing delivered, nothing to judge
        changed, _ = judged.take_inbox()
        assert not changed and judged.next_diagnosis() is None

    def test_the_inbox_keeps_what_was_read_while_no_screen_took_it(self, sweep: Path) -> None:
        """While a run's monitor is open the board has no screen: its reads wait."""
        board = board_on(sweep)
        calls: list[int] = []
        board.on_post = lambda: calls.append(1)
        board.read_all()
        assert calls == [1]  # one wake-up, however much was put
        board.on_post = None
        changed, _ = board.take_inbox()
        assert changed and all(len(r.run.store) for r in board.to_compare(board.refs))

    def test_the_filter_matches_name_framework_and_verdict(self, judged: Board) -> None:
        rows = judged.rows(FIXED_NOW)
        # every word is looked for: "learning · … not yet beyond noise" has both words too
        assert [r.name for r in rows if r.matches("problem not learning")] == [
            "trl-redteam-finance-sparse"
        ]
        assert "verl-qwen3-8b-dapomath-grpo-A" in {
            r.name for r in rows if r.matches("not learning")
        }
        assert {r.name for r in rows if r.matches("verl")} == {"verl-qwen3-8b-dapomath-grpo-A"}


class TestCheckOnSeveralRuns:
    """`check DIR` prints the board and exits with the worst run's code."""

    @staticmethod
    def text_board(sweep: Path, width: int) -> tuple[int, str]:
        """`check` on every run of the sweep at `width` columns: its exit code and text."""
        out = io.StringIO()
        code = check_board_command(
            find_runs([sweep]), as_json=False, rules_file=None, now=FIXED_NOW, out=out, width=width
        )
        return code, out.getvalue()

    def test_text_board_and_the_worst_exit_code(self, shared_sweep: Path) -> None:
        code, text = self.text_board(shared_sweep, 100)
        assert code == 2
        assert text.splitlines()[0] == "✗ 2 problem · ! 1 caution · ✓ 1 healthy"
        first_run = text.splitlines()[1]
        assert first_run.startswith("✗ trl-")
        assert text.index("trl-redteam-finance-sparse") < text.index("verl-qwen3-8b-dapomath")

    def test_a_line_that_wraps_stays_under_its_run(self, shared_sweep: Path) -> None:
        """At 60 columns the facts wrap under the run's name and the verdict line under
        itself, so each run still reads as one block below its glyph."""
        lines = self.text_board(shared_sweep, 60)[1].splitlines()[1:]
        assert all(len(line) <= 60 for line in lines)
        glyphs = ("✗ ", "! ", "✓ ", "? ")
        for line in lines:
            assert line.startswith(glyphs) or line.startswith("  "), line
        verdicts = [line for line in lines if line.startswith("    ") and "·" in line]
        assert verdicts and len(lines) > 2 * len(find_runs([shared_sweep]))

    def test_json_is_a_list_of_each_runs_check(self, shared_sweep: Path) -> None:
        runs = [RunRef(shared_sweep / SWEEP[2]), RunRef(shared_sweep / SWEEP[3])]
        out = io.StringIO()
        code = check_board_command(runs, as_json=True, rules_file=None, now=FIXED_NOW, out=out)
        documents = json.loads(out.getvalue())
        assert code == 1 and len(documents) == 2
        assert [d["status"] for d in documents] == ["caution", "healthy"]

    def test_the_worst_code_ranks_unreadable_then_problem(self) -> None:
        assert worst_code([0, 1, 2]) == 2
        assert worst_code([0, 5, 2]) == 5
        assert worst_code([3, 1]) == 1  # a run with nothing yet is not worse than a caution
        assert worst_code([0]) == 0 and worst_code([]) == 0
        # a machine that does not answer (6), refuses the login (7) or its key (8): named,
        # not lost behind one unreadable file
        assert worst_code([5, 6, 2]) == 6 and worst_code([6, 8]) == 8 and worst_code([9, 7]) == 9


def board_app(board: Board) -> GrpoTuiApp:
    return GrpoTuiApp(board=board, now=lambda: FIXED_NOW, environ={}, title="sweep")


async def board_settled(pilot: Pilot[None], app: GrpoTuiApp, count: int) -> None:
    await wait_until(
        pilot,
        lambda: app.settled and len(app.board_screen.rows) == count,
        what=f"a settled board of {count} runs",
    )
    await pilot.pause()


async def opened(pilot: Pilot[None], app: GrpoTuiApp) -> RunScreen:
    """The run screen the board opened, once it has drawn."""
    await wait_until(
        pilot,
        lambda: isinstance(app.screen, RunScreen) and app.settled,
        what="the opened run's screen",
    )
    screen = app.screen
    assert isinstance(screen, RunScreen)
    return screen


class TestTheBoardApp:
    """Rows worst first, runs appearing, the filter, open and back."""

    async def test_rows_worst_first_and_enter_opens_the_chosen_run(self, shared: Board) -> None:
        app = board_app(shared)
        async with app.run_test(size=(80, 24)) as pilot:
            await board_settled(pilot, app, 4)
            rows = app.board_screen.rows
            ranks = [row.rank for row in rows]
            assert ranks == sorted(ranks) and rows[0].status is Status.PROBLEM
            await pilot.press("down", "enter")
            screen = await opened(pilot, app)
            assert screen.session.run.path == rows[1].ref.path
            assert shared.opened == rows[1].ref

    async def test_a_run_created_meanwhile_appears(self, sweep: Path) -> None:
        with running(board_on(sweep)) as board:
            app = board_app(board)
            async with app.run_test(size=(80, 24)) as pilot:
                await board_settled(pilot, app, 4)
                copy_run("trl-qwen35-9b-gsm8k-g3-stuck", sweep)
                await board_settled(pilot, app, 5)
                names = {row.name for row in app.board_screen.rows}
                assert "trl-qwen35-9b-gsm8k-g3-stuck" in names

    async def test_the_filter_keeps_the_matching_runs_and_esc_clears_it(
        self, judged: Board
    ) -> None:
        app = board_app(judged)
        async with app.run_test(size=(80, 24)) as pilot:
            await board_settled(pilot, app, 4)
            board = app.board_screen
            await pilot.press("slash", *"verl")
            await wait_until(pilot, lambda: len(board.rows) == 1, what="one run kept")
            assert board.rows[0].name == "verl-qwen3-8b-dapomath-grpo-A"
            await pilot.press("enter", "escape")
            await wait_until(pilot, lambda: len(board.rows) == 4, what="every run again")

    async def test_q_quits(self, judged: Board) -> None:
        app = board_app(judged)
        async with app.run_test(size=(80, 24)) as pilot:
            await board_settled(pilot, app, 4)
            await pilot.press("q")
            await wait_until(pilot, lambda: not app.is_running, what="the app ended")
        assert app.return_code == 0

    async def test_q_on_a_run_opened_from_the_board_quits_too(self, shared: Board) -> None:
        app = board_app(shared)
        async with app.run_test(size=(80, 24)) as pilot:
            await board_settled(pilot, app, 4)
            await pilot.press("enter")
            await opened(pilot, app)
            await pilot.press("q")
            await wait_until(pilot, lambda: not app.is_running, what="the app ended")

    async def test_esc_in_a_run_opened_from_the_board_goes_back(self, shared: Board) -> None:
        app = board_app(shared)
        async with app.run_test(size=(80, 24)) as pilot:
            await board_settled(pilot, app, 4)
            await pilot.press("enter")
            screen = await opened(pilot, app)
            assert "Board" in screen_text(app).splitlines()[-1]  # the way back, in the footer
            await pilot.press("slash", "x", "escape")  # esc first clears the filter typed
            await pilot.pause()
            assert app.screen is screen
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.board_screen, what="the board")
            await wait_until(pilot, lambda: shared.opened is None, what="the run released")

    def test_a_run_alone_has_no_way_back(self, sweep: Path) -> None:
        """Alone (`tail FILE`), esc only clears a filter: there is no board to go back to."""
        screen = app_for(sweep / SWEEP[0]).run_screen
        assert not screen.check_action("back", ())
        assert screen.check_action("clear_filter", ())


class TestCompareCore:
    """One step axis for every run, cells no finer than the sparsest logging, settings
    that differ and nothing else."""

    def test_cells_are_no_finer_than_the_sparsest_runs_logging(self, judged: Board) -> None:
        sweep = judged.to_compare(judged.refs)
        every_five = next(r for r in sweep if r.name == "trl-qwen7b-gsm8k-lr1e-4-collapse")
        assert logging_stride(every_five.run) == 5
        edges = step_edges([r.run for r in sweep], 200)
        assert (edges[1] - edges[0]) >= 5 and edges[0] == 1

    def test_levels_are_cell_means_and_gaps_are_nan(self) -> None:
        edges = np.array([0.0, 10.0, 20.0, 30.0])
        levels = levels_on(np.array([1.0, 5.0, 30.0]), np.array([1.0, 3.0, 7.0]), edges)
        assert levels[0] == 2.0 and np.isnan(levels[1]) and levels[2] == 7.0

    def test_only_the_settings_that_differ(self) -> None:
        one = RunContext(learning_rate=1e-6, beta=0.04, num_generations=8)
        two = RunContext(learning_rate=5e-6, beta=0.04)
        differences = setting_differences([one, two])
        assert [(d.name, d.values) for d in differences] == [
            ("num_generations", ("8", "—")),
            ("learning_rate", ("1e-6", "5e-6")),
        ]

    def test_a_comparison_of_real_runs(self, judged: Board) -> None:
        runs = judged.to_compare(judged.refs[:2])
        comparison = compare_runs(runs, Rules(), 40)
        reward = next(m for m in comparison.metrics if m.metric == "reward")
        assert [line.run for line in reward.lines] == [r.name for r in runs]
        assert all(line.levels.size == reward.lines[0].levels.size for line in reward.lines)
        series = overlay_series(runs, "reward", 40)
        assert [s.index for s in series] == [0, 1]
        assert all(np.isfinite(s.values).all() for s in series)

    def test_each_run_against_the_first_on_its_task_reward(
        self, judged: Board, shared_sweep: Path
    ) -> None:
        """The redteam run's sparse reward against the GSM8K run that collapsed: other
        rewards, said so; 0.75 apart over the steps both logged, beyond noise."""
        first, second = (RunRef(shared_sweep / name) for name in SWEEP[:2])
        comparison = compare_runs(judged.to_compare([first, second]), Rules(), 40)
        (reward,) = comparison.rewards
        assert (reward.index, reward.against, reward.run) == (1, *SWEEP[:2])
        (reading,) = reward.readings
        assert reading.describe(("run 1", "run 2")) == (
            "task reward (across different rewards): run 2 above run 1 by 0.75 ± 0.15 over "
            "steps 5–100: beyond noise (about 40 steps at this noise tell it)"
        )

    def test_the_overlay_is_drawn_on_whole_step_ticks(self, judged: Board) -> None:
        runs = judged.to_compare(judged.refs[:2])
        series = overlay_series(runs, "reward", 40)
        picture = overlay_chart("reward", series, 80, 16).plain
        x_labels = picture.splitlines()[-1].split()
        assert x_labels and all(label.isdigit() for label in x_labels)
        assert overlay_chart("reward", [], 80, 16).plain == "no run logs this metric"


class TestCompareScreen:
    """Space marks, c compares, enter charts a metric over every marked run, esc goes back."""

    async def test_mark_compare_chart_and_back(self, judged: Board) -> None:
        app = board_app(judged)
        async with app.run_test(size=(100, 30)) as pilot:
            await board_settled(pilot, app, 4)
            await pilot.press("c")  # nothing marked: said, nothing opened
            assert not isinstance(app.screen, CompareScreen)
            await pilot.press("space", "down", "space")
            board = app.board_screen
            assert board.marked == [board.rows[0].ref, board.rows[1].ref]
            await pilot.press("c")
            await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen), what="compare")
            screen = app.screen
            assert isinstance(screen, CompareScreen)
            assert screen.metric_rows[:2] == ["reward", "reward"]
            # each run after the first against it, in core's words with the runs' marks
            assert "task reward" in screen_text(app) and "run 2 " in screen_text(app)
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, OverlayScreen), what="chart")
            overlay = app.screen
            assert isinstance(overlay, OverlayScreen) and overlay.metric == "reward"
            assert len(overlay.series) == 2
            await pilot.pause()
            lines = screen_text(app).splitlines()
            # the step ticks are on screen (the legend once pushed them off the bottom)
            assert any(len(ws := ln.split()) >= 3 and all(w.isdigit() for w in ws) for ln in lines)
            assert sum("━" in line for line in lines) == 2  # the legend: a run a line
            await pilot.press("escape", "escape")
            await wait_until(pilot, lambda: len(app.screen_stack) == 1, what="the board again")


class TestBoardAlerts:
    """A run that gets worse marks its row, and the board's --on-alert command hears it."""

    def test_a_real_run_going_wrong_is_marked_and_told(self, tmp_path: Path) -> None:
        sweep = tmp_path / "sweep"
        sweep.mkdir()
        copy_run("verl-qwen3-8b-dapomath-grpo-A", sweep)
        run = copy_run("trl-qwen7b-gsm8k-lr1e-4-collapse", sweep)
        (state_file,) = run.rglob("trainer_state.json")
        whole = json.loads(state_file.read_text())
        early = dict(whole, log_history=whole["log_history"][:6])  # up to step 30
        state_file.write_text(json.dumps(early))
        told = tmp_path / "told.jsonl"
        # no gap between two events of a run: the test's two moments are a second apart
        settings = AlertSettings(
            command=f"cat >> {told}", bell=False, events=EventRules(min_gap_s=0)
        )
        board = Board([sweep], Rules(), settings=QUICK, alert_settings=settings)
        board.add(find_runs([sweep]))
        read_and_judge(board)
        assert board.observe(FIXED_NOW) == []  # the first moment is the baseline
        state_file.write_text(json.dumps(whole))  # the run goes on, and goes wrong
        read_and_judge(board)
        events = board.observe(FIXED_NOW + 1)
        assert [e.run for e in events] == [run.name] and events[0].worsening
        row = next(r for r in board.rows(FIXED_NOW) if r.ref == RunRef(run))
        assert row.alert == events[0].kind.word and row.status is Status.PROBLEM
        wait_for(lambda: told.exists() and told.read_text().count("\n") >= 1, what="the command")
        assert json.loads(told.read_text().splitlines()[0])["run"] == run.name
        # opened on its screen: the marker goes, the same detector tells its events from now
        opened = board.open(RunRef(run))
        assert opened is not None and opened.name == run.name
        assert next(r for r in board.rows(FIXED_NOW) if r.ref == RunRef(run)).alert == ""
        board.close()


async def test_hostile_run_names_reach_no_shell_and_no_terminal(tmp_path: Path) -> None:
    """A run folder named `$(touch pwned)` and one with an escape sequence: listed inert,
    nothing runs."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    for name in ("$(touch pwned)", "run\x1b]0;owned\x07"):
        shutil.copytree(CORPUS / "verl-qwen3-8b-dapomath-grpo-A", sweep / name)
    board = board_on(sweep)
    read_and_judge(board)
    app = board_app(board)
    async with app.run_test(size=(120, 24)) as pilot:
        await board_settled(pilot, app, 2)
        shown = screen_text(app)
        # side by side, and one metric charted over both: the names as inert there
        await pilot.press("space", "down", "space", "c")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen), what="compare")
        compared = screen_text(app)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, OverlayScreen), what="chart")
        await pilot.pause()
        charted = screen_text(app)
    for text in (shown, compared, charted):
        assert "$(touch pwned)" in text and "\x1b" not in text and "␛" in text
    assert not list(tmp_path.rglob("pwned")) and not Path("pwned").exists()


#: a trackio project's runs and how many steps each logged (each row must read its own)
TRACKIO_RUNS = {"lr-1e-6": 12, "lr-3e-6": 15, "lr-1e-5": 18}


@pytest.fixture(scope="module")
def trackio_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trackio folder whose one project holds three runs, written by trackio itself as
    TRL's callback logs them (one database for every run of the project)."""
    directory = tmp_path_factory.mktemp("trackio")
    writer = TrackioWriter(directory)
    try:
        for name, steps in TRACKIO_RUNS.items():
            writer.init("sweep", name)
            for step in range(1, steps + 1):
                reward = 0.2 + 0.01 * step
                writer.log(
                    {
                        "train/reward": reward,
                        "train/reward_std": 0.3,
                        "train/rewards/accuracy_reward/mean": reward,
                        "train/global_step": step,
                    }
                )
            writer.finish()
    finally:
        writer.close()
    return directory


class TestATrackioProjectsRuns:
    """One database holds every run of a trackio project: each run is a row of its own."""

    def test_each_run_of_the_project_is_a_run(self, trackio_project: Path) -> None:
        database = trackio_project / "sweep.db"
        assert find_runs([trackio_project]) == [RunRef(database, n) for n in TRACKIO_RUNS]
        assert find_runs([database]) == [RunRef(database, n) for n in TRACKIO_RUNS]
        # --run NAME: the store is the run named, not a board
        assert find_runs([trackio_project], split_stores=False) == [RunRef(trackio_project)]

    def test_check_reads_each_run_and_names_it(self, trackio_project: Path) -> None:
        out = io.StringIO()
        check_board_command(
            find_runs([trackio_project]), as_json=True, rules_file=None, now=FIXED_NOW, out=out
        )
        documents = json.loads(out.getvalue())
        assert len(documents) == len(TRACKIO_RUNS)
        read = {d["run"]["name"]: d["run"]["steps"]["last"] for d in documents}
        assert read == TRACKIO_RUNS

    async def test_the_board_shows_them_by_name_and_opens_the_one_chosen(
        self, trackio_project: Path
    ) -> None:
        board = board_on(trackio_project)
        read_and_judge(board)
        names = {row.name: row for row in board.rows(FIXED_NOW)}
        assert set(names) == set(TRACKIO_RUNS)
        assert {name: row.step for name, row in names.items()} == TRACKIO_RUNS
        app = board_app(board)
        async with app.run_test(size=(100, 24)) as pilot:
            await board_settled(pilot, app, len(TRACKIO_RUNS))
            await pilot.press("down", "enter")
            screen = await opened(pilot, app)
            chosen = app.board_screen.rows[1]
            assert chosen.ref.run == chosen.name and board.opened == chosen.ref
            # the run's own store, read by the board: its steps, nobody else's
            assert screen.session.run.store.last_step() == TRACKIO_RUNS[chosen.name]


class TestLinkedRunFolders:
    """A link to a sibling run folder (W&B's `latest-run`) is not a second run."""

    def test_latest_run_link_is_the_run_it_points_to(self, tmp_path: Path) -> None:
        from grpo_tui.sources.runs import run_folders

        for name in ("run-a", "run-b"):
            (tmp_path / name).mkdir()
        (tmp_path / "latest-run").symlink_to(tmp_path / "run-b", target_is_directory=True)
        (tmp_path / "elsewhere").symlink_to(tmp_path.parent, target_is_directory=True)
        names = sorted(p.name for p in run_folders(tmp_path))
        # the sibling link goes; a link to a folder that is not listed here stays
        assert names == ["elsewhere", "run-a", "run-b"]
