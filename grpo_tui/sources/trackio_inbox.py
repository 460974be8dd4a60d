"""trackio's inbox: the JSONL fragments trackio writes instead of its database.

On a network filesystem (or with `TRACKIO_STORAGE_MODE=jsonl`) the training process never
writes the SQLite database: each 0.5 s flush becomes an immutable
`inbox/<writer>/<seq>.jsonl`, one folder per run, merged into the database only by
`trackio show` or a Space (which then deletes them). The store (sources/trackio.py) reads
them itself, once each; this module lists and parses them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from grpo_tui.files import read_regular

#: an inbox folder whose mtime is this much older than its last listing is not re-listed
_SETTLED_NS = 2_000_000_000
#: an inbox fragment is one 0.5 s flush of a run (kilobytes); a larger file is not one
_MAX_FRAGMENT_BYTES = 64 << 20


def canonical_project(project: str) -> str:
    """The on-disk name trackio gives a project (its `canonical_project_name`)."""
    safe = "".join(c for c in project if c.isalnum() or c in ("-", "_")).rstrip()
    return safe or "default"


@dataclass(frozen=True, slots=True)
class InboxEntry:
    """One metrics record of an inbox fragment."""

    step: Any
    metrics: Any
    log_id: str | None


@dataclass(frozen=True, slots=True)
class Fragment:
    """One inbox fragment: immutable once trackio renamed it into place."""

    folder: str
    name: str
    project: str
    run: str | None  # run_id, else the run's name
    run_name: str | None
    entries: list[InboxEntry]
    mtime: float


@dataclass(slots=True)
class WriterFolder:
    """One inbox folder: the fragments of one trackio run (a FragmentWriter per Run)."""

    project: str | None = None
    run: str | None = None
    run_name: str | None = None
    first_mtime: float = 0.0
    taken: set[str] = field(default_factory=set)
    junk: set[str] = field(default_factory=set)  # fragments that are not trackio's
    names: list[str] = field(default_factory=list)  # the last listing
    mtime_ns: int = -1
    listed_ns: int = 0

    def listing(self, folder: Path, now_ns: int) -> list[str]:
        """Its fragments in order. A folder unchanged since a listing made well after its
        last change is not listed again (thousands pile up when nothing imports them)."""
        try:
            mtime_ns = os.stat(folder).st_mtime_ns
        except OSError:
            return []
        if mtime_ns == self.mtime_ns and self.listed_ns - mtime_ns > _SETTLED_NS:
            return self.names
        self.names, self.mtime_ns, self.listed_ns = fragment_names(folder), mtime_ns, now_ns
        self.taken.intersection_update(self.names)  # imported and deleted: forgotten
        self.junk.intersection_update(self.names)
        return self.names

    def readable(self, folder: Path, names: list[str]) -> Iterator[Fragment]:
        """Its fragments of these names not taken yet, read one at a time (one that cannot
        be read is junk from then on: unreadable, not trackio's, or gone)."""
        for name in names:
            if name in self.taken or name in self.junk:
                continue
            fragment = read_fragment(folder / name)
            if fragment is None:
                self.junk.add(name)
            else:
                yield fragment


def _names(folder: Path, keep: Callable[[os.DirEntry[str]], bool]) -> list[str]:
    """The names of a folder's entries that `keep` takes, sorted ([] when it cannot be listed)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(e.name for e in entries if keep(e))
    except OSError:
        return []


def writer_dirs(inbox: Path) -> list[Path]:
    return [inbox / name for name in _names(inbox, lambda e: e.is_dir(follow_symlinks=False))]


def fragment_names(folder: Path) -> list[str]:
    """A writer folder's finished fragments in order (`.tmp` files are being written)."""
    return _names(folder, lambda e: e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False))


def read_fragment(path: Path) -> Fragment | None:
    """A fragment's metrics records; None when it cannot be read (gone: imported)."""
    try:
        info = os.stat(path)
        if info.st_size > _MAX_FRAGMENT_BYTES:
            return None
        data = read_regular(path)
    except OSError:
        return None
    head: dict[str, Any] | None = None
    entries: list[InboxEntry] = []
    for line in data.splitlines():
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(item, dict) or not isinstance(item.get("project"), str):
            continue
        head = head or item
        if item.get("kind") == "metric":
            log_id = item.get("log_id")
            log_id = log_id if isinstance(log_id, str) else None
            entries.append(InboxEntry(item.get("step"), item.get("metrics"), log_id))
    if head is None:
        return None
    name, run_id = head.get("run"), head.get("run_id")
    run_name = name if isinstance(name, str) else None
    run = run_id if isinstance(run_id, str) else run_name
    project = canonical_project(head["project"])
    return Fragment(path.parent.name, path.name, project, run, run_name, entries, info.st_mtime)


def inbox_runs(inbox: Path, project: str) -> dict[str, tuple[str, float]]:
    """A project's runs in the inbox that logged metrics, each with its name and the mtime
    of its first fragment of them."""
    runs: dict[str, tuple[str, float]] = {}
    for folder in writer_dirs(inbox):
        for name in fragment_names(folder):
            fragment = read_fragment(folder / name)
            if fragment is None or fragment.project != project or fragment.run is None:
                continue
            if fragment.entries:
                runs.setdefault(fragment.run, (fragment.run_name or fragment.run, fragment.mtime))
    return runs
