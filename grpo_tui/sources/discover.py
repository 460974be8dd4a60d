"""PATH → the files of a run: which metrics file to follow, its completions and args.

Accepted: a `logging.jsonl` (or any metrics `.jsonl`); a console log of any name whose
content shows a trainer's printed log dicts (`train.log`, `nohup.out`; a directory holding
only such a log too); an ms-swift run directory
(`vN-YYYYMMDD-HHMMSS/`) or the output directory above it (the newest `v*` wins, and a newer
one appearing later is a resumed run to follow); a `trainer_state.json`, or a directory
holding one at the top or in `checkpoint-*/` (the newest checkpoint wins, or the top one
when it is at least as new). A path that does not exist yet is waited for. Only `stat`,
`scandir` and reads: nothing is created.

Every look at the disk goes through `_probe`, which answers what is there or why it cannot
be looked at: a directory this process may not list, a symlink loop, a FIFO or device named
like a log (only regular files are read: a FIFO blocks forever). Those come back as the
layout's `problem` (nothing can be read) or `skipped` (this one file is left out), in
words a user can act on, never as an exception.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from grpo_tui.files import describe_os_error, file_kind, open_regular
from grpo_tui.sources.formats.console import looks_like_console

RUN_DIR_PATTERN = re.compile(r"^v(\d+)-(\d{8})-(\d{6})$")
CHECKPOINT_PATTERN = re.compile(r"^checkpoint-(\d+)$")
LOGGING_FILE = "logging.jsonl"
COMPLETIONS_FILE = "completions.jsonl"
ARGS_FILE = "args.json"
TRAINER_STATE_FILE = "trainer_state.json"
#: names a console log usually has (its content must still say so)
CONSOLE_SUFFIXES = (".log", ".out", ".txt")
#: bytes of a file's start (and end) read to tell a console log by its content: the first
#: log dict can come after many screens of warnings and progress bars
_SNIFF_HEAD = 4 << 20
_SNIFF_TAIL = 1 << 20


@dataclass(frozen=True, slots=True)
class RunLayout:
    """What a PATH resolves to right now."""

    #: "jsonl" (a metrics log to tail), "console" (a console log to tail), "trainer_state"
    #: (log_history to re-read),
    #: "waiting" (nothing there yet) or "unreadable" (something is there but cannot be read)
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
    #: why nothing can be read, in words, when mode is "unreadable"
    problem: str = ""
    #: files found but left out, each with the reason ("not a regular file (a FIFO), …")
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Probe:
    """What `stat` says about a path: its mode, or why it could not be looked at."""

    mode: int | None = None
    #: the OSError other than "no such file" (permission, loop, I/O)
    error: OSError | None = None

    @property
    def exists(self) -> bool:
        return self.mode is not None or self.error is not None

    @property
    def is_dir(self) -> bool:
        return self.mode is not None and stat.S_ISDIR(self.mode)

    @property
    def is_file(self) -> bool:
        return self.mode is not None and stat.S_ISREG(self.mode)

    def why_not_file(self, path: Path) -> str:
        """Why this path is not a readable regular file, in words ("" when it is one or absent)."""
        if self.error is not None:
            return describe_os_error(self.error, path)
        if self.mode is not None and not stat.S_ISREG(self.mode):
            return f"not a regular file ({file_kind(self.mode)}), skipped: {path}"
        return ""


def _probe(path: Path) -> _Probe:
    try:
        return _Probe(mode=os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return _Probe()
    except OSError as error:  # permission denied on a parent, a symlink loop, EIO
        return _Probe(error=error)


def _scandir(path: Path) -> tuple[list[os.DirEntry[str]], OSError | None]:
    try:
        with os.scandir(path) as entries:
            return list(entries), None
    except OSError as error:
        return [], error


def _entry_is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def newest_run_dir(output_dir: Path) -> Path | None:
    """The `vN-YYYYMMDD-HHMMSS` directory with the highest N (then the newest stamp)."""
    best: tuple[int, str] | None = None
    best_path: Path | None = None
    entries, _ = _scandir(output_dir)
    for entry in entries:
        match = RUN_DIR_PATTERN.match(entry.name)
        if match and _entry_is_dir(entry):
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
    entries, _ = _scandir(directory)
    for entry in entries:
        match = CHECKPOINT_PATTERN.match(entry.name)
        if match and int(match.group(1)) > best_step:
            candidate = Path(entry.path) / TRAINER_STATE_FILE
            if _probe(candidate).is_file:
                best_step, best_path = int(match.group(1)), candidate
    top = directory / TRAINER_STATE_FILE
    top_time = _mtime(top) if _probe(top).is_file else None
    if best_path is None or top_time is None:
        return best_path if top_time is None else top
    checkpoint_time = _mtime(best_path)
    return top if checkpoint_time is None or top_time >= checkpoint_time else best_path


def _args_near(*candidates: Path) -> tuple[Path | None, tuple[str, ...]]:
    """The first args file that is a regular file, and why any other one was passed over."""
    skipped: list[str] = []
    for directory in candidates:
        path = directory / ARGS_FILE
        probe = _probe(path)
        if probe.is_file:
            return path, tuple(skipped)
        if probe.exists:
            skipped.append(f"{probe.why_not_file(path)}: run context unknown")
    return None, tuple(skipped)


def _jsonl_layout(metrics: Path, output_dir: Path | None = None) -> RunLayout:
    run_dir = metrics.parent
    completions = run_dir / COMPLETIONS_FILE
    args_file, skipped = _args_near(run_dir)
    return RunLayout(
        mode="jsonl",
        metrics_file=metrics,
        completions_file=completions if metrics.name == LOGGING_FILE else None,
        args_file=args_file,
        run_dir=run_dir,
        output_dir=output_dir,
        skipped=skipped,
    )


#: sniff verdicts, so rediscovery (every few seconds) does not read megabytes again: a file
#: that showed a log dict stays a console log while it grows (keyed without its size); one
#: that did not is looked at again only once its size changed
_SNIFFED: dict[tuple[str, int, int, int], bool] = {}
_SNIFFED_KEPT = 256


def is_console_log(path: Path) -> bool:
    """The file's start or end shows a trainer's printed log dict."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    known = (str(path), info.st_dev, info.st_ino, -1)
    unknown = (str(path), info.st_dev, info.st_ino, info.st_size)
    if _SNIFFED.get(known) or unknown in _SNIFFED:
        return _SNIFFED.get(known, False)
    verdict = _sniff_console(path)
    if len(_SNIFFED) >= _SNIFFED_KEPT:
        _SNIFFED.clear()
    _SNIFFED[known if verdict else unknown] = verdict
    return verdict


def _sniff_console(path: Path) -> bool:
    try:
        with open_regular(path) as handle:
            head = handle.read(_SNIFF_HEAD)
            size = os.fstat(handle.fileno()).st_size
            tail = b""
            if size > len(head):
                handle.seek(max(len(head), size - _SNIFF_TAIL))
                tail = handle.read(_SNIFF_TAIL)
    except OSError:
        return False
    return any(looks_like_console(part.decode("utf-8", errors="replace")) for part in (head, tail))


def _console_layout(log: Path, output_dir: Path | None = None) -> RunLayout:
    args_file, skipped = _args_near(log.parent)
    return RunLayout(
        mode="console",
        metrics_file=log,
        completions_file=None,
        args_file=args_file,
        run_dir=log.parent,
        output_dir=output_dir,
        skipped=skipped,
    )


def newest_console_log(directory: Path) -> Path | None:
    """The most recently written console log in a directory (by name and content)."""
    found: list[tuple[float, str]] = []
    entries, _ = _scandir(directory)
    for entry in entries:
        name = entry.name
        if not (name.endswith(CONSOLE_SUFFIXES) or name == "nohup.out"):
            continue
        try:
            if not entry.is_file():
                continue
            found.append((entry.stat().st_mtime, entry.path))
        except OSError:
            continue
    for _, path in sorted(found, reverse=True):
        if is_console_log(Path(path)):
            return Path(path)
    return None


def _state_layout(state: Path, output_dir: Path | None = None) -> RunLayout:
    holder = state.parent
    run_dir = holder.parent if CHECKPOINT_PATTERN.match(holder.name) else holder
    args_file, skipped = _args_near(run_dir, holder)
    return RunLayout(
        mode="trainer_state",
        metrics_file=state,
        completions_file=None,
        args_file=args_file,
        run_dir=run_dir,
        output_dir=output_dir,
        skipped=skipped,
    )


def _unreadable(
    problem: str, run_dir: Path | None = None, output_dir: Path | None = None
) -> RunLayout:
    return RunLayout("unreadable", None, None, None, run_dir, output_dir, problem=problem)


def _run_dir_layout(run_dir: Path, output_dir: Path | None) -> RunLayout:
    logging_file = run_dir / LOGGING_FILE
    logging_probe = _probe(logging_file)
    if logging_probe.is_file:
        return _jsonl_layout(logging_file, output_dir)
    state = newest_trainer_state(run_dir)
    if state is not None:
        return _state_layout(state, output_dir)
    if logging_probe.exists:
        # a FIFO, directory or unreadable thing named logging.jsonl, and nothing else to read
        return _unreadable(logging_probe.why_not_file(logging_file), run_dir, output_dir)
    console = newest_console_log(run_dir)
    if console is not None:
        return _console_layout(console, output_dir)
    _, listing_error = _scandir(run_dir)
    if listing_error is not None:
        return _unreadable(describe_os_error(listing_error, run_dir), run_dir, output_dir)
    if RUN_DIR_PATTERN.match(run_dir.name):
        # a fresh ms-swift run directory: logging.jsonl comes with the first log line
        return _jsonl_layout(logging_file, output_dir)
    return RunLayout(
        "waiting",
        None,
        None,
        None,
        run_dir,
        output_dir,
        waiting_for=f"{LOGGING_FILE} or {TRAINER_STATE_FILE} in {run_dir}",
    )


def discover(path: Path) -> RunLayout:
    """Resolve PATH to the files to follow now (call again to notice newer runs)."""
    path = Path(path)
    probe = _probe(path)
    if probe.error is not None:
        return _unreadable(describe_os_error(probe.error, path))
    if probe.is_dir:
        newest = newest_run_dir(path)
        if newest is not None and not _probe(path / LOGGING_FILE).is_file:
            return _run_dir_layout(newest, output_dir=path)
        return _run_dir_layout(path, output_dir=None)
    if probe.mode is not None and not probe.is_file:
        return _unreadable(probe.why_not_file(path), path.parent)
    if probe.is_file:
        if path.name == COMPLETIONS_FILE:
            return _jsonl_layout(path.parent / LOGGING_FILE)
        if path.suffix == ".json":
            return _state_layout(path)
        if path.suffix != ".jsonl" and (path.suffix in CONSOLE_SUFFIXES or is_console_log(path)):
            return _console_layout(path)
        return _jsonl_layout(path)
    if path.suffix == ".jsonl":
        return RunLayout("jsonl", path, None, None, path.parent, None, waiting_for=str(path))
    return RunLayout("waiting", None, None, None, None, None, waiting_for=str(path))
