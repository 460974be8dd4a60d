"""SVG snapshots of the board (80×24, 120×40, 160×48: issue 45) and of a comparison (issue
24), on real corpus runs laid out as a sweep, at a fixed time. Refresh with
`--snapshot-update` and look at them."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import BOARD_SWEEP, FIXED_MTIME, wait_until
from textual.pilot import Pilot

from grpo_tui.health.rules import Rules
from grpo_tui.monitor.board import Board, BoardSettings
from grpo_tui.sources.runs import find_runs
from grpo_tui.ui.app import GrpoTuiApp
from grpo_tui.ui.screens.compare import CompareScreen

CORPUS = Path(__file__).parent / "corpus"
SWEEP = BOARD_SWEEP

SnapCompare = Callable[..., bool]


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Board:
    """The sweep's runs at a fixed time, read and diagnosed once."""
    folder = tmp_path_factory.mktemp("snap") / "sweep"
    folder.mkdir()
    for name in SWEEP:
        run = folder / name
        shutil.copytree(CORPUS / name, run)
        for path in [run, *run.rglob("*")]:
            os.utime(path, (FIXED_MTIME, FIXED_MTIME))
    board = Board([folder], Rules(), settings=BoardSettings())
    board.add(find_runs([folder]))
    while board.read_all():
        board.take_inbox()
    board.take_inbox()
    while (chosen := board.next_diagnosis()) is not None:
        board.diagnosed(*chosen[:1], chosen[1]())
    return board


def make_app(board: Board) -> GrpoTuiApp:
    return GrpoTuiApp(board=board, now=lambda: FIXED_MTIME + 42, environ={}, title="sweep/")


def then(*keys: str, compare: bool = False) -> Callable[[Pilot[None]], object]:
    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, GrpoTuiApp)
        await wait_until(
            pilot, lambda: app.settled and len(app.board_screen.rows) == 5, what="the board"
        )
        await pilot.press(*keys)
        if compare:
            await wait_until(
                pilot, lambda: isinstance(app.screen, CompareScreen), what="the comparison"
            )
        await pilot.pause()

    return run_before


class TestBoardSnapshots:
    """The board and a comparison of two runs, narrow and wide."""

    def test_board_80x24(self, snap_compare: SnapCompare, judged: Board) -> None:
        assert snap_compare(make_app(judged), terminal_size=(80, 24), run_before=then())

    def test_board_120x40(self, snap_compare: SnapCompare, judged: Board) -> None:
        assert snap_compare(make_app(judged), terminal_size=(120, 40), run_before=then())

    def test_board_160x48(self, snap_compare: SnapCompare, judged: Board) -> None:
        assert snap_compare(make_app(judged), terminal_size=(160, 48), run_before=then())

    def test_compare_80x24(self, snap_compare: SnapCompare, judged: Board) -> None:
        keys = ("space", "down", "space", "c")
        assert snap_compare(
            make_app(judged), terminal_size=(80, 24), run_before=then(*keys, compare=True)
        )

    def test_compare_160x48(self, snap_compare: SnapCompare, judged: Board) -> None:
        keys = ("space", "down", "down", "space", "c")
        assert snap_compare(
            make_app(judged), terminal_size=(160, 48), run_before=then(*keys, compare=True)
        )
