"""The rules a command runs with: the defaults, a rules file over them, its warnings said.

A module of its own so `tail` need not import `check` (and with it the report and the
whole diagnosis) before its first screen: the diagnosis is imported when it first runs.
"""

from __future__ import annotations

from pathlib import Path

from grpo_tui.commands.output import say
from grpo_tui.health.rules import Rules, RulesError, load_rules


def effective_rules(rules_file: Path | None) -> Rules | None:
    """The effective rules, warnings printed to stderr; None (after saying why) when the
    rules file cannot be used."""
    try:
        rules, warnings = load_rules(rules_file)
    except RulesError as exc:
        say(str(exc))
        return None
    for warning in warnings:
        say(f"warning: {warning}")
    return rules
