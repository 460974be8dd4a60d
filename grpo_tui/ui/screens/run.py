"""One run live: header, metric grid, diagnosis and the completions panel.

The screen draws a run's Session (grpo_tui/monitor/session.py), the one place between the run's
reader and a screen:
- Alone (`tail FILE`, `RunScreen.alone`) the screen owns the run: its reader (core's
  `FollowLoop`, a daemon thread: time-boxed reads ~1 s apart, woken early by watchdog;
  quitting never waits for it), the diagnosis worker and the run's alert detector.
- Opened from a board (`tail DIR`) it is a guest on the session the Board already holds:
  the Board's reader reads it (every second while it is shown), its detector tells its
  events; the screen diagnoses it at its own pace through the same session (one judge), and
  the board hands it what the reader brought (`session_changed`). Nothing is read twice:
  the first frame is the row's moment, its verdict the row's.
- A frame is drawn only when the session's moment (or the theme) changed: at once unless a
  frame was drawn less than a frame budget ago (0.1 s, longer when frames are slow), and
  each widget redraws only what changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

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

from grpo_tui.context import RunContext
from grpo_tui.health.rules import Rules
from grpo_tui.monitor.alerts import AlertSettings, RunAlerts, command_sink
from grpo_tui.monitor.session import (
    DIAGNOSIS_INTERVAL_S,
    Applied,
    DiagnosisJob,
    DiagnosisResult,
    Notice,
    Pacer,
    Session,
)
from grpo_tui.run.follow import FollowLoop, RunFollower
from grpo_tui.run.live import Run
from grpo_tui.run.update import Update
from grpo_tui.ui.host import host
from grpo_tui.ui.screens.detail import DetailScreen
from grpo_tui.ui.screens.help import HelpScreen, help_notes, help_text, key_rows
from grpo_tui.ui.widgets.chart import warm_up
from grpo_tui.ui.widgets.completions import CompletionsPanel
from grpo_tui.ui.widgets.diagnosis import DiagnosisPanel, diagnosis_summary
from grpo_tui.ui.widgets.header import RunHeader, header_view
from grpo_tui.ui.widgets.metric_grid import MetricGrid
from grpo_tui.ui.widgets.metric_rows import MetricsFrame
from grpo_tui.ui.widgets.metrics_pane import MetricsPane
from grpo_tui.views.completion_rows import CompletionsSource
from grpo_tui.views.palette import ZonePalette
from grpo_tui.views.presentation import DEFAULT_CYCLE_S, VerdictLine, verdict_line

#: at most ~10 frames a second (slow frames are spaced further: session.Pacer); a frame is
#: drawn only when something changed (new data, a diagnosis, a theme), never on a timer
FRAME_INTERVAL_S = 0.1
#: the header's clock ("last data 3s ago", "STALLED") is the one thing time alone changes
CLOCK_INTERVAL_S = 1.0
#: wide layout (grid and diagnosis side by side) from this many columns
WIDE_COLUMNS = 140
PANES = ("metrics", "diagnosis", "completions")


class RunScreen(Screen[None]):
    """One run (a logging.jsonl, a run dir or an output dir) live."""

    #: its other keys (q, ?, /, p, t, 1 2 3) are the app's: they act on the screens over
    #: a run too (ui/app.py)
    BINDINGS: ClassVar[list[BindingType]] = [
        # opened from a board: esc clears a filter first, then goes back (check_action)
        Binding("escape", "back", "Board"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    @dataclass
    class FromReader(Message):
        """What the run's own reader handed on through the session: data or a notice."""

        item: Update | Notice

    @dataclass
    class Diagnosed(Message):
        """A diagnosis of the run, from the diagnosis worker."""

        result: DiagnosisResult

    def __init__(
        self,
        session: Session,
        alerts: RunAlerts,
        palette: ZonePalette,
        *,
        now: Callable[[], float] = time.time,
        cycle_seconds: float = DEFAULT_CYCLE_S,
        reader: FollowLoop | None = None,
        from_board: bool = False,
    ) -> None:
        """`reader`: the run's own reader, when the screen is alone (it starts and stops
        it); `from_board`: a guest on a board's session (`esc` goes back to the board)."""
        super().__init__()
        #: the run between its reader and this screen (the Run, pause, the diagnosis)
        self.session = session
        self.rules: Rules = session.rules
        #: the run's event detector (alone: this screen's; from a board: the board's)
        self.alerts = alerts
        #: the run's reader when the screen owns it (`wake()` looks at the files at once)
        self.reader = reader
        self.from_board = from_board
        #: the wall clock (injectable so tests and snapshots have a fixed time)
        self.now = now
        #: the pacing of frames (tests put the next frame off with `done`)
        self.frames = Pacer(FRAME_INTERVAL_S)
        self._pane = "metrics"
        self._drawn: tuple[object, ...] | None = None
        #: a frame is asked for and not drawn yet (one, however many asks)
        self._frame_asked = False
        self._diagnosis_timer: Timer | None = None
        self._charts_warm = False
        self._stopped = False
        self._reading = False
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
            palette=palette, cycle_seconds=cycle_seconds, id="completions-pane"
        )

    @classmethod
    def alone(
        cls,
        path: Path,
        palette: ZonePalette,
        *,
        rules: Rules,
        now: Callable[[], float] = time.time,
        watch_files: bool = True,
        follower: RunFollower | None = None,
        given: RunContext | None = None,
        cycle_seconds: float = DEFAULT_CYCLE_S,
        alerts: AlertSettings | None = None,
    ) -> RunScreen:
        """The screen of a run followed by itself (`tail FILE`): its own session, reader
        and alert detector."""
        screens: list[RunScreen] = []

        def post(item: Update | Notice) -> None:
            # the reader starts once the screen exists (`start_reading`): it is there
            screens[0].post_message(cls.FromReader(item))

        session = Session(Run(Path(path), given=given or RunContext()), rules, post)
        settings = alerts or AlertSettings()
        command = command_sink(settings, lambda text: post(Notice("on-alert", text, error=True)))
        detector = RunAlerts(Path(path), settings, command=command, shown=True)
        follower = follower or RunFollower(Path(path), newest_first=True)
        reader = session.follow(follower, watch_files=watch_files)
        screen = cls(
            session, detector, palette, now=now, cycle_seconds=cycle_seconds, reader=reader
        )
        screens.append(screen)
        return screen

    # -- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield self._header
        yield self._tabs
        with Horizontal(id="body"):
            yield self._metrics
            yield self._diagnosis_panel
        yield self._completions
        yield Footer()

    def start_reading(self) -> None:
        """Start the screen's own reader (alone; none from a board). The app calls it when
        it loads: the first lines are usually in by the first frame, which draws them."""
        if self.reader is not None and not self._reading:
            self._reading = True
            self.reader.start()

    def on_mount(self) -> None:
        self.start_reading()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._force_redraw())
        self._apply_layout(self.app.size.width)
        self._show_pane(self._pane)
        self._grid.focus()
        # idle means idle: no timer redraws what did not change; the clock only redraws the
        # header (its "last data 3s ago"), and data, diagnoses and keys ask for frames
        self.set_interval(CLOCK_INTERVAL_S, self._clock)
        self._show_applied(self.session.mounted())
        self._tick()

    def on_resize(self, event: Resize) -> None:
        self._apply_layout(event.size.width)

    def _apply_layout(self, width: int) -> None:
        wide = width >= WIDE_COLUMNS
        # one batch: every class change restyles the whole screen
        self.update_classes({"-wide": wide, "-narrow": not wide}, animate=False)

    def _show_pane(self, pane: str) -> None:
        self._pane = pane
        self.update_classes({f"-pane-{name}": name == pane for name in PANES}, animate=False)
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
            host(self).tell(item.text, title=item.title, error=item.error)
            return
        if self._stopped:
            return
        applied = self.session.receive(item)
        if applied is None and self.session.paused:
            self._draw_header()  # what waits
        self._show_applied(applied)

    def wake(self) -> None:
        """Look at the run's files now rather than at the next poll (its own reader; a
        board's run is read at the board's next look, a second at most)."""
        if self.reader is not None:
            self.reader.wake()

    def session_changed(self, applied: Applied | None) -> None:
        """The session's owner (a board) gave it what the reader brought, or a diagnosis
        it had in flight: draw it."""
        if self._stopped:
            return
        if applied is None and self.session.paused:
            self._draw_header()
        self._show_applied(applied)
        self._request_frame()

    def _show_applied(self, applied: Applied | None) -> None:
        """The Run took new data: tell its source events, and draw it soon."""
        if applied is None:
            return
        for event in applied.events:
            host(self).tell(event, title="source", timeout=8)
        self._request_frame()

    # -- the diagnosis worker (thread) --------------------------------------------------
    def _maybe_diagnose(self) -> None:
        if self._stopped:
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
        if self._stopped:
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

    def verdict(self) -> VerdictLine:
        """The run's verdict line now (the header's; screens above this one keep it in sight)."""
        return verdict_line(self.session.diagnosis, pending=self.session.diagnosis_note)

    def _force_redraw(self) -> None:
        self._drawn = None
        self.frames.reset()
        self._tick()

    def _clock(self) -> None:
        """Once a second: the header's clock, and a diagnosis or frame still owed."""
        if self._stopped or self.session.paused:
            return
        self._draw_header()
        self._maybe_diagnose()
        self._alert()

    def _alert(self) -> None:
        """Tell the event the run brings now, if any (core decides; this only shows it)."""
        event = self.alerts.observe(self.session.run, self.session.diagnosis, self.now())
        host(self).tell_events([] if event is None else [event], self.alerts.settings, named=False)

    def _request_frame(self) -> None:
        """Draw soon: at once when the last frame was long enough ago, else when the pacer
        allows (many asks in between make one frame)."""
        if self._frame_asked or self._stopped:
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
        if self._stopped or session.paused or not self._grid.is_attached:
            return
        self._draw_header()
        run = session.run
        spec = host(self).theme_spec
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
            diagnosis,
            spec.palette,
            pending=session.diagnosis_note,
            file_notes=tuple(run.notes),
            prompts=session.prompts,
        )
        self._header.show_verdict(self.verdict(), spec.palette)
        summary = diagnosis_summary(diagnosis)
        if self._diagnosis_tab.label.plain != summary:
            self._diagnosis_tab.label = Text(summary)
        self._completions.palette = spec.palette
        ledger = session.prompts
        self._completions.prompt_counts = None if ledger is None else ledger.counts
        self._completions.show(
            CompletionsSource(
                run.completions, run.completions_state, session.completions_file, run.framework
            )
        )
        if isinstance(self.app.screen, DetailScreen):
            self.app.screen.show(frame)
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
        run, palette = self.session.run, host(self).theme_spec.palette
        return MetricsFrame(
            run.store, run.version, self.rules, run.context, self.session.diagnosis, palette
        )

    # -- actions ------------------------------------------------------------------------
    @on(CompletionsPanel.OpenCompletion)
    def _open_completion(self, message: CompletionsPanel.OpenCompletion) -> None:
        # imported when first asked for: Textual's TextArea costs ~65 ms of every start-up
        from grpo_tui.ui.screens.completion import CompletionScreen

        group = message.page.groups[message.group]
        if 0 <= message.row < group.size:
            palette = host(self).theme_spec.palette
            self.app.push_screen(CompletionScreen(group, message.row, palette))

    @on(CompletionsPanel.OpenDistribution)
    def _open_distribution(self, message: CompletionsPanel.OpenDistribution) -> None:
        # imported when first asked for, as the completion screen
        from grpo_tui.ui.screens.distribution import NOTHING_LOGGED, DistributionScreen

        if message.index is None:
            self.app.notify(NOTHING_LOGGED, severity="warning", markup=False)
            return
        palette = host(self).theme_spec.palette
        screen = DistributionScreen(
            message.index, message.entry, palette, limit=message.limit, verdict=self.verdict
        )
        self.app.push_screen(screen)

    @on(MetricGrid.MetricChosen)
    def _open_detail(self, message: MetricGrid.MetricChosen) -> None:
        self.app.push_screen(DetailScreen(message.name, self._metrics_frame()))

    def _own_bindings(self) -> list[BindingType]:
        """This screen's keys as they act here (the way back only when there is one)."""
        return [
            b
            for b in self.BINDINGS
            if not (isinstance(b, Binding) and b.action == "back" and not self.from_board)
        ]

    def action_help(self) -> None:
        if isinstance(self.app.screen, HelpScreen):
            self.app.pop_screen()
            return
        keyed = (MetricGrid, DiagnosisPanel, DetailScreen, CompletionsPanel)
        rows = key_rows(
            self.app.get_key_display,
            self.app.BINDINGS,
            self._own_bindings(),
            *(k.BINDINGS for k in keyed),
        )
        notes = help_notes(self.session.run.usual_interval(), DIAGNOSIS_INTERVAL_S)
        self.app.push_screen(HelpScreen(help_text(rows, notes)))

    def action_filter(self) -> None:
        if self._pane != "metrics":
            self._show_pane("metrics")
        self._metrics.open_filter()

    def on_key(self, event: Key) -> None:
        if self._metrics.filter_has_focus:
            self._metrics.type_into_filter(event)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`esc` goes back to the board only on a run opened from one."""
        return self.from_board if action == "back" else True

    def action_back(self) -> None:
        """esc on a run opened from the board: a filter is cleared first, then back."""
        if self._grid.filter or self._metrics.filter_has_focus:
            self._metrics.clear_filter()
            return
        self.dismiss()

    def action_clear_filter(self) -> None:
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

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The palette's commands of this screen beyond its keys."""
        yield SystemCommand(
            "Detail", "Open the chart of the selected metric (enter)", self._grid.action_open_detail
        )

    # -- the end --------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop reading and drawing (the workers see the stop at once); alone, the reader
        and the alert command end with the screen. A board's run is left to the board."""
        if self._stopped:
            return
        self._stopped = True
        if self.reader is not None:
            self.reader.stop()
            self.alerts.close()
        if self.session.paused:
            self.session.resume()  # back on the board, its row goes on with the run

    def on_unmount(self) -> None:
        self.stop()
