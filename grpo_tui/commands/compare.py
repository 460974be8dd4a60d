"""`grpo-tui check A B --compare`: is run B better than run A, or is that seed noise.

Each run after the first against the first (the baseline), on its task reward and its
eval (health/difference.py, through monitor/compare.py: the numbers the board's
comparison screen shows), the settings that differ, and each run's verdict; as text or
one JSON object (`compare_document`, which the MCP server's `compare` tool answers with;
the README's "check --compare --json" documents its fields). The exit code is `check`'s on
several runs: the worst run's.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from rich.console import Group, RenderableType
from rich.text import Text

from grpo_tui.commands.board import worst_code
from grpo_tui.commands.check import exit_code
from grpo_tui.commands.headless import read_run
from grpo_tui.commands.output import EXIT_BAD_RULES, print_renderable, write_json
from grpo_tui.commands.rules_file import effective_rules
from grpo_tui.context import RunContext
from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.difference import Difference, Reading, Side
from grpo_tui.health.rules import Rules
from grpo_tui.monitor.board import BoardRow, board_row, options_for, row_facts, run_names
from grpo_tui.monitor.compare import (
    RewardComparison,
    RunToCompare,
    SettingDifference,
    reward_comparisons,
    setting_differences,
)
from grpo_tui.sources.feed import SourceOptions
from grpo_tui.sources.runs import RunRef
from grpo_tui.untrusted import printable
from grpo_tui.views.presentation import FACT_SEPARATOR, verdict_line
from grpo_tui.views.report import Hanging

#: the version of `compare_document`'s shape (README, "check --compare --json")
COMPARE_JSON_SCHEMA = 1


@dataclass(frozen=True)
class _Compared:
    """The runs read and diagnosed once: each as the comparison takes it, its board row
    (the facts `check` on several runs says of it) and the exit code `check` gives it."""

    runs: list[RunToCompare]
    rows: list[BoardRow]
    codes: list[int]


def _read(
    refs: Sequence[RunRef],
    rules: Rules,
    source: SourceOptions | None,
    given: RunContext | None,
) -> _Compared:
    """Each run read once and diagnosed, named as the board names it."""
    names = run_names(list(refs))
    now = time.time()
    found = _Compared([], [], [])
    for ref in refs:
        run = read_run(ref.path, options=options_for(ref, source))
        if given is not None:
            run.given = given
        diagnosis = diagnose(run, rules)
        name = printable(names[ref])
        found.runs.append(RunToCompare(name, run, diagnosis))
        found.rows.append(board_row(run, diagnosis, now, name, ref))
        found.codes.append(exit_code(run, diagnosis, now))
    return found


def _side_json(side: Side) -> dict[str, Any]:
    return {
        "key": side.key,
        "level": side.level,
        "error": side.error,
        "points": side.points,
        "effective_points": side.effective,
        "noise": side.noise.sigma,
        "autocorrelation": side.noise.rho,
    }


def reading_json(reading: Reading) -> dict[str, Any]:
    """One reading as JSON: a difference with its numbers, or why none was made."""
    if not isinstance(reading, Difference):
        return {"what": reading.what, "decided": False, "text": reading.describe()}
    return {
        "what": reading.what,
        "decided": True,
        "text": reading.describe(),
        "across_rewards": reading.across_rewards,
        "first_step": reading.first_step,
        "last_step": reading.last_step,
        "a": _side_json(reading.a),
        "b": _side_json(reading.b),
        "difference": reading.change,
        "half_width": reading.half_width,
        "low": reading.low,
        "high": reading.high,
        "confidence": reading.confidence,
        "t": reading.quantile,
        "degrees_of_freedom": reading.df,
        "beyond_noise": reading.beyond_noise,
        "steps_to_tell": reading.steps_to_tell,
        "more_steps": reading.more_steps,
    }


def _document(
    found: _Compared,
    paths: Sequence[str],
    comparisons: Sequence[RewardComparison],
    settings: Sequence[SettingDifference],
) -> dict[str, Any]:
    runs = found.runs
    return {
        "schema": COMPARE_JSON_SCHEMA,
        "baseline": runs[0].name if runs else None,
        "runs": [
            {
                "name": r.name,
                "path": path,
                "status": (line := verdict_line(r.diagnosis)).status.word,
                "state": r.diagnosis.state.word if r.diagnosis is not None else None,
                "step": r.diagnosis.step if r.diagnosis is not None else None,
                "verdict": line.text(),
                # what `check` on this run alone exits with (5: it cannot be read)
                "exit_code": code,
            }
            for r, path, code in zip(runs, paths, found.codes, strict=True)
        ],
        "comparisons": [
            {
                "run": c.run,
                "against": c.against,
                "readings": [reading_json(reading) for reading in c.readings],
            }
            for c in comparisons
        ],
        "settings": [{"name": d.name, "values": list(d.values)} for d in settings],
    }


def compare_document(paths: Sequence[str], rules: Rules) -> dict[str, Any]:
    """`check --compare --json`'s object for the runs at `paths` (two or more; each after
    the first against the first): the JSON-ready answer the MCP `compare` tool gives."""
    refs = [RunRef(Path(path)) for path in paths]
    found = _read(refs, rules, None, None)
    return _document(
        found,
        [str(ref) for ref in refs],
        reward_comparisons(found.runs, rules),
        setting_differences([r.run.context for r in found.runs]),
    )


def render_compare(
    rows: Sequence[BoardRow],
    comparisons: Sequence[RewardComparison],
    settings: Sequence[SettingDifference],
    *,
    verbose: bool = False,
) -> Group:
    """The comparison as text: the runs numbered, in their order, as `check` on several
    runs says them (facts, then the verdict line under them); each run against the first;
    the settings that differ."""
    parts: list[RenderableType] = [
        Text(f"{len(rows)} runs compared, each against the first", style="bold")
    ]
    for index, row in enumerate(rows, 1):
        head = Text(row.name, style="bold")
        head.append(FACT_SEPARATOR + FACT_SEPARATOR.join(row_facts(row)))
        parts.append(Hanging(Text(f"{index} {row.status.glyph}", style="bold"), head, indent=4))
        parts.append(Hanging("", row.verdict.text(), indent=6))
    for comparison in comparisons:
        for reading in comparison.readings:
            parts.append(Hanging(Text("•"), reading.describe(), indent=2))
            if verbose and isinstance(reading, Difference):
                parts.append(Hanging("", Text(reading.detail, style="dim"), indent=4))
    if not settings:
        parts.append(Text("settings: none differ (as far as the runs' files say)"))
    else:
        parts.append(Text("settings that differ", style="bold"))
        for difference in settings:
            values = "  ".join(f"{i}: {value}" for i, value in enumerate(difference.values, 1))
            parts.append(Hanging("", f"{difference.name}  {values}", indent=2))
    return Group(*parts)


def compare_command(
    refs: Sequence[RunRef],
    *,
    as_json: bool,
    rules_file: Path | None,
    out: TextIO | None = None,
    given: RunContext | None = None,
    source: SourceOptions | None = None,
    width: int | None = None,
    verbose: bool = False,
) -> int:
    """Compare the runs at `refs` and print it (text or JSON); the worst run's exit code
    (4 for an unusable rules file)."""
    rules = effective_rules(rules_file)
    if rules is None:
        return EXIT_BAD_RULES
    out = out or sys.stdout
    found = _read(refs, rules, source, given)
    comparisons = reward_comparisons(found.runs, rules)
    settings = setting_differences([r.run.context for r in found.runs])
    if as_json:
        write_json(out, _document(found, [str(ref) for ref in refs], comparisons, settings))
    else:
        rendered = render_compare(found.rows, comparisons, settings, verbose=verbose)
        print_renderable(rendered, width=width, file=out)
    out.flush()
    return worst_code(found.codes)
