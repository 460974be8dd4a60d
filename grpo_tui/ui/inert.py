"""Untrusted text (metric names, paths, completions) made safe to draw.

Such text is never parsed as markup, and control characters (escape sequences, carriage
returns, bidi overrides) are replaced so a log line cannot drive the terminal.
"""

from __future__ import annotations

import re

from rich.style import Style
from rich.text import Text

# C0 and C1 controls (incl. ESC, CR, BEL, DEL), and Unicode bidi overrides / isolates that
# could visually reorder what is shown.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean(text: str, *, single_line: bool = True) -> str:
    """`text` with every unsafe character replaced by U+FFFD (tabs become spaces; newlines
    too when `single_line`)."""
    text = text.replace("\t", " ")
    if single_line:
        text = text.replace("\n", " ")
    return _UNSAFE.sub("\ufffd", text)


def inert(text: str, style: str | Style = "", *, single_line: bool = True) -> Text:
    """A Rich Text holding `text` verbatim (no markup, no escapes)."""
    return Text(clean(text, single_line=single_line), style=style, no_wrap=single_line)
