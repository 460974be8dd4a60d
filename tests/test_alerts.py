"""The sinks (grpo_tui/monitor/alerts.py) with a real command, a real run written as it grows, the
monitor, and the hostile run: nothing from a log reaches a shell or the terminal raw.

The command is a real script (tests write it: it appends its stdin to one file and its
GRPO_TUI_* environment, as JSON, to another). The run is a real corpus run, TRL's
checkpoints written one after the other as the trainer wrote them. Every wait is on a
condition.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import shlex
import shutil
import signal
import stat
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import screen_text, wait_for, wait_until

from grpo_tui.commands.watch import Watch
from grpo_tui.commands.watch import stop_signals as watch_stop_signals
from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.monitor.alerts import (
    BEL,
    ESC,
    NOTIFY_STYLES,
    STDERR_KEPT,
    AlertSettings,
    CommandSink,
    RunAlerts,
    StderrTail,
    command_environment,
    kill_running_commands,
    plain,
    terminal_text,
)
from grpo_tui.monitor.events import Event, EventKind, EventRules, moment_of
from grpo_tui.run.follow import load_run

CORPUS = Path(__file__).parent / "corpus"
#: TRL checkpoints every 100 steps: warming up, then truncation (PROBLEM), reward hacking
MINESWEEPER = CORPUS / "aaipl-minesweeper-trl"
CHECKPOINTS = (100, 200, 300, 400, 500)
#: verl's console through W&B's output.log: length collapse, reward hacking, too aggressive
LENGTH_HACK = CORPUS / "verl-wandb-opd-qwen25-3b-kl005-lengthhack-collapse"
#: the pieces its log is written in
PIECES = 8
#: the reward function the run's reward-hacking evidence names
HACKED_KEY = "valid_json_reward"
#: a run folder a shell would run, and a metric name that would drive a terminal
HOSTILE_NAME = "$(touch pwned)"
HOSTILE_KEY = "valid\n\x1b]0;owned\x07json\x1b[2J"

HOOK = """#!{python}
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
data = sys.stdin.buffer.read()
with open(os.path.join(here, "events.jsonl"), "ab") as out:
    out.write(data)
ours = {{k: v for k, v in os.environ.items() if k.startswith("GRPO_TUI_")}}
with open(os.path.join(here, "env.jsonl"), "a", encoding="utf-8") as out:
    out.write(json.dumps(ours) + "\\n")
sys.exit(int(os.environ.get("HOOK_EXIT", "0")))
"""


class Hook:
    """The user's command: a script that appends what it is given to files beside it."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.script = folder / "on-alert.py"
        self.script.write_text(HOOK.format(python=sys.executable), encoding="utf-8")
        self.script.chmod(self.script.stat().st_mode | stat.S_IXUSR)
        self.events_file = folder / "events.jsonl"
        self.env_file = folder / "env.jsonl"

    @property
    def command(self) -> str:
        return shlex.quote(str(self.script))

    def events(self) -> list[dict[str, Any]]:
        if not self.events_file.exists():
            return []
        return [orjson.loads(line) for line in self.events_file.read_bytes().splitlines()]

    def environments(self) -> list[dict[str, str]]:
        if not self.env_file.exists():
            return []
        lines = self.env_file.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]


def add_checkpoint(run: Path, step: int, source: Path = MINESWEEPER) -> None:
    """The trainer saves checkpoint-`step` (written aside, then renamed into place, as
    TRL does; the file's time is now, as a live run's is)."""
    aside = run / f"tmp-checkpoint-{step}"
    aside.mkdir(parents=True)
    shutil.copyfile(
        source / f"checkpoint-{step}" / "trainer_state.json", aside / "trainer_state.json"
    )
    aside.rename(run / f"checkpoint-{step}")


class GrowingLog:
    """A copy of a run whose one log file is written piece by piece, as its trainer did."""

    def __init__(self, source: Path, target: Path, pieces: int) -> None:
        shutil.copytree(source, target)
        (self.log,) = target.rglob("output.log")
        lines = self.log.read_bytes().splitlines(keepends=True)
        # the first piece ends at the first train step: the log is found as a metrics log
        start = next(i for i, line in enumerate(lines) if line.startswith(b"step:1 ")) + 1
        size = -(-(len(lines) - start) // pieces)
        self.pieces = [b"".join(lines[:start])]
        self.pieces += [b"".join(lines[i : i + size]) for i in range(start, len(lines), size)]
        self.log.write_bytes(b"")

    def write(self) -> None:
        """The next piece."""
        with open(self.log, "ab") as out:
            out.write(self.pieces.pop(0))


@functools.cache
def real_event() -> Event:
    """The event the minesweeper run's whole history brings (PROBLEM)."""
    run = load_run(MINESWEEPER)
    event = RunAlerts(MINESWEEPER, AlertSettings()).detector.observe(
        moment_of(run, diagnose(run, Rules()), 1.7e9)
    )
    assert event is not None
    return event


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


# -- the command ----------------------------------------------------------------------------


class TestCommand:
    """The user's command runs once per event, never blocks, and failures are said once."""

    def test_event_on_stdin_and_plain_variables(self, tmp_path: Path) -> None:
        hook = Hook(tmp_path)
        reports: list[str] = []
        sink = CommandSink(hook.command, reports.append)
        event = real_event()
        assert sink.submit(event)
        wait_for(lambda: sink.idle, what="the command to run")
        sink.close()
        (got,) = hook.events()
        assert got == orjson.loads(orjson.dumps(event.to_json()))
        assert got["event"] == "worse" and got["status"] == "problem"
        (env,) = hook.environments()
        assert env["GRPO_TUI_RUN"] == "aaipl-minesweeper-trl"
        assert env["GRPO_TUI_STATUS"] == "problem"
        assert env["GRPO_TUI_OLD_STATUS"] == "unknown"
        assert env["GRPO_TUI_STEP"] == "500"
        # the lead: the first of its two problems
        assert env["GRPO_TUI_VERDICT"] == event.verdict == "truncation"
        assert env["GRPO_TUI_EVENT"] == "worse" and env["GRPO_TUI_WORSENING"] == "1"
        assert env["GRPO_TUI_SUMMARY"] == event.summary
        assert reports == []  # it ran once (one event on its stdin) and worked

    def test_a_failing_command_is_said_once(self, tmp_path: Path) -> None:
        hook = Hook(tmp_path)
        reports: list[str] = []
        sink = CommandSink(hook.command, reports.append, environ={**os.environ, "HOOK_EXIT": "3"})
        event = real_event()
        for _ in range(3):
            assert sink.submit(event)
        wait_for(lambda: sink.idle, what="the three commands")
        sink.close()
        # each event ran once (none was run again) and failed: said once, never "works again"
        assert reports == ["--on-alert failed (exit status 3); not retried"]
        assert len(hook.events()) == 3

    def test_a_flood_on_stderr_keeps_only_its_end(self, tmp_path: Path) -> None:
        """A command writing 20 MB to stderr before failing: its last line is said, and
        only the end of what it wrote was ever held (issue 46: `yes >&2` grew to 3 GB)."""
        script = tmp_path / "flood.py"
        script.write_text(
            "import sys\n"
            "sys.stdin.read()\n"
            "for _ in range(20_000):\n"
            "    sys.stderr.write('x' * 1023 + '\\n')\n"
            "sys.stderr.write('the webhook said 502\\n')\n"
            "sys.exit(3)\n",
            encoding="utf-8",
        )
        reports: list[str] = []
        sink = CommandSink(
            f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}", reports.append
        )
        assert sink.submit(real_event())
        wait_for(lambda: reports, what="the failure said")
        sink.close()
        assert reports == ["--on-alert failed (exit status 3: the webhook said 502); not retried"]

    def test_the_stderr_tail_is_bounded(self) -> None:
        """The reader of a command's stderr keeps STDERR_KEPT bytes of 16 MB."""
        read_end, write_end = os.pipe()
        with os.fdopen(read_end, "rb") as pipe:
            tail = StderrTail(pipe)
            with os.fdopen(write_end, "wb") as writer:
                for _ in range(256):
                    writer.write(b"y" * 65535 + b"\n")
                writer.write(b"last words\n")
            tail.join(30.0)
            text = tail.text()
        assert len(text.encode()) <= STDERR_KEPT
        assert text.endswith("y\nlast words\n")

    def test_a_command_not_found(self, tmp_path: Path) -> None:
        reports: list[str] = []
        sink = CommandSink(str(tmp_path / "no-such-hook"), reports.append)
        sink.submit(real_event())
        wait_for(lambda: reports, what="the failure said")
        sink.close()
        (report,) = reports
        assert report.startswith("--on-alert failed (exit status 127: ")
        assert "not found" in report

    def test_works_again(self, tmp_path: Path) -> None:
        flag = tmp_path / "broken"
        flag.touch()
        reports: list[str] = []
        sink = CommandSink(f"test ! -e {shlex.quote(str(flag))}", reports.append)
        event = real_event()
        sink.submit(event)
        sink.submit(event)
        wait_for(lambda: sink.idle, what="two failures")
        flag.unlink()
        sink.submit(event)
        wait_for(lambda: sink.idle, what="a success")
        sink.close()
        assert reports == [
            "--on-alert failed (exit status 1); not retried",
            "--on-alert works again (2 failed before)",
        ]

    def test_a_hung_command_never_blocks_and_times_out(self, tmp_path: Path) -> None:
        gate = tmp_path / "gate"
        reports: list[str] = []
        # it waits for a file nobody writes: only its timeout ends it (its whole group)
        command = f"while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.05; done"
        sink = CommandSink(command, reports.append, timeout_s=0.5, queue_size=1)
        event = real_event()
        assert sink.submit(event)  # returns while the command runs
        assert not sink.idle
        wait_for(lambda: sink.process is not None, what="the command started")
        assert sink.submit(event)  # queued behind it
        assert not sink.submit(event)  # the queue is full: dropped, said once
        assert not sink.submit(event)
        wait_for(lambda: sink.idle, what="both commands timed out")
        sink.close()
        assert sink.dropped == 2
        assert reports == [
            "--on-alert is slower than the events: an event was dropped (more are counted, not said)",
            "--on-alert failed (timed out after 0.5 s); not retried",
        ]

    def test_closing_kills_a_command_still_running(self, tmp_path: Path) -> None:
        gate = tmp_path / "gate"
        sink = CommandSink(f"while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.05; done", print)
        sink.submit(real_event())
        wait_for(lambda: sink.process is not None, what="the command started")
        process = sink.process
        sink.close(wait_s=0.1)
        assert process is not None
        wait_for(lambda: process.poll() is not None, what="the command killed")
        assert not sink.submit(real_event())  # closed: takes no more


# -- the terminal -------------------------------------------------------------------------


class TestTerminal:
    """BEL on a worsening, OSC 9 / 777 of our own words only."""

    def test_bell_and_notifications(self) -> None:
        event = real_event()
        assert event.worsening
        assert terminal_text(event, AlertSettings()) == BEL
        assert terminal_text(event, AlertSettings(bell=False)) == ""
        osc9 = terminal_text(event, AlertSettings(bell=False, notify="osc9"))
        assert osc9 == f"{ESC}]9;{event.summary}{BEL}"
        osc777 = terminal_text(event, AlertSettings(bell=False, notify="osc777"))
        assert osc777 == f"{ESC}]777;notify;grpo-tui;{event.summary}{BEL}"

    def test_no_bell_for_better_news(self) -> None:
        event = real_event()
        better = replace(event, kind=EventKind.BETTER, entered=(), verdicts=())
        assert not better.worsening
        assert terminal_text(better, AlertSettings()) == ""

    def test_plain(self) -> None:
        assert plain("a\nb\x1b]0;t\x07c\x9b") == "a b␛]0;t␇c\ufffd"
        assert plain("x" * 500, 10) == "x" * 9 + "…"


# -- a run going wrong, live ----------------------------------------------------------------


def follow_until(watch: Watch, condition: Any, what: str) -> None:
    """Drive the watch loop (as `watch_command` does) until `condition()` holds."""

    def done() -> bool:
        for watched in watch.runs:
            watched.reader.wake()
        watch.step(0.02)
        return bool(condition())

    wait_for(done, what=what)


class TestLive:
    """A real run written checkpoint by checkpoint, followed by the watch core with a real
    command: the events arrive in order, on stdout's side and the command's."""

    def test_a_run_going_wrong(self, tmp_path: Path) -> None:
        run = tmp_path / "runs" / LENGTH_HACK.name
        log = GrowingLog(LENGTH_HACK, run, PIECES)
        log.write()
        hook = Hook(tmp_path / "hook")
        clock = Clock()
        printed: list[Event] = []
        warnings: list[str] = []
        watch = Watch(
            [run],
            AlertSettings(command=hook.command),
            Rules(),
            emit=printed.append,
            warn=warnings.append,
            clock=clock,
            watch_files=False,
            diagnosis_interval=0.0,
        )
        session = watch.runs[0].session
        watch.start()
        told_at: list[float] = []
        try:
            while True:
                before = len(printed)
                reads = watch.runs[0].reader.reads
                follow_until(
                    watch,
                    lambda reads=reads: watch.runs[0].reader.reads >= reads + 2 and session.settled,
                    "the piece read and judged",
                )
                told_at += [clock.t] * (len(printed) - before)
                if not log.pieces:
                    break
                log.write()
                clock.t += 30.0  # half the rate limit's gap between two pieces
            clock.t += 3600.0  # what the limit held is told once it allows
            follow_until(watch, lambda: not watch.runs[0].alerts.detector.held, "the held change")
            told_at += [clock.t] * (len(printed) - len(told_at))
            command = watch.command
            assert command is not None
            wait_for(lambda: command.idle, what="the commands")
        finally:
            watch.stop()
        kinds = [(e.kind.word, e.old_status.word, e.status.word) for e in printed]
        entered = [[v.id for v in e.entered] for e in printed]
        assert kinds[0] == ("worse", "unknown", "problem") and entered[0] == ["reward_hacking"]
        assert {"reward_hacking", "length_collapse"} <= {i for ids in entered for i in ids}
        assert printed[-1].status.word == "problem"
        # the rate limit: never two events of the run inside its gap
        assert all(b - a >= EventRules().min_gap_s for a, b in itertools.pairwise(told_at))
        # debounce: every verdict told entering is one the steady history holds a span of
        history = (
            {span.id.word for span in session.diagnosis.history} if session.diagnosis else set()
        )
        assert {v.id for e in printed for v in e.entered} <= history
        # the command got the same events, in the same order, intact
        assert hook.events() == [orjson.loads(orjson.dumps(e.to_json())) for e in printed]
        assert warnings == []


# -- the monitor ----------------------------------------------------------------------------


async def test_the_monitor_tells_an_event(tmp_path: Path) -> None:
    """`tail --on-alert`: the app shows the event and hands it to the command; the moment
    it opened on is its baseline."""
    from helpers import app_for

    run = tmp_path / "minesweeper"
    add_checkpoint(run, 100)
    hook = Hook(tmp_path / "hook")
    app = app_for(run, watch_files=False, alerts=AlertSettings(command=hook.command))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_until(
            pilot, lambda: app.run_screen.session.diagnosis is not None, what="a diagnosis"
        )
        assert app.run_screen.alerts.told == []  # the screen shows the first moment already
        for step in CHECKPOINTS[1:]:
            add_checkpoint(run, step)

        def told() -> bool:
            app.run_screen.wake()  # no waiting for the poll interval
            return bool(app.run_screen.alerts.told)

        await wait_until(pilot, told, what="an event")
        event = app.run_screen.alerts.told[0]
        assert event.worsening
        # reward hacking entering beside the truncation the screen opened on
        assert [v.id for v in event.entered] == ["reward_hacking"]
        toast = f"alert {event.kind.word}"
        await wait_until(pilot, lambda: toast in screen_text(app), what="the toast")
        await wait_until(pilot, lambda: bool(hook.events()), what="the command's input")
        assert hook.events()[0] == orjson.loads(orjson.dumps(event.to_json()))


# -- nothing from a log reaches a shell or the terminal ---------------------------------------


def hostile_run(root: Path) -> Path:
    """The minesweeper run under a folder a shell would run, its hacked reward renamed to
    a metric key holding a newline and escape sequences."""
    run = root / HOSTILE_NAME
    for step in CHECKPOINTS:
        state = (MINESWEEPER / f"checkpoint-{step}" / "trainer_state.json").read_text("utf-8")
        target = run / f"checkpoint-{step}"
        target.mkdir(parents=True)
        text = state.replace(HACKED_KEY, json.dumps(HOSTILE_KEY)[1:-1])
        (target / "trainer_state.json").write_text(text, encoding="utf-8")
    return run


def test_hostile_names_reach_no_shell_and_no_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # where the command runs: a `touch pwned` would land here
    run = hostile_run(tmp_path / "runs")
    hook = Hook(tmp_path / "hook")
    printed: list[Event] = []
    warnings: list[str] = []
    watch = Watch(
        [run],
        AlertSettings(command=hook.command),
        Rules(),
        emit=printed.append,
        warn=warnings.append,
        watch_files=False,
        diagnosis_interval=0.0,
    )
    watch.start()
    try:
        follow_until(watch, lambda: printed, "the hostile run's event")
        command = watch.command
        assert command is not None
        wait_for(lambda: command.idle, what="the command")
    finally:
        watch.stop()
    assert warnings == []
    # nothing ran: no file named pwned anywhere
    assert not [p for p in tmp_path.rglob("*pwned*") if p.name != HOSTILE_NAME]
    assert not (Path.cwd() / "pwned").exists()
    (event,) = printed
    # the JSON arrived intact and says exactly what the log said
    (got,) = hook.events()
    assert got["run"] == HOSTILE_NAME and got["path"] == str(run)
    evidence = " ".join(line for v in got["verdicts"] for line in v["evidence"])
    assert HOSTILE_KEY in evidence
    assert "\x1b" not in hook.events_file.read_text("utf-8")  # escaped on the way: \u001b
    # the environment: printable, one line each
    (env,) = hook.environments()
    assert env["GRPO_TUI_RUN"] == HOSTILE_NAME
    for value in env.values():
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value), value
    assert env == {
        k: v for k, v in command_environment(event, {}).items() if k.startswith("GRPO_TUI_")
    }
    # the terminal: our own sequences only, no ESC or BEL from the log, no title change
    for notify in NOTIFY_STYLES:
        text = terminal_text(event, AlertSettings(notify=notify))
        assert text.startswith(BEL + ESC + "]") and text.endswith(BEL)
        body = text[len(BEL + ESC + "]") : -1]
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in body)
        assert text.count(ESC) == 1 and text.count(BEL) == 2
        assert f"{ESC}]0;" not in text and f"{ESC}]2;" not in text


class TestOddPaths:
    """A run's path that cannot be resolved still gets its alerts set up."""

    def test_a_symlink_loop_names_itself(self, tmp_path: Path) -> None:
        """`watch` on a link loop: no internal error (issue 46), the link's own name."""
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        alerts = RunAlerts(tmp_path / "a", AlertSettings())
        assert alerts.detector.run in {"a", "b"}


class TestNothingOutlivesIt:
    """Alert commands end with grpo-tui, and what is dropped is said (issue 46)."""

    def test_a_forced_end_kills_the_running_command(self, tmp_path: Path) -> None:
        """`kill_running_commands` (tail's forced exit) ends a command in its own session."""
        started = tmp_path / "started"
        reports: list[str] = []
        sink = CommandSink(f"touch {shlex.quote(str(started))}; exec sleep 300", reports.append)
        assert sink.submit(real_event())
        wait_for(started.exists, what="the command to start")
        wait_for(lambda: kill_running_commands() == 1, what="the running command to be known")
        wait_for(lambda: reports, what="its end said")
        sink.close()
        assert reports == ["--on-alert failed (killed by signal 9); not retried"]
        assert kill_running_commands() == 0

    def test_queued_events_dropped_at_the_end_are_said(self, tmp_path: Path) -> None:
        """Closing while a command hangs: it is killed, the queued events are counted."""
        reports: list[str] = []
        sink = CommandSink("exec sleep 300", reports.append, queue_size=8)
        for _ in range(3):
            assert sink.submit(real_event())
        sink.close(wait_s=0.5)
        assert "--on-alert: 2 queued events not run (grpo-tui is ending)" in reports

    def test_watch_ends_on_a_hangup_unless_it_is_ignored(self) -> None:
        """A closed terminal ends `watch` cleanly; under `nohup` (SIGHUP ignored) it stays."""
        previous = signal.signal(signal.SIGHUP, signal.SIG_DFL)
        try:
            assert signal.SIGHUP in watch_stop_signals()
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            assert signal.SIGHUP not in watch_stop_signals()
        finally:
            signal.signal(signal.SIGHUP, previous)


class TestDiagnosisFailure:
    """A judge that fails is said on stderr once: watch never goes quiet about it."""

    def test_a_failing_diagnosis_is_told_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from grpo_tui.health.diagnose import LiveJudge

        def broken(self: LiveJudge, run: Any) -> Any:
            raise RuntimeError("judge broke")

        monkeypatch.setattr(LiveJudge, "judge", broken)
        run = tmp_path / "runs" / LENGTH_HACK.name
        log = GrowingLog(LENGTH_HACK, run, PIECES)
        log.write()
        warnings: list[str] = []
        watch = Watch(
            [run],
            AlertSettings(),
            Rules(),
            emit=lambda event: None,
            warn=warnings.append,
            watch_files=False,
            diagnosis_interval=0.0,
        )
        watch.start()
        try:
            follow_until(
                watch, lambda: watch.runs[0].session.diagnosis_error is not None, "a failed try"
            )
            log.write()
            reads = watch.runs[0].reader.reads
            follow_until(watch, lambda: watch.runs[0].reader.reads >= reads + 2, "another read")
            for _ in range(5):
                watch.step(0.05)
        finally:
            watch.stop()
        failed = [w for w in warnings if "diagnosis failed" in w]
        assert failed == [f"{LENGTH_HACK.name}: diagnosis failed: RuntimeError: judge broke"]
