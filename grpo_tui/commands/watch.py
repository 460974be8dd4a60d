"""`grpo-tui watch PATH… [--on-alert CMD]`: the monitor's alerts with no screen.

For `nohup`, a systemd unit or a tmux window nobody looks at. Each PATH is followed by
the same core as `tail` (a Session fed by core's FollowLoop, diagnosed when the session
says so, its steady verdicts fed to one EventDetector per run) and every event is printed
to stdout as one JSON line (and handed to `--on-alert`). Reading troubles and command
failures go to stderr. It runs until interrupted: SIGINT, SIGTERM and SIGHUP (unless
ignored: `nohup`) end it cleanly with status 0, its alert commands ended with it. `check` stays the one-shot form.
"""

from __future__ import annotations

import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from grpo_tui.commands.output import EXIT_BAD_RULES, say, signals_handled
from grpo_tui.commands.rules_file import effective_rules
from grpo_tui.context import RunContext
from grpo_tui.health.rules import Rules
from grpo_tui.monitor.alerts import AlertSettings, CommandSink, RunAlerts, command_sink, event_json
from grpo_tui.monitor.board import options_for
from grpo_tui.monitor.events import Event
from grpo_tui.monitor.session import DIAGNOSIS_INTERVAL_S, Notice, Session
from grpo_tui.run.follow import FollowLoop, RunFollower
from grpo_tui.run.live import Run
from grpo_tui.run.update import Update
from grpo_tui.sources.feed import SourceOptions
from grpo_tui.sources.runs import RunRef
from grpo_tui.untrusted import printable

#: seconds the loop waits for the readers before it looks at the clock again (a stall is
#: told by time alone; a signal is answered within this)
TICK_S = 0.25
#: seconds between two looks at the runs' states when nothing was read
OBSERVE_S = 1.0
#: seconds the commands still queued at the end may take before the process leaves
CLOSE_WAIT_S = 5.0


@dataclass
class WatchedRun:
    """One PATH: its session, its reader, its alerts."""

    session: Session
    reader: FollowLoop
    alerts: RunAlerts
    #: the diagnosis error last told (a failing judge is said once, not at every try)
    told_error: str | None = None


class Watch:
    """Follows PATHs, diagnoses them as the monitor does and hands their events on."""

    def __init__(
        self,
        paths: Sequence[Path | RunRef],
        settings: AlertSettings,
        rules: Rules,
        *,
        emit: Callable[[Event], object],
        warn: Callable[[str], object],
        given: RunContext | None = None,
        source: SourceOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
        watch_files: bool = True,
        diagnosis_interval: float = DIAGNOSIS_INTERVAL_S,
    ) -> None:
        """`emit` gets each event (stdout's JSON line), `warn` what goes to stderr; `clock`
        paces the rate limit (the runs' states are told by the wall clock)."""
        self._items: queue.Queue[tuple[int, Update | Notice]] = queue.Queue()
        self._emit = emit
        self._warn = warn
        self.command: CommandSink | None = command_sink(
            settings, lambda text: self._items.put((-1, Notice("on-alert", text, error=True)))
        )
        self.runs: list[WatchedRun] = []
        for index, item in enumerate(paths):
            ref = item if isinstance(item, RunRef) else RunRef(Path(item))
            path = ref.path
            session = Session(
                Run(path, given=given or RunContext()),
                rules,
                self._poster(index),
                diagnosis_interval=diagnosis_interval,
            )
            # no screen: the first frame is "painted" at once (diagnoses may start)
            session.mounted()
            session.painted()
            follower = RunFollower(path, options_for(ref, source))
            reader = session.follow(follower, watch_files=watch_files)
            alerts = RunAlerts(path, settings, command=self.command, clock=clock)
            self.runs.append(WatchedRun(session, reader, alerts))
        self._observed_at = -float("inf")

    def _poster(self, index: int) -> Callable[[Update | Notice], None]:
        """What run `index`'s session posts to this loop with (from its reader thread)."""
        return lambda item: self._items.put((index, item))

    def start(self) -> None:
        for watched in self.runs:
            watched.reader.start()

    def stop(self) -> None:
        """Stop reading, give the queued commands CLOSE_WAIT_S to finish."""
        for watched in self.runs:
            watched.reader.stop()
        if self.command is not None:
            self.command.close(CLOSE_WAIT_S)
        self._drain_notices()

    def step(self, timeout: float = TICK_S) -> list[Event]:
        """Take what the readers sent (waiting up to `timeout` for it), diagnose what is
        due, and tell the events; returns them."""
        changed = self._take(timeout)
        for watched in self.runs:
            session = watched.session
            job = session.start_diagnosis()
            if job is not None:
                session.diagnosed(job())
                changed = True
                self._tell_diagnosis_error(watched)
        looked = time.monotonic()
        if not changed and looked - self._observed_at < OBSERVE_S:
            return []
        self._observed_at = looked
        events = []
        for watched in self.runs:
            session = watched.session
            event = watched.alerts.observe(session.run, session.diagnosis, time.time())
            if event is not None:
                events.append(event)
                self._emit(event)
        return events

    def _tell_diagnosis_error(self, watched: WatchedRun) -> None:
        """A diagnosis that failed is said on stderr once (no event can come from a run
        that is not judged: silence would read as "nothing changed")."""
        error = watched.session.diagnosis_error
        if error is not None and error != watched.told_error:
            run = printable(watched.alerts.detector.run)
            self._warn(f"{run}: diagnosis failed: {printable(error)}")
        watched.told_error = error

    def _queued(self, timeout: float) -> Iterator[tuple[int, Update | Notice]]:
        """What the readers sent, waiting up to `timeout` for the first of it."""
        try:
            item = self._items.get(timeout=timeout)
            while True:
                yield item
                item = self._items.get_nowait()
        except queue.Empty:
            return

    def _take(self, timeout: float) -> bool:
        changed = False
        for index, thing in self._queued(timeout):
            if isinstance(thing, Notice):
                who = "" if index < 0 else f"{printable(self.runs[index].alerts.detector.run)}: "
                self._warn(f"{who}{thing.title}: {thing.text}")
            elif self.runs[index].session.receive(thing) is not None:
                changed = True
        return changed

    def _drain_notices(self) -> None:
        for index, thing in self._queued(0.0):
            if isinstance(thing, Notice) and index < 0:
                self._warn(f"{thing.title}: {thing.text}")


def watch_command(
    paths: Sequence[Path | RunRef],
    settings: AlertSettings,
    *,
    rules_file: Path | None = None,
    given: RunContext | None = None,
    source: SourceOptions | None = None,
) -> int:
    """Follow PATHs until SIGINT or SIGTERM, one JSON line per event on stdout."""
    rules = effective_rules(rules_file)
    if rules is None:
        return EXIT_BAD_RULES

    def emit(event: Event) -> None:
        sys.stdout.write(event_json(event) + "\n")
        sys.stdout.flush()

    watch = Watch(paths, settings, rules, emit=emit, warn=say, given=given, source=source)
    stop = threading.Event()
    # SIGINT, SIGTERM and a closed terminal's SIGHUP set `stop` (the loop ends cleanly, the
    # alert commands are ended with it) instead of killing; a SIGHUP ignored (`nohup`) stays so
    with signals_handled(stop_signals(), lambda signum, frame: stop.set()):
        watch.start()
        try:
            while not stop.is_set():
                watch.step()
        finally:
            watch.stop()
    return 0


def stop_signals() -> tuple[int, ...]:
    """The signals that end `watch` cleanly: SIGINT, SIGTERM, and SIGHUP unless ignored."""
    hangup = getattr(signal, "SIGHUP", None)
    ours = hangup is not None and signal.getsignal(hangup) is not signal.SIG_IGN
    return (signal.SIGINT, signal.SIGTERM, *((hangup,) if ours and hangup is not None else ()))
