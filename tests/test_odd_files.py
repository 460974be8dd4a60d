"""Odd files and unlucky users: FIFOs, hung reads, unreadable paths, BOMs, broken args,
closed pipes. Each failure is a one-line message and an exit code of its own; nothing
blocks the exit; nothing is lost."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import MS_SWIFT, screen_text, settle, wait_for, wait_until

from grpo_tui.commands.check import check_command
from grpo_tui.commands.inspect import inspect_command
from grpo_tui.commands.output import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NOTHING,
    EXIT_UNREADABLE,
    EXIT_USAGE,
)
from grpo_tui.health.rules import RULES_ENV
from grpo_tui.run.follow import load_run
from grpo_tui.run.state import run_state
from grpo_tui.sources.logreader import BadJson, parse_object
from grpo_tui.sources.tail import TailReader
from grpo_tui.ui.app import GrpoTuiApp
from grpo_tui.vocabulary import RunState

LOG = MS_SWIFT / "local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl"
STATE = MS_SWIFT / "local-run-msswift-4.6.0_grpo-3rewards-eval_checkpoint-6_trainer_state.json"
RUN_DIR = "v0-20260101-000000"
#: how long a subprocess may take to end after being told to (generous: machines are slow;
#: before the fixes these cases never ended at all)
ENDS_WITHIN = 15.0


pytestmark = pytest.mark.usefixtures("no_user_rules")


def run_dir(tmp_path: Path, *, log: bool = True) -> Path:
    """An ms-swift output dir with the real 4.6.0 log; returns the run directory."""
    directory = tmp_path / "output" / RUN_DIR
    directory.mkdir(parents=True)
    if log:
        shutil.copy(LOG, directory / "logging.jsonl")
    return directory


def cli(
    *args: str, stdout: int | None = subprocess.PIPE, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "grpo_tui.cli", *args],
        check=False,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
        env={**os.environ, "XDG_CONFIG_HOME": "/nonexistent", RULES_ENV: ""},
    )


# -- FIFOs and reads that never return -----------------------------------------------------


def test_a_fifo_as_path_is_skipped_with_a_reason(tmp_path: Path) -> None:
    fifo = tmp_path / "logging.jsonl"
    os.mkfifo(fifo)
    done = cli("check", str(fifo), timeout=ENDS_WITHIN)
    assert done.returncode == EXIT_UNREADABLE
    assert "not a regular file (a FIFO), skipped" in done.stdout
    done = cli("inspect", str(fifo), timeout=ENDS_WITHIN)
    assert done.returncode == EXIT_UNREADABLE
    assert "unreadable not a regular file (a FIFO)" in done.stdout


def test_a_fifo_inside_a_run_dir_is_skipped_with_a_reason(tmp_path: Path) -> None:
    directory = run_dir(tmp_path, log=False)
    os.mkfifo(directory / "logging.jsonl")
    done = cli("check", "--json", str(directory.parent), timeout=ENDS_WITHIN)
    assert done.returncode == EXIT_UNREADABLE
    assert "a FIFO" in json.loads(done.stdout)["run"]["unreadable"]


def test_a_fifo_args_json_is_skipped_and_said(tmp_path: Path) -> None:
    directory = run_dir(tmp_path)
    os.mkfifo(directory / "args.json")
    run = load_run(directory.parent)
    assert len(run.store) > 0
    assert any("args.json" in note and "a FIFO" in note for note in run.notes)


@contextmanager
def in_pty(script: str) -> Iterator[tuple[subprocess.Popen[bytes], int, bytearray]]:
    """Run a Python script on a pseudo-terminal of 80×24 (the TUI needs one); its output
    is drained in a thread (so it never blocks on a full pty) into the bytearray yielded."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "XDG_CONFIG_HOME": "/nonexistent", RULES_ENV: ""}
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)

    output = bytearray()

    def drain() -> None:
        try:
            while chunk := os.read(master, 65536):
                output.extend(chunk)
        except OSError:
            pass

    threading.Thread(target=drain, daemon=True).start()
    try:
        yield proc, master, output
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


#: every open of a run's files blocks forever, as on a hung NFS mount; the first to block
#: creates the file `stuck` names, so the test knows a read is stuck. Ctrl-C raises
#: KeyboardInterrupt as in a terminal, even where the tests run with SIGINT ignored (a
#: background job of a non-interactive shell passes SIG_IGN on, and Python keeps it)
STUCK_READS = """
import signal, sys, threading
signal.signal(signal.SIGINT, signal.default_int_handler)
import grpo_tui.files, grpo_tui.sources.tail, grpo_tui.sources.context
forever = threading.Event()
def stuck(path):
    open({stuck!r}, "w").close()
    forever.wait()
grpo_tui.files.open_regular = grpo_tui.sources.tail.open_regular = stuck
grpo_tui.files.read_regular = grpo_tui.sources.context.read_regular = stuck
from grpo_tui.cli import main
sys.exit(main({argv!r}))
"""


def stuck_reads(argv: list[str], tmp_path: Path) -> tuple[str, Path]:
    """The script running the CLI on `argv` with every read stuck, and the file that says
    a read is stuck once it exists."""
    mark = tmp_path / "a-read-is-stuck"
    return STUCK_READS.format(argv=argv, stuck=str(mark)), mark


def wait_stuck(proc: subprocess.Popen[bytes], mark: Path) -> None:
    """Wait until the process is stuck in a read (and still running)."""
    wait_for(lambda: mark.exists() or proc.poll() is not None, ENDS_WITHIN, what="a stuck read")
    assert proc.poll() is None, "ended before it was asked to"


@pytest.mark.parametrize("how", ["q", "SIGTERM", "SIGINT", "SIGHUP"])
def test_the_monitor_ends_while_a_read_is_stuck(tmp_path: Path, how: str) -> None:
    directory = run_dir(tmp_path)
    script, mark = stuck_reads(["tail", str(directory.parent)], tmp_path)
    with in_pty(script) as (proc, master, output):
        wait_stuck(proc, mark)
        # the screen is up (its footer drawn): keys and signals reach the running app
        wait_for(lambda: b"Quit" in output, ENDS_WITHIN, what="the monitor's first frame")
        if how == "q":
            os.write(master, b"q")
        else:
            proc.send_signal(getattr(signal, how))
        assert proc.wait(timeout=ENDS_WITHIN) is not None


@pytest.mark.parametrize("command", ["check", "inspect"])
def test_headless_commands_end_on_ctrl_c_while_a_read_is_stuck(
    tmp_path: Path, command: str
) -> None:
    directory = run_dir(tmp_path)
    script, mark = stuck_reads([command, str(directory.parent)], tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    wait_stuck(proc, mark)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=ENDS_WITHIN) == EXIT_INTERRUPTED
    assert b"Traceback" not in proc.communicate()[1]


# -- exit codes of their own ----------------------------------------------------------------


def test_a_symlink_loop_is_unreadable_not_waiting(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    done = cli("check", str(tmp_path / "a"))
    assert done.returncode == EXIT_UNREADABLE, done.stderr
    assert "symlink loop" in done.stdout and not done.stderr


def test_an_args_integer_too_big_for_a_float_is_a_note_not_a_crash(tmp_path: Path) -> None:
    directory = run_dir(tmp_path)
    (directory / "args.json").write_text(
        '{"max_completion_length": 1' + "0" * 400 + ', "num_iterations": 1}'
    )
    done = cli("check", str(directory.parent))
    assert done.returncode in (0, 1, 2) and "Traceback" not in done.stderr
    assert "max_completion_length" in done.stdout and "not a usable number" in done.stdout


def test_usage_errors_do_not_look_like_a_verdict() -> None:
    done = cli("check")
    assert done.returncode == EXIT_USAGE
    assert "required" in done.stderr


def test_a_bug_is_one_line_and_its_own_code(tmp_path: Path) -> None:
    script = (
        "import sys, grpo_tui.commands.check as c\n"
        "def broken(*a, **k): raise RuntimeError('boom')\n"
        "c.diagnose = broken\n"
        "from grpo_tui.cli import main\n"
        f"sys.exit(main(['check', {str(LOG)!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == EXIT_INTERNAL
    assert done.stderr.strip().splitlines() == [
        "grpo-tui: internal error: RuntimeError: boom (set GRPO_TUI_DEBUG=1 for the traceback)"
    ]


@pytest.mark.parametrize("args", [["inspect", str(LOG)], ["check", "--json", str(LOG)], ["rules"]])
def test_a_closed_pipe_ends_quietly(args: list[str]) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader went away before anything was written (`| true`)
    try:
        done = cli(*args, stdout=write)
    finally:
        os.close(write)
    assert done.returncode == EXIT_BROKEN_PIPE
    assert done.stderr == ""


# -- permission denied -------------------------------------------------------------------------


@pytest.fixture
def denied(monkeypatch: pytest.MonkeyPatch) -> set[Path]:
    """Paths whose open (or listing) fails with EACCES, as for a file of mode 000 when not
    root (the tests usually run as root, who may read anything)."""
    paths: set[Path] = set()
    real_open, real_scandir = os.open, os.scandir

    def fake_open(path: object, *args: object, **kwargs: object) -> int:
        if Path(str(path)) in paths:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    def fake_scandir(path: str | os.PathLike[str] = ".") -> object:
        if Path(path) in paths:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "scandir", fake_scandir)
    return paths


def test_an_unreadable_log_says_permission_denied(
    tmp_path: Path, denied: set[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    directory = run_dir(tmp_path)
    log = directory / "logging.jsonl"
    denied.add(log)
    run = load_run(directory.parent)
    assert run.unreadable == f"permission denied: {log}"
    assert run_state(run, time.time())[0] is RunState.UNREADABLE
    assert (
        check_command(directory.parent, as_json=False, rules_file=None, width=200)
        == EXIT_UNREADABLE
    )
    assert f"permission denied: {log}" in capsys.readouterr().out
    assert inspect_command(directory.parent, as_json=False, follow=False) == EXIT_UNREADABLE
    assert f"unreadable permission denied: {log}" in capsys.readouterr().out


def test_an_unlistable_output_dir_says_permission_denied(tmp_path: Path, denied: set[Path]) -> None:
    directory = tmp_path / "output"
    directory.mkdir()
    denied.add(directory)
    run = load_run(directory)
    assert run.unreadable == f"permission denied: {directory}"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files of any mode")
def test_a_real_mode_000_file(tmp_path: Path) -> None:
    directory = run_dir(tmp_path)
    (directory / "logging.jsonl").chmod(0)
    done = cli("check", str(directory.parent))
    assert done.returncode == EXIT_UNREADABLE
    assert "permission denied" in done.stdout


# -- BOM, args.json, wording -------------------------------------------------------------------


def test_a_byte_order_mark_costs_no_line(tmp_path: Path) -> None:
    log = tmp_path / "logging.jsonl"
    log.write_bytes(b"\xef\xbb\xbf" + LOG.read_bytes())
    run = load_run(log)
    assert run.bad_line_count == 0
    assert float(run.store.steps[0]) == 1.0
    reader = TailReader(log)
    first = reader.poll().lines[0]
    assert first.line_no == 1 and first.offset == 3
    # the mark is part of the file the reader remembers: no false "rewritten" restart
    with open(log, "ab") as handle:
        handle.write(LOG.read_bytes().splitlines(keepends=True)[0])
    assert reader.poll().restarted is None


def test_a_trainer_state_with_a_bom_is_read(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint-6"
    checkpoint.mkdir()
    (checkpoint / "trainer_state.json").write_bytes(b"\xef\xbb\xbf" + STATE.read_bytes())
    run = load_run(tmp_path)
    assert run.unreadable is None and len(run.store) > 0


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b'{"max_completion_length": 24, "num_gen', "args.json is cut off"),
        (b"[1, 2]", "args.json holds a JSON list, not an object"),
        (b'{"model": 1}\xff\xfe', "args.json is not JSON"),
        (None, "not a regular file (a directory)"),
    ],
)
def test_a_malformed_args_json_is_said_everywhere(
    tmp_path: Path, content: bytes | None, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = run_dir(tmp_path)
    args = directory / "args.json"
    if content is None:
        args.mkdir()
    else:
        args.write_bytes(content)
    run = load_run(directory.parent)
    assert len(run.store) > 0  # the metrics are still read
    assert any(said in note and "run context unknown" in note for note in run.notes), run.notes
    check_command(directory.parent, as_json=False, rules_file=None, width=300)
    assert said in capsys.readouterr().out
    inspect_command(directory.parent, as_json=False, follow=False)
    assert said in capsys.readouterr().out


def test_bad_line_reasons_read_well() -> None:
    with pytest.raises(BadJson) as caught:
        parse_object(b'{"a": "\x01"}')
    assert str(caught.value) == "not JSON: Invalid control character at column 8"
    with pytest.raises(BadJson) as caught:
        parse_object(b'{"a": 1}x')
    assert str(caught.value).startswith("not JSON: Extra data")
    with pytest.raises(BadJson) as caught:
        parse_object(b'{"a": 1, "b')
    assert str(caught.value).startswith("cut off: Unterminated string")


def test_nothing_readable_yet_is_not_unreadable(tmp_path: Path) -> None:
    empty = tmp_path / "logging.jsonl"
    empty.write_text("")
    assert cli("check", str(empty)).returncode == EXIT_NOTHING


def test_args_json_bytes_that_are_not_utf8_are_said(tmp_path: Path) -> None:
    """A setting named with invalid UTF-8 is lost: the notes say so instead of silence."""
    directory = run_dir(tmp_path)
    (directory / "args.json").write_bytes(b'{"max_completion_length\xff": 24, "beta": 0.1}')
    run = load_run(directory)
    assert run.context.beta == 0.1
    assert run.context.max_completion_length is None
    assert any("not UTF-8" in note for note in run.notes), run.notes
    done = cli("check", str(directory))
    assert "not UTF-8" in done.stdout


def test_export_of_a_folder_it_may_not_enter_is_unreadable_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Path.is_dir` raises for a folder this process may not enter (as root the mode bits
    do not stop it, so the refusal is simulated): export says why, with the unreadable code."""
    from grpo_tui.commands import export

    target = tmp_path / "locked" / "logging.jsonl"

    def refuse(self: Path) -> bool:
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "is_dir", refuse)
    code = export.export_command(target, str(tmp_path / "out.csv"), "csv")
    assert code in (EXIT_UNREADABLE, EXIT_NOTHING)


# -- the live monitor's header -----------------------------------------------------------------


class TestTheHeader:
    """The monitor's header says what is wrong with the run's files."""

    async def test_the_header_says_permission_denied(
        self, tmp_path: Path, denied: set[Path]
    ) -> None:
        directory = run_dir(tmp_path)
        log = directory / "logging.jsonl"
        denied.add(log)
        app = GrpoTuiApp(directory.parent, environ={}, watch_files=False)
        async with app.run_test(size=(120, 24)) as pilot:
            # the reason whole and the path's end (the name of the run follows on the line)
            said = "UNREADABLE permission denied: …"
            tail = "/v0-20260101-000000/logging.jsonl"

            def says() -> bool:
                state = str(app.query_one("#run-state").render()).strip()
                return state.startswith(said) and state.endswith(tail)

            await wait_until(pilot, says, what=said + tail)
            # once readable again, it is read (the loss was only of time)
            denied.clear()
            app.run_screen.wake()
            await settle(
                pilot, app, lambda: len(app.run_screen.session.run.store) > 0, what="the log read"
            )
            assert app.run_screen.session.run.unreadable is None

    async def test_the_header_shows_notes_on_its_facts_line(self, tmp_path: Path) -> None:
        """A note on the files is a fact of the header's third line (the header keeps its
        three lines), and listed whole at the top of the diagnosis pane."""
        directory = run_dir(tmp_path)
        (directory / "args.json").write_text("[1]")
        app = GrpoTuiApp(directory.parent, environ={}, watch_files=False)
        async with app.run_test(size=(80, 24)) as pilot:
            said = "args.json holds a JSON list"
            await wait_until(
                pilot,
                lambda: (
                    app.run_screen.session.run.notes and said in app.run_screen.session.run.notes[0]
                ),
                what=said,
            )
            await wait_until(
                pilot, lambda: "! " in str(app.query_one("#run-facts").render()), what="the fact"
            )
            assert app.query_one("#header").outer_size.height == 3
            await pilot.press("2")
            await wait_until(pilot, lambda: said in screen_text(app), what="the pane's Files")
            assert "Files" in screen_text(app)
