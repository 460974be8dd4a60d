"""A board of runs: a session per run, one reader per machine, diagnoses on a schedule.

What the live monitor does for one run (sources → Run → steady diagnosis), done for many
at once, cheaply: one thread looks at every local run's files in turn (a `stat` per file
when nothing is new), and one per other machine at that machine's (a host that does not
answer holds its own reader, never the runs read here; issue 46); each run's Session
takes its updates on the owner's thread, and the
owner runs one diagnosis at a time, the most overdue first, no run more often than every
`BoardSettings.diagnose_every_s` and only when its data changed, so fifty quiet runs cost
a few `stat`s a second. Each run is shown as a `BoardRow` (plain values: the views draw
them, `check` prints them); runs not opened keep only their Run (the metric columns) and
the steady judge, never a screen's worth of widgets. New runs are found by looking at the
folders given again every `rescan_s`.

A run the user opens gets a screen of its own over the same session (`Board.open`): read
every second and judged at a monitor's pace while it is shown, never read twice.

Textual-free: the board screen (ui/screens/board.py) and `check` on several runs both use it;
what a row's values say (steps, ages, ETA, reward) is written here once, for both.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from grpo_tui.context import RunContext
from grpo_tui.files import mounted
from grpo_tui.health.rules import Rules
from grpo_tui.health.verdict import Diagnosis
from grpo_tui.monitor.alerts import AlertSettings, CommandSink, RunAlerts, command_sink
from grpo_tui.monitor.compare import RunToCompare
from grpo_tui.monitor.events import Event
from grpo_tui.monitor.session import (
    DIAGNOSIS_INTERVAL_S,
    EVENTS_TOLD,
    Applied,
    DiagnosisJob,
    DiagnosisResult,
    Notice,
    Session,
)
from grpo_tui.numbers import format_age, format_duration, format_step, format_value
from grpo_tui.run.follow import POLL_INTERVAL_S, RunFollower
from grpo_tui.run.live import Progress, Run
from grpo_tui.run.update import Update
from grpo_tui.sources.feed import SourceOptions
from grpo_tui.sources.runs import RunRef, runs_in
from grpo_tui.untrusted import printable
from grpo_tui.views.naming import RunName, distinct_names, run_name
from grpo_tui.views.presentation import (
    VERDICT_SEPARATOR,
    VerdictLine,
    matches_filter,
    state_headline,
    verdict_line,
)
from grpo_tui.vocabulary import RunState, Status

#: the reward a row shows, first → now, with its sparkline
BOARD_REWARD = "reward"
#: cells of a row's reward sparkline
SPARK_CELLS = 12
#: seconds between two looks at the run opened on a screen of its own (a monitor's pace)
OPENED_POLL_S = POLL_INTERVAL_S


@dataclass(frozen=True)
class BoardSettings:
    """How often the board looks at its runs (the costs of a board of fifty)."""

    poll_s: float = 5.0
    """Seconds between two looks at every run's files (a `stat` per file when quiet): a
    board row need not be fresher (a run opened is read every second by its monitor)."""
    rescan_s: float = 15.0
    """Seconds between two looks for new runs in the folders given."""
    rediscover_s: float = 30.0
    """Seconds between two looks at a run's folder for another metrics file (a resumed
    run's new `v*` folder): the files followed are read at every look regardless. (A
    monitor looks every 2 s; fifty runs doing that cost the board 0.4 % of a core.)"""
    diagnose_every_s: float = 10.0
    """A run is diagnosed again at most this often, and only when its data changed."""
    read_budget_s: float = 0.05
    """Seconds one run's read may take before the reader moves to the next run."""


@dataclass(frozen=True)
class _SlowParts:
    """What a row shows that changes only with the data or the diagnosis (the reward's
    course, the verdict): computed again only then (`Board.rows`)."""

    framework: str
    status: Status
    verdict: VerdictLine
    #: the reward's course, early level → late (the means of its first and last third, as
    #: every surface quotes them), None unlogged
    reward_first: float | None
    reward_now: float | None
    #: the reward in SPARK_CELLS bucket means over the run's steps (NaN: nothing there)
    reward_levels: tuple[float, ...]


@dataclass(frozen=True)
class BoardRow(_SlowParts):
    """One run as the board shows it, in typed values (equal rows draw the same; the words
    are written by the functions below, once for the board and `check`)."""

    ref: RunRef
    name: str
    state: RunState
    state_label: str
    #: the latest step, None before any
    step: float | None
    #: the run's last step when it says (max_steps), and how far it is (0…1) when known
    max_steps: int | None
    fraction: float | None
    #: seconds to the end while live, where the run gives it or max_steps and a rate
    eta_s: float | None
    #: seconds since the newest data was written, None before any
    age_s: float | None
    #: when the newest data was written (epoch s; sorting puts the newest first)
    data_time: float | None
    #: the run's files could not be read, or it stalled or stopped without finishing
    troubled: bool
    #: the newest worsening event since the run was last opened ("" none): a marker
    alert: str = ""
    #: which checkpoint to go back to and which to keep, in one line (the diagnosis's
    #: health/checkpoints.py answer; "" before it is judged)
    checkpoints: str = ""

    @property
    def rank(self) -> int:
        """0 for the worst: a problem (or stopped, or unreadable), a caution (or stalled),
        the rest."""
        if self.status is Status.PROBLEM or self.state in (RunState.UNREADABLE, RunState.STOPPED):
            return 0
        if self.status is Status.CAUTION or self.state is RunState.STALLED:
            return 1
        return 2

    def matches(self, query: str) -> bool:
        """The filter (`/`): every word of `query` is in the name, framework, state or verdict."""
        haystack = (self.name, self.framework, self.state_label, self.verdict.text())
        return matches_filter(" ".join(haystack), query)


# -- what a row's values say (the board's cells, its detail line and `check`'s text) --------


def step_words(row: BoardRow, *, spelled: bool = True) -> str:
    """`step 120/500 24%` (`spelled`) or `120/500` (a table's cell), "" before any step."""
    if row.step is None:
        return ""
    words = format_step(row.step) + (f"/{row.max_steps}" if row.max_steps else "")
    if not spelled:
        return words
    percent = f" {100 * row.fraction:.0f}%" if row.fraction is not None else ""
    return f"step {words}{percent}"


def eta_words(row: BoardRow) -> str:
    """`1h02m` to the end, "" when unknown (or not live)."""
    return "" if row.eta_s is None else format_duration(row.eta_s)


def age_words(row: BoardRow) -> str:
    """`3m ago` since the newest data, "" before any."""
    return "" if row.age_s is None else f"{format_age(row.age_s)} ago"


def reward_words(row: BoardRow) -> str:
    """`0.21→0.63`: the reward's course, first level → now, "" unlogged."""
    if row.reward_first is None or row.reward_now is None:
        return ""
    return f"{format_value(row.reward_first)}→{format_value(row.reward_now)}"


def state_word(row: BoardRow) -> str:
    """The state in a word of at most 8 cells (its detail is in `state_label`)."""
    word = row.state.word.upper()
    return word if len(word) <= 8 else word[:7] + "…"


def row_facts(row: BoardRow) -> list[str]:
    """The run's facts in words, in the order every surface says them: its state, step,
    ETA, reward first → now and data age (a stall's label says its age already)."""
    facts = [row.state_label, step_words(row)]
    if row.eta_s is not None:
        facts.append(f"ETA {eta_words(row)}")
    if reward := reward_words(row):
        facts.append(f"{BOARD_REWARD} {reward}")
    if row.age_s is not None and row.state is not RunState.STALLED:
        facts.append(f"data {age_words(row)}")
    return [fact for fact in facts if fact]


def _slow_parts(run: Run, diagnosis: Diagnosis | None, pending: str) -> _SlowParts:
    # the reward's course as the diagnosis reads it: the numbers every surface quotes
    health = diagnosis.metrics.get(BOARD_REWARD) if diagnosis is not None else None
    first = health.course_start if health is not None else None
    latest = health.course_end if health is not None else None
    levels = run.store.buckets(BOARD_REWARD, SPARK_CELLS).mean
    return _SlowParts(
        framework=printable(run.framework or ""),
        status=diagnosis.status if diagnosis is not None else Status.UNKNOWN,
        verdict=verdict_line(diagnosis, pending=pending),
        reward_first=first,
        reward_now=latest,
        reward_levels=tuple(float(v) for v in levels),
    )


def board_row(
    run: Run,
    diagnosis: Diagnosis | None,
    now: float,
    name: str,
    ref: RunRef,
    *,
    slow: _SlowParts | None = None,
) -> BoardRow:
    """The row of run `ref` at wall time `now` (`slow`: its `_slow_parts` when they are
    known to be current)."""
    state, label = state_headline(run, now)
    progress = run.progress()
    parts = slow if slow is not None else _slow_parts(run, diagnosis, pending="")
    return BoardRow(
        ref=ref,
        name=printable(name),
        state=state,
        state_label=label,
        step=progress.step,
        max_steps=progress.max_steps,
        fraction=progress.fraction,
        eta_s=eta_seconds(run, progress) if state is RunState.LIVE else None,
        age_s=run.data_age(now),
        data_time=run.last_data_time,
        troubled=state in (RunState.UNREADABLE, RunState.STALLED, RunState.STOPPED),
        **vars(parts),
        checkpoints=checkpoint_words(diagnosis),
    )


def checkpoint_words(diagnosis: Diagnosis | None) -> str:
    """The checkpoint answer the diagnosis carries, as the board's detail line says it."""
    advice = diagnosis.checkpoints if diagnosis is not None else None
    return printable(f"checkpoints: {advice.headline}") if advice and advice.headline else ""


#: logged durations of one step a rate is read from when the run logs no speed (TRL's
#: step_time, verl's timing_s/step), the first logged one
STEP_TIMES = ("step_time", "time_per_step")
#: steps a logged step duration is the median of
_RATE_POINTS = 20


def seconds_per_step(run: Run, progress: Progress) -> float | None:
    """The run's rate: the speed it logs (ms-swift's s/it), else the recent median of a
    step's logged duration; None when it gives none."""
    if progress.seconds_per_step is not None and progress.seconds_per_step > 0:
        return progress.seconds_per_step
    for name in STEP_TIMES:
        if name in run.store:
            values = run.store.window(name, _RATE_POINTS).values
            values = values[np.isfinite(values) & (values > 0)]
            if values.size:
                return float(np.median(values))
    return None


def eta_seconds(run: Run, progress: Progress) -> float | None:
    """Seconds to the run's end: what it logs (ms-swift's remaining time), else the steps
    left to max_steps at its rate; None when it gives neither."""
    if progress.remaining_s is not None:
        return progress.remaining_s
    if progress.step is None or not progress.max_steps or progress.step >= progress.max_steps:
        return None
    rate = seconds_per_step(run, progress)
    return None if rate is None else (progress.max_steps - progress.step) * rate


def board_counts(rows: Sequence[BoardRow]) -> str:
    """The board's verdict line: how many runs are in each status, worst first."""
    counts = Counter(row.status for row in rows)
    parts = [
        f"{s.glyph} {counts[s]} {'no verdict yet' if s is Status.UNKNOWN else s.word}"
        for s in (Status.PROBLEM, Status.CAUTION, Status.HEALTHY, Status.UNKNOWN)
        if counts[s]
    ]
    stopped = sum(1 for row in rows if row.state is RunState.STOPPED)
    if stopped:
        parts.append(f"{stopped} stopped")
    troubled = sum(1 for row in rows if row.troubled) - stopped
    if troubled:
        parts.append(f"{troubled} stalled or unreadable")
    return VERDICT_SEPARATOR.join(parts) or "no runs found yet"


#: the orders the board lists its runs in (`s` cycles them; `check` lists them by the first)
SORTS = ("status", "name", "step", "age", "reward")
#: what each order puts first, as the board says it
SORT_WORDS = {
    "status": "the worst first",
    "name": "by name",
    "step": "the furthest first",
    "age": "the newest data first",
    "reward": "the highest reward first",
}


def sort_rows(rows: Sequence[BoardRow], by: str = "status") -> list[BoardRow]:
    """The rows in the order `by` (SORTS): by status the worst first, then the newest data
    first; by name; the furthest run first (how far, else the step); the newest data first;
    the highest reward now first. Ties, and runs without the value (last), by name."""
    inf = float("inf")
    keys: dict[str, Callable[[BoardRow], tuple[object, ...]]] = {
        "status": lambda r: (r.rank, -(r.data_time or 0.0), r.name),
        "name": lambda r: (r.name,),
        "step": lambda r: (
            -(r.fraction if r.fraction is not None else -1.0),
            -(r.step if r.step is not None else -inf),
            r.name,
        ),
        "age": lambda r: (r.data_time is None, -(r.data_time or 0.0), r.name),
        "reward": lambda r: (r.reward_now is None, -(r.reward_now or 0.0), r.name),
    }
    return sorted(rows, key=keys[by])


def run_names(refs: Sequence[RunRef]) -> dict[RunRef, str]:
    """A name per run as the header calls it (naming.run_name: its folder, a store's run),
    told apart with the parent folders it takes where two are alike."""
    names = {ref: _board_name(ref) for ref in refs}
    return {ref: name.called for ref, name in distinct_names(names).items()}


def _board_name(ref: RunRef) -> RunName:
    """A run's name on a board: a store's run by its own name (its project is the board's,
    said when two projects hold runs alike), anything else as the header names it."""
    name = run_name(ref.path, store_run=ref.run)
    if ref.run is None:
        return name
    return RunName(ref.run, name.file, name.machine, (*name.parents, ref.path.stem))


def options_for(ref: RunRef, options: SourceOptions | None) -> SourceOptions | None:
    """How to read one run: `options`, and the run of its store it is."""
    return replace(options or SourceOptions(), run_name=ref.run) if ref.run else options


@dataclass(frozen=True)
class BoardUpdate:
    """What the board's reader hands to the owner: one run's read, or a notice about it."""

    ref: RunRef
    item: Update | Notice


@dataclass(frozen=True)
class NewRuns:
    """Runs found in the folders given since the last look (the owner adds them)."""

    refs: tuple[RunRef, ...]


#: `Board.read_all` / `find_new_runs`: the runs of every machine
EVERY_MACHINE = object()


def _on(path: Path, machine: object) -> bool:
    """PATH is read on `machine` (None: this one; EVERY_MACHINE: any)."""
    return machine is EVERY_MACHINE or mounted(path) is machine


@dataclass
class _Entry:
    session: Session
    follower: RunFollower
    #: the run's event detector (and the board's shared --on-alert command)
    alerts: RunAlerts
    #: the reader thread's last delivered status signature (it delivers changes only)
    last_status: tuple[object, ...] | None = None
    #: the newest worsening event not seen yet (cleared when the run is opened)
    unseen: Event | None = None
    #: the row's slow parts and what they were computed from (`Board.rows`)
    slow: tuple[tuple[int, str], Diagnosis | None, _SlowParts] | None = None


@dataclass(frozen=True)
class OpenedRun:
    """A board's run opened on a screen of its own: the board's session and alert
    detector for it (nothing is read or judged a second time), and its name."""

    ref: RunRef
    session: Session
    alerts: RunAlerts
    name: str


@dataclass
class Board:
    """The runs of the folders and paths given. The owner (the board app) calls everything
    on its thread; the reader's thread (`start`) puts what it reads in the board's inbox
    and calls `on_post` when the inbox was empty, and the owner `drain`s it. The inbox
    outlives any one screen: what is read while a run's monitor is open instead is kept
    for the board's next screen, never dropped."""

    roots: Sequence[Path]
    rules: Rules
    settings: BoardSettings = field(default_factory=BoardSettings)
    options: SourceOptions | None = None
    given: RunContext = field(default_factory=RunContext)
    alert_settings: AlertSettings = field(default_factory=AlertSettings)
    clock: Callable[[], float] = time.monotonic
    _entries: dict[RunRef, _Entry] = field(default_factory=dict, init=False)
    #: every run's short name on the board (`run_names`)
    _names: dict[RunRef, str] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _wake: threading.Event = field(default_factory=threading.Event, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    #: the reader of each other machine's runs (by its mounted file system's id)
    _machine_readers: dict[int, threading.Thread] = field(default_factory=dict, init=False)
    #: the diagnosis in flight (one at a time), by run
    _in_flight: RunRef | None = field(default=None, init=False)
    #: the --on-alert command, one for every run (made with the first run)
    _command: CommandSink | None = field(default=None, init=False)
    _command_made: bool = field(default=False, init=False)
    _inbox: queue.SimpleQueue[BoardUpdate | NewRuns] = field(
        default_factory=queue.SimpleQueue, init=False
    )
    _signalled: threading.Event = field(default_factory=threading.Event, init=False)
    #: called from the reader's thread when the inbox gets its first item since a drain
    on_post: Callable[[], object] | None = None
    #: the run opened on a screen of its own (`open`), read every `OPENED_POLL_S`
    _opened: RunRef | None = field(default=None, init=False)
    #: what the reads of the opened run brought since the screen last took it
    _opened_applied: Applied | None = field(default=None, init=False)

    def post(self, item: BoardUpdate | NewRuns) -> None:
        """Put an item in the inbox (any thread); the owner is called once until it drains."""
        self._inbox.put(item)
        if not self._signalled.is_set():
            self._signalled.set()
            hook = self.on_post
            if hook is not None:
                hook()

    def drain(self) -> list[BoardUpdate | NewRuns]:
        """Everything in the inbox, oldest first (the owner's thread)."""
        self._signalled.clear()
        items: list[BoardUpdate | NewRuns] = []
        while True:
            try:
                items.append(self._inbox.get_nowait())
            except queue.Empty:
                return items

    # -- the runs -----------------------------------------------------------------------
    def add(self, refs: Sequence[RunRef]) -> list[RunRef]:
        """Follow these runs too (those already followed are left as they are); the new."""
        with self._lock:
            added = [ref for ref in dict.fromkeys(refs) if ref not in self._entries]
            # every run named before its alerts are made: two may share a folder's name
            self._names = run_names([*self._entries, *added])
            for ref in added:
                session = Session(
                    Run(ref.path, given=self.given),
                    self.rules,
                    self._poster(ref),
                    clock=self.clock,
                    diagnosis_interval=self.settings.diagnose_every_s,
                )
                session.mounted()  # no screen to wait for: updates go straight to the owner
                session.painted()
                follower = RunFollower(
                    ref.path,
                    options_for(ref, self.options),
                    rediscover_every=self.settings.rediscover_s,
                )
                self._entries[ref] = _Entry(session, follower, self._alerts_for(ref))
        return added

    def _alerts_for(self, ref: RunRef) -> RunAlerts:
        """A run's alerts: its own detector, the board's one command. The moment a run is
        first judged is its baseline (the board shows it); what changes after is told."""
        if not self._command_made:
            self._command_made = True
            self._command = command_sink(self.alert_settings, self._command_failed)
        return RunAlerts(
            ref.path,
            self.alert_settings,
            command=self._command,
            shown=True,
            name=self._names[ref] if ref.run else None,
        )

    def _command_failed(self, text: str) -> None:
        self.post(BoardUpdate(RunRef(Path("")), Notice("on-alert", text, error=True)))

    def observe(self, now: float) -> list[Event]:
        """The events the runs bring at wall time `now` (each handed to the command); a
        worsening one marks its row until the run is opened (`open`)."""
        events: list[Event] = []
        for ref, entry in self._entries.items():
            session = entry.session
            if session.diagnosis is None or ref == self._opened:
                continue  # the opened run's screen tells its events
            event = entry.alerts.observe(session.run, session.diagnosis, now)
            if event is not None:
                events.append(event)
                if event.worsening:
                    entry.unseen = event
        return events

    def open(self, ref: RunRef) -> OpenedRun | None:
        """The user opens the run on a screen of its own, over the session the board holds:
        its marker goes; it is read every `OPENED_POLL_S` and judged at a monitor's pace
        (by the screen, through the session: one judge), and its events are the screen's
        to tell (the same detector: none is told twice). None when it is not followed."""
        entry = self._entries.get(ref)
        if entry is None:
            return None
        if self._opened is not None and self._opened != ref:
            self.release(self._opened)
        entry.unseen = None
        self._opened = ref
        self._opened_applied = None
        entry.session.pace_diagnoses(DIAGNOSIS_INTERVAL_S)
        self._wake.set()  # its first quick read now, not at the end of the board's poll
        return OpenedRun(ref, entry.session, entry.alerts, self._names[ref])

    def release(self, ref: RunRef) -> None:
        """The run's screen closed: back to the board's pace for it."""
        entry = self._entries.get(ref)
        if entry is not None:
            entry.session.pace_diagnoses(self.settings.diagnose_every_s)
        if self._opened == ref:
            self._opened = None
            self._opened_applied = None

    @property
    def opened(self) -> RunRef | None:
        """The run opened on a screen of its own, if any."""
        return self._opened

    def take_opened(self) -> Applied | None:
        """What the reads of the opened run brought since this was last asked (its screen
        draws it and tells its source events)."""
        applied, self._opened_applied = self._opened_applied, None
        return applied

    def close(self) -> None:
        """Stop reading, and let the command finish what it was handed (a few seconds)."""
        self.stop()
        if self._command is not None:
            self._command.close()

    def _poster(self, ref: RunRef) -> Callable[[Update | Notice], object]:
        return lambda item: self.post(BoardUpdate(ref, item))

    @property
    def refs(self) -> list[RunRef]:
        """The runs followed, in the order they were added."""
        with self._lock:
            return list(self._entries)

    def find_new_runs(self, machine: object = EVERY_MACHINE) -> list[RunRef]:
        """Runs in the folders given that are not followed yet (those on `machine` only:
        None for this one, a mounted file system for another)."""
        known = set(self.refs)
        only = self.options.only if self.options is not None else None
        roots = [root for root in self.roots if _on(root, machine)]
        found = (run for root in roots for run in runs_in(root, only=only, known=known))
        return [run for run in dict.fromkeys(found) if run not in known]

    # -- reading (the readers' threads) -------------------------------------------------
    def start(self) -> None:
        """Start the readers: one for this machine's runs, one per other machine (daemon
        threads: a hung mount never keeps the process up, and a machine that does not
        answer holds its own reader only, never the runs read here)."""
        self._thread = threading.Thread(target=self._loop, name="grpo-tui-board", daemon=True)
        self._thread.start()
        self._start_machine_readers()

    def _start_machine_readers(self) -> None:
        """A reader for each other machine a run or a folder given is on (new ones too)."""
        with self._lock:
            paths = [*self.roots, *(ref.path for ref in self._entries)]
        for path in paths:
            machine = mounted(path)
            if machine is not None and id(machine) not in self._machine_readers:
                reader = threading.Thread(
                    target=self._loop, args=(machine,), name="grpo-tui-board-ssh", daemon=True
                )
                self._machine_readers[id(machine)] = reader
                reader.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def read_all(self, machine: object = EVERY_MACHINE) -> bool:
        """One look at every run's files (those on `machine` only: None for this one),
        each read delivered to its session; True when a run has more ready (its backlog),
        so the next look comes at once."""
        more = False
        with self._lock:
            entries = [e for e in self._entries.values() if _on(e.follower.path, machine)]
        for entry in entries:
            if self._stop.is_set():
                return False
            more = self._read(entry) or more
        return more

    def read_opened(self, machine: object = EVERY_MACHINE) -> bool:
        """One look at the opened run's files (when it is on `machine`); True when it has
        more ready."""
        with self._lock:
            entry = self._entries.get(self._opened) if self._opened is not None else None
        if entry is None or not _on(entry.follower.path, machine) or self._stop.is_set():
            return False
        return self._read(entry)

    def _read(self, entry: _Entry) -> bool:
        """One read of a run, delivered to its session; True when it has more ready."""
        try:
            update = entry.follower.read(time_budget=self.settings.read_budget_s)
        except Exception as error:
            entry.session.reading_failed(f"{type(error).__name__}: {error}")
            return False
        status = update.status.signature()
        if update or status != entry.last_status:
            entry.last_status = status
            entry.session.deliver(update)
        return update.more

    def _loop(self, machine: object = None) -> None:
        """One reader: the runs and folders on `machine` (None: this one's)."""
        rescanned_at: float | None = None
        read_at: float | None = None
        while not self._stop.is_set():
            if machine is None:
                self._start_machine_readers()  # a run found on another machine
            if read_at is None or self.clock() - read_at >= self.settings.poll_s:
                read_at = self.clock()
                more = self.read_all(machine)
            else:  # between two looks at every run, the opened one is looked at alone
                more = self.read_opened(machine)
            if rescanned_at is None or self.clock() - rescanned_at >= self.settings.rescan_s:
                rescanned_at = self.clock()
                new = self.find_new_runs(machine)
                if new:
                    self.post(NewRuns(tuple(new)))
            if more:
                continue
            # the opened run is read at a monitor's pace, the others at the board's
            wait = self.settings.poll_s if self._opened is None else OPENED_POLL_S
            wait = min(wait, max(0.0, read_at + self.settings.poll_s - self.clock()))
            if machine is None:
                self._wake.wait(wait)
                self._wake.clear()
            else:
                self._stop.wait(wait)

    # -- the owner's side ---------------------------------------------------------------
    def take_inbox(self) -> tuple[bool, list[Notice]]:
        """Apply everything the reader put in the inbox: (whether a run changed, the notices
        about runs' files to tell the user). New runs found are followed from now on."""
        changed = False
        notices: list[Notice] = []
        for item in self.drain():
            if isinstance(item, NewRuns):
                changed = bool(self.add(item.refs)) or changed
            elif isinstance(item.item, Notice):
                notices.append(item.item)
            elif (entry := self._entries.get(item.ref)) is not None:
                # a run's read: changed when its Run took it (not held back)
                applied = entry.session.receive(item.item)
                changed = applied is not None or changed
                if applied is not None and item.ref == self._opened:
                    held = self._opened_applied
                    events = (held.events if held is not None else ()) + applied.events
                    self._opened_applied = Applied(events[-EVENTS_TOLD:])
        return changed, notices

    def next_diagnosis(self) -> tuple[RunRef, DiagnosisJob] | None:
        """The diagnosis to run now: none while one is in flight, else that of a run due one,
        those never diagnosed first, then by name (`diagnosis_due` says 0 for every run due,
        however long it is overdue)."""
        if self._in_flight is not None:
            return None
        # the opened run is diagnosed by its screen, at a monitor's pace (the same session)
        due = [
            ref
            for ref, entry in self._entries.items()
            if ref != self._opened and entry.session.diagnosis_due() == 0.0
        ]
        if not due:
            return None
        ref = min(due, key=lambda r: (self._entries[r].session.diagnosis is not None, str(r)))
        job = self._entries[ref].session.start_diagnosis()
        if job is None:
            return None
        self._in_flight = ref
        return ref, job

    def diagnosed(self, ref: RunRef, result: DiagnosisResult) -> None:
        self._in_flight = None
        entry = self._entries.get(ref)
        if entry is not None:
            entry.session.diagnosed(result)

    def judging(self) -> int:
        """How many runs hold data their verdict does not cover yet (read, not judged)."""
        return sum(1 for entry in self._entries.values() if not entry.session.settled)

    @property
    def settled(self) -> bool:
        """Every run's reads are in and diagnosed (tests and `check` wait on it)."""
        return self._in_flight is None and all(
            entry.session.settled for entry in self._entries.values()
        )

    def to_compare(self, refs: Sequence[RunRef]) -> list[RunToCompare]:
        """These runs (those followed), with their names (inert: a folder's name is
        anybody's) and steady diagnoses."""
        return [
            RunToCompare(printable(self._names[ref]), entry.session.run, entry.session.diagnosis)
            for ref in refs
            if (entry := self._entries.get(ref)) is not None
        ]

    def rows(self, now: float) -> list[BoardRow]:
        """Every run's row, worst first."""
        rows = []
        for ref, entry in self._entries.items():
            session = entry.session
            pending = session.diagnosis_note
            # the reward's course and the verdict change with the data or the diagnosis
            # only: a clock tick of fifty quiet runs recomputes just their states and ages
            key = (session.run.version, pending)
            slow = entry.slow
            if slow is None or slow[0] != key or slow[1] is not session.diagnosis:
                slow = (
                    key,
                    session.diagnosis,
                    _slow_parts(session.run, session.diagnosis, pending),
                )
                entry.slow = slow
            row = board_row(
                session.run, session.diagnosis, now, self._names[ref], ref, slow=slow[2]
            )
            if entry.unseen is not None:
                row = replace(row, alert=entry.unseen.kind.word)
            rows.append(row)
        return sort_rows(rows)
