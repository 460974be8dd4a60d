"""Text from files is untrusted: one sanitiser for every place it is shown.

Metric names, values, paths, bad-line excerpts, args.json fields and completion text all
come from files another program (or a model) wrote. Any of them can hold escape sequences
that would drive the terminal (CSI clears the screen, OSC sets the title or writes the
clipboard, DCS, C1 controls), carriage returns and backspaces that overwrite what was
drawn, bidi overrides that reorder it, or zero-width characters that hide things.

`printable` makes such text inert and visible: C0 controls become their Unicode control
pictures (ESC shows as ␛, CR as ␍), DEL as ␡, and every other control or format character
(C1, bidi, zero-width, line/paragraph separators, tag characters, lone surrogates) as
U+FFFD. Every output path uses it: the TUI's widgets, `check` and `inspect` at the point
where they write, error messages. `json_dumps` is the same promise for `--json`: the text is
kept whole (JSON can say any character) but every such character is written as a
`\\uXXXX` escape, so a JSON document printed to a terminal is inert too; `escaped` does
that for one name (the column names of `export`'s CSV).

Markup is the other half: untrusted text is never handed to Rich or Textual as markup
(always as `rich.text.Text` or plain segments), so "[bold]" shows as typed.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

# Every character of Unicode categories Cc, Cf, Zl, Zp and Cs (tests/test_untrusted.py
# checks the list against unicodedata), tab and newline excepted: they are handled apart.
_UNSAFE_RANGES = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff"
    "\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
_UNSAFE = re.compile(f"[{_UNSAFE_RANGES}]")
_UNSAFE_OR_TAB = re.compile(f"[\t{_UNSAFE_RANGES}]")
_UNSAFE_OR_BREAK = re.compile(f"[\t\n{_UNSAFE_RANGES}]")
_REPLACEMENT = "\ufffd"


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char in "\t\n":
        return " "
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟: ESC is ␛, CR is ␍, BS is ␈
    if code == 0x7F:
        return "\u2421"  # ␡
    return _REPLACEMENT


def printable(text: str, *, single_line: bool = True) -> str:
    """`text` safe to draw on a terminal, every hidden or controlling character made visible.

    A Windows line ending (CR LF) is a plain newline, a lone CR shows as ␍; `single_line`
    turns newlines into spaces (names, paths, one-line notes). Tabs become one space either way (a tab stop would misalign columns).
    """
    pattern = _UNSAFE_OR_BREAK if single_line else _UNSAFE_OR_TAB
    return pattern.sub(_visible, text.replace("\r\n", "\n"))


def _toml_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def toml_string(text: str) -> str:
    """`text` as a TOML basic string, every control or format character escaped (TOML
    requires it for controls; the rest would otherwise reach the terminal as they are)."""
    body = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + _UNSAFE_OR_TAB.sub(_toml_escape, body) + '"'


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def escaped(text: str) -> str:
    """`text` with every control or format character (tab and newline too) written as a
    `\\uXXXX` escape, as `--json` writes it: a name a CSV carries, inert on a terminal and
    still telling what it was."""
    return _UNSAFE_OR_BREAK.sub(_escape, text)


def json_dumps(data: Any, *, indent: bool = False) -> str:
    """JSON text in which every control or format character is a `\\uXXXX` escape.

    orjson already escapes C0 controls; C1, bidi and zero-width characters it writes as
    they are, which a terminal may act on. Inside a JSON string an escape means the same
    character, so nothing is lost.
    """
    option = orjson.OPT_INDENT_2 if indent else 0
    try:
        text = orjson.dumps(data, option=option | orjson.OPT_NON_STR_KEYS).decode("utf-8")
    except orjson.JSONEncodeError:
        # a lone surrogate (a key the lenient parser read from a "\\ud800" escape): the
        # standard library writes it back as the escape it came from
        return json.dumps(data, ensure_ascii=True, indent=2 if indent else None)
    return _UNSAFE.sub(_escape, text)
