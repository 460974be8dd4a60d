"""TensorBoard event files told apart by the trainer that wrote them.

An event file does not say which program wrote it, but its tags do: slime writes
`rollout/raw_reward`, SkyRL `policy/policy_loss`, AReaL `ppo_actor/task_reward/avg`. Tags
are stored as plain UTF-8 in each event, and every step repeats them, so the first
megabyte of a file shows whose it is. `tensorboard_files` makes a trainer adapter's
`claim` and `find` of its event files from a few such tags: the same files the plain
TensorBoard adapter finds (formats/tensorboard.py), read the same way, but with the
trainer's key vocabulary and under its name. The adapters using it come before the plain
TensorBoard adapter in formats/__init__.py, so on the same folder theirs wins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from grpo_tui.files import stat_path
from grpo_tui.sources.formats.layout import (
    CompletionsRef,
    Found,
    Probe,
    Reading,
    Tier,
    found_file,
    probe,
    read_head,
)
from grpo_tui.sources.formats.tensorboard import EVENT_FILE_PREFIX, find_event_files

#: bytes of an event file's start looked at for its tags: the first steps' events name
#: every tag the writer logs (a config logged first as hparams or text is small)
TAGS_HEAD = 1 << 20
#: entries each cache below keeps at most (cleared when full)
_KEPT = 256
#: the adapter whose tags a file showed (a file is one writer's: it stays so), by identity
_MATCHED: dict[tuple[str, int, int], str] = {}
#: the adapters whose tags a file's head did not show, by identity and the head's length
#: (a head already full never changes: it is not read again)
_FAILED: dict[tuple[str, int, int, int], set[str]] = {}
_HEAD: dict[tuple[str, int, int, int], bytes] = {}


def tags_show(path: Path, adapter: str, marks: tuple[str, ...]) -> bool:
    """The event file's first megabyte holds one of `marks` (tag names, stored as plain
    UTF-8 in each event), and no other adapter's tags matched it first."""
    try:
        info = stat_path(path)
    except OSError:
        return False
    identity = (str(path), info.st_dev, info.st_ino)
    matched = _MATCHED.get(identity)
    if matched is not None:
        return matched == adapter
    looked = (*identity, min(info.st_size, TAGS_HEAD))
    if adapter in _FAILED.get(looked, ()):
        return False
    head = _HEAD.get(looked)
    if head is None:
        _HEAD.clear()
        head = _HEAD[looked] = read_head(path, TAGS_HEAD)
    if any(mark.encode() in head for mark in marks):
        if len(_MATCHED) >= _KEPT:
            _MATCHED.clear()
        _MATCHED[identity] = adapter
        return True
    if len(_FAILED) >= _KEPT:
        _FAILED.clear()
    _FAILED.setdefault(looked, set()).add(adapter)
    return False


def tensorboard_files(
    adapter: str,
    marks: tuple[str, ...],
    what: str,
    near: Callable[[Path], CompletionsRef | None] | None = None,
) -> tuple[Callable[[Path, Probe], Found | None], Callable[[Path], list[Found]]]:
    """An adapter's `claim` and `find` of the event files whose tags show `marks` (`what`
    says whose, for `inspect`); `near` finds the completions of a run folder. A folder is
    the trainer's when any of its files shows them: a trainer whose processes each write a
    file into one folder (slime's trainer and rollout manager) has tags of its own in each,
    and the TensorBoard reader follows them all, merged by step."""

    def found(path: Path, run_dir: Path, why: str, files: list[Path]) -> Found:
        made = found_file(
            path,
            adapter,
            Reading.TENSORBOARD,
            Tier.STORE,
            why,
            run_dir=run_dir,
            completions=None if near is None else near(run_dir),
        )
        # a folder's age is its newest file's (the folder's own mtime changes with names only)
        return replace(made, mtime=max((probe(f).mtime for f in files), default=made.mtime))

    def shown(files: list[Path]) -> bool:
        return any(tags_show(file, adapter, marks) for file in reversed(files))

    def claim(path: Path, seen: Probe) -> Found | None:
        if not path.name.startswith(EVENT_FILE_PREFIX):
            return None
        files = find_event_files(path) if seen.is_dir else [path]
        if not files or not shown(files):
            return None
        return found(path, path.parent, f"a TensorBoard event file with {what}", files)

    def find(directory: Path) -> list[Found]:
        files = find_event_files(directory)
        if not files or not shown(files):
            return []
        holder = files[-1].parent
        where = "in the folder" if holder == directory else f"in {holder.relative_to(directory)}"
        return [found(holder, directory, f"TensorBoard event files {where} with {what}", files)]

    return claim, find
