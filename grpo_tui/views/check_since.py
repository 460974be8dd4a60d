"""`grpo-tui check PATH --since N`: only what changed after step N, for an agent or a cron
job that asked before.

It is `check --json`'s object (views/report.diagnosis_to_json) cut to what is new: the
history spans that began or ended after N, the verdicts whose onset is after N, the notes
dated after N; the status, the state and the run's facts now; and the state the history
held at N, with whether it differs. Nothing is computed again: every number is the one
`check --json` gives for the same moment. Notes with no step (whole-run facts) cannot be
dated and are left out; `check` without `--since` lists them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.console import Group, RenderableType
from rich.text import Text

from grpo_tui.health.diagnose import Diagnosis, state_of
from grpo_tui.health.verdict import Scenario, Span
from grpo_tui.numbers import format_step
from grpo_tui.run.live import Run
from grpo_tui.views.presentation import name_of, status_word
from grpo_tui.views.report import ZONE_STYLES, Hanging, diagnosis_to_json, run_line, scenario_block
from grpo_tui.vocabulary import LearningState, LineKind

#: the version of `check --since`'s layout (its `since` block; the rest is check --json's)
SINCE_JSON_SCHEMA = 1


def _after(value: float | None, step: float) -> bool:
    return value is not None and value > step


def state_at(diagnosis: Diagnosis, step: float) -> tuple[LearningState, Span | None]:
    """The state the history held at `step` (too early where no state span covers it),
    and its span."""
    held = [
        span
        for span in diagnosis.history
        if span.id.is_state and span.start <= step and (span.end is None or span.end >= step)
    ]
    # the latest to begin: a state that took over at `step` is the one held from it on
    span = max(held, key=lambda s: s.start, default=None)
    if span is None:
        return LearningState.TOO_EARLY, None
    block = Scenario(span.id, "", span.severity, span.start, [], [])
    return state_of([block], ended=False), span


def new_spans(diagnosis: Diagnosis, step: float) -> list[Span]:
    """The history's spans that began or ended after `step`, oldest first."""
    return [s for s in diagnosis.history if _after(s.start, step) or _after(s.end, step)]


def new_verdicts(diagnosis: Diagnosis, step: float) -> list[Scenario]:
    """The verdicts (check --json's scenarios) whose onset is after `step`, worst first."""
    return [s for s in diagnosis.verdicts if _after(s.onset_step, step)]


def since_to_json(
    run: Run, diagnosis: Diagnosis, step: float, *, now: float | None = None
) -> dict[str, Any]:
    """`check --since`'s object (README, "check --since --json")."""
    whole = diagnosis_to_json(run, diagnosis, now=now)
    then, _ = state_at(diagnosis, step)
    state_now = diagnosis.state
    steps = run.store.steps
    last = float(steps[-1]) if steps.size else None
    return {
        "schema": whole["schema"],
        "since_schema": SINCE_JSON_SCHEMA,
        "path": whole["path"],
        "name": whole["name"],
        "file": whole["file"],
        "status": whole["status"],
        "state": whole["state"],
        "since": {
            "step": _step(step),
            "last_step": whole["run"]["steps"]["last"],
            # logged steps after N (train rows), 0: nothing new was logged
            "new_steps": int(
                np.count_nonzero((steps > step) & (run.store.kinds == LineKind.TRAIN))
            ),
            "state_then": then.word,
            "state_now": state_now.word,
            "state_changed": then is not state_now,
            "nothing_new": last is None or last <= step,
        },
        # the same filter as new_verdicts, on the same numbers
        "scenarios": [s for s in whole["scenarios"] if _after(s["onset_step"], step)],
        "notes": [n for n in whole["notes"] if _after(n["step"], step)],
        "history": [
            h
            for h in whole["history"]
            if _after(h["from_step"], step) or _after(h["to_step"], step)
        ],
        "run": whole["run"],
    }


def _step(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def render_since(
    run: Run, diagnosis: Diagnosis, step: float, *, now: float | None = None
) -> RenderableType:
    """The short text form: what changed after `step`, in a few lines."""
    data = since_to_json(run, diagnosis, step, now=now)
    since = data["since"]
    at = format_step(step)
    title = Text(f"grpo-tui check {run.path} --since {at}", style="bold")
    if (called := name_of(run).called) != run.path.name:
        title.append(f"  ({called})", style="")
    parts: list[RenderableType] = [Hanging("", title, indent=0), run_line(run, now=now)]
    if since["nothing_new"]:
        last = since["last_step"]
        parts.append(
            Text(f"Nothing logged after step {at} (the newest step is {last}).", style="bold")
        )
    else:
        parts.append(
            Text(
                f"{since['new_steps']} logged steps after step {at}, up to step {since['last_step']}.",
                style="dim",
            )
        )
    status = Text("Status: ", style="bold")
    status.append(status_word(diagnosis), style="bold " + ZONE_STYLES[diagnosis.status.zone])
    state = Text("State: ", style="bold")
    if since["state_changed"]:
        state.append(f"{since['state_then']} at step {at} → {since['state_now']} now")
    else:
        state.append(f"{since['state_now']}, as at step {at}")
    parts += [status, state]
    verdicts = new_verdicts(diagnosis, step)
    if verdicts:
        parts += [Text(""), Text(f"Began after step {at}", style="bold underline")]
        shown = Diagnosis(diagnosis.status, verdicts, [], {})
        parts += scenario_block(shown)
    spans = new_spans(diagnosis, step)
    if spans:
        parts += [Text(""), Text("History after step " + at, style="bold underline")]
        for span in spans:
            end = "now" if span.end is None else format_step(span.end)
            style = ZONE_STYLES[span.severity.zone]
            line = Text(f"{span.id.word} ({span.severity.word}) ")
            line.append(f"{format_step(span.start)} → {end}", style="dim")
            parts.append(Hanging(Text(span.severity.glyph, style=style), line, indent=2))
    notes = [n for n in diagnosis.notes if _after(n.step, step)]
    if notes:
        parts += [Text(""), Text("Notes after step " + at, style="bold underline")]
        for note in notes:
            glyph = Text(note.severity.glyph, style=ZONE_STYLES[note.severity.zone])
            parts.append(Hanging(glyph, note.text, indent=2))
    if not (verdicts or spans or notes):
        parts.append(Text(f"No verdict, finding or note began or ended after step {at}."))
    return Group(*parts)
