"""TensorBoard event files (`events.out.tfevents.*`): written by ms-swift by default, and by
TRL (`report_to="tensorboard"`), verl, OpenRLHF and NeMo-RL (`logger.tensorboard_enabled`,
under `<log_dir>/tensorboard/`) when asked.

Tags are `train/<key>` and `eval/<key>` (ms-swift, TRL, OpenRLHF) or the bare key (verl);
the reader (sources/tensorboard.py) strips `train/` and turns `eval/` into `eval_`, so the
keys are the writing framework's own. Which framework wrote the file is not recorded in
it, and the key vocabularies do not clash, so one table holds them all (each framework's
traps as its own adapter says: verl's `actor/ppo_kl` and OpenRLHF's `ppo_kl` stay drift,
not KL to the reference; NeMo-RL's `kl_penalty` is, its `gen_kl_error` is not: nemorl.py).

Files: an event file, a folder of them (a resumed run writes a newer one beside the old),
or a folder holding such a folder one or two levels down (TRL's `<output_dir>/runs/<date_host>/`).
Event files are a tracker's store: a per-step log of the same run is preferred. The settings
come from the hparams a writer logs (the HParams plugin's session-start record: NeMo-RL's
whole config, TRL's arguments), mapped by `nemorl_settings` (NeMo-RL's dotted names; other
names pass as they are).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.common import GRPO_FAMILIES, merged_aliases
from grpo_tui.sources.formats.layout import Found, Probe, Reading, Tier, found_file, probe, scan
from grpo_tui.sources.formats.nemorl import (
    NEMORL_ALIASES,
    NEMORL_FAMILIES,
    TIME_KEYED_PREFIX,
    event_files_rollouts,
    nemorl_settings,
)
from grpo_tui.sources.formats.nemorl import flatten as nemorl_flatten
from grpo_tui.sources.formats.openrlhf import OPENRLHF_ALIASES
from grpo_tui.sources.formats.trl import TRL_ALIASES, trl_completions
from grpo_tui.sources.formats.trl import flavour as trl_flavour
from grpo_tui.sources.formats.verl import VERL_ALIASES, VERL_FAMILIES

NAME = "tensorboard"
_NUMBERS = re.compile(r"(\d+)")
EVENT_FILE_PREFIX = "events.out.tfevents."
#: tags logged at a time, not at a training step, which the reader leaves out: NeMo-RL's
#: GPU monitor logs `ray/…` at seconds since its start (nemorl.py), on by default
#: (`logger.monitor_gpus`), so they would read as steps far ahead of the run's
TIME_KEYED_PREFIXES: tuple[str, ...] = (TIME_KEYED_PREFIX,)


#: keys only NeMo-RL logs, and only verl (what names the trainer of an event file)
_NEMORL_KEYS = frozenset({"approx_entropy", "mean_gen_tokens_per_sample", "kl_penalty"})
_VERL_PREFIXES = ("critic/", "actor/", "response_length/")


def flavour(keys: Collection[str]) -> str | None:
    """The trainer the tags show (event files do not record it): NeMo-RL, verl, else
    TRL's flavours (Unsloth, open-r1)."""
    if not _NEMORL_KEYS.isdisjoint(keys):
        return "NeMo-RL"
    if any(key.startswith(_VERL_PREFIXES) for key in keys):
        return "verl"
    return trl_flavour(keys)


def name_time(path: Path) -> tuple[int, list[Any]]:
    """Reading order: the wall time writers put in the 4th dot-field, then the name with its
    numbers as numbers (a process's 10th writer, `….4242.10`, after its 9th)."""
    fields = path.name.split(".")
    time = int(fields[3]) if len(fields) > 3 and fields[3].isdigit() else 0
    parts = _NUMBERS.split(path.name)
    return time, [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in parts]


def scan_events(directory: Path) -> tuple[list[Path], float, list[Path]]:
    """A directory's event files (regular files: a FIFO is left out) in reading order, the
    newest one's mtime, and its subdirectories."""
    files: list[tuple[Path, float]] = []
    subdirs: list[Path] = []
    entries, _ = scan(directory)
    for entry in entries:
        try:
            if entry.name.startswith(EVENT_FILE_PREFIX) and entry.is_file():
                files.append((directory / entry.name, entry.stat().st_mtime))
            elif not entry.name.startswith(".") and entry.is_dir():
                subdirs.append(directory / entry.name)
        except OSError:
            continue
    newest = max((mtime for _, mtime in files), default=0.0)
    return sorted((path for path, _ in files), key=name_time), newest, subdirs


def find_event_files(directory: Path) -> list[Path]:
    """The event files of the run in `directory`, in reading order: its own, else those of
    the subdirectory holding the most recently modified one (`<dir>/<run_name>/`), else one
    level further (`output/runs/<name>/` as transformers names it). scandir only: cheap."""
    files, _, level = scan_events(directory)
    for _depth in range(2):
        if files:
            break
        scanned = [scan_events(subdir) for subdir in level]
        files = max(scanned, key=lambda scan: (bool(scan[0]), scan[1]), default=([], 0.0, []))[0]
        level = [subdir for _, _, subdirs in scanned for subdir in subdirs]
    return files


def _found(path: Path, searched: Path, why: str, files: list[Path]) -> Found:
    # TRL's completions folder in the output dir, else NeMo-RL's dumps beside its
    # `tensorboard/` folder
    holder = files[-1].parent if files else searched
    completions = trl_completions(searched) or event_files_rollouts(holder)
    found = found_file(
        path,
        NAME,
        Reading.TENSORBOARD,
        Tier.STORE,
        why,
        run_dir=searched,
        completions=completions,
    )
    # a folder's age is its newest file's (the folder's own mtime changes only with names)
    return replace(found, mtime=max((probe(file).mtime for file in files), default=found.mtime))


def claim(path: Path, seen: Probe) -> Found | None:
    if not path.name.startswith(EVENT_FILE_PREFIX):
        return None
    files = find_event_files(path) if probe(path).is_dir else [path]
    return _found(path, path.parent, "a TensorBoard event file", files)


def find(directory: Path) -> list[Found]:
    files = find_event_files(directory)
    if not files:
        return []
    holder = files[-1].parent
    where = "in the folder" if holder == directory else f"in {holder.relative_to(directory)}"
    return [_found(holder, directory, f"TensorBoard event files {where}", files)]


TENSORBOARD = FormatAdapter(
    name=NAME,
    title="TensorBoard",
    aliases=merged_aliases(TRL_ALIASES, VERL_ALIASES, OPENRLHF_ALIASES, NEMORL_ALIASES),
    families=GRPO_FAMILIES + VERL_FAMILIES + NEMORL_FAMILIES,
    ignored_keys=frozenset({"total_flos", "training/global_step"}),
    # NeMo-RL's zero-spread share from its baseline percentages (a no-op for the others)
    flatten=nemorl_flatten,
    # the hparams a writer logs: NeMo-RL's config under args.json's names (TRL's
    # `add_hparams` of its arguments uses them already)
    settings=nemorl_settings,
    flavour=flavour,
    reading=Reading.TENSORBOARD,
    claim=claim,
    find=find,
)
