"""PATH → the runs it holds, for a board: one run, or the runs in its folders.

A week of runs is a folder of run folders (`output/` with one folder per experiment, each
with its own `vN-…` folders or checkpoints; a sweep's TRL `output_dir`s side by side;
verl's experiment folders). A PATH is one run when it is a file, when an adapter finds a
metrics file in it (ms-swift's output dir with its `vN-…` folders, a TRL output dir with
its checkpoints), or when fewer than two of its folders hold a run (then discovery looks
below it as it always did); otherwise each folder that holds a run is one. Discovery
itself (sources/discover.py) resolves each run's files; this module only decides where
the runs are. Only `stat` and `scandir`: nothing is created.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from grpo_tui.sources.discover import adapters_for, discover
from grpo_tui.sources.formats.layout import entry_is_dir, entry_mtime, probe, scan

#: folders of a folder looked at for runs (newest first): a month of daily runs
RUNS_LOOKED_AT = 200


def holds_metrics(directory: Path, *, only: str | None = None) -> bool:
    """An adapter finds a readable metrics file in `directory` itself (its own files, or
    the run folders its framework keeps there)."""
    for adapter in adapters_for(only):
        if adapter.find is None:
            continue
        if any(found.exists and not found.problem for found in adapter.find(directory)):
            return True
    return False


def is_run(directory: Path, *, only: str | None = None) -> bool:
    """Discovery finds a readable metrics file in or below `directory`."""
    layout = discover(directory, only=only)
    return layout.reading is not None and not layout.waiting_for and not layout.problem


def run_folders(directory: Path, *, limit: int = RUNS_LOOKED_AT) -> list[Path]:
    """The folders of `directory` that may hold runs (hidden ones left out), newest first."""
    entries, _ = scan(directory)
    folders = [e for e in entries if entry_is_dir(e) and not e.name.startswith((".", "__"))]
    folders.sort(key=lambda entry: (-entry_mtime(entry), entry.name))
    return [Path(entry.path) for entry in folders[:limit]]


def runs_in(path: Path, *, only: str | None = None, known: Iterable[Path] = ()) -> list[Path]:
    """The runs PATH holds: [PATH] when it is one run (or nothing is there yet: it is
    waited for as one), else each of its folders that holds a run, newest first.
    `known`: folders already found to be runs (a rescan does not discover them again)."""
    seen = probe(path)
    if not seen.is_dir or holds_metrics(path, only=only):
        return [path]
    held = set(known)
    runs = [f for f in run_folders(path) if f in held or is_run(f, only=only)]
    return runs if len(runs) >= 2 else [path]


def find_runs(paths: Sequence[Path], *, only: str | None = None) -> list[Path]:
    """The runs of every PATH given, in the order given, each once."""
    runs: list[Path] = []
    for path in paths:
        for run in runs_in(Path(path), only=only):
            if run not in runs:
                runs.append(run)
    return runs
