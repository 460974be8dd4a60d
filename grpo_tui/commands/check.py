"""`grpo-tui check` (one headless diagnosis, exit code = verdict) and `grpo-tui rules`."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
from rich.console import Console

from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules, RulesError, load_rules, rules_as_toml
from grpo_tui.report import diagnosis_to_json, exit_code, render_check
from grpo_tui.run.loader import load_run

#: exit code when the rules file cannot be used (the verdict codes are 0-3)
EXIT_BAD_RULES = 4


def effective_rules(rules_file: Path | None) -> Rules | None:
    """The effective rules, warnings printed to stderr; None (after saying why) when the
    rules file cannot be used."""
    try:
        rules, warnings = load_rules(rules_file)
    except RulesError as exc:
        print(f"grpo-tui: {exc}", file=sys.stderr)
        return None
    for warning in warnings:
        print(f"grpo-tui: warning: {warning}", file=sys.stderr)
    return rules


def check_command(
    path: Path,
    *,
    as_json: bool,
    rules_file: Path | None,
    width: int | None = None,
    now: float | None = None,
) -> int:
    """Diagnose the run at `path` once and print the verdict (human or JSON).
    Exit code: 0 healthy, 1 caution (or warming up), 2 problem, 3 nothing readable,
    4 unusable rules file."""
    rules = effective_rules(rules_file)
    if rules is None:
        return EXIT_BAD_RULES
    run = load_run(path)
    diagnosis = diagnose(run, rules)
    if as_json:
        data = diagnosis_to_json(run, diagnosis, now=now)
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        console = Console(width=width, highlight=False, emoji=False)
        console.print(render_check(run, diagnosis, rules, now=now))
    return exit_code(run, diagnosis)


def rules_command(rules_file: Path | None) -> int:
    """Print the effective rules table (defaults merged with overrides) as TOML."""
    rules = effective_rules(rules_file)
    if rules is None:
        return EXIT_BAD_RULES
    sys.stdout.write(rules_as_toml(rules))
    return 0
