"""The diagnosis panel: scenarios that hold (worst first) with evidence and advice, then
the 8-point checklist. It renders grpo_tui.health.diagnose's Diagnosis and nothing else.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from grpo_tui.health.diagnose import GLYPHS, Diagnosis
from grpo_tui.health.trends import ZONE_CODES
from grpo_tui.numbers import format_step
from grpo_tui.untrusted import printable
from grpo_tui.ui.themes import ZonePalette

#: how each severity and checklist answer is drawn: the zone whose glyph and style it borrows
SEVERITY_ZONE = {"problem": "bad", "caution": "caution", "info": "unknown", "ok": "healthy"}
ANSWER_ZONE = {"yes": "healthy", "no": "bad", "unknown": "unknown"}
STATUS_ZONE = {"problem": "bad", "caution": "caution", "healthy": "healthy", "unknown": "unknown"}
STATUS_WORDS = {
    "problem": "PROBLEM",
    "caution": "CAUTION",
    "healthy": "HEALTHY",
    "unknown": "NO VERDICT YET",
}


def _zone_style(palette: ZonePalette, zone: str) -> Style:
    return palette.style(ZONE_CODES.get(zone, ZONE_CODES["unknown"]))


def _hanging(marker: Text, body: Text) -> Table:
    """`marker` then `body`, wrapped lines of the body indented under its first line."""
    grid = Table.grid(padding=0, expand=True)
    grid.add_column(width=marker.cell_len, no_wrap=True)
    grid.add_column(ratio=1)
    grid.add_row(marker, body)
    return grid


def diagnosis_renderable(diagnosis: Diagnosis | None, palette: ZonePalette, *, pending: str = "") -> Group:
    """The whole panel (core strings are used verbatim, never as markup)."""
    parts: list[RenderableType] = []
    if diagnosis is None:
        unknown = _zone_style(palette, "unknown")
        parts.append(
            _hanging(Text(GLYPHS["unknown"] + " ", style=unknown), Text(pending or "diagnosing…", style="dim"))
        )
        return Group(*parts)
    status_zone = STATUS_ZONE.get(diagnosis.status, "unknown")
    status_style = _zone_style(palette, status_zone) + Style(bold=True)
    words = STATUS_WORDS.get(diagnosis.status, printable(diagnosis.status).upper())
    parts.append(Text(f"{GLYPHS[status_zone]} {words}", style=status_style))
    if not diagnosis.scenarios:
        parts.append(Text("  no scenario holds", style="dim"))
    for scenario in diagnosis.scenarios:
        zone = SEVERITY_ZONE.get(scenario.severity, "unknown")
        style = _zone_style(palette, zone)
        title = Text(printable(scenario.title), style=style + Style(bold=True))
        if scenario.onset_step is not None:
            title.append(f"  since step {format_step(scenario.onset_step)}", style=Style(dim=True, bold=False))
        parts.append(Text(""))
        parts.append(_hanging(Text(GLYPHS[zone] + " ", style=style + Style(bold=True)), title))
        for evidence in scenario.evidence:
            parts.append(_hanging(Text("  • "), Text(printable(evidence.text))))
        for advice in scenario.advice:
            parts.append(_hanging(Text("  → ", style="dim"), Text(printable(advice), style="italic")))
    parts.append(Text(""))
    parts.append(Text("Checklist", style="bold underline"))
    for item in diagnosis.checklist:
        zone = ANSWER_ZONE.get(item.answer, "unknown")
        style = _zone_style(palette, zone)
        body = Text(printable(item.question))
        body.append("\n")
        body.append(printable(item.evidence), style="dim")
        parts.append(_hanging(Text(f"{GLYPHS[zone]} {item.id}. ", style=style + Style(bold=True)), body))
    return Group(*parts)


def diagnosis_summary(diagnosis: Diagnosis | None) -> str:
    """A few words for a tab label: the status glyph and the worst scenario."""
    if diagnosis is None:
        return f"{GLYPHS['unknown']} Diagnosis"
    zone = STATUS_ZONE.get(diagnosis.status, "unknown")
    worst = next((s for s in diagnosis.scenarios if s.severity in ("problem", "caution")), None)
    suffix = f": {printable(worst.title)}" if worst is not None else ""
    return f"{GLYPHS[zone]} Diagnosis{suffix}"


class DiagnosisPanel(VerticalScroll):
    """Scrollable diagnosis text; redrawn only when the diagnosis or theme changes."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._shown: tuple[Diagnosis | None, ZonePalette, str] | None = None
        self._body = Static("", id="diagnosis-body")

    def compose(self) -> ComposeResult:
        yield self._body

    def show(self, diagnosis: Diagnosis | None, palette: ZonePalette, *, pending: str = "") -> None:
        shown = self._shown
        # equal diagnoses (dataclass equality) draw the same: skip the redraw
        if shown is not None and shown[0] == diagnosis and shown[1] is palette and shown[2] == pending:
            return
        self._shown = (diagnosis, palette, pending)
        self._body.update(diagnosis_renderable(diagnosis, palette, pending=pending))
