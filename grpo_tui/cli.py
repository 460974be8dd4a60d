"""The `grpo-tui` command: tail (the live TUI, default), check, inspect, rules, demo."""

from __future__ import annotations

import argparse
import difflib
import math
import os
import sys
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from grpo_tui import __version__
from grpo_tui.commands.output import (
    EXIT_BROKEN_PIPE,
    EXIT_CODES,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    say,
)
from grpo_tui.context import RunContext
from grpo_tui.monitor.alerts import NOTIFY_STYLES, AlertSettings
from grpo_tui.run.memory import keep_large_blocks_apart
from grpo_tui.sim import SCENARIOS
from grpo_tui.sources.feed import SourceOptions
from grpo_tui.untrusted import printable
from grpo_tui.views.presentation import DEFAULT_CYCLE_S
from grpo_tui.views.sample_groups import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_CHARS,
    DEFAULT_SELECTION,
    SELECTIONS,
    SampleQuery,
)

if TYPE_CHECKING:
    from grpo_tui.sources.runs import RunRef

_COMMANDS = ("tail", "check", "inspect", "rules", "demo", "export", "watch", "samples", "mcp")
#: the commands that stay up for days beside training: their memory is held steady and low
#: (run/memory.py); a one-off read keeps glibc's faster default (`check` is 7 % slower with it)
_STAYING_UP = ("tail", "watch", "demo")
#: commands that draw a live screen: refused without a terminal (stdin and stdout)
_ON_SCREEN = ("tail", "demo")
#: what a PATH may name (`tail` and `check` also take a folder of runs)
_PATH_HELP = "logging.jsonl, run or output dir, trainer_state.json"
#: set to get the traceback of an internal error instead of the one-line message
DEBUG_ENV = "GRPO_TUI_DEBUG"


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error exits 64 (its own 2 is `check`'s "problem" verdict)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        say(message)
        raise SystemExit(EXIT_USAGE)


def _positive_tokens(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of tokens") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} tokens: the cap must be above 0")
    return value


def _cap_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--max-completion-length",
        type=_positive_tokens,
        metavar="N",
        help="the generation cap in tokens, when the run's args do not say it",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0.5 <= value <= 86_400:
        raise argparse.ArgumentTypeError("between 0.5 and 86400 seconds")
    return value


def _step_number(text: str) -> float:
    """A step as `--step` and `--since` take it: a number (12, 12.5)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a step number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a step number: {text!r}")
    return value


def _count(text: str) -> int:
    """A count of 0 (no limit) or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value}: 0 (no limit) or more")
    return value


def _cycle_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--cycle",
        type=_seconds,
        default=DEFAULT_CYCLE_S,
        metavar="SECONDS",
        help=f"seconds between groups in the completions panel (default {DEFAULT_CYCLE_S:g})",
    )


def _source_options(command: argparse.ArgumentParser, *, format_flag: str = "--format") -> None:
    from grpo_tui.sources.formats import ADAPTERS

    command.add_argument(
        format_flag,
        dest="source_format",
        choices=list(ADAPTERS),
        metavar="NAME",
        help=f"read PATH as this framework's files, whatever its content says ({', '.join(ADAPTERS)})",
    )
    command.add_argument(
        "--run",
        dest="run_name",
        help="the run to follow in a store of many (trackio; default: newest)",
    )
    command.add_argument(
        "--ssh-command",
        type=_ssh_command,
        metavar="COMMAND",
        help="the ssh command and options for host:path (default: $GRPO_TUI_SSH, else ssh)",
    )
    command.add_argument(
        "--completions",
        type=run_path,
        help="the completions file or folder when it is not beside the log "
        "(verl's rollout_data_dir, TRL's completions/)",
    )


def run_path(text: str) -> Path:
    """PATH as the user wrote it: a local path, or `host:path` / `ssh://[user@]host[:port]/path`
    on another machine, read over ssh (sources/remote/: a word naming a local file stays local)."""
    from grpo_tui.sources.remote import run_path as parse

    return parse(text)


def _ssh_command(text: str) -> str:
    """`--ssh-command`: taken at once, before any remote PATH is looked at."""
    from grpo_tui.sources.remote import set_ssh_command

    set_ssh_command(text)
    return text


def _source(args: argparse.Namespace, ref: RunRef | None = None) -> SourceOptions:
    """The source options the command line gives; for one run of a store, that run's."""
    run_name = ref.run if ref is not None and ref.run else args.run_name
    return SourceOptions(only=args.source_format, run_name=run_name, completions=args.completions)


def _given(args: argparse.Namespace) -> RunContext:
    """What the command line says about the run (the run's own files win)."""
    return RunContext(max_completion_length=args.max_completion_length)


def _runs(args: argparse.Namespace, paths: list[Path]) -> list[RunRef]:
    """The runs the PATHs given hold (one PATH that is one run: itself). With `--run`, a
    store is the run named, not each of its runs. A live view (`tail`, `watch`) waits for
    other machines a second at most: one that does not answer never keeps it from opening."""
    from grpo_tui.sources.runs import LIVE_FIND_WAIT_S, RunRef, find_runs

    wait = LIVE_FIND_WAIT_S if args.command in ("tail", "watch") else None
    runs = find_runs(paths, only=args.source_format, split_stores=args.run_name is None, wait=wait)
    return runs or [RunRef(path) for path in paths[:1]]


def _alert_options(command: argparse.ArgumentParser, *, terminal: bool) -> None:
    """--on-alert (and, for a screen, --bell and --notify): grpo_tui/monitor/alerts.py."""
    command.add_argument(
        "--on-alert",
        metavar="CMD",
        help="run this shell command once per event, the event as JSON on stdin "
        "(and GRPO_TUI_RUN, GRPO_TUI_STATUS, GRPO_TUI_STEP, ... in its environment)",
    )
    command.add_argument(
        "--alert-timeout",
        type=_seconds,
        default=AlertSettings.timeout_s,
        metavar="SECONDS",
        help=f"kill the command after this long (default {AlertSettings.timeout_s:g})",
    )
    if terminal:
        command.add_argument(
            "--bell",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="ring the terminal bell when a run gets worse (default: on)",
        )
        command.add_argument(
            "--notify",
            nargs="?",
            const="osc9",
            choices=NOTIFY_STYLES,
            help="a desktop notification per event through the terminal's own sequence "
            "(osc9: iTerm2, WezTerm, kitty, Windows Terminal; osc777: foot, urxvt, VTE)",
        )


def _alert_settings(args: argparse.Namespace) -> AlertSettings:
    return AlertSettings(
        command=args.on_alert or None,
        bell=getattr(args, "bell", False),
        notify=getattr(args, "notify", None),
        timeout_s=args.alert_timeout,
    )


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="grpo-tui",
        description="Live terminal monitor that tells whether a GRPO training run is learning.",
    )
    parser.add_argument("--version", action="version", version=f"grpo-tui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    tail = sub.add_parser(
        "tail",
        help="open the live monitor on PATH (the default command); a board of runs for a "
        "folder of runs or several PATHs",
    )
    tail.add_argument("path", type=run_path, nargs="+", help=f"{_PATH_HELP}; a folder of runs")
    tail.add_argument("--theme", help="default, light, colorblind, mono (NO_COLOR picks mono)")
    tail.add_argument("--rules", type=Path, help="a TOML file overriding the health rules")
    _cap_option(tail)
    _cycle_option(tail)
    _source_options(tail)
    _alert_options(tail, terminal=True)

    watch = sub.add_parser(
        "watch",
        help="follow PATHs with no screen: one JSON line per event (and --on-alert) "
        "until interrupted",
    )
    watch.add_argument(
        "paths", nargs="+", type=run_path, metavar="PATH", help="runs to follow (as for tail)"
    )
    watch.add_argument("--rules", type=Path, help="a TOML file overriding the health rules")
    _cap_option(watch)
    _source_options(watch)
    _alert_options(watch, terminal=False)

    check = sub.add_parser(
        "check",
        help="diagnose PATH once, print it, exit 0/1/2 (healthy/caution/problem)",
        epilog="exit codes:\n"
        + "\n".join(f"  {code:>3}  {meaning}" for code, meaning in EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument(
        "path",
        type=run_path,
        nargs="+",
        help=f"{_PATH_HELP}; a folder of runs (several runs: the board, exit code of the worst)",
    )
    check.add_argument(
        "--json", action="store_true", help="one JSON object (a list for several runs)"
    )
    check.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="under each fact, how its numbers were read (windows, medians, noise)",
    )
    check.add_argument("--rules", type=Path, help="a TOML file overriding the health rules")
    check.add_argument(
        "--since",
        type=_step_number,
        metavar="N",
        help="only what changed after step N: verdicts, history and notes after it, the "
        "state now against the state at N (one run)",
    )
    check.add_argument(
        "--compare",
        action="store_true",
        help="two or more runs: each run's task reward (and eval) against the first's, "
        "beyond noise or not, and the settings that differ",
    )
    _cap_option(check)
    _source_options(check)

    samples = sub.add_parser(
        "samples",
        help="print a run's completion groups (prompt, completions, rewards, advantages, "
        "flags) with no screen; --json for agents",
        epilog="exit codes: 0 groups read (none may match), 3 no completions at the steps "
        "asked, 5-8 as check (PATH or its machine cannot be read), 64 usage",
    )
    samples.add_argument("path", type=run_path, help=_PATH_HELP)
    samples.add_argument("--json", action="store_true", help="one JSON object instead of text")
    which = samples.add_mutually_exclusive_group()
    which.add_argument(
        "--step", type=_step_number, metavar="N", help="the groups of step N (default: newest)"
    )
    which.add_argument(
        "--since", type=_step_number, metavar="N", help="the groups of every step after N"
    )
    samples.add_argument(
        "--groups",
        choices=SELECTIONS,
        default=DEFAULT_SELECTION,
        help="worst: lowest mean total first (default); tied: zero spread, no advantage "
        "signal; truncated: a completion cut off; all: every group",
    )
    samples.add_argument(
        "--limit",
        type=_count,
        default=DEFAULT_LIMIT,
        metavar="K",
        help=f"at most K groups (default {DEFAULT_LIMIT}; 0: every group)",
    )
    samples.add_argument(
        "--max-chars",
        type=_count,
        default=DEFAULT_MAX_CHARS,
        metavar="C",
        help=f"characters of each prompt and completion in --json (default {DEFAULT_MAX_CHARS}; "
        "0: whole; the length is given beside it)",
    )
    _source_options(samples)

    mcp = sub.add_parser(
        "mcp",
        help="an MCP server on stdin/stdout for agents (tools: check, samples, compare, "
        "watch_events); needs pip install 'grpo-tui[mcp]'",
    )
    mcp.add_argument("--rules", type=Path, help="a TOML file overriding the health rules")

    rules = sub.add_parser("rules", help="print the effective health rules (defaults + overrides)")
    rules.add_argument("--rules", type=Path, help="a TOML file overriding the health rules")

    demo = sub.add_parser("demo", help="watch a simulated GRPO run live (no GPU needed)")
    demo.add_argument(
        "--scenario",
        default="healthy",
        choices=SCENARIOS,
        metavar="SCENARIO",
        help=", ".join(SCENARIOS),
    )
    demo.add_argument("--speed", type=float, default=4.0, help="simulated steps per second")
    demo.add_argument("--theme", help="default, light, colorblind, mono")
    demo.add_argument("--rules", type=Path, help="a TOML file overriding the health rules")
    _cycle_option(demo)

    export = sub.add_parser(
        "export", help="write the canonical metrics (one row per step) to CSV or Parquet"
    )
    export.add_argument("path", type=run_path, help=_PATH_HELP)
    export.add_argument("-o", "--output", required=True, help="the file to write (- = stdout)")
    export.add_argument(
        "--format", choices=("csv", "parquet"), help="default: from the output's suffix"
    )
    # --format names the output's format here, so the source's is --from
    _source_options(export, format_flag="--from")

    inspect = sub.add_parser("inspect", help="show what was found in PATH and how it was read")
    inspect.add_argument("path", type=run_path, help=_PATH_HELP)
    inspect.add_argument("--json", action="store_true", help="one JSON object instead of text")
    inspect.add_argument(
        "--follow", action="store_true", help="keep reading; print a line per batch"
    )
    _source_options(inspect)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line. Every way out is an exit code of its own (README, "Exit codes"):
    Ctrl-C 130, a closed pipe 141 (quietly, as Unix tools do), a bug 70 with one line
    instead of a traceback (set GRPO_TUI_DEBUG=1 for the traceback)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as error:
        if os.environ.get(DEBUG_ENV):
            raise
        say(
            f"internal error: {type(error).__name__}: {error} (set {DEBUG_ENV}=1 for the traceback)"
        )
        return EXIT_INTERNAL


def _silence_stdout() -> None:
    """The reader of stdout went away: point stdout at /dev/null so the interpreter's last
    flush at exit cannot raise (and print) BrokenPipeError again."""
    with suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _meant_command(word: str) -> str | None:
    """The command a first word that is no command and no existing path was a typo of
    (`chekc`), None when it reads as a path to wait for (a run not started yet)."""
    if os.sep in word or os.path.lexists(word):
        return None
    close = difflib.get_close_matches(word, _COMMANDS, n=1, cutoff=0.6)
    return close[0] if close else None


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `grpo-tui PATH` means `grpo-tui tail PATH`
    if argv and not argv[0].startswith("-") and argv[0] not in _COMMANDS:
        meant = _meant_command(argv[0])
        if meant is not None:
            say(f"{printable(argv[0])} is neither a command nor a path: did you mean {meant}?")
            return EXIT_USAGE
        argv.insert(0, "tail")
    args = _parser().parse_args(argv)
    if args.command in _ON_SCREEN:
        from grpo_tui.commands.tail import without_terminal

        missing = without_terminal(args.command)
        if missing is not None:
            say(missing)
            return EXIT_USAGE
    if args.command in _STAYING_UP:
        keep_large_blocks_apart()
    if args.command == "tail":
        from grpo_tui.commands.tail import tail_command

        runs = _runs(args, args.path)
        if len(runs) > 1:
            from grpo_tui.commands.board import board_command

            return board_command(
                args.path,
                runs,
                theme=args.theme,
                rules_file=args.rules,
                given=_given(args),
                cycle_seconds=args.cycle,
                source=_source(args),
                alerts=_alert_settings(args),
            )
        return tail_command(
            runs[0].path,
            theme=args.theme,
            rules_file=args.rules,
            given=_given(args),
            cycle_seconds=args.cycle,
            source=_source(args, runs[0]),
            alerts=_alert_settings(args),
        )
    if args.command == "watch":
        from grpo_tui.commands.watch import watch_command

        # a folder of runs is each of its runs (as `tail` opens a board on it)
        return watch_command(
            _runs(args, args.paths),
            _alert_settings(args),
            rules_file=args.rules,
            given=_given(args),
            source=_source(args),
        )
    if args.command == "demo":
        from grpo_tui.commands.tail import demo_command

        return demo_command(
            args.scenario, args.speed, args.theme, rules_file=args.rules, cycle_seconds=args.cycle
        )
    if args.command == "check":
        from grpo_tui.commands.check import check_command

        runs = _runs(args, args.path)
        if len(runs) > 1 and args.since is not None:
            say("--since takes one run: check each run on its own")
            return EXIT_USAGE
        if args.compare:
            from grpo_tui.commands.compare import compare_command

            if len(runs) < 2 or args.since is not None:
                say("--compare takes two or more runs (and no --since): check A B --compare")
                return EXIT_USAGE
            return compare_command(
                runs,
                as_json=args.json,
                rules_file=args.rules,
                given=_given(args),
                source=_source(args),
                verbose=args.verbose,
            )
        if len(runs) > 1:
            from grpo_tui.commands.board import check_board_command

            return check_board_command(
                runs,
                as_json=args.json,
                rules_file=args.rules,
                given=_given(args),
                source=_source(args),
            )
        return check_command(
            runs[0].path,
            as_json=args.json,
            rules_file=args.rules,
            given=_given(args),
            source=_source(args, runs[0]),
            verbose=args.verbose,
            since=args.since,
        )
    if args.command == "samples":
        from grpo_tui.commands.samples import samples_command

        query = SampleQuery(
            step=args.step,
            since=args.since,
            groups=args.groups,
            limit=args.limit,
            max_chars=args.max_chars,
        )
        return samples_command(args.path, query, as_json=args.json, source=_source(args))
    if args.command == "mcp":
        from grpo_tui.commands.mcp_server import mcp_command

        return mcp_command(args.rules)
    if args.command == "export":
        from grpo_tui.commands.export import export_command

        return export_command(args.path, args.output, args.format, _source(args))
    if args.command == "rules":
        from grpo_tui.commands.check import rules_command

        return rules_command(args.rules)
    if args.command == "inspect":
        from grpo_tui.commands.inspect import inspect_command

        return inspect_command(
            args.path, as_json=args.json, follow=args.follow, source=_source(args)
        )
    _parser().print_help()
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
