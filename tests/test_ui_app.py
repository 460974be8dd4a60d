"""Pilot tests of the live tail app on real ms-swift lines (App.run_test, headless)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from grpo_tui.context import RunContext
from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import RunFollower, load_run
from grpo_tui.sim import write_run
from grpo_tui.ui.app import GrpoTuiApp
from grpo_tui.ui.widgets.detail import DetailScreen
from grpo_tui.ui.widgets.frame import MetricsFrame
from grpo_tui.ui.widgets.header import RunHeader
from grpo_tui.ui.widgets.help import HelpScreen
from grpo_tui.ui.widgets.metric_grid import MetricGrid
from grpo_tui.vocabulary import RunState

FIXTURE = (
    Path(__file__).parent
    / "fixtures"
    / "ms-swift"
    / "local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl"
)
COMPLETIONS_FIXTURE = FIXTURE.with_name(
    "local-run-msswift-4.6.0_grpo-3rewards-eval_completions.jsonl"
)
RUN_DIR_NAME = "v0-20261202-132949"
FIXED_MTIME = 1_700_000_000.0


def fixture_lines() -> list[str]:
    return FIXTURE.read_text(encoding="utf-8").splitlines(keepends=True)


def make_run(tmp_path: Path, lines: list[str], *, mtime: float | None = None) -> Path:
    """An ms-swift output dir holding one run dir whose logging.jsonl has `lines`."""
    run_dir = tmp_path / "output" / RUN_DIR_NAME
    run_dir.mkdir(parents=True)
    log = run_dir / "logging.jsonl"
    log.write_text("".join(lines), encoding="utf-8")
    if mtime is not None:
        os.utime(log, (mtime, mtime))
    return tmp_path / "output"


def train_line(step: int, reward: float) -> str:
    """A real train line of the fixture, re-stamped with another step and reward."""
    record = json.loads(fixture_lines()[0])
    record["global_step/max_steps"] = f"{step}/6"
    record["reward"] = reward
    return json.dumps(record) + "\n"


def append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()


async def settle(
    pilot: Pilot[None],
    app: GrpoTuiApp,
    until: Callable[[], bool] = lambda: True,
    timeout: float = 15,
) -> None:
    """Wait until the run was read, diagnosed and drawn, and `until()` holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if app.run_state.version > 0 and app.settled and until():
            await pilot.pause(0.05)
            return
    raise AssertionError("the app did not reach the expected state in time")


async def wait_until(
    pilot: Pilot[None], condition: Callable[[], bool], timeout: float = 15
) -> None:
    """Let the app run until `condition()` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the expected state never came")
        await pilot.pause(0.02)


def screen_text(app: GrpoTuiApp) -> str:
    """What the terminal shows, as plain text lines (from the SVG screenshot)."""
    svg = app.export_screenshot()
    lines: dict[int, list[tuple[float, str]]] = {}
    for match in re.finditer(
        r'<text class="[^"]*" x="([\d.]+)" y="[\d.]+" textLength="[\d.]+" clip-path="url\(#[\w-]+?-line-(\d+)\)">(.*?)</text>',
        svg,
    ):
        x, line, content = float(match.group(1)), int(match.group(2)), match.group(3)
        lines.setdefault(line, []).append((x, html.unescape(content).replace("\xa0", " ")))
    return "\n".join("".join(part for _, part in sorted(lines[n])) for n in sorted(lines))


def grid_row_text(app: GrpoTuiApp, name: str) -> str:
    grid = app.main_screen.query_one(MetricGrid)
    row = grid.row(name)
    assert row is not None, f"{name} not drawn"
    return row.value_text


@pytest.fixture
def finished_run(tmp_path: Path) -> Path:
    return make_run(tmp_path, fixture_lines(), mtime=FIXED_MTIME)


def app_for(path: Path, **kwargs: object) -> GrpoTuiApp:
    kwargs.setdefault("now", lambda: FIXED_MTIME + 42)
    kwargs.setdefault("environ", {})
    return GrpoTuiApp(path, **kwargs)  # type: ignore[arg-type]


# -- what is shown ----------------------------------------------------------------------


async def test_grid_lists_grpo_signals_first(finished_run: Path) -> None:
    app = app_for(finished_run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        names = app.main_screen.query_one(MetricGrid).names
    assert names[:8] == [
        "reward",
        "reward_std",
        "frac_reward_zero_std",
        "clip_ratio",
        "kl",
        "completion_length",
        "clipped_ratio",
        "entropy",
    ]
    assert names[8:11] == [
        "rewards/Format/mean",
        "rewards/LengthBonus/mean",
        "rewards/CoinFlip/mean",
    ]
    assert names[11] == "eval_reward"
    assert (
        names.index("loss")
        < names.index("grad_norm")
        < names.index("learning_rate")
        < names.index("epoch")
    )
    # never-logged metrics are not listed
    assert "memory" not in names


async def test_header_shows_progress_and_finished(finished_run: Path) -> None:
    app = app_for(finished_run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        view = app.main_screen.query_one(RunHeader).view
        text = screen_text(app)
    assert view is not None and view.state is RunState.FINISHED
    assert "FINISHED" in text
    assert f"{RUN_DIR_NAME}/logging.jsonl (ms-swift)" in text
    assert "step 6/6 100%" in text
    assert "last data 42s ago" in text
    assert "0 bad lines" in text


async def test_diagnosis_panel_is_the_check_engine(finished_run: Path) -> None:
    expected = diagnose(load_run(finished_run), Rules())
    app = app_for(finished_run)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        text = screen_text(app)
        assert app.session.diagnosis is not None
        assert [s.id.word for s in app.session.diagnosis.scenarios] == [
            s.id.word for s in expected.scenarios
        ]
    for scenario in expected.scenarios:
        assert scenario.title in text
    assert "Checklist" in text
    assert "1. Is reward rising?" in text


async def test_completions_pane_follows_the_completions_file(tmp_path: Path) -> None:
    """Without completions the pane says how to log them; once the file is there, the
    newest group shows (tests/test_ui_completions.py has the panel's own tests)."""
    output = make_run(tmp_path, fixture_lines(), mtime=FIXED_MTIME)
    app = app_for(output)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        assert "No completions logged yet." in screen_text(app)
        shutil.copy(COMPLETIONS_FIXTURE, output / RUN_DIR_NAME / "completions.jsonl")
        app._reader.wake()
        await settle(pilot, app, lambda: app.run_state.samples is not None)
        text = screen_text(app)
    assert "No completions logged yet." not in text
    assert "step 6 eval / end · group" in text
    assert "samples/overlap_3gram" in text  # the samples' statistics join the grid


# -- keys -------------------------------------------------------------------------------


async def test_q_quits(finished_run: Path) -> None:
    app = app_for(finished_run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("q")
        assert app._exit  # no pause after this: the app's message loop is ending


async def test_help_lists_every_key_and_closes(finished_run: Path) -> None:
    app = app_for(finished_run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
        for keys, description in [
            ("q", "Quit"),
            ("?", "Help"),
            ("/", "Filter"),
            ("p", "Pause"),
            ("t", "Theme"),
            ("enter", "Detail"),
            ("esc", "Back"),
            ("esc", "Clear filter"),
            ("tab / shift+tab", "focus"),
            ("↑ / k", "Up"),
            ("↓ / j", "Down"),
            ("ctrl+p", "Command palette"),
        ]:
            assert re.search(rf"{re.escape(keys)}\s+.*{description}", text, re.IGNORECASE), (
                keys,
                description,
            )
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_j_k_and_arrows_move_the_cursor(finished_run: Path) -> None:
    app = app_for(finished_run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        grid = app.main_screen.query_one(MetricGrid)
        assert grid.has_focus and grid.selected == "reward"
        await pilot.press("j", "j")
        assert grid.selected == "frac_reward_zero_std"
        await pilot.press("k")
        assert grid.selected == "reward_std"
        await pilot.press("down", "down", "up")
        assert grid.selected == "frac_reward_zero_std"
        await pilot.press("end")
        assert grid.selected == grid.names[-1]
        await pilot.press("home")
        assert grid.selected == "reward"


async def test_tab_moves_focus(finished_run: Path) -> None:
    app = app_for(finished_run)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        grid = app.main_screen.query_one(MetricGrid)
        assert app.focused is grid
        await pilot.press("tab")
        assert app.focused is not grid and app.focused is not None
        assert app.focused.id == "diagnosis-pane"
        await pilot.press("shift+tab")
        assert app.focused is grid


async def test_enter_opens_the_detail_chart_and_escape_returns(finished_run: Path) -> None:
    app = app_for(finished_run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("j", "j", "j", "j", "j", "j")  # clipped_ratio: a metric with bands
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert isinstance(app.screen, DetailScreen)
        assert app.screen.metric == "clipped_ratio"
        text = screen_text(app)
        assert "clipped_ratio" in text
        assert "bad > 0.5" in text  # the zone band, from zone_bands
        assert "┤" in text  # plotext's y axis
        # four points: warming up, so no verdict's onset to mark yet
        assert "from step" not in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, DetailScreen)
        assert app.main_screen.query_one(MetricGrid).has_focus


async def test_the_detail_chart_marks_a_verdicts_onset(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "output", "truncation", seed=1)
    app = app_for(run_dir, now=time.time)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("slash")
        await pilot.press(*"clipped_ratio", "enter")
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert isinstance(app.screen, DetailScreen) and app.screen.metric == "clipped_ratio"
        assert re.search(r"Truncation from step \d+", screen_text(app))


async def test_a_cap_given_on_the_command_line_reaches_the_live_diagnosis(tmp_path: Path) -> None:
    run_dir = tmp_path / "trl"
    run_dir.mkdir()
    state = (
        Path(__file__).parent
        / "fixtures"
        / "trl"
        / "local-run-trl1.16.0-tf5.20.0_trainer_state.json"
    )
    (run_dir / "trainer_state.json").write_bytes(state.read_bytes())
    app = app_for(run_dir, given=RunContext(max_completion_length=64))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        assert app.run_state.context.max_completion_length == 64
        assert app.session.diagnosis is not None
        assert "cap 64, from the command line" in app.session.diagnosis.checklist[4].evidence


async def test_filter_narrows_the_grid(finished_run: Path) -> None:
    app = app_for(finished_run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        grid = app.main_screen.query_one(MetricGrid)
        await pilot.press("slash")
        box = app.main_screen.query_one("#filter", Input)
        assert box.display and box.has_focus
        await pilot.press("k", "l")
        assert grid.names and all("kl" in name for name in grid.names)
        assert grid.names[0] == "kl"
        await pilot.press("enter")
        assert grid.has_focus and not box.display
        assert grid.filter == "kl"
        assert "filter: kl" in screen_text(app)
        await pilot.press("escape")
        assert grid.filter == ""
        assert grid.names[0] == "reward"


async def test_pause_holds_one_moment_but_keeps_reading(tmp_path: Path) -> None:
    """Paused, every pane shows the moment of the pause: lines go on being read (the header
    counts them) and arrive on screen together when unpaused, a resize included."""
    output = make_run(tmp_path, fixture_lines()[:2])
    log = output / RUN_DIR_NAME / "logging.jsonl"
    app = app_for(output, now=time.time)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        before = grid_row_text(app, "reward")
        await pilot.press("p")
        assert "PAUSED" in screen_text(app)
        append(log, train_line(4, 0.777))
        await wait_until(pilot, lambda: app.session.held_back_rows > 0)
        assert app.session.held_back_rows == 1  # read while paused
        assert app.run_state.store.last("reward") == (2.0, 1.48749995)  # the paused moment
        grid = app.main_screen.query_one(MetricGrid)
        layout = grid.row_layout
        await pilot.resize_terminal(100, 30)  # a resize redraws: from the paused moment
        await wait_until(
            pilot, lambda: grid.row_layout != layout and grid.row("reward") is not None
        )
        assert grid_row_text(app, "reward") == before
        assert "PAUSED · 1 new line" in screen_text(app)
        await pilot.press("p")
        await settle(pilot, app, lambda: grid_row_text(app, "reward") == "0.777")
        assert "PAUSED" not in screen_text(app)


async def test_pause_holds_the_moment_the_run_is_at(tmp_path: Path) -> None:
    """Data in the Run whose frame is still owed (frames are paced) is drawn as the pause
    begins: a resize during the pause cannot show a batch the paused screen never had."""
    output = make_run(tmp_path, fixture_lines()[:2])
    log = output / RUN_DIR_NAME / "logging.jsonl"
    app = app_for(output, now=time.time)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        grid = app.main_screen.query_one(MetricGrid)
        app._frames.done(3600)  # the next frame is owed for an hour: data goes in undrawn
        append(log, train_line(4, 0.777))
        await wait_until(pilot, lambda: app.run_state.store.last_step() == 4.0)
        assert grid_row_text(app, "reward") == "1.487"  # in the Run, not on screen yet
        await pilot.press("p")
        assert grid_row_text(app, "reward") == "0.777"  # the moment of the pause
        layout = grid.row_layout
        await pilot.resize_terminal(100, 30)
        await wait_until(
            pilot, lambda: grid.row_layout != layout and grid.row("reward") is not None
        )
        assert grid_row_text(app, "reward") == "0.777"
        assert "PAUSED" in screen_text(app)


async def test_t_cycles_themes(finished_run: Path) -> None:
    app = app_for(finished_run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        seen = [app.theme]
        for _ in range(4):
            await pilot.press("t")
            await pilot.pause()
            seen.append(app.theme)
        assert seen == ["default", "light", "colorblind", "mono", "default"]
        await pilot.press("t", "t")
        await pilot.pause(0.2)
        grid = app.main_screen.query_one(MetricGrid)
        # the grid draws with the current theme's zone colours
        assert grid._source is not None and grid._source.palette is app.theme_spec.palette


async def test_no_color_selects_mono_and_theme_flag_wins(finished_run: Path) -> None:
    assert GrpoTuiApp(finished_run, environ={"NO_COLOR": "1"})._start_theme == "mono"
    assert (
        GrpoTuiApp(finished_run, theme="colorblind", environ={"NO_COLOR": "1"})._start_theme
        == "colorblind"
    )
    assert GrpoTuiApp(finished_run, environ={})._start_theme == "default"


async def test_command_palette_lists_every_action(finished_run: Path) -> None:
    app = app_for(finished_run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        titles = [command.title for command in app.get_system_commands(app.screen)]
    for title in (
        "Quit",
        "Help",
        "Filter",
        "Pause",
        "Theme",
        "Detail",
        "Metrics",
        "Diagnosis",
        "Completions",
    ):
        assert title in titles


async def test_narrow_layout_switches_panes(finished_run: Path) -> None:
    app = app_for(finished_run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        screen = app.main_screen
        diagnosis = screen.query_one("#diagnosis-pane")
        grid = screen.query_one(MetricGrid)
        assert grid.display and not diagnosis.display
        await pilot.press("2")
        await pilot.pause()
        assert diagnosis.display and not screen.query_one("#metrics-pane").display
        assert "Truncation" in screen_text(app)
        await pilot.press("1")
        await pilot.pause()
        assert grid.display


async def test_wide_layout_shows_everything(finished_run: Path) -> None:
    app = app_for(finished_run)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        screen = app.main_screen
        assert not screen.query_one("#panel-tabs").display
        grid, diagnosis = screen.query_one(MetricGrid), screen.query_one("#diagnosis-pane")
        assert grid.region.x < diagnosis.region.x  # grid left, diagnosis right
        assert screen.query_one("#completions-pane").region.y > grid.region.y


# -- live -------------------------------------------------------------------------------


async def test_lines_read_before_the_screen_mounts_are_in_its_first_frame(
    finished_run: Path, tmp_path: Path
) -> None:
    """The reader starts when the app loads; what it hands over before the screen is
    mounted is drawn by the first frame (not an empty frame, then a second one)."""
    early = RunFollower(finished_run, newest_first=True).read()
    # the app's own reader finds nothing: only the early hand-off can fill the grid
    app = app_for(finished_run, follower=RunFollower(tmp_path / "absent"), watch_files=False)
    app.session.deliver(early)  # as the reader thread does before on_mount
    drawn_rows: list[int] = []
    show = app._metrics.show

    def recording_show(source: MetricsFrame) -> None:
        drawn_rows.append(len(source.store))
        show(source)

    app._metrics.show = recording_show  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert grid_row_text(app, "reward") == "1.506"
    assert drawn_rows[0] == len(load_run(finished_run).store) > 0


async def test_appended_lines_reach_the_screen(tmp_path: Path) -> None:
    output = make_run(tmp_path, fixture_lines()[:2])
    log = output / RUN_DIR_NAME / "logging.jsonl"
    app = app_for(output, now=time.time)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert grid_row_text(app, "reward") == "1.487"
        append(log, train_line(4, 0.777))
        await settle(pilot, app, lambda: grid_row_text(app, "reward") == "0.777")
        assert "0.777" in screen_text(app)
        assert "step 4/6" in screen_text(app)
        # half a line waits for the rest
        line = train_line(5, 0.555)
        append(log, line[:40])
        await pilot.pause(1.5)
        assert grid_row_text(app, "reward") == "0.777"
        append(log, line[40:])
        await settle(pilot, app, lambda: grid_row_text(app, "reward") == "0.555")


async def test_stalled_run_says_stalled(tmp_path: Path) -> None:
    mtime = time.time() - 3600
    # up to step 4 of 6, no end line: not finished
    output = make_run(tmp_path, fixture_lines()[:4], mtime=mtime)
    app = app_for(output, now=time.time)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        view = app.main_screen.query_one(RunHeader).view
        assert view is not None and view.state is RunState.STALLED
        assert "STALLED: no data for 1h00m" in screen_text(app)


async def test_live_run_is_not_stalled(tmp_path: Path) -> None:
    output = make_run(tmp_path, fixture_lines()[:4], mtime=FIXED_MTIME)
    app = app_for(output, now=lambda: FIXED_MTIME + 30)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        view = app.main_screen.query_one(RunHeader).view
        assert view is not None and view.state is RunState.LIVE
        assert "LIVE" in screen_text(app)


async def test_truncated_file_is_followed(tmp_path: Path) -> None:
    output = make_run(tmp_path, fixture_lines()[:5])
    log = output / RUN_DIR_NAME / "logging.jsonl"
    app = app_for(output, now=time.time)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert app.run_state.store.last_step() == 6.0
        # the trainer restarts: the file is truncated and written again from step 1
        log.write_text(train_line(1, 0.111) + train_line(2, 0.222), encoding="utf-8")
        await settle(pilot, app, lambda: grid_row_text(app, "reward") == "0.222")
        store = app.run_state.store
        assert store.last_step() == 2.0  # the old history from step 1 on was replaced
        assert store.points("reward").values.tolist() == [0.111, 0.222]
        assert "step 2/6" in screen_text(app)


async def test_untrusted_metric_names_are_drawn_inert(tmp_path: Path) -> None:
    record = json.loads(fixture_lines()[0])
    record["\x1b[31mevil[/]\x07"] = 1.5
    output = make_run(tmp_path, [json.dumps(record) + "\n"])
    app = app_for(output, now=time.time)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        grid = app.main_screen.query_one(MetricGrid)
        grid.set_filter("evil")
        await pilot.pause(0.1)
        if grid.names:  # the adapter may keep or drop unknown keys; if kept, it is inert
            strip = grid.render_line(0)
            assert "\x1b" not in strip.text and "\x07" not in strip.text
            assert "evil[/]" in strip.text
