"""TensorBoard event files (`events.out.tfevents.*`): written by ms-swift by default, and by
TRL (`report_to="tensorboard"`), verl and OpenRLHF when asked.

Tags are `train/<key>` and `eval/<key>` (ms-swift, TRL, OpenRLHF) or the bare key (verl);
the reader (sources/tensorboard.py) strips `train/` and turns `eval/` into `eval_`, so the
keys are the writing framework's own. Which framework wrote the file is not recorded in
it, and the key vocabularies do not clash, so one table holds them all (each framework's
traps as its own adapter says: verl's `actor/ppo_kl` and OpenRLHF's `ppo_kl` stay drift,
not KL to the reference).

Files: an event file, a folder of them (a resumed run writes a newer one beside the old),
or a folder holding such a folder one or two levels down (TRL's `<output_dir>/runs/<date_host>/`).
Event files are a tracker's store: a per-step log of the same run is preferred.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.common import GRPO_ALIASES, GRPO_FAMILIES, merged_aliases
from grpo_tui.sources.formats.layout import Found, Probe, Reading, Tier, found_file, probe
from grpo_tui.sources.formats.openrlhf import OPENRLHF_ALIASES
from grpo_tui.sources.formats.trl import trl_completions
from grpo_tui.sources.formats.verl import VERL_ALIASES, VERL_FAMILIES
from grpo_tui.sources.polled import RecordStore
from grpo_tui.sources.tensorboard import EVENT_FILE_PREFIX, TensorBoardStore, find_event_files

NAME = "tensorboard"


def _found(path: Path, searched: Path, why: str) -> Found:
    found = found_file(
        path,
        NAME,
        Reading.STORE,
        Tier.STORE,
        why,
        run_dir=searched,
        completions=trl_completions(searched),
    )
    files = find_event_files(path) if probe(path).is_dir else [path]
    # a folder's age is its newest file's (the folder's own mtime changes only with names)
    return replace(found, mtime=max((probe(file).mtime for file in files), default=found.mtime))


def claim(path: Path, seen: Probe) -> Found | None:
    if not path.name.startswith(EVENT_FILE_PREFIX):
        return None
    return _found(path, path.parent, "a TensorBoard event file")


def find(directory: Path) -> list[Found]:
    files = find_event_files(directory)
    if not files:
        return []
    holder = files[-1].parent
    where = "in the folder" if holder == directory else f"in {holder.relative_to(directory)}"
    return [_found(holder, directory, f"TensorBoard event files {where}")]


def open_store(path: Path, run_name: str | None) -> RecordStore:
    return TensorBoardStore(path)


TENSORBOARD = FormatAdapter(
    name=NAME,
    title="TensorBoard",
    aliases=merged_aliases(GRPO_ALIASES, VERL_ALIASES, OPENRLHF_ALIASES),
    families=GRPO_FAMILIES + VERL_FAMILIES,
    fraction_step_keys=(),
    int_step_keys=("step",),
    ignored_keys=frozenset({"total_flos", "training/global_step"}),
    reading=Reading.STORE,
    claim=claim,
    find=find,
    open_store=open_store,
)
