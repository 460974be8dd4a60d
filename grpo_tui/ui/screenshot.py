"""Where the palette's Screenshot goes: the user's Downloads folder when there is one to
write to, else the home directory, else the temporary directory (a GPU server seldom has
~/Downloads, and Textual's own command then fails). Never the current directory: it may be
the run directory, and grpo-tui writes nothing there."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from platformdirs import user_downloads_path

#: the screenshot's name: short enough that "saved to ~/<name>" fits a toast at 80 columns
#: (Textual's own, with the app's name and microseconds, is 52 characters)
NAME_FORMAT = "grpo-tui_%Y%m%d-%H%M%S.svg"


def writable_directory(candidates: Iterable[Path]) -> Path | None:
    """The first candidate that is a directory this process may write into."""
    return next((c for c in candidates if c.is_dir() and os.access(c, os.W_OK | os.X_OK)), None)


def screenshot_directories() -> list[Path]:
    """Where a screenshot may go, in order of preference."""
    return [user_downloads_path(), Path.home(), Path(tempfile.gettempdir())]


def shown_path(path: Path, cells: int) -> str:
    """`path` in at most `cells` characters: the home directory as `~`, then the head cut
    (`…/home/grpo-tui_….svg`) so that the file's name and its folder stay."""
    home = str(Path.home())
    text = str(path)
    if home not in ("", "/") and text.startswith(home + os.sep):
        text = "~" + text[len(home) :]
    if len(text) <= cells:
        return text
    tail = text[len(text) - max(1, cells - 1) :]
    # from a folder's start where one is in what is kept (…/home/x.svg, not …ome/x.svg)
    cut = tail.find(os.sep)
    return "…" + (tail[cut:] if cut > 0 else tail)
