"""The live `tail` app: header, metric grid, diagnosis and the completions panel.

How data flows:
- Core's follow loop reads the run in a daemon thread (`FollowLoop`: time-boxed reads, ~1 s
  apart, woken early by watchdog events; quitting never waits for it: a read stuck on a
  hung mount cannot hold the exit) and hands what it reads to the run's Session.
- The Session (grpo_tui/session.py) owns what happens between the reader and the screen:
  the first frame's data, pause and merge (every pane shows one moment), when to diagnose.
  The app composes, binds keys and draws, and forwards to it; the diagnosis runs in a
  worker thread when the session says so.
- A frame is drawn only when the session's moment (or the theme) changed: at once unless a
  frame was drawn less than a frame budget ago (0.1 s, longer when frames are slow), and
  each widget redraws only what changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.events import Key, Resize
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Tab, Tabs

from grpo_tui.alerts import AlertSettings, RunAlerts, command_sink
from grpo_tui.context import RunContext
from grpo_tui.health.rules import Rules
from grpo_tui.presentation import DEFAULT_CYCLE_S, verdict_line
from grpo_tui.run.follow import FollowLoop, RunFollower
from grpo_tui.run.live import Run
from grpo_tui.run.update import Update
from grpo_tui.session import (
    DIAGNOSIS_INTERVAL_S,
    Applied,
    DiagnosisJob,
    DiagnosisResult,
    Notice,
    Pacer,
    Session,
)
from grpo_tui.ui.base_app import GrpoApp
from grpo_tui.ui.completion_rows import CompletionsSource
from grpo_tui.ui.widgets.chart import warm_up
from grpo_tui.ui.widgets.completions import CompletionsPanel
from grpo_tui.ui.widgets.detail import DetailScreen
from grpo_tui.ui.widgets.diagnosis import DiagnosisPanel, diagnosis_summary
from grpo_tui.ui.widgets.header import RunHeader, header_view
from grpo_tui.ui.widgets.help import HelpScreen, help_notes, help_text, key_rows
from grpo_tui.ui.widgets.metric_grid import MetricGrid
from grpo_tui.ui.widgets.metric_rows import MetricsFrame
from grpo_tui.ui.widgets.metrics_pane import MetricsPane

#: at most ~10 frames a second (slow frames are spaced further: session.Pacer); a frame is
#: drawn only when something changed (new data, a diagnosis, a theme), never on a timer
FRAME_INTERVAL_S = 0.1
#: the header's clock ("last data 3s ago", "STALLED") is the one thing time alone changes
CLOCK_INTERVAL_S = 1.0
#: wide layout (grid and diagnosis side by side) from this many columns
WIDE_COLUMNS = 140
PANES = ("metrics", "diagnosis", "completions")


class GrpoTuiApp(GrpoApp[None]):
    """Follows one PATH (a logging.jsonl, a run dir or an output dir) live."""

    TITLE = "grpo-tui"
    CSS_PATH: ClassVar[list[str | PurePath]] = ["toast.tcss", "app.tcss"]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        # a monitor ends on Ctrl-C like any terminal program (Textual's default only hints)
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Help"),
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("p", "toggle_pause", "Pause"),
        Binding("t", "cycle_theme", "Theme"),
        Binding("1", "show_pane('metrics')", "Metrics", show=False),
        Binding("2", "show_pane('diagnosis')", "Diagnosis", show=False),
        Binding("3", "show_pane('completions')", "Completions", show=False),
    ]

    @dataclass
    class FromReader(Message):
        """What the run's reader handed on through the session: data or a notice."""

        item: Update | Notice

    @dataclass
    class Diagnosed(Message):
        """A diagnosis of the run, from the diagnosis worker."""

        result: DiagnosisResult

    def __init__(
        self,
        path: Path,
        *,
        theme: str | None = None,
        rules: Rules | None = None,
        now: Callable[[], float] = time.time,
        environ: Mapping[str, str] | None = None,
        watch_files: bool = True,
        follower: RunFollower | None = None,
        given: RunContext | None = None,
        cycle_seconds: float = DEFAULT_CYCLE_S,
        from_board: bool = False,
        alerts: AlertSettings | None = None,
    ) -> None:
        """`from_board`: opened from a board of runs; `esc` goes back to it."""
        super().__init__(theme=theme, environ=environ)
        self.path = Path(path)
        self.from_board = from_board
        if from_board:
            # the way back, in the footer (esc still clears a filter first)
            self.bind("escape", "clear_filter", description="Board")
        #: the user asked to go back to the board (`esc` with nothing to clear)
        self.back_to_board = False
        self.rules = rules or Rules()
        #: the wall clock (injectable so tests and snapshots have a fixed time)
        self.now = now
        #: the run between its reader and this screen (the Run, pause, the diagnosis)
        self.session = Session(
            Run(self.path, given=given or RunContext()),
            self.rules,
            lambda item: self.post_message(self.FromReader(item)),
        )
        #: the run's events and where they go (a toast, the bell, OSC, --on-alert)
        settings = alerts or AlertSettings()

        def command_failed(text: str) -> None:
            self.post_message(self.FromReader(Notice("on-alert", text, error=True)))

        command = command_sink(settings, command_failed)
        self.alerts = RunAlerts(self.path, settings, command=command, shown=True)
        follower = follower or RunFollower(self.path, newest_first=True)
        #: the run's reader (core's follow loop, in its own thread): `wake()` makes it look
        #: at the files at once instead of at its next poll
        self.reader: FollowLoop = self.session.follow(follower, watch_files=watch_files)
        self._pane = "metrics"
        self._drawn: tuple[object, ...] | None = None
        #: the pacing of frames (tests put the next frame off with `done`)
        self.frames = Pacer(FRAME_INTERVAL_S)
        #: a frame is asked for and not drawn yet (one, however many asks)
        self._frame_asked = False
        self._diagnosis_timer: Timer | None = None
        self._charts_warm = False
        self._shutting_down = False
        # the widgets, kept at hand: frames update them without querying the DOM
        self._header = RunHeader(id="header")
        self._diagnosis_tab = Tab(Text(diagnosis_summary(None)), id="tab-diagnosis")
        self._tabs = Tabs(
            Tab("Metrics", id="tab-metrics"),
            self._diagnosis_tab,
            Tab("Completions", id="tab-completions"),
            id="panel-tabs",
        )
        self._metrics = MetricsPane(id="metrics-pane")
        self._grid = self._metrics.grid
        self._diagnosis_panel = DiagnosisPanel(id="diagnosis-pane")
        self._completions = CompletionsPanel(
            palette=self.theme_spec.palette,
            cycle_seconds=cycle_seconds,
            id="completions-pane",
        )

    # -- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield self._header
        yield self._tabs
        with Horizontal(id="body"):
            yield self._metrics
            yield self._diagnosis_panel
        yield self._completions
        yield Footer()

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, lambda _theme: self._force_redraw())
        self._apply_layout(self.size.width)
        self._show_pane(self._pane)
        self._grid.focus()
        # idle means idle: no timer redraws what did not change; the clock only redraws the
        # header (its "last data 3s ago"), and data, diagnoses and keys ask for frames
        self.set_interval(CLOCK_INTERVAL_S, self._clock)
        self._show_applied(self.session.mounted())
        self._tick()

    def on_load(self) -> None:
        # reading starts before the screen is composed and styled (~0.1 s): the first
        # lines are usually in by the first frame, which draws them (not an empty frame
        # and then a second one)
        self.reader.start()

    def on_resize(self, event: Resize) -> None:
        self._apply_layout(event.size.width)

    def _apply_layout(self, width: int) -> None:
        wide = width >= WIDE_COLUMNS
        # one batch: every class change restyles the whole screen
        self.main_screen.update_classes({"-wide": wide, "-narrow": not wide}, animate=False)

    def _show_pane(self, pane: str) -> None:
        self._pane = pane
        self.main_screen.update_classes(
            {f"-pane-{name}": name == pane for name in PANES}, animate=False
        )
        if self._tabs.active != f"tab-{pane}":
            self._tabs.active = f"tab-{pane}"

    @on(Tabs.TabActivated, "#panel-tabs")
    def _tab_activated(self, event: Tabs.TabActivated) -> None:
        self._show_pane((event.tab.id or "tab-metrics").removeprefix("tab-"))

    # -- reading (the session takes what core's follow loop reads) ------------------------
    @on(FromReader)
    def _from_reader(self, message: FromReader) -> None:
        item = message.item
        if isinstance(item, Notice):
            self.tell(item.text, title=item.title, error=item.error)
            return
        if self._shutting_down:
            return
        applied = self.session.receive(item)
        if applied is None and self.session.paused:
            self._draw_header()  # what waits
        self._show_applied(applied)

    def _show_applied(self, applied: Applied | None) -> None:
        """The Run took new data: tell its source events, and draw it soon."""
        if applied is None:
            return
        for event in applied.events:
            self.tell(event, title="source", timeout=8)
        self._request_frame()

    # -- the diagnosis worker (thread) --------------------------------------------------
    def _maybe_diagnose(self) -> None:
        if self._shutting_down:
            return
        if (job := self.session.start_diagnosis()) is not None:
            self._diagnose(job)
        elif (due := self.session.diagnosis_due()) is not None and self._diagnosis_timer is None:
            self._diagnosis_timer = self.set_timer(max(0.01, due), self._diagnose_later)

    def _diagnose_later(self) -> None:
        self._diagnosis_timer = None
        self._maybe_diagnose()

    @work(thread=True, exclusive=False, group="diagnose", name="diagnose")
    def _diagnose(self, job: DiagnosisJob) -> None:
        self.post_message(self.Diagnosed(job()))

    @on(Diagnosed)
    def _on_diagnosed(self, message: Diagnosed) -> None:
        if self._shutting_down:
            return
        self._show_applied(self.session.diagnosed(message.result))
        self._tick()
        self._alert()
        if not self._charts_warm:
            # after the first diagnosis, not during it: both want the CPU at startup
            self._charts_warm = True
            self.run_worker(warm_up, thread=True, group="warm-up", name="warm-up charts")

    # -- drawing ------------------------------------------------------------------------
    @property
    def settled(self) -> bool:
        """The newest data read has been diagnosed and drawn (tests and the bench wait on it)."""
        # the frame on screen is of the session's moment (its data and the diagnosis now held)
        drawn = self._drawn is not None and self._drawn[0] == self.session.moment
        widgets_done = self._metrics.caption_aligned and self._completions.settled
        return drawn and widgets_done and self.session.settled

    @property
    def main_screen(self) -> Screen[object]:
        """The screen holding the grid (detail and help screens stack above it)."""
        return self.screen_stack[0]

    def _force_redraw(self) -> None:
        self._drawn = None
        self.frames.reset()
        self._tick()

    def _clock(self) -> None:
        """Once a second: the header's clock, and a diagnosis or frame still owed."""
        if self._shutting_down or self.session.paused:
            return
        self._draw_header()
        self._maybe_diagnose()
        self._alert()

    def _alert(self) -> None:
        """Tell the event the run brings now, if any (core decides; this only shows it)."""
        event = self.alerts.observe(self.session.run, self.session.diagnosis, self.now())
        self.tell_events([] if event is None else [event], self.alerts.settings, named=False)

    def _request_frame(self) -> None:
        """Draw soon: at once when the last frame was long enough ago, else when the pacer
        allows (many asks in between make one frame)."""
        if self._frame_asked or self._shutting_down:
            return
        self._frame_asked = True
        delay = self.frames.wait()
        if delay > 0:
            self.set_timer(delay, self._frame_due)
        else:
            self.call_later(self._frame_due)

    def _frame_due(self) -> None:
        self._frame_asked = False
        self._tick()

    def _tick(self) -> None:
        """One frame: draw what changed since the last one (nothing while paused)."""
        session = self.session
        if self._shutting_down or session.paused or not self._grid.is_attached:
            return
        self._draw_header()
        run = self.session.run
        spec = self.theme_spec
        key = (session.moment, spec.name)
        if key == self._drawn:
            return
        if not self.frames.ready():
            self._request_frame()
            return
        started = time.perf_counter()
        self._drawn = key
        diagnosis = session.diagnosis
        frame = self._metrics_frame()
        self._metrics.show(frame)
        self._diagnosis_panel.show(
            diagnosis, spec.palette, pending=session.diagnosis_note, file_notes=tuple(run.notes)
        )
        self._header.show_verdict(
            verdict_line(diagnosis, pending=session.diagnosis_note), spec.palette
        )
        summary = diagnosis_summary(diagnosis)
        if self._diagnosis_tab.label.plain != summary:
            self._diagnosis_tab.label = Text(summary)
        self._completions.palette = spec.palette
        self._completions.show(
            CompletionsSource(
                run.completions, run.completions_state, session.completions_file, run.framework
            )
        )
        if isinstance(self.screen, DetailScreen):
            self.screen.show(frame)
        if len(run.store):
            self.frames.done(time.perf_counter() - started)
        else:
            # a frame of no data paces nothing: the first lines read are drawn at once
            self.frames.reset()
        # once the frame is on the screen: the diagnosis thread would slow its painting down
        self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        self.session.painted()
        self._maybe_diagnose()

    def _draw_header(self) -> None:
        """The header, when its view changed. Paused, it shows the paused moment (its clock
        stopped), saying PAUSED and how many lines wait."""
        if self.session.paused:
            view = self._header.view
            if view is None:
                return
            view = replace(view, paused=True, held_back=self.session.held_back_rows)
        else:
            view = header_view(self.session.run, self.now())
        self._header.show(view)  # it redraws only the parts that changed

    def _metrics_frame(self) -> MetricsFrame:
        """What the grid and the detail chart draw: the Run's metrics now, judged."""
        run, palette = self.session.run, self.theme_spec.palette
        return MetricsFrame(
            run.store, run.version, self.rules, run.context, self.session.diagnosis, palette
        )

    # -- actions ------------------------------------------------------------------------
    @on(CompletionsPanel.OpenCompletion)
    def _open_completion(self, message: CompletionsPanel.OpenCompletion) -> None:
        # imported when first asked for: Textual's TextArea costs ~65 ms of every start-up
        from grpo_tui.ui.widgets.completion_screen import CompletionScreen

        group = message.page.groups[message.group]
        if 0 <= message.row < group.size:
            self.push_screen(CompletionScreen(group, message.row, self.theme_spec.palette))

    @on(MetricGrid.MetricChosen)
    def _open_detail(self, message: MetricGrid.MetricChosen) -> None:
        self.push_screen(DetailScreen(message.name, self._metrics_frame()))

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
            return
        keyed = (MetricGrid, DiagnosisPanel, DetailScreen, CompletionsPanel)
        rows = key_rows(self.get_key_display, self.BINDINGS, *(k.BINDINGS for k in keyed))
        notes = help_notes(self.session.run.usual_interval(), DIAGNOSIS_INTERVAL_S)
        self.push_screen(HelpScreen(help_text(rows, notes)))

    def action_filter(self) -> None:
        if self._pane != "metrics":
            self._show_pane("metrics")
        self._metrics.open_filter()

    def on_key(self, event: Key) -> None:
        if self._metrics.filter_has_focus:
            self._metrics.type_into_filter(event)

    def action_clear_filter(self) -> None:
        idle = not self._grid.filter and not self._metrics.filter_has_focus
        if self.from_board and idle and len(self.screen_stack) == 1:
            self.back_to_board = True
            self.exit()
            return
        self._metrics.clear_filter()

    def action_toggle_pause(self) -> None:
        session = self.session
        if session.paused:
            self._completions.freeze(False)
            self._show_applied(session.resume())
            self._force_redraw()
            return
        # the moment held is the Run as it is now: a frame still owed (paced) is drawn
        # first, or a resize would redraw the widgets from data they never showed
        self.frames.reset()
        self._tick()
        session.pause()
        self._completions.freeze(True)
        self._draw_header()

    def action_show_pane(self, pane: str) -> None:
        focus: dict[str, Callable[[], object]] = {
            "metrics": self._grid.focus,
            "diagnosis": self._diagnosis_panel.focus,
            "completions": self._completions.focus_table,
        }
        if pane in focus:
            self._show_pane(pane)
            focus[pane]()

    def palette_extras(self) -> Iterable[SystemCommand]:
        yield SystemCommand(
            "Detail", "Open the chart of the selected metric (enter)", self._grid.action_open_detail
        )

    def exit(
        self, result: None = None, return_code: int = 0, message: RenderableType | None = None
    ) -> None:
        """Stop reading and drawing, then leave (the workers see the stop at once)."""
        self._stop_workers()
        super().exit(result, return_code, message)

    def on_unmount(self) -> None:
        self._stop_workers()

    def _stop_workers(self) -> None:
        self._shutting_down = True
        self.reader.stop()
        self.alerts.close()
