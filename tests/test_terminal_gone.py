"""A monitor whose terminal goes away (a tmux pane killed, an SSH connection dropped)
ends within seconds and leaves nothing behind (commands/tail.py): its shutdown can block
forever writing to the vanished terminal, so a signal's exit is forced after a grace."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from grpo_tui.sim import write_run

#: seconds a monitor may take to end once its terminal is gone (the grace is 1 s)
ENDS_WITHIN = 20.0
#: the race it guards against is lost about one time in three: try it a few times
TRIES = 6


#: the monitor in a session of its own whose controlling terminal is the pty (as tmux and
#: sshd set it up), so that closing the pty hangs it up with SIGHUP
ON_ITS_OWN_TERMINAL = (
    "import fcntl, os, sys, termios; os.setsid(); fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.executable, [sys.executable, '-m', 'grpo_tui.cli', *sys.argv[1:]])"
)


def _first_frame(master: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Read the monitor's output until it has drawn its first frame (its header's step)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while b"step " not in seen:
        assert proc.poll() is None, "the monitor ended before its terminal went"
        assert time.monotonic() < deadline, "no first frame"
        try:
            seen = (seen + os.read(master, 65536))[-200_000:]
        except BlockingIOError:
            time.sleep(0.05)


@pytest.mark.parametrize("attempt", range(TRIES))
def test_the_monitor_ends_when_its_terminal_goes(tmp_path: Path, attempt: int) -> None:
    run = write_run(tmp_path, "healthy", max_steps=120)
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    os.set_blocking(master, False)
    proc = subprocess.Popen(
        [sys.executable, "-c", ON_ITS_OWN_TERMINAL, "tail", str(run.parent)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "TERM": "xterm-256color", "XDG_CONFIG_HOME": "/nonexistent"},
    )
    os.close(slave)
    try:
        _first_frame(master, proc)
        time.sleep(0.3 * attempt)  # vanish at different moments of its drawing
        os.close(master)  # the terminal goes: the kernel sends SIGHUP
        master = -1
        proc.wait(timeout=ENDS_WITHIN)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if master >= 0:
            os.close(master)
