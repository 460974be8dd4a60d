"""`grpo-tui watch` as a user runs it: a process of its own on a run being written, one
JSON line per event on stdout, ended by SIGINT or SIGTERM with status 0."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest
from helpers import wait_for

from grpo_tui.cli import main

CORPUS = Path(__file__).parent / "corpus"
#: TRL checkpoints every 100 steps: truncation (PROBLEM) from the first ones
MINESWEEPER = CORPUS / "aaipl-minesweeper-trl"


class Output:
    """A process's stdout lines, read as they come (a thread: no read blocks the test)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.lines: list[bytes] = []
        assert process.stdout is not None
        stream = process.stdout
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.lines.append(line)


def add_checkpoint(run: Path, step: int) -> None:
    """The trainer saves checkpoint-`step` (aside, then renamed, as TRL does)."""
    aside = run / f"tmp-checkpoint-{step}"
    aside.mkdir(parents=True)
    source = MINESWEEPER / f"checkpoint-{step}" / "trainer_state.json"
    shutil.copyfile(source, aside / "trainer_state.json")
    aside.rename(run / f"checkpoint-{step}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_watch_prints_events_and_stops_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    run = tmp_path / "minesweeper"
    add_checkpoint(run, 100)
    process = subprocess.Popen(
        [sys.executable, "-m", "grpo_tui.cli", "watch", str(run)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
    )
    out = Output(process)
    try:
        # the run grows while watched: it turns PROBLEM (truncation) as it goes
        for step in (200, 300):
            add_checkpoint(run, step)
        wait_for(lambda: out.lines, what="a JSON line on stdout")
        event = orjson.loads(out.lines[0])
        assert event["event"] == "worse" and event["status"] == "problem"
        assert event["run"] == "minesweeper" and event["path"] == str(run)
        assert "truncation" in [v["id"] for v in event["verdicts"]]
        process.send_signal(sig)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.stderr is not None
    assert process.stderr.read() == b""
    for line in out.lines:  # every line is one JSON object
        assert isinstance(orjson.loads(line), dict)


def test_watch_needs_a_path(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["watch"])
    assert stopped.value.code == 64
    assert "PATH" in capsys.readouterr().err


def test_tail_takes_the_alert_options(tmp_path: Path) -> None:
    """The flags parse (the app itself is tested in test_alerts)."""
    from grpo_tui.cli import _alert_settings, _parser

    args = _parser().parse_args(
        ["tail", str(tmp_path), "--on-alert", "notify-send x", "--no-bell", "--notify"]
    )
    settings = _alert_settings(args)
    assert settings.command == "notify-send x"
    assert settings.bell is False and settings.notify == "osc9"
    args = _parser().parse_args(["tail", str(tmp_path), "--notify", "osc777"])
    settings = _alert_settings(args)
    assert settings.command is None and settings.bell is True and settings.notify == "osc777"
