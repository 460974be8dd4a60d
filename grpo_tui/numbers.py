"""How numbers, durations and steps are written for people (TUI, `check`, `inspect`):
one set of rules so the screen and the report always agree."""

from __future__ import annotations

import math


def format_value(value: float | None) -> str:
    """A metric value in at most ~9 characters: 0.1234, 1.235e-05, 12345.7, NaN, ±inf."""
    if value is None:
        return "–"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1e6 or magnitude < 1e-3:
        mantissa, exponent = f"{value:.3e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent)}"
    if magnitude >= 1000:
        return f"{value:.1f}"
    return f"{value:.4g}" if magnitude >= 1 else f"{value:.4f}".rstrip("0").rstrip(".")


#: below this magnitude a value in a narrow table cell reads "≈0" (an advantage of 9e-6 is
#: no push either way; its scientific form does not fit a cell and once read as -9.3)
NEAR_ZERO = 1e-4


def format_cell(value: float | None, width: int) -> str:
    """A value in at most `width` characters, for a table column: "≈0" near zero, fewer
    significant digits when the usual form is too long, never a cut exponent."""
    if value is not None and math.isfinite(value) and value != 0 and abs(value) < NEAR_ZERO:
        return "≈0"
    text = format_value(value)
    if len(text) <= width or value is None or not math.isfinite(value):
        return text
    for digits in (3, 2, 1):
        shorter = f"{value:.{digits}g}"
        if "e" in shorter:
            mantissa, exponent = shorter.split("e")
            shorter = f"{mantissa}e{int(exponent)}"
        if len(shorter) <= width:
            return shorter
    return text[: max(1, width - 1)] + "…"


def format_duration(seconds: float | None) -> str:
    """1d02h, 3h05m, 12m03s, 45s; "–" when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "–"
    total = round(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def format_age(seconds: float | None) -> str:
    """How long ago, as a clock that ticks once a minute past the first: 45s, 12m, 3h05m,
    1d02h (a monitor of an idle run then repaints its ages once a minute, not every
    second); "–" when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0 or round(seconds) < 60:
        return format_duration(seconds)  # "–" when unknown
    minutes = max(1, int(seconds // 60))
    return f"{minutes}m" if minutes < 60 else format_duration(minutes * 60)


def format_step(step: float) -> str:
    """A step as text: 120, or 12.5 for fractional steps."""
    return str(int(step)) if float(step).is_integer() else f"{step:g}"
