"""The header: which run, the verdict, where it is, and whether data is still arriving.

Three lines whatever the state (the screen never shifts): the run's state and name, the
verdict line (core's `VerdictLine`, on every pane), the progress facts that fit one line.
`header_view` turns the Run's progress and timing into what the header shows (pure, so
tests can give it any clock); `RunHeader` draws it and touches only the parts that
changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from grpo_tui.presentation import (
    FACT_SEPARATOR,
    VERDICT_SEPARATOR,
    VerdictLine,
    fit_facts,
    machine_of,
    notes_fact,
    progress_facts,
    state_headline,
)
from grpo_tui.run.live import Run
from grpo_tui.ui.inert import inert
from grpo_tui.ui.themes import ZonePalette
from grpo_tui.untrusted import printable
from grpo_tui.vocabulary import RunState


@dataclass(frozen=True)
class HeaderView:
    """What the header shows, in plain values (equal views draw identically)."""

    state: RunState
    state_label: str
    run_label: str
    facts: tuple[str, ...]
    bad_lines: int
    paused: bool = False
    #: what is wrong with the run's files besides (a malformed args.json, a skipped file)
    notes: tuple[str, ...] = ()
    #: lines read while paused, not shown yet
    held_back: int = 0


def _run_label(run: Run) -> str:
    """The metrics file's last two path parts (the run dir and file), else PATH's, after
    its machine when it is remote. The metrics file is the first one followed (a
    completions file comes after it)."""
    shown = Path(run.status.followed[0]) if run.status.followed else run.path
    label = "/".join(shown.parts[-2:]) or str(shown)
    if (machine := machine_of(shown)) is not None:  # a run on another machine says which
        label = f"{machine}:…/{label}"
    framework = f" ({run.framework})" if run.framework else ""
    # one database holds every run of a trackio project: which one this is
    store_run = f" · run {run.status.store_run}" if run.status.store_run else ""
    return printable(label + framework + store_run)


def header_view(run: Run, now: float) -> HeaderView:
    state, state_label = state_headline(run, now)
    return HeaderView(
        state=state,
        state_label=state_label,
        run_label=_run_label(run),
        facts=progress_facts(run, now),
        bad_lines=run.bad_line_count,
        notes=tuple(printable(note) for note in run.notes),
    )


def verdict_text(line: VerdictLine, palette: ZonePalette, width: int) -> Text:
    """The verdict line in `width` cells: the status's glyph and word bold in its zone's
    colour (the glyph and word say it without colour), the parts that fit after it."""
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    text.append(line.lead, style=palette.style(line.status.zone) + Style(bold=True))
    for part in line.fitted(width):
        text.append(VERDICT_SEPARATOR, style="dim")
        text.append(part)
    return text


class RunHeader(Vertical):
    """Run name and state on top, the verdict line, then the progress facts that fit one
    line (the files' notes among them): three lines in every state."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        #: the view shown (None before the first)
        self.view: HeaderView | None = None
        self._state_badge = Static("", id="run-state")
        self._paused_badge = Static("", id="run-paused")
        self._run_name = Static("", id="run-name")
        self._verdict = Static("", id="verdict-line")
        #: the verdict line shown and its palette (None before the first)
        self.verdict_shown: tuple[VerdictLine, ZonePalette] | None = None
        self._facts = Static("", id="run-facts")

    def compose(self) -> ComposeResult:
        with Horizontal(id="header-top"):
            yield self._state_badge
            yield self._paused_badge
            yield self._run_name
        yield self._verdict
        yield self._facts

    def show_verdict(self, line: VerdictLine, palette: ZonePalette) -> None:
        """Draw the verdict line (nothing when it says what it already says)."""
        if self.verdict_shown == (line, palette):
            return
        self.verdict_shown = (line, palette)
        self._draw_verdict()

    def _draw_verdict(self) -> None:
        if self.verdict_shown is not None:
            line, palette = self.verdict_shown
            # one line of a fixed size (app.tcss): no layout pass, which would repaint the
            # whole screen's scrollbars too
            self._verdict.update(verdict_text(line, palette, self._width()), layout=False)

    def _width(self) -> int:
        """The cells inside the header's padding."""
        return max(20, self.content_size.width or 78)

    def show(self, view: HeaderView) -> None:
        """Draw `view`, updating only the widgets whose content changed."""
        before = self.view
        self.view = view
        if before is None or (before.state, before.state_label) != (view.state, view.state_label):
            self._state_badge.update(inert(f" {view.state_label} "))
            self._state_badge.set_classes(f"-{view.state.value}")
        if before is None or (before.paused, before.held_back) != (view.paused, view.held_back):
            held = view.held_back
            waiting = f"· {held} new line{'' if held == 1 else 's'} " if held else ""
            self._paused_badge.update(inert(f" PAUSED {waiting}" if view.paused else ""))
            self._paused_badge.display = view.paused
        if before is None or before.run_label != view.run_label:
            self._run_name.update(inert(" " + view.run_label))
        if before is None or (before.facts, before.notes) != (view.facts, view.notes):
            self._draw_facts(view)

    def on_resize(self) -> None:
        if self.is_mounted:
            self._draw_verdict()
            if self.view is not None:
                self._draw_facts(self.view)

    def _draw_facts(self, view: HeaderView) -> None:
        """The facts that fit one line of the header (the step, the data's age, bad lines
        and the files' notes first), never broken inside a fact."""
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        note = notes_fact(view.notes)
        facts = (*view.facts, note) if note is not None else view.facts
        for index, fact in enumerate(fit_facts(facts, self._width())):
            if index:
                text.append(FACT_SEPARATOR, style="dim")
            bold = fact.endswith(("bad line", "bad lines")) and view.bad_lines
            text.append(fact, style="bold" if bold or fact is note else "")
        # a line of a fixed size: no layout pass (the clock's once-a-minute repaint is then
        # this line alone, not the grid's scrollbar with it)
        self._facts.update(text, layout=False)
