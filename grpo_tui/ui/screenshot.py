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


def writable_directory(candidates: Iterable[Path]) -> Path | None:
    """The first candidate that is a directory this process may write into."""
    for candidate in candidates:
        if candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return None


def screenshot_directories() -> list[Path]:
    """Where a screenshot may go, in order of preference."""
    return [user_downloads_path(), Path.home(), Path(tempfile.gettempdir())]
