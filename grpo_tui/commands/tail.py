"""`grpo-tui tail PATH` (the live app) and `grpo-tui demo` (the app on a simulated run)."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grpo_tui.commands.output import EXIT_BAD_RULES, EXIT_USAGE, say, signals_handled
from grpo_tui.commands.rules_file import effective_rules
from grpo_tui.run.follow import RunFollower
from grpo_tui.sources.feed import SourceOptions
from grpo_tui.views.presentation import DEFAULT_CYCLE_S

if TYPE_CHECKING:
    from textual.app import App

    from grpo_tui.context import RunContext
    from grpo_tui.monitor.alerts import AlertSettings

#: a closed SSH session or tmux pane (SIGHUP) and `kill` (SIGTERM) end the app like `q` does
_EXIT_SIGNALS = tuple(s for s in (getattr(signal, "SIGHUP", None), signal.SIGTERM) if s is not None)
#: seconds an exit asked for by a signal may take before the process ends regardless
EXIT_GRACE_S = 1.0


@contextmanager
def exit_on_signals(app: App[Any], cleanup: Callable[[], object] | None = None) -> Iterator[None]:
    """While the app runs, SIGHUP / SIGTERM make it exit as `q` does, and end the process
    within EXIT_GRACE_S whatever happens: with its terminal gone, the app's shutdown can
    wait forever to write to it (Textual's writer queue fills once its writer thread
    failed on the closed terminal), and a monitor left behind on a shared GPU box
    ignores every later SIGTERM. `cleanup` runs before a forced end (the demo's folder)."""

    def force(signum: int) -> None:
        if cleanup is not None:
            with suppress(Exception):
                cleanup()
        # the alert commands run in their own sessions: nothing else would end them (none
        # ran when the alerts module was never loaded)
        alerts = sys.modules.get("grpo_tui.monitor.alerts")
        if alerts is not None:
            with suppress(Exception):
                alerts.kill_running_commands()
        # ...and the ssh sessions (a forced end skips the exit handler that ends them; one
        # still connecting to a silent host would linger until ssh's own timeout)
        remote = sys.modules.get("grpo_tui.sources.remote.transport")
        if remote is not None:
            with suppress(Exception):
                remote.end_all()
        os._exit(128 + signum)

    def leave(signum: int, frame: object) -> None:
        timer = threading.Timer(EXIT_GRACE_S, force, (signum,))
        timer.daemon = True  # an exit that works in time ends the process without it
        timer.start()
        app.exit()

    with signals_handled(_EXIT_SIGNALS, leave):
        yield


def without_terminal(command: str) -> str | None:
    """Why `command` cannot draw its screen here, in one line naming what to run instead;
    None when stdin and stdout are both a terminal. Without one (a script, `nohup … &`,
    an agent) the app would draw into a pipe and spin a core for ever."""
    missing = [name for name, fd in (("stdin", 0), ("stdout", 1)) if not _is_terminal(fd)]
    if not missing:
        return None
    which = " and ".join(missing)
    return (
        f"{command} draws a live screen and needs a terminal, but {which} "
        f"{'are' if len(missing) > 1 else 'is'} not one: without a screen, use "
        "`grpo-tui check PATH` (once, the verdict as exit code) or `grpo-tui watch PATH` "
        "(follows the run, one JSON line per event)"
    )


def _is_terminal(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:  # closed
        return False


def tail_command(
    path: Path,
    *,
    theme: str | None,
    rules_file: Path | None = None,
    given: RunContext | None = None,
    cycle_seconds: float = DEFAULT_CYCLE_S,
    source: SourceOptions | None = None,
    alerts: AlertSettings | None = None,
) -> int:
    """Open the live monitor on PATH until the user quits. Returns the exit status.
    `given` fills what the run's files do not say (`--max-completion-length`); `alerts`
    what its events ring or run (`--bell`, `--notify`, `--on-alert`)."""
    from grpo_tui.ui.app import GrpoTuiApp
    from grpo_tui.ui.themes import ThemeError

    rules = effective_rules(rules_file)
    if rules is None:
        return EXIT_BAD_RULES
    try:
        app = GrpoTuiApp(
            Path(path),
            theme=theme,
            rules=rules,
            given=given,
            cycle_seconds=cycle_seconds,
            follower=RunFollower(Path(path), source, newest_first=True),
            alerts=alerts,
        )
    except ThemeError as error:
        say(str(error))
        return EXIT_USAGE
    with exit_on_signals(app):
        app.run()
    return app.return_code or 0


def demo_command(
    scenario: str,
    speed: float,
    theme: str | None,
    rules_file: Path | None = None,
    cycle_seconds: float = DEFAULT_CYCLE_S,
) -> int:
    """Simulate a GRPO run live (`speed` simulated steps per second) in a temporary
    directory and monitor it; the directory is removed on exit."""
    from grpo_tui.sim import LiveSimulator, demo_config
    from grpo_tui.ui.app import GrpoTuiApp
    from grpo_tui.ui.themes import ThemeError

    if not speed > 0:
        say("--speed must be > 0")
        return EXIT_USAGE
    rules = effective_rules(rules_file)
    if rules is None:
        return EXIT_BAD_RULES
    with tempfile.TemporaryDirectory(prefix="grpo-tui-demo-") as tmp:
        output_dir = Path(tmp) / "output"
        output_dir.mkdir()
        # prompts that come back and checkpoint folders: the ledger and the checkpoint
        # answer have something to show
        config = demo_config(scenario, use_wall_clock=True)
        simulator = LiveSimulator(output_dir, config, steps_per_second=speed)
        try:
            app = GrpoTuiApp(output_dir, theme=theme, rules=rules, cycle_seconds=cycle_seconds)
        except ThemeError as error:
            say(str(error))
            return EXIT_USAGE
        stop = threading.Event()
        writer = threading.Thread(
            target=simulator.run, args=(stop,), name="grpo-tui-demo-sim", daemon=True
        )
        writer.start()
        try:
            with exit_on_signals(app, lambda: shutil.rmtree(tmp, ignore_errors=True)):
                app.run()
        finally:
            stop.set()
            writer.join(timeout=5)
    return app.return_code or 0
