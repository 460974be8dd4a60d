"""One run between its reader and a screen: what the live monitor does, without Textual.

The reader (core's FollowLoop, in its thread) hands each Update to `Session.deliver` (and
its troubles to `reading_failed` and `watch_notice`), which posts them to the owner; the
owner (the `tail` app; a board of many runs would hold one session per run) takes them on
its own thread with `receive` and asks the session when to diagnose. The session
- keeps what is read before the screen is mounted, for its first frame (`mounted`);
- holds updates back, merged, while the screen is paused or a diagnosis reads the Run, so
  every pane shows one moment, and applies them on `resume` or once the diagnosis is in;
- says when to diagnose: never before the first frame is painted, never while paused or
  while the history is still being read, the first with data at once, then at most one
  per `DIAGNOSIS_INTERVAL_S` (longer when diagnoses are slow);
- says what the views show: the Run, its diagnosis, a line while there is none.

It starts no thread and reads time only from the clock it is given: the diagnosis is a job
the owner runs where it likes (the app in a worker thread, tests inline).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grpo_tui.health.rules import Rules
from grpo_tui.health.verdict import Diagnosis
from grpo_tui.run.completions.ledger import LedgerReport
from grpo_tui.run.follow import FollowLoop, RunFollower
from grpo_tui.run.live import Run
from grpo_tui.run.memory import release_free_memory
from grpo_tui.run.update import Update
from grpo_tui.untrusted import printable
from grpo_tui.views.prompts import ledger_of

if TYPE_CHECKING:
    from grpo_tui.health.diagnose import LiveJudge

#: at most one diagnosis per this many seconds
DIAGNOSIS_INTERVAL_S = 1.0
#: source events told per update (a burst of them would bury the screen in toasts)
EVENTS_TOLD = 3
#: source events the header's state already says ("WAITING for …"): told there, not again
#: (a toast of it would outlive the wait: the demo's file is there a moment later)
HEADER_EVENTS = ("waiting for ",)


def told(events: list[str]) -> tuple[str, ...]:
    """The newest source events worth a notification of their own."""
    return tuple(e for e in events if not e.startswith(HEADER_EVENTS))[-EVENTS_TOLD:]


@dataclass
class Pacer:
    """Work may run again `interval` seconds after it last ran, or later when it was slow:
    a run that took t seconds waits `share` × t, so it takes at most 1/share of the time."""

    interval: float
    clock: Callable[[], float] = time.monotonic
    share: float = 5.0
    next_at: float = 0.0

    def ready(self) -> bool:
        return self.clock() >= self.next_at

    def wait(self) -> float:
        """Seconds until it may run again (0 or less: now)."""
        return self.next_at - self.clock()

    def done(self, seconds: float) -> None:
        """It just ran, taking `seconds`."""
        self.next_at = self.clock() + max(self.interval, self.share * seconds)

    def reset(self) -> None:
        """Let it run at once, whenever it last ran (a theme change, an unpause)."""
        self.next_at = 0.0


@dataclass(frozen=True)
class Notice:
    """Something the reader says about reading (shown to the user; it decides nothing)."""

    title: str
    text: str
    error: bool = False


@dataclass(frozen=True)
class Applied:
    """Updates went into the Run: the screen has a new moment to draw."""

    #: the source events they brought (the newest `EVENTS_TOLD`), to tell the user
    events: tuple[str, ...] = ()


@dataclass(frozen=True)
class DiagnosisResult:
    """A diagnosis of the Run as it was at `version` (or the error that stopped it)."""

    version: int
    diagnosis: Diagnosis | None
    seconds: float
    error: str | None = None
    #: the prompt ledger read with it (None: no completions followed)
    prompts: LedgerReport | None = None


@dataclass(frozen=True)
class DiagnosisJob:
    """One diagnosis of the Run at `version`, to run in any thread: the session changes the
    Run only once the result is handed back (`Session.diagnosed`)."""

    version: int
    run: Run
    judge: Callable[[Run], Diagnosis]
    clock: Callable[[], float]

    def __call__(self) -> DiagnosisResult:
        started = self.clock()
        try:
            diagnosis: Diagnosis | None = self.judge(self.run)
            error = None
            # a diagnosis's working arrays are freed but glibc keeps their pages (20 MB
            # after replaying a 100 000-row history): give them back (~0.2 ms)
            release_free_memory()
        except Exception as exc:
            diagnosis, error = None, f"{type(exc).__name__}: {exc}"
        # read in this thread with the diagnosis: every prompt's record is looked at
        prompts = ledger_of(self.run)
        return DiagnosisResult(self.version, diagnosis, self.clock() - started, error, prompts)


class Session:
    """One run followed live for one screen. Every method but `deliver` is called on the
    owner's thread; `deliver` is the reader thread's hand-off."""

    def __init__(
        self,
        run: Run,
        rules: Rules,
        post: Callable[[Update | Notice], object],
        *,
        clock: Callable[[], float] = time.monotonic,
        diagnosis_interval: float = DIAGNOSIS_INTERVAL_S,
    ) -> None:
        #: the Run; only the owner's thread changes it
        self.run = run
        self.rules = rules
        self.clock = clock
        self.diagnosis: Diagnosis | None = None
        self.diagnosis_error: str | None = None
        #: which prompts are learning, read with the diagnosis shown (ledger.py)
        self.prompts: LedgerReport | None = None
        self.paused = False
        self._post = post
        #: updates read before the screen is mounted, for its first frame (None once it is:
        #: from then on they are posted). Guarded by `_early_lock`.
        self._early: list[Update] | None = []
        self._early_lock = threading.Lock()
        #: updates held back while paused or while a diagnosis reads the Run (merged)
        self._held: Update | None = None
        self._live: LiveJudge | None = None  # made by the first diagnosis (_judge)
        self._in_flight: int | None = None
        self._painted = False
        self._diagnosed_version = -1
        self._diagnosed_rows = 0
        self._replaced_rows = 0
        self._diagnoses = Pacer(diagnosis_interval, clock)

    # -- updates ------------------------------------------------------------------------
    def follow(self, follower: RunFollower, *, watch_files: bool = True) -> FollowLoop:
        """Core's reader of this run, handing on to this session (the owner starts it, and
        stops it when done: its thread is the reader's, not the session's)."""
        return FollowLoop(
            follower,
            self.deliver,
            on_error=self.reading_failed,
            on_notice=self.watch_notice,
            watch_files=watch_files,
        )

    def deliver(self, update: Update) -> None:
        """The reader's hand-off (in its thread, as are the two hooks below): kept for the
        first frame until the screen is mounted, posted to the owner's thread after."""
        with self._early_lock:
            if self._early is not None:
                self._early.append(update)
                return
        self._post(update)

    def reading_failed(self, error: str) -> None:
        """The reader hit an error (it retries after its poll interval)."""
        self._post(Notice("reading failed; retrying", error, error=True))

    def watch_notice(self, notice: str) -> None:
        """Something about how the files are watched (e.g. file events unavailable)."""
        self._post(Notice("file events", notice))

    def mounted(self) -> Applied | None:
        """The screen is up: what was read before it goes into its first frame."""
        with self._early_lock:
            early, self._early = self._early or [], None
        events: tuple[str, ...] = ()
        applied = None
        for update in early:
            applied = self.receive(update)
            if applied is not None:
                events = (events + applied.events)[-EVENTS_TOLD:]
        return None if applied is None else Applied(events)

    def receive(self, update: Update) -> Applied | None:
        """An update on the owner's thread: applied now, or held back (None) while paused or
        while a diagnosis reads the Run."""
        if self.paused or self._in_flight is not None:
            held = self._held
            self._held = update if held is None else held.merged(update)
            return None
        return self._apply(update)

    @property
    def held_back_rows(self) -> int:
        """Lines read but not applied yet (while paused: what resuming will show)."""
        return 0 if self._held is None else self._held.batch.rows()

    def _apply(self, update: Update) -> Applied:
        self.run.apply(update)
        # the batch's own events (the Run keeps only its newest 50: a count of them would
        # find nothing new once it holds 50)
        return Applied(told(update.batch.events))

    def _apply_held(self) -> Applied | None:
        held, self._held = self._held, None
        return None if held is None else self._apply(held)

    # -- pause ------------------------------------------------------------------------------
    def pause(self) -> None:
        """Hold the moment: the Run stays as it is, what arrives is counted and kept."""
        self.paused = True

    def resume(self) -> Applied | None:
        """Go on: what was held back goes in (once a diagnosis in flight is back)."""
        self.paused = False
        return None if self._in_flight is not None else self._apply_held()

    # -- the diagnosis ------------------------------------------------------------------
    def painted(self) -> None:
        """A frame is on the screen (diagnoses wait for the first: both want the CPU)."""
        self._painted = True

    def diagnosis_due(self) -> float | None:
        """Seconds until the next diagnosis should start (0: now), or None when none is
        owed: one is in flight, the screen is paused or not painted yet, nothing changed
        since the last one, or the history is still being read (judged once it is all in)."""
        run = self.run
        if self._in_flight is not None or self.paused or not self._painted:
            return None
        if run.version == self._diagnosed_version or run.reading is not None:
            return None
        if self._diagnosed_rows == 0:
            return 0.0  # the first diagnosis with data comes at once
        return max(0.0, self._diagnoses.wait())

    def start_diagnosis(self) -> DiagnosisJob | None:
        """The diagnosis to run now (the Run holds still until it is handed back), or None
        when `diagnosis_due` says later or never."""
        if self.diagnosis_due() != 0.0:
            return None
        run = self.run
        if run.store.replaced_rows != self._replaced_rows:
            # a restarted or resumed run re-logged steps: its history changed under the judge
            self._replaced_rows = run.store.replaced_rows
            if self._live is not None:
                self._live.reset()
        self._in_flight = run.version
        self._diagnosed_rows = len(run.store)
        return DiagnosisJob(run.version, run, self._judge, self.clock)

    def pace_diagnoses(self, interval: float) -> None:
        """Diagnose at most once per `interval` seconds from now on (a board's run judged at
        a monitor's pace while a screen shows it, at the board's again after)."""
        pacer = self._diagnoses
        pacer.interval = interval
        pacer.next_at = min(pacer.next_at, pacer.clock() + interval)

    def _judge(self, run: Run) -> Diagnosis:
        """The steady judgement of the run as it goes (core's LiveJudge), made by the first
        diagnosis, in its thread: the diagnosis modules are imported there, after the first
        screen, not before it."""
        if self._live is None:
            from grpo_tui.health.diagnose import LiveJudge

            self._live = LiveJudge(self.rules)
        return self._live.judge(run)

    def diagnosed(self, result: DiagnosisResult) -> Applied | None:
        """A diagnosis is back: shown from now on; what was held back for it goes in
        (unless paused)."""
        self._in_flight = None
        self._diagnosed_version = result.version
        self._diagnoses.done(result.seconds)
        self.diagnosis_error = result.error
        self.diagnosis = result.diagnosis  # None when it failed: the error is shown instead
        self.prompts = result.prompts
        return None if self.paused else self._apply_held()

    # -- what the views show ------------------------------------------------------------
    @property
    def moment(self) -> tuple[int, Diagnosis | None, str | None]:
        """What the views draw from changes exactly when this does."""
        return (self.run.version, self.diagnosis, self.diagnosis_error)

    @property
    def settled(self) -> bool:
        """Everything read is in the Run and diagnosed (whether it is drawn is the
        screen's to say)."""
        with self._early_lock:
            early = bool(self._early)
        return (
            not early
            and self._held is None
            and self._in_flight is None
            and self._diagnosed_version == self.run.version
        )

    @property
    def diagnosis_note(self) -> str:
        """What the diagnosis panel says while it has no diagnosis to show."""
        run = self.run
        if self.diagnosis_error is not None:
            return f"diagnosis failed: {printable(self.diagnosis_error)}"
        if run.waiting_for is not None:
            return f"waiting for {printable(run.waiting_for)}"
        if run.reading is not None:
            return "reading the run's history: the diagnosis comes once it is all in"
        if len(run.store) == 0:
            return "no metrics read yet"
        return "diagnosing…"

    @property
    def completions_file(self) -> Path | None:
        """The completions file followed, relative to the watched PATH when inside it (as
        the header names the log)."""
        path = self.run.status.completions_file
        if path is None or not path.is_relative_to(self.run.path):
            return path
        return path.relative_to(self.run.path)
