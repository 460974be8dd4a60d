"""Where the completions panel will go: an honest note of what was logged, not a fake panel."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from grpo_tui.run.completion_stats import CompletionsSummary


def completions_note(samples: CompletionsSummary | None) -> Text:
    if samples is None:
        return Text("no completions logged", style="dim")
    lines = samples.lines
    return Text(
        f"no completions panel yet — {lines} completions line{'' if lines == 1 else 's'} logged",
        style="dim",
    )


class CompletionsPlaceholder(Static):
    """Says whether completions were logged; the real panel comes in a later issue."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(completions_note(None), id=id, classes=classes)
        self._lines: int | None = None

    def show(self, samples: CompletionsSummary | None) -> None:
        lines = None if samples is None else samples.lines
        if lines != self._lines:
            self._lines = lines
            self.update(completions_note(samples))
