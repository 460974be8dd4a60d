"""Untrusted text (metric names, paths, completions) as Rich Text that cannot act.

The sanitising itself is core's (`grpo_tui.untrusted.printable`, the one every output path
uses); this adds the other half for widgets: the text is never parsed as markup.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from grpo_tui.untrusted import printable


def inert(text: str, style: str | Style = "", *, single_line: bool = True) -> Text:
    """A Rich Text holding `text` verbatim (no markup), every control character visible."""
    return Text(printable(text, single_line=single_line), style=style, no_wrap=single_line)
