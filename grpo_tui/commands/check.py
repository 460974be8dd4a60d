"""`grpo-tui check` (one headless diagnosis, exit code = verdict) and `grpo-tui rules`."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

from grpo_tui.commands.headless import read_run
from grpo_tui.commands.output import (
    EXIT_BAD_RULES,
    EXIT_CAUTION,
    EXIT_HEALTHY,
    EXIT_NOTHING,
    EXIT_PROBLEM,
    EXIT_STOPPED,
    EXIT_UNREADABLE,
    machine_exit_code,
    print_renderable,
    write_json,
    write_text,
)
from grpo_tui.commands.rules_file import effective_rules
from grpo_tui.context import RunContext
from grpo_tui.files import lexists
from grpo_tui.health.diagnose import Diagnosis, diagnose
from grpo_tui.health.rules import Rules, rules_as_toml
from grpo_tui.run.live import Run
from grpo_tui.run.state import run_state
from grpo_tui.sources.feed import SourceOptions
from grpo_tui.views.check_since import render_since, since_to_json
from grpo_tui.views.report import diagnosis_to_json, render_check
from grpo_tui.vocabulary import RunState, Status


def exit_code(run: Run, diagnosis: Diagnosis, now: float | None = None) -> int:
    """0 healthy, 1 caution (or not judged yet: warming up), 2 problem, 3 nothing readable
    yet, 5 PATH cannot be read: it does not exist (a cron job asking about a path with a
    typo must hear that, not "waiting"), or what it holds is bad lines and nothing else
    (random bytes, a damaged file); 6, 7, 8 a remote PATH's machine cannot be asked (no
    answer, login refused, host key refused); 9 the run stopped, and its console says why
    (a cron job must hear a crash, whatever the verdict of the steps before it)."""
    if len(run.store) == 0 and (code := machine_exit_code(run.path)) is not None:
        return code
    if run_state(run, time.time() if now is None else now)[0] is RunState.STOPPED:
        return EXIT_STOPPED
    if len(run.store) == 0:
        missing = not lexists(run.path)
        broken = run.bad_line_count > 0
        return EXIT_UNREADABLE if run.unreadable or missing or broken else EXIT_NOTHING
    return {Status.HEALTHY: EXIT_HEALTHY, Status.PROBLEM: EXIT_PROBLEM}.get(
        diagnosis.status, EXIT_CAUTION
    )


def check_command(
    path: Path,
    *,
    as_json: bool,
    rules_file: Path | None,
    width: int | None = None,
    now: float | None = None,
    out: TextIO | None = None,
    given: RunContext | None = None,
    source: SourceOptions | None = None,
    verbose: bool = False,
    since: float | None = None,
) -> int:
    """Diagnose the run at `path` once and print the verdict (human or JSON); see
    `exit_code` (and 4 for an unusable rules file). `given` fills what the run's files do
    not say (`--max-completion-length`); `since`: only what changed after that step
    (views/check_since.py)."""
    rules = effective_rules(rules_file)
    if rules is None:
        return EXIT_BAD_RULES
    run = read_run(path, options=source)
    if given is not None:
        run.given = given
    diagnosis = diagnose(run, rules)
    out = out or sys.stdout
    if since is not None:
        if as_json:
            write_json(out, since_to_json(run, diagnosis, since, now=now))
        else:
            print_renderable(render_since(run, diagnosis, since, now=now), width=width, file=out)
    elif as_json:
        write_json(out, diagnosis_to_json(run, diagnosis, now=now))
    else:
        print_renderable(
            render_check(run, diagnosis, rules, now=now, verbose=verbose), width=width, file=out
        )
    out.flush()
    return exit_code(run, diagnosis, now)


def check_document(
    path: Path,
    rules: Rules,
    *,
    since: float | None = None,
    source: SourceOptions | None = None,
    now: float | None = None,
) -> tuple[dict[str, Any], int]:
    """`check --json`'s object for the run at `path` (`since`: `check --since --json`'s)
    and the exit code `check` would give: what the MCP server's `check` tool answers."""
    run = read_run(path, options=source)
    diagnosis = diagnose(run, rules)
    if since is not None:
        return since_to_json(run, diagnosis, since, now=now), exit_code(run, diagnosis, now)
    return diagnosis_to_json(run, diagnosis, now=now), exit_code(run, diagnosis, now)


def rules_command(rules_file: Path | None) -> int:
    """Print the effective rules table (defaults merged with overrides) as TOML."""
    rules = effective_rules(rules_file)
    if rules is None:
        return EXIT_BAD_RULES
    write_text(sys.stdout, rules_as_toml(rules))
    sys.stdout.flush()
    return 0
