"""A run's checkpoints on disk, and what its trainer says about saving them.

Each adapter declares its checkpoint folders as data (`FormatAdapter.checkpoints`: a name
pattern whose group is the step, and where they sit relative to the run folder); this
module only lists those places, through the same `scan` / `probe` / `read_regular` that
discovery uses, so a run on another machine (sources/remote/) is listed like a local one.
It knows no framework.

What the trainer says about saving is read where it says it: the HF Trainer's
`trainer_state.json` inside the newest checkpoint (`save_steps`, `max_steps`,
`best_global_step` / `best_model_checkpoint` with `best_metric`), and the run's args file
(`save_steps`, `save_total_limit`, `save_strategy`: the names HF's TrainingArguments give
them, which TRL, Unsloth, open-r1 and ms-swift share). The health layer turns the two into
the checkpoints the schedule saved and which of those are gone (health/checkpoints.py).

Listing is done when the feed looks at the run folder again (sources/feed.py, every few
seconds), not on every poll of the log; a folder whose mtime did not change is not listed
again (a checkpoint written or deleted changes its parent's mtime). Nothing is written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from grpo_tui.files import describe_os_error, read_regular
from grpo_tui.sources.formats.base import CheckpointFolders, FormatAdapter
from grpo_tui.sources.formats.layout import entry_is_dir, probe, scan

#: the file the HF Trainer writes into every checkpoint folder (trainer_utils.py,
#: TRAINER_STATE_NAME), holding the schedule it saved by
TRAINER_STATE = "trainer_state.json"


@dataclass(frozen=True, slots=True)
class SavedCheckpoint:
    """A checkpoint folder on disk: the step it holds and where it is."""

    step: int
    path: str


@dataclass(frozen=True, slots=True)
class CheckpointListing:
    """A run's checkpoints as plain data: what is on disk, where it was looked for, and
    what the trainer said about its saving schedule (None: it said nothing)."""

    #: the folders looked in for checkpoint folders (those that exist)
    looked_in: tuple[str, ...]
    #: the checkpoint folders found, by step
    kept: tuple[SavedCheckpoint, ...]
    #: the folder names looked for ("checkpoint-N"), for saying what was not found
    names: tuple[str, ...]
    #: a checkpoint is saved every this many steps
    save_steps: int | None = None
    #: at most this many are kept (older ones deleted)
    save_total_limit: int | None = None
    #: the schedule is by steps (False: by epoch, or saving is off: no steps to derive)
    by_steps: bool = True
    #: the step the trainer itself named best (by its `metric_for_best_model`), and that
    #: metric's value there
    best_step: int | None = None
    best_metric: float | None = None
    #: where the schedule was read, in words ("trainer_state.json in checkpoint-500")
    said_by: tuple[str, ...] = ()
    #: why a place could not be looked at ("permission denied: …"), else ""
    problem: str = ""

    @property
    def steps(self) -> tuple[int, ...]:
        return tuple(c.step for c in self.kept)


def places(
    kinds: tuple[CheckpointFolders, ...],
    run_dir: Path,
    metrics_file: Path | None,
    given: Path | None,
) -> list[Path]:
    """The folders a run's checkpoints may sit in: each kind's places under the run folder,
    then the folder the user gave (it may be the checkpoints' own folder)."""
    stem = metrics_file.stem if metrics_file is not None else ""
    found: list[Path] = []
    for kind in kinds:
        for under in kind.under:
            relative = under.format(folder=run_dir.name, stem=stem)
            found.append(Path(run_dir, relative) if relative else run_dir)
    if given is not None:
        found.append(given)
    return list(dict.fromkeys(_normal(p) for p in found))


def _normal(path: Path) -> Path:
    """`a/b/../c` as `a/c`, without resolving links (a mounted path is the far machine's)."""
    parts: list[str] = []
    for part in path.parts:
        if part == ".." and parts and parts[-1] not in ("..", "/"):
            parts.pop()
        elif part != ".":
            parts.append(part)
    return Path(*parts) if parts else path


class CheckpointLister:
    """Lists one run's checkpoints when asked, again only where a folder changed."""

    def __init__(self) -> None:
        #: folder → (its mtime when listed, what it held, why it could not be listed)
        self._folders: dict[Path, tuple[float, list[SavedCheckpoint], str]] = {}
        #: a schedule file → (its mtime and size when read, what it said)
        self._said: dict[Path, tuple[tuple[float, int], dict[str, Any]]] = {}

    def listing(
        self,
        adapter: FormatAdapter | None,
        run_dir: Path | None,
        metrics_file: Path | None = None,
        *,
        given: Path | None = None,
        args_file: Path | None = None,
    ) -> CheckpointListing | None:
        """The run's checkpoints now; None when its format declares none (nothing to say)."""
        if adapter is None or not adapter.checkpoints or run_dir is None:
            return None
        kinds = adapter.checkpoints
        given_dir = given if given is not None and probe(given).is_dir else None
        looked: list[str] = []
        kept: dict[int, SavedCheckpoint] = {}
        problems: list[str] = []
        for folder in places(kinds, run_dir, metrics_file, given_dir):
            seen = probe(folder)
            if seen.error is not None:
                problems.append(describe_os_error(seen.error, folder))
                continue
            if not seen.is_dir:
                continue
            looked.append(str(folder))
            found, problem = self._list(folder, seen.mtime, kinds)
            if problem:
                problems.append(problem)
            for checkpoint in found:
                kept.setdefault(checkpoint.step, checkpoint)
        ordered = tuple(sorted(kept.values(), key=lambda c: c.step))
        said, said_by = self._schedule(ordered, args_file)
        best_step = _int(said.get("best_global_step")) or _step_of(
            said.get("best_model_checkpoint"), kinds
        )
        return CheckpointListing(
            looked_in=tuple(looked),
            kept=ordered,
            names=tuple(dict.fromkeys(_name(kind) for kind in kinds)),
            save_steps=_int(said.get("save_steps")),
            save_total_limit=_int(said.get("save_total_limit")),
            by_steps=str(said.get("save_strategy", "steps")).lower() == "steps",
            best_step=best_step,
            best_metric=_float(said.get("best_metric")),
            said_by=said_by,
            problem=problems[0] if problems else "",
        )

    def _list(
        self, folder: Path, mtime: float, kinds: tuple[CheckpointFolders, ...]
    ) -> tuple[list[SavedCheckpoint], str]:
        known = self._folders.get(folder)
        if known is not None and known[0] == mtime and mtime:
            return known[1], known[2]
        entries, error = scan(folder)
        found = [
            SavedCheckpoint(step, entry.path)
            for entry in entries
            if (step := _step_of(entry.name, kinds)) is not None and entry_is_dir(entry)
        ]
        problem = describe_os_error(error, folder) if error is not None else ""
        self._folders[folder] = (mtime, found, problem)
        return found, problem

    def _schedule(
        self, kept: tuple[SavedCheckpoint, ...], args_file: Path | None
    ) -> tuple[dict[str, Any], tuple[str, ...]]:
        """What the trainer said about saving: the newest checkpoint's trainer_state.json,
        then the args file for what it leaves out (save_total_limit is only there)."""
        said: dict[str, Any] = {}
        said_by: list[str] = []
        if kept:
            newest = Path(kept[-1].path)
            state = self._read(newest / TRAINER_STATE)
            if state:
                said.update(state)
                said_by.append(f"{TRAINER_STATE} in {newest.name}")
        if args_file is not None and args_file.suffix == ".json":
            args = self._read(args_file)
            keys = ("save_steps", "save_total_limit", "save_strategy")
            added = {k: args[k] for k in keys if k in args and said.get(k) is None}
            if added:
                said.update(added)
                said_by.append(args_file.name)
        return said, tuple(said_by)

    def _read(self, path: Path) -> dict[str, Any]:
        """A JSON object file's top-level fields (empty when it cannot be read); read again
        only when it changed."""
        seen = probe(path)
        if not seen.is_file:
            return {}
        identity = (seen.mtime, seen.size)
        known = self._said.get(path)
        if known is not None and known[0] == identity:
            return known[1]
        try:
            value = orjson.loads(read_regular(path))
        except (OSError, orjson.JSONDecodeError):
            value = None
        fields = (
            {k: v for k, v in value.items() if k != "log_history"}
            if isinstance(value, dict)
            else {}
        )
        self._said[path] = (identity, fields)
        return fields


def _step_of(name: object, kinds: tuple[CheckpointFolders, ...]) -> int | None:
    """The step a checkpoint folder's name (or a path ending in one) holds."""
    if not isinstance(name, str) or not name:
        return None
    last = Path(name).name
    for kind in kinds:
        match = kind.pattern.fullmatch(last)
        if match is not None:
            return int(match.group(1))
    return None


def _name(kind: CheckpointFolders) -> str:
    """A kind's folder name for words: its pattern with the step as N."""
    text = kind.pattern.pattern.removeprefix("^").removesuffix("$")
    return text.replace(r"(\d+)", "N").replace("\\", "")


def _int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if math.isfinite(value) and value > 0 and value == int(value) else None


def _float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None
