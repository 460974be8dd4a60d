"""PATH → the files of a run: which metrics file to follow, its completions and args.

Accepted: a `logging.jsonl` (or any metrics `.jsonl`); an ms-swift run directory
(`vN-YYYYMMDD-HHMMSS/`) or the output directory above it (the newest `v*` wins, and a newer
one appearing later is a resumed run to follow); a `trainer_state.json`, or a directory
holding one at the top or in `checkpoint-*/` (the newest checkpoint wins, or the top one
when it is at least as new). A path that does
not exist yet is waited for. Only `stat`, `scandir` and reads: nothing is created.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

RUN_DIR_PATTERN = re.compile(r"^v(\d+)-(\d{8})-(\d{6})$")
CHECKPOINT_PATTERN = re.compile(r"^checkpoint-(\d+)$")
LOGGING_FILE = "logging.jsonl"
COMPLETIONS_FILE = "completions.jsonl"
ARGS_FILE = "args.json"
TRAINER_STATE_FILE = "trainer_state.json"


@dataclass(frozen=True, slots=True)
class RunLayout:
    """What a PATH resolves to right now."""

    #: "jsonl" (a metrics log to tail), "trainer_state" (log_history to re-read), or
    #: "waiting" (nothing readable yet)
    mode: str
    #: the metrics file (may not exist yet in "jsonl" mode: then it is waited for)
    metrics_file: Path | None
    completions_file: Path | None
    args_file: Path | None
    #: the run directory (an ms-swift vN-… directory or the file's folder)
    run_dir: Path | None
    #: the output directory whose v* directories are watched for newer ones
    output_dir: Path | None
    #: what is being waited for, in words, when mode is "waiting"
    waiting_for: str = ""


def _scandir(path: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as entries:
            return list(entries)
    except OSError:
        return []


def newest_run_dir(output_dir: Path) -> Path | None:
    """The `vN-YYYYMMDD-HHMMSS` directory with the highest N (then the newest stamp)."""
    best: tuple[int, str] | None = None
    best_path: Path | None = None
    for entry in _scandir(output_dir):
        match = RUN_DIR_PATTERN.match(entry.name)
        if match and entry.is_dir():
            key = (int(match.group(1)), match.group(2) + match.group(3))
            if best is None or key > best:
                best, best_path = key, Path(entry.path)
    return best_path


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def newest_trainer_state(directory: Path) -> Path | None:
    """`trainer_state.json` of the highest-numbered `checkpoint-N/`, or the top one when
    it is at least as new: `trainer.save_state()` writes the top one after training, and
    only it holds the history's last item (the `train_runtime` line that says the run
    ended, logged after the last checkpoint was saved). An older top one is a previous
    run's, left behind."""
    best_step = -1
    best_path: Path | None = None
    for entry in _scandir(directory):
        match = CHECKPOINT_PATTERN.match(entry.name)
        if match and int(match.group(1)) > best_step:
            candidate = Path(entry.path) / TRAINER_STATE_FILE
            if candidate.is_file():
                best_step, best_path = int(match.group(1)), candidate
    top = directory / TRAINER_STATE_FILE
    top_time = _mtime(top) if top.is_file() else None
    if best_path is None or top_time is None:
        return best_path if top_time is None else top
    checkpoint_time = _mtime(best_path)
    return top if checkpoint_time is None or top_time >= checkpoint_time else best_path


def _args_near(*candidates: Path) -> Path | None:
    for directory in candidates:
        path = directory / ARGS_FILE
        if path.is_file():
            return path
    return None


def _jsonl_layout(metrics: Path, output_dir: Path | None = None) -> RunLayout:
    run_dir = metrics.parent
    completions = run_dir / COMPLETIONS_FILE
    return RunLayout(
        mode="jsonl",
        metrics_file=metrics,
        completions_file=completions if metrics.name == LOGGING_FILE else None,
        args_file=_args_near(run_dir),
        run_dir=run_dir,
        output_dir=output_dir,
    )


def _state_layout(state: Path, output_dir: Path | None = None) -> RunLayout:
    holder = state.parent
    run_dir = holder.parent if CHECKPOINT_PATTERN.match(holder.name) else holder
    return RunLayout(
        mode="trainer_state",
        metrics_file=state,
        completions_file=None,
        args_file=_args_near(run_dir, holder),
        run_dir=run_dir,
        output_dir=output_dir,
    )


def _run_dir_layout(run_dir: Path, output_dir: Path | None) -> RunLayout:
    logging_file = run_dir / LOGGING_FILE
    if logging_file.is_file():
        return _jsonl_layout(logging_file, output_dir)
    state = newest_trainer_state(run_dir)
    if state is not None:
        return _state_layout(state, output_dir)
    if RUN_DIR_PATTERN.match(run_dir.name):
        # a fresh ms-swift run directory: logging.jsonl comes with the first log line
        return _jsonl_layout(logging_file, output_dir)
    return RunLayout(
        "waiting", None, None, None, run_dir, output_dir,
        waiting_for=f"{LOGGING_FILE} or {TRAINER_STATE_FILE} in {run_dir}",
    )


def discover(path: Path) -> RunLayout:
    """Resolve PATH to the files to follow now (call again to notice newer runs)."""
    path = Path(path)
    if path.is_file():
        if path.name == COMPLETIONS_FILE:
            return _jsonl_layout(path.parent / LOGGING_FILE)
        if path.suffix == ".json":
            return _state_layout(path)
        return _jsonl_layout(path)
    if path.is_dir():
        newest = newest_run_dir(path)
        if newest is not None and not (path / LOGGING_FILE).is_file():
            return _run_dir_layout(newest, output_dir=path)
        return _run_dir_layout(path, output_dir=None)
    if path.suffix == ".jsonl":
        return RunLayout(
            "jsonl", path, None, None, path.parent, None, waiting_for=str(path)
        )
    return RunLayout("waiting", None, None, None, None, None, waiting_for=str(path))
