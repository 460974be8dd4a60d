"""A completions source given by hand (`--completions PATH`): whose kind of file or folder.

A file is read as JSON lines, one batch per line (ms-swift's shape). A folder is asked of
every adapter's kinds of per-step folder (TRL's parquet files, verl's rollout dumps): the
first whose files it holds reads it. An empty folder is waited on as the first kind whose
files may still come, so a run that has not logged completions yet is followed.
"""

from __future__ import annotations

from pathlib import Path

from grpo_tui.sources.formats import ADAPTERS
from grpo_tui.sources.formats.layout import BatchFolder, CompletionsRef, probe


def completions_in(path: Path) -> CompletionsRef:
    if not probe(path).is_dir:
        return CompletionsRef(path)
    kinds: list[BatchFolder] = [
        kind for adapter in ADAPTERS.values() for kind in adapter.completion_folders
    ]
    return CompletionsRef(path, next((kind for kind in kinds if kind.holds(path)), kinds[0]))
