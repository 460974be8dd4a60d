"""A run's logged completions: the index over its batches (index.py; what it keeps per
batch and hands out: entries.py), each batch's GRPO groups (groups.py) and the per-step
statistics health reads (summary.py)."""

from grpo_tui.run.completions.entries import EntryKind, IndexState, LineInfo, Page, SearchHit
from grpo_tui.run.completions.groups import Group, Sample
from grpo_tui.run.completions.index import DEFAULT_CACHE_LINES, CompletionsIndex

__all__ = [
    "DEFAULT_CACHE_LINES",
    "CompletionsIndex",
    "EntryKind",
    "Group",
    "IndexState",
    "LineInfo",
    "Page",
    "Sample",
    "SearchHit",
]
