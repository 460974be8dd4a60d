"""Untrusted text (metric names, paths, completions) as Rich Text that cannot act.

The sanitising itself is core's (`grpo_tui.untrusted.printable`, the one every output path
uses); this adds the other half for widgets: the text is never parsed as markup.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from grpo_tui.untrusted import printable


def inert(text: str, style: str | Style = "") -> Text:
    """A Rich Text of `text` verbatim on one line (no markup), every control shown."""
    return Text(printable(text), style=style, no_wrap=True)
