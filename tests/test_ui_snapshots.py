"""SVG snapshots of the tail app on a fixed run (real ms-swift lines) at a fixed time.

Create or refresh the baselines with `pytest tests/test_ui_snapshots.py --snapshot-update`
and look at them (tests/__snapshots__/test_ui_snapshots/) before committing.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from grpo_tui.ui.app import GrpoTuiApp
from grpo_tui.ui.widgets.completion_screen import CompletionScreen
from grpo_tui.ui.widgets.detail import DetailScreen

FIXTURE = (
    Path(__file__).parent
    / "fixtures"
    / "ms-swift"
    / "local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl"
)
COMPLETIONS = FIXTURE.with_name("local-run-msswift-4.6.0_grpo-3rewards-eval_completions.jsonl")
RUN_DIR_NAME = "v0-20261202-132949"
FIXED_MTIME = 1_700_000_000.0
FIXED_NOW = FIXED_MTIME + 42

SnapCompare = Callable[..., bool]


@pytest.fixture
def fixed_run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "output" / RUN_DIR_NAME
    run_dir.mkdir(parents=True)
    log = run_dir / "logging.jsonl"
    shutil.copy(FIXTURE, log)
    os.utime(log, (FIXED_MTIME, FIXED_MTIME))
    return tmp_path / "output"


@pytest.fixture
def run_with_completions(fixed_run: Path) -> Path:
    shutil.copy(COMPLETIONS, fixed_run / RUN_DIR_NAME / "completions.jsonl")
    return fixed_run


def make_app(path: Path, theme: str | None = None) -> GrpoTuiApp:
    # no cycling through groups: a snapshot is one fixed moment
    return GrpoTuiApp(path, theme=theme, now=lambda: FIXED_NOW, environ={}, cycle_seconds=3600)


async def settled(pilot: Pilot[None]) -> None:
    app = pilot.app
    assert isinstance(app, GrpoTuiApp)
    deadline = time.monotonic() + 20
    while not (app.run_state.version > 0 and app.settled):
        assert time.monotonic() < deadline, "the app did not settle"
        await pilot.pause(0.05)
    await pilot.pause(0.1)


def then(*keys: str, screen: type | None = None) -> Callable[[Pilot[None]], object]:
    async def run_before(pilot: Pilot[None]) -> None:
        await settled(pilot)
        await pilot.press(*keys)
        deadline = time.monotonic() + 10
        while screen is not None and not isinstance(pilot.app.screen, screen):
            assert time.monotonic() < deadline
            await pilot.pause(0.05)
        await pilot.pause(0.3)

    return run_before


def test_main_80x24(snap_compare: SnapCompare, fixed_run: Path) -> None:
    assert snap_compare(make_app(fixed_run), terminal_size=(80, 24), run_before=settled)


def test_main_160x48(snap_compare: SnapCompare, fixed_run: Path) -> None:
    assert snap_compare(make_app(fixed_run), terminal_size=(160, 48), run_before=settled)


def test_diagnosis_tab_80x24(snap_compare: SnapCompare, fixed_run: Path) -> None:
    assert snap_compare(make_app(fixed_run), terminal_size=(80, 24), run_before=then("2"))


def test_detail_80x24(snap_compare: SnapCompare, fixed_run: Path) -> None:
    # clipped_ratio: zone bands and the truncation onset on the chart
    keys = ("j",) * 6 + ("enter",)
    assert snap_compare(
        make_app(fixed_run), terminal_size=(80, 24), run_before=then(*keys, screen=DetailScreen)
    )


def test_mono_80x24(snap_compare: SnapCompare, fixed_run: Path) -> None:
    assert snap_compare(
        make_app(fixed_run, theme="mono"), terminal_size=(80, 24), run_before=settled
    )


def test_completions_80x24(snap_compare: SnapCompare, run_with_completions: Path) -> None:
    # the newest group of a real run: folded prompt, rewards, signed advantages, text
    assert snap_compare(
        make_app(run_with_completions), terminal_size=(80, 24), run_before=then("3")
    )


def test_completions_wide_160x48(snap_compare: SnapCompare, run_with_completions: Path) -> None:
    # wide: grid and diagnosis above, the completions below without switching panes
    assert snap_compare(
        make_app(run_with_completions), terminal_size=(160, 48), run_before=then("3", "n")
    )


def test_completion_screen_80x24(snap_compare: SnapCompare, run_with_completions: Path) -> None:
    assert snap_compare(
        make_app(run_with_completions),
        terminal_size=(80, 24),
        run_before=then("3", "down", "enter", screen=CompletionScreen),
    )
