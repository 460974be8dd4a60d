"""A diagnosis as Rich renderables (for `grpo-tui check`) and as JSON.

Fits an 80-column terminal; every zone and answer has a glyph, so the output reads the
same without colour (NO_COLOR, or piped output, where Rich drops styles by itself).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text

from grpo_tui.health.diagnose import Diagnosis, Evidence, zone_of_values
from grpo_tui.health.rules import Rules
from grpo_tui.health.verdict import Scenario
from grpo_tui.numbers import format_step, format_value
from grpo_tui.run.live import Run
from grpo_tui.run.state import line_number, run_state, stopped_by
from grpo_tui.sources.stop_lines import StopLine
from grpo_tui.views.presentation import (
    FACT_SEPARATOR,
    bars,
    is_function_reward,
    metric_words,
    name_of,
    no_metrics_words,
    no_verdict_words,
    pack_facts,
    progress_facts,
    severity_sections,
    state_headline,
    status_word,
    table_metrics,
)
from grpo_tui.views.prompts import ledger_of, prompts_headline, prompts_json, prompts_lines
from grpo_tui.vocabulary import LineKind, RunState, ScenarioId, StopKind, Zone

SPARK_WIDTH = 24

#: the colour of each zone in `check` (the TUI's come from its theme)
ZONE_STYLES = {
    Zone.HEALTHY: "green",
    Zone.CAUTION: "yellow",
    Zone.BAD: "red",
    Zone.UNKNOWN: "dim",
    Zone.NA: "dim",
}


# -- small formatters ----------------------------------------------------------------


def zone_sparkline(run: Run, name: str, rules: Rules, width: int = SPARK_WIDTH) -> Text:
    """The metric over the whole run (bucket means), each bar styled by its zone."""
    means = run.store.buckets(name, width).mean
    codes = zone_of_values(name, means, rules, run.context)
    return Text.assemble(*((c, ZONE_STYLES[Zone(int(z))]) for c, z in zip(bars(means), codes)))


# -- human report --------------------------------------------------------------------


class FactLines:
    """Facts packed into the console's width (`pack_facts`), never broken inside a fact."""

    def __init__(self, facts: list[str]) -> None:
        self.facts = facts

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in pack_facts(self.facts, options.max_width):
            yield Text(FACT_SEPARATOR.join(line))


def run_line(run: Run, *, now: float | None = None) -> FactLines:
    """framework · state (the header's words: LIVE, STALLED: no data for …, FINISHED, …) ·
    the header's progress facts (step, ETA, speed, age of the newest data, bad lines)."""
    now = time.time() if now is None else now
    _, headline = state_headline(run, now)
    return FactLines([run.framework or "unknown format", headline, *progress_facts(run, now)])


#: lines of the log shown before the line that stopped the run
STOP_CONTEXT_SHOWN = 2


def ending_line(run: Run, now: float) -> StopLine | None:
    """The console line the run's state rests on: the failure or kill that stopped it, or
    the line that says it completed (None: its state rests on no such line)."""
    stop = run.stop
    if stop is not None and stop.kind is StopKind.COMPLETED and run.ended():
        return stop
    return stopped_by(run, now) if run_state(run, now)[0] is RunState.STOPPED else None


def stop_block(run: Run, now: float) -> list[RenderableType]:
    """Where the log says why the run stopped: the file and line, the lines before it and
    the line itself (the log's text: `print_renderable` makes it inert)."""
    stop = ending_line(run, now)
    if stop is None or stop.kind is StopKind.COMPLETED:
        return []
    head = Text(f"Why it stopped ({stop.name} line {line_number(stop.line_no)}):", style="bold")
    lines: list[RenderableType] = [Text(""), head]
    for context in stop.context[-STOP_CONTEXT_SHOWN:]:
        lines.append(Hanging("", Text(context, style="dim"), indent=4))
    lines.append(Hanging(Text(">", style="bold red"), stop.text.strip()))
    return lines


class Hanging:
    """A marker then text that wraps under itself (hanging indent), without padding the
    lines to the full width (so plain output has no trailing spaces)."""

    def __init__(self, marker: Text | str, body: Text | str, indent: int = 4) -> None:
        self.marker = marker if isinstance(marker, Text) else Text(marker)
        self.body = body if isinstance(body, Text) else Text(body)
        self.indent = indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = self.body.wrap(console, max(10, options.max_width - self.indent))
        if self.marker.plain:
            first = (
                Text(" " * max(0, self.indent - self.marker.cell_len - 1)) + self.marker + Text(" ")
            )
        else:
            first = Text(" " * self.indent)
        for number, line in enumerate(lines):
            line.rstrip()
            yield (first if number == 0 else Text(" " * self.indent)) + line


def scenario_block(diagnosis: Diagnosis, *, verbose: bool = False) -> list[RenderableType]:
    """Each scenario: severity and title, the evidence, and (for warnings) the advice;
    `verbose` adds how each number was read under it."""
    lines: list[RenderableType] = []
    for scenario in diagnosis.scenarios:
        style = "bold " + ZONE_STYLES[scenario.severity.zone]
        head = Text.assemble(
            (f"{scenario.severity.word.upper()}  ", style), (scenario.title, "bold")
        )
        if scenario.onset_step is not None:
            head.append(f"  since step {format_step(scenario.onset_step)}", style="dim")
        lines.append(Hanging(Text(scenario.severity.glyph, style=style), head, indent=2))
        for evidence in scenario.evidence:
            lines.append(Hanging(Text("•", style="dim"), evidence.text))
            if verbose and evidence.detail:
                lines.append(Hanging(Text(" ", style="dim"), Text(evidence.detail, style="dim")))
        if scenario.severity.warns or scenario.id in (ScenarioId.TOO_EARLY, ScenarioId.WARMING_UP):
            for advice in scenario.advice:
                lines.append(Hanging(Text("→", style="dim"), advice))
    return lines


def checklist_block(diagnosis: Diagnosis) -> list[RenderableType]:
    """The 8 questions, each answered ✓ ✗ ? with its evidence underneath."""
    lines: list[RenderableType] = [Text("Checklist", style="bold underline")]
    for item in diagnosis.checklist:
        answer = Text(item.answer.glyph, style=ZONE_STYLES[item.answer.zone])
        lines.append(Hanging(answer, f"{item.id}. {item.question}"))
        lines.append(Hanging("", Text(item.evidence, style="dim"), indent=7))
    return lines


def _metric_label(name: str) -> str:
    """Per-function rewards are shown by their function name, indented under the signals."""
    return ("  " if is_function_reward(name) else "") + metric_words(name)


def _cell(text: str, width: int, *, right: bool = False) -> str:
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text.rjust(width) if right else text.ljust(width)


def metrics_block(run: Run, diagnosis: Diagnosis, rules: Rules) -> list[RenderableType]:
    """Key metrics, one line each: name, last value, zone glyph, trend and a zone-coloured
    sparkline of the whole run (fixed columns, about 70 characters)."""
    header = Text(
        f"{_cell('metric', 22)} {_cell('now', 9, right=True)}   {_cell('course', 9)} run",
        style="dim",
    )
    # the zone and "now" read the recent window, the course the whole run: say so (the
    # train metrics share one window size; the reward's stands for them)
    reward = diagnosis.metrics.get("reward")
    title = Text("Metrics", style="bold underline")
    if reward is not None and reward.points:
        title.append(
            f"  (zone and now: the latest {reward.points} points; course: the whole run)",
            style="dim",
        )
    lines: list[RenderableType] = [title, header]
    for name in table_metrics(name for name in run.store.names() if name in diagnosis.metrics):
        health = diagnosis.metrics[name]
        now = health.level if health.level is not None else health.last
        line = Text(f"{_cell(_metric_label(name), 22)} {_cell(format_value(now), 9, right=True)} ")
        line.append(health.zone.glyph, style=ZONE_STYLES[health.zone])
        line.append(f" {_cell(health.course.word, 9)} ")
        line.append_text(zone_sparkline(run, name, rules))
        line.rstrip()
        lines.append(line)
    return lines


def prompts_block(run: Run) -> list[RenderableType]:
    """Which prompts are learning (views/prompts.py): the answer, then its detail; nothing
    before a train group was read."""
    report = ledger_of(run)
    if report is None or not report.prompts:
        return []
    lines: list[RenderableType] = [Text(""), Text("Prompts", style="bold underline")]
    lines.append(Hanging("", Text(prompts_headline(report), style="bold"), indent=2))
    lines += [Hanging("•", line, indent=4) for line in prompts_lines(report)]
    return lines


def checkpoints_block(diagnosis: Diagnosis) -> list[RenderableType]:
    """Which checkpoint to go back to and which to keep (health/checkpoints.py): the
    answer, then its numbers."""
    advice = diagnosis.checkpoints
    if advice is None or not advice.headline:
        return []
    lines: list[RenderableType] = [Text("Checkpoints", style="bold underline")]
    lines.append(Hanging("", Text(advice.headline, style="bold"), indent=2))
    lines += [Hanging("•", line, indent=4) for line in advice.lines]
    lines.append(Text(""))
    return lines


def render_check(
    run: Run,
    diagnosis: Diagnosis,
    rules: Rules,
    *,
    now: float | None = None,
    verbose: bool = False,
) -> RenderableType:
    """The whole human report of `check` (`verbose`: with how each number was read)."""
    title = Text(f"grpo-tui check {run.path}", style="bold")
    named = name_of(run)
    if named.called != run.path.name:
        # the run as the header names it, where PATH's last part does not say it already
        title.append(f"  ({named.called})", style="")
    parts: list[RenderableType] = [Hanging("", title, indent=0), run_line(run, now=now)]
    parts += [Hanging(Text("!", style="bold yellow"), note, indent=2) for note in run.notes]
    parts += stop_block(run, time.time() if now is None else now)
    if len(run.store) == 0:
        if run.unreadable:
            parts.append(Text(f"Cannot read: {run.unreadable}", style="bold"))
        else:
            words = no_metrics_words(run) if run.status.lines_read else "no metric lines found"
            parts.append(Text(f"Nothing readable: {words}.", style="bold"))
        return Group(*parts)
    status = Text("Status: ", style="bold")
    status.append(status_word(diagnosis), style="bold " + ZONE_STYLES[diagnosis.status.zone])
    parts.extend([Text(""), status, Text("")])
    if diagnosis.scenarios:
        parts.extend(scenario_block(diagnosis, verbose=verbose))
    else:
        parts.append(Text(no_verdict_words(diagnosis), style="dim"))
    for heading, lines in severity_sections(diagnosis):
        if lines:
            parts += [Text(""), Text(heading, style="bold underline")]
            parts += [
                Hanging(Text(s.glyph, style=ZONE_STYLES[s.zone]), line, indent=2)
                for s, line in lines
            ]
    parts.append(Text(""))
    parts.extend(checkpoints_block(diagnosis))
    parts.extend(checklist_block(diagnosis))
    parts.extend(prompts_block(run))
    parts.append(Text(""))
    parts.extend(metrics_block(run, diagnosis, rules))
    return Group(*parts)


# -- JSON ----------------------------------------------------------------------------


def _json_float(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def _json_step(value: float | None) -> float | int | None:
    """Steps are whole numbers but for the odd fractional one."""
    value = _json_float(value)
    return int(value) if value is not None and value.is_integer() else value


def _evidence_json(evidence: Evidence) -> dict[str, Any]:
    window = evidence.window
    return {
        "metric": evidence.metric,
        "window": {
            "first_step": _json_step(window.first_step),
            "last_step": _json_step(window.last_step),
            "points": window.points,
        },
        "numbers": {key: _json_float(value) for key, value in evidence.numbers.items()},
        "text": evidence.text,
        "detail": evidence.detail,
        # a course's word ("rising", "rose, not yet beyond noise"), else ""
        "word": evidence.word,
    }


#: the version of `check --json`'s layout: raised when a field changes meaning or goes
#: (2: the run's one `state`; the history's spans are states and findings, the learning
#: state's span named "learning")
CHECK_JSON_SCHEMA = 2


def _scenario_json(s: Scenario) -> dict[str, Any]:
    return {
        "id": s.id.word,
        "title": s.title,
        "severity": s.severity.word,
        "onset_step": _json_step(s.onset_step),
        "evidence": [_evidence_json(e) for e in s.evidence],
        "advice": list(s.advice),
    }


def diagnosis_to_json(
    run: Run, diagnosis: Diagnosis, *, now: float | None = None
) -> dict[str, Any]:
    """The diagnosis as plain JSON data (NaN and ±Inf become null); the README's "check
    --json" section documents every field."""
    now = time.time() if now is None else now
    state, age = run_state(run, now)
    store = run.store
    steps = store.steps
    train_rows = int(np.count_nonzero(store.kinds == LineKind.TRAIN))
    return {
        "schema": CHECK_JSON_SCHEMA,
        "path": str(run.path),
        # the run as the header names it (its folder; `output/v3-…`, `project/run`) and
        # the file read, from that folder (null: the name is the file)
        "name": (named := name_of(run)).called,
        "file": named.file,
        "status": diagnosis.status.word,
        # the run's one state: its word, and the block the screen shows for it
        "state": {
            "word": diagnosis.state.word,
            **(_scenario_json(block) if (block := diagnosis.state_block) is not None else {}),
        },
        "scenarios": [_scenario_json(s) for s in diagnosis.verdicts],
        "notes": [
            {
                "severity": n.severity.word,
                "metric": n.metric,
                "text": n.text,
                "step": _json_step(n.step),
            }
            for n in diagnosis.notes
        ],
        # which verdict held from which step to which (end null: it still holds)
        "history": [
            {
                "id": h.id.word,
                "severity": h.severity.word,
                "from_step": _json_step(h.start),
                "to_step": _json_step(h.end),
            }
            for h in diagnosis.history
        ],
        "checklist": [
            {
                "id": c.id,
                "question": c.question,
                "answer": c.answer.word,
                "evidence": c.evidence,
            }
            for c in diagnosis.checklist
        ],
        # which checkpoint to go back to and which to keep (null: not judged)
        "checkpoints": None if diagnosis.checkpoints is None else diagnosis.checkpoints.to_json(),
        # which prompts are learning (the prompt ledger; null: no completions followed)
        "prompts": prompts_json(ledger_of(run)),
        "metrics": {
            name: {
                "zone": m.zone.word,
                "last": _json_float(m.last),
                "level": _json_float(m.level),
                "trend": m.trend.word,
                "course": m.course_word,
                "course_text": m.course_text,
            }
            for name, m in diagnosis.metrics.items()
        },
        "run": {
            "framework": run.framework,
            # the run followed in a store of several (a trackio project's), else null
            "name": run.status.store_run,
            "steps": {
                "first": _json_step(float(steps[0])) if steps.size else None,
                "last": _json_step(float(steps[-1])) if steps.size else None,
                "count": train_rows,
            },
            "max_steps": run.max_steps,
            "finished": run.ended(),
            # reading, live, stalled, stopped, finished or waiting (see run/state.py)
            "state": state.value,
            "data_age_s": _json_float(age),
            # seconds since the console log last grew (metric records or not), or null
            "log_age_s": _json_float(run.log_age(now)),
            # the console line the state rests on (why it stopped, or that it completed)
            "stopped": _stopped_json(run, now),
            # why the metrics cannot be read (permission denied, not a regular file), or null
            "unreadable": run.unreadable,
            # what else is wrong with the run's files (a malformed args.json, ...)
            "notes": list(run.notes),
        },
    }


def _stopped_json(run: Run, now: float) -> dict[str, Any] | None:
    """The line that says why the run ended (`run.stopped`), null when none does."""
    stop = ending_line(run, now)
    if stop is None:
        return None
    step = float(stop.step) if stop.step is not None else run.store.last_step()
    return {
        "kind": stop.kind.word,
        "cause": stop.cause,
        "step": _json_step(step),
        "file": stop.file,
        "line": stop.line_no,
        "text": stop.text,
        "context": list(stop.context),
    }
