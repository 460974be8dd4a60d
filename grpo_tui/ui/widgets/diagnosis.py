"""The diagnosis panel: scenarios that hold (worst first) with evidence and advice, notes
(facts that are not verdicts), the verdicts' history, then the 8-point checklist. It renders grpo_tui.health.diagnose's Diagnosis and nothing else.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from grpo_tui.health.checkpoints import CheckpointAdvice
from grpo_tui.health.verdict import Diagnosis
from grpo_tui.numbers import format_step
from grpo_tui.run.completions.ledger import LedgerReport
from grpo_tui.untrusted import printable
from grpo_tui.views.palette import ZonePalette
from grpo_tui.views.presentation import no_verdict_words, severity_sections, status_word
from grpo_tui.views.prompts import prompts_headline, prompts_lines
from grpo_tui.vocabulary import Zone


def _hanging(marker: Text, body: Text) -> Table:
    """`marker` then `body`, wrapped lines of the body indented under its first line."""
    grid = Table.grid(padding=0, expand=True)
    grid.add_column(width=marker.cell_len, no_wrap=True)
    grid.add_column(ratio=1)
    grid.add_row(marker, body)
    return grid


def _glyph_line(glyph: str, style: Style, body: Text) -> Table:
    """A glyph (in `style`) and a space, then `body` hanging under its first line."""
    return _hanging(Text(glyph + " ", style=style), body)


def _section(title: str) -> list[RenderableType]:
    """A blank line, then a section's title."""
    return [Text(""), Text(title, style="bold underline")]


def diagnosis_renderable(
    diagnosis: Diagnosis | None,
    palette: ZonePalette,
    *,
    pending: str = "",
    file_notes: tuple[str, ...] = (),
    verbose: bool = False,
    prompts: LedgerReport | None = None,
) -> Group:
    """The whole panel (core strings are used verbatim, never as markup); `file_notes`
    (the Run's notes on its files, which the header only counts) come first; `verbose`
    adds under each fact how its numbers were read (windows, medians, noise)."""
    parts: list[RenderableType] = []
    if file_notes:
        caution = palette.style(Zone.CAUTION)
        parts.append(Text("Files", style="bold underline"))
        parts += [_glyph_line("!", caution, Text(printable(note))) for note in file_notes]
        parts.append(Text(""))
    if diagnosis is None:
        waiting = Text(pending or "diagnosing…", style="dim")
        parts.append(_glyph_line(Zone.UNKNOWN.glyph, palette.style(Zone.UNKNOWN), waiting))
        return Group(*parts)
    status = diagnosis.status
    status_style = palette.style(status.zone) + Style(bold=True)
    parts.append(Text(f"{status.glyph} {status_word(diagnosis)}", style=status_style))
    # the checkpoint answer right under the state's line, seen at 80×24 as the pane opens
    parts += _checkpoint_line(diagnosis)
    # which prompts are learning, in one line beside it (the detail: the Prompts section)
    parts += _prompts_line(prompts)
    if not diagnosis.scenarios:
        parts.append(Text(no_verdict_words(diagnosis), style="dim"))
    for scenario in diagnosis.scenarios:
        severity = scenario.severity
        style = palette.style(severity.zone) + Style(bold=True)
        title = Text(printable(scenario.title), style=style)
        if scenario.onset_step is not None:
            title.append(
                f"  since step {format_step(scenario.onset_step)}",
                style=Style(dim=True, bold=False),
            )
        parts.append(Text(""))
        parts.append(_glyph_line(severity.glyph, style, title))
        for evidence in scenario.evidence:
            parts.append(_hanging(Text("  • "), Text(printable(evidence.text))))
            if verbose and evidence.detail:
                parts.append(_hanging(Text("    "), Text(printable(evidence.detail), style="dim")))
        for advice in scenario.advice:
            parts.append(
                _hanging(Text("  → ", style="dim"), Text(printable(advice), style="italic"))
            )
    for heading, lines in severity_sections(diagnosis):
        if lines:
            parts += _section(heading)
            for severity, line in lines:
                style = palette.style(severity.zone)
                parts.append(_glyph_line(severity.glyph, style, Text(printable(line))))
    parts += _checkpoint_section(diagnosis)
    parts += _prompts_section(prompts)
    parts += _section("Checklist")
    for item in diagnosis.checklist:
        style = palette.style(item.answer.zone) + Style(bold=True)
        body = Text(printable(item.question))
        body.append("\n")
        body.append(printable(item.evidence), style="dim")
        parts.append(_glyph_line(f"{item.answer.glyph} {item.id}.", style, body))
    return Group(*parts)


def _checkpoint_line(diagnosis: Diagnosis) -> list[RenderableType]:
    """The checkpoint answer in one line, under the status and state (health/checkpoints.py)."""
    advice = diagnosis.checkpoints
    if advice is None or not advice.headline:
        return []
    body = Text(printable(advice.headline), style="bold")
    return [_hanging(Text("⚑ Checkpoints: ", style="bold"), body)]


def _prompts_line(prompts: LedgerReport | None) -> list[RenderableType]:
    """Which prompts are learning in one line, under the status (views/prompts.py); none
    before a train group was read."""
    if prompts is None or not prompts.prompts:
        return []
    body = Text(prompts_headline(prompts), style="bold")
    return [_hanging(Text("◇ ", style="bold"), body)]


def _prompts_section(prompts: LedgerReport | None) -> list[RenderableType]:
    """The prompt ledger's detail: each category with its pool, the all-pass share by
    visit and its forecast (`c` in the completions shows a category's groups)."""
    if prompts is None:
        return []
    lines = prompts_lines(prompts)
    if not lines:
        return []
    parts = _section("Prompts")
    parts += [_hanging(Text("  • "), Text(line)) for line in lines]
    return parts


def _checkpoint_section(diagnosis: Diagnosis) -> list[RenderableType]:
    """Which checkpoint to go back to and which to keep, with their numbers."""
    advice = diagnosis.checkpoints
    if advice is None or not advice.lines:
        return []
    parts = _section("Checkpoints")
    parts += [_hanging(Text("  • "), Text(printable(line))) for line in advice.lines]
    return parts


def diagnosis_summary(diagnosis: Diagnosis | None) -> str:
    """A few words for a tab label: the status glyph and the worst scenario."""
    if diagnosis is None:
        return f"{Zone.UNKNOWN.glyph} Diagnosis"
    worst = next((s for s in diagnosis.scenarios if s.severity.warns), None)
    suffix = f": {printable(worst.title)}" if worst is not None else ""
    return f"{diagnosis.status.glyph} Diagnosis{suffix}"


class DiagnosisPanel(VerticalScroll):
    """Scrollable diagnosis text; redrawn only when the diagnosis, the theme or the
    detail toggle changes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("v", "toggle_detail", "Statistics"),
    ]

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._shown: tuple[Diagnosis | None, ZonePalette, str, tuple[str, ...], bool] | None = None
        self._checkpoints: CheckpointAdvice | None = None
        self._prompts: LedgerReport | None = None
        self._body = Static("", id="diagnosis-body")
        #: how each number was read is shown under its fact (`v`)
        self.verbose = False

    def compose(self) -> ComposeResult:
        yield self._body

    def show(
        self,
        diagnosis: Diagnosis | None,
        palette: ZonePalette,
        *,
        pending: str = "",
        file_notes: tuple[str, ...] = (),
        prompts: LedgerReport | None = None,
    ) -> None:
        """`prompts`: the prompt ledger the session read with this diagnosis."""
        shown = (diagnosis, palette, pending, file_notes, self.verbose)
        # equal diagnoses (dataclass equality) and palettes draw the same: skip the redraw
        # (the checkpoint answers are compared too: they change with the folders on disk)
        checkpoints = diagnosis.checkpoints if diagnosis is not None else None
        if shown == self._shown and checkpoints == self._checkpoints and prompts == self._prompts:
            return
        self._shown = shown
        self._checkpoints = checkpoints
        self._prompts = prompts
        self._body.update(
            diagnosis_renderable(
                diagnosis,
                palette,
                pending=pending,
                file_notes=file_notes,
                verbose=self.verbose,
                prompts=prompts,
            )
        )

    def action_toggle_detail(self) -> None:
        """Show or hide how each number was read, redrawn at once."""
        self.verbose = not self.verbose
        if self._shown is not None:
            diagnosis, palette, pending, file_notes, _ = self._shown
            self.show(
                diagnosis, palette, pending=pending, file_notes=file_notes, prompts=self._prompts
            )
