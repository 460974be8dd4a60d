"""Every output path, fed a hostile run: nothing that reaches the terminal can act.

Metric names, values, paths, bad-line excerpts and args.json fields come from files. The
run built by `hostile.hostile_run` puts the hostile corpus in all of them; each test reads
what one output path writes and finds no control, bidi or zero-width character in it (the
renderer's own colour and cursor sequences aside), while the JSON outputs still hold every
hostile string whole.
"""

from __future__ import annotations

import io
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import HOSTILE, file_safe, hostile_run, leaks, settle, terminal_leaks, wait_for
from rich.console import Console
from textual.screen import Screen

from grpo_tui.commands.check import check_command, rules_command
from grpo_tui.commands.inspect import inspect_command
from grpo_tui.commands.output import print_renderable
from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.ui.app import GrpoTuiApp
from grpo_tui.ui.screens.detail import DetailScreen
from grpo_tui.ui.screens.help import HelpScreen
from grpo_tui.ui.widgets.metric_grid import MetricGrid
from grpo_tui.untrusted import json_dumps, printable
from grpo_tui.views.report import render_check

FIXED_NOW = 1_900_000_000.0


pytestmark = pytest.mark.usefixtures("no_user_rules")


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return hostile_run(tmp_path)


# -- the sanitiser itself ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_printable_makes_every_hostile_string_inert_and_visible(name: str) -> None:
    text = HOSTILE[name]
    shown = printable(text)
    assert leaks(shown) == []
    assert leaks(printable(text, single_line=False).replace("\n", "")) == []
    if "\x1b" in text:
        assert "␛" in shown  # visible, not dropped


def test_json_dumps_escapes_but_loses_nothing() -> None:
    text = json_dumps(HOSTILE)
    assert leaks(text) == []
    assert json.loads(text) == HOSTILE


# -- check ------------------------------------------------------------------------------


def test_check_text_is_inert(hostile: Path) -> None:
    out = io.StringIO()
    check_command(hostile, as_json=False, rules_file=None, width=100, now=FIXED_NOW, out=out)
    text = out.getvalue()
    assert leaks(text) == []
    assert "␛" in text  # the hostile keys are there, visibly


def test_check_on_a_terminal_writes_only_its_own_colours(hostile: Path) -> None:
    """On a terminal Rich writes colour sequences; the hostile ones must not get through."""
    run = load_run(hostile)
    out = io.StringIO()
    report = render_check(run, diagnose(run, Rules()), Rules(), now=FIXED_NOW)
    print_renderable(report, width=100, file=out, force_terminal=True)
    assert "\x1b[" in out.getvalue()  # the report's own colours are there
    assert terminal_leaks(out.getvalue()) == []


def test_check_json_holds_every_string_whole_and_inert(
    hostile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check_command(hostile, as_json=True, rules_file=None, now=FIXED_NOW)
    text = capsys.readouterr().out
    assert leaks(text) == []
    data = json.loads(text)
    notes = " ".join(data["run"]["notes"])
    assert "beta" in notes and "not a usable number" in notes


# -- inspect ----------------------------------------------------------------------------


def test_inspect_text_is_inert(hostile: Path) -> None:
    out = io.StringIO()
    inspect_command(hostile, as_json=False, follow=False, out=out)
    text = out.getvalue()
    assert leaks(text) == []
    assert "␛" in text


def test_inspect_json_keeps_the_hostile_keys(hostile: Path) -> None:
    out = io.StringIO()
    inspect_command(hostile, as_json=True, follow=False, out=out)
    assert leaks(out.getvalue()) == []
    data = json.loads(out.getvalue())
    for text in HOSTILE.values():
        assert text in data["metrics"] or f"rewards/{file_safe(text)}/mean" in data["metrics"]
    assert data["context"]["model"] == HOSTILE["osc52_clipboard"]
    assert any(HOSTILE["csi_clear"] in bad["text"] for bad in data["bad_line_examples"])


class _StopAfterBatch(io.StringIO):
    """An output that ends `inspect --follow` (as Ctrl-C would) once a batch line arrived."""

    def flush(self) -> None:
        if "rows (total" in self.getvalue():
            raise KeyboardInterrupt


def test_inspect_follow_lines_are_inert(hostile: Path) -> None:
    """`inspect --follow` prints a line per batch, with events that quote file names."""
    log = next(hostile.glob("v*/logging.jsonl"))
    first = log.read_text(encoding="utf-8").splitlines()[0]

    def append_later() -> None:
        # once the first report is out, inspect follows: what comes now is a new batch
        wait_for(out.getvalue, what="the first report")
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(first.replace('"1/', '"99/') + "\n")
            handle.write("{bad " + HOSTILE["osc_title_bel"] + "\n")

    out = _StopAfterBatch()
    threading.Thread(target=append_later, daemon=True).start()
    inspect_command(hostile, as_json=False, follow=True, out=out)
    text = out.getvalue()
    assert "+2 rows" in text or "+1 rows" in text
    assert leaks(text) == []


# -- rules and messages -----------------------------------------------------------------


def test_rules_output_and_warnings_are_inert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules_file = tmp_path / "rules.toml"
    # TOML escapes: the parsed strings hold ESC and BEL
    rules_file.write_text(
        "[rewards]\n"
        'task_patterns = ["acc\\u001b]0;HACKED\\u0007"]\n'
        '"bad\\u001b[2Jkey" = 1\n'
        "[window]\n"
        'points = "\\u001b]52;c;SGFja2Vk\\u0007"\n',
        encoding="utf-8",
    )
    assert rules_command(rules_file) == 0
    captured = capsys.readouterr()
    assert leaks(captured.out) == [] and leaks(captured.err) == []
    assert "unknown key" in captured.err and "␛" in captured.err
    assert "\\u001b" in captured.out  # the pattern written back as the escape it was


# -- the live monitor -------------------------------------------------------------------


def _terminal_output(app: GrpoTuiApp) -> str:
    """The bytes the compositor would write for the whole screen (as a screenshot does).
    Textual has no public call for them (export_screenshot gives SVG, which escapes what
    this test looks for), so this asks its compositor, as export_screenshot itself does."""
    console = Console(
        width=app.size.width,
        height=app.size.height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    file = console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


def showing(app: GrpoTuiApp, screen: type[Screen[None]] | None) -> Callable[[], bool]:
    """Whether `screen` is the app's screen now (None: any screen will do)."""
    return lambda: screen is None or isinstance(app.screen, screen)


class TestTheLiveMonitor:
    """Every pane and screen of the live monitor draws the hostile run inert."""

    async def test_every_pane_of_the_live_monitor_is_inert(self, hostile: Path) -> None:
        app = GrpoTuiApp(hostile, now=lambda: FIXED_NOW, environ={}, watch_files=False)
        async with app.run_test(size=(160, 60)) as pilot:
            await settle(pilot, app)
            seen = []
            for keys, screen in (
                ((), None),
                (("2",), None),
                (("1", "enter"), DetailScreen),
                (("escape", "question_mark"), HelpScreen),
            ):
                await pilot.press(*keys)
                await settle(
                    pilot,
                    app,
                    showing(app, screen),
                    what=f"the screen after {keys}",
                )
                output = _terminal_output(app)
                assert terminal_leaks(output) == [], keys
                seen.append(output)
            # the hostile names are on screen, visibly
            assert any("␛" in output for output in seen)
            await pilot.press("escape", "slash", *"out")
            grid = app.run_screen.query_one(MetricGrid)
            await settle(pilot, app, lambda: grid.filter == "out", what="the grid filtered")
            assert terminal_leaks(_terminal_output(app)) == []


def test_nothing_leaks_through_stderr_messages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing rules file named with escapes: the message quotes the name, inert."""
    name = tmp_path / file_safe("rules" + HOSTILE["csi_clear"] + ".toml")
    assert check_command(tmp_path, as_json=False, rules_file=name) == 4
    err = capsys.readouterr().err
    assert "␛" in err and leaks(err) == []
    assert sys.stderr is not None
