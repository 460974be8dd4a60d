"""The `grpo-tui` command: tail (the live TUI, default), check, inspect, rules, demo."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grpo_tui import __version__

_COMMANDS = ("tail", "check", "inspect", "rules", "demo")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grpo-tui",
        description="Live terminal monitor that tells whether a GRPO training run is learning.",
    )
    parser.add_argument("--version", action="version", version=f"grpo-tui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    inspect = sub.add_parser("inspect", help="show what was found in PATH and how it was read")
    inspect.add_argument("path", type=Path, help="logging.jsonl, run or output dir, trainer_state.json")
    inspect.add_argument("--json", action="store_true", help="one JSON object instead of text")
    inspect.add_argument("--follow", action="store_true", help="keep reading; print a line per batch")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `grpo-tui PATH` means `grpo-tui tail PATH`
    if argv and not argv[0].startswith("-") and argv[0] not in _COMMANDS:
        argv.insert(0, "tail")
    args = _parser().parse_args(argv)
    if args.command == "inspect":
        from grpo_tui.commands.inspect import inspect_command

        return inspect_command(args.path, as_json=args.json, follow=args.follow)
    _parser().print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
