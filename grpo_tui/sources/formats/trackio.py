"""trackio (TRL's `report_to="trackio"`, local-first): one SQLite database per project.

Where: `$TRACKIO_DIR`, else `$HF_HOME/trackio` (`~/.cache/huggingface/trackio`), one
`<project>.db` each; PATH is that folder (its newest project) or one database. A project
holds many runs: the newest is followed (a newer one starting is a new run), `--run NAME`
picks one. On network filesystems trackio writes JSONL fragments under `inbox/` instead,
and the reader (sources/trackio.py) reads them too. Keys are TRL's (`train/` and `eval/`
prefixes removed by the reader), so the vocabulary and the Unsloth/open-r1 names are TRL's.

verl logs to trackio too (`trainer.logger=["trackio"]`): its tracking backend calls
`trackio.log(data, step=step)` with the same flat keys its file logger writes
(`critic/score/mean`, `actor/*`, `response_length/*`, `val-core/…`; verl/utils/tracking.py
:87–93 and :406–410 at verl-project/verl 1dda039), and its validation generations as
trackio traces under `val/generations` (:645–671; not numbers, so not metrics). Which
trainer wrote a project is not recorded, and the two vocabularies do not clash, so verl's
table and families are merged in, as the TensorBoard adapter does: a verl run in trackio
has its reward, lengths, entropy and KL (verl's traps keep their meaning: verl.py).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.common import GRPO_FAMILIES, merged_aliases
from grpo_tui.sources.formats.layout import (
    Found,
    Probe,
    Reading,
    Tier,
    files_named,
    found_file,
    read_head,
)
from grpo_tui.sources.formats.trl import TRL_ALIASES
from grpo_tui.sources.formats.trl import flavour as trl_flavour
from grpo_tui.sources.formats.verl import VERL_ALIASES, VERL_FAMILIES

NAME = "trackio"
DB_SUFFIX = ".db"
#: trackio reserves this prefix for artifact registries, stored as databases beside projects
REGISTRY_PREFIX = "registry-"
#: the first bytes of every SQLite database
_SQLITE_HEADER = b"SQLite format 3\x00"


#: key prefixes only verl logs (its file logger's vocabulary)
_VERL_PREFIXES = ("critic/", "actor/", "response_length/")


def flavour(keys: Collection[str]) -> str | None:
    """The trainer the keys show: verl by its key prefixes, else TRL's flavours."""
    if any(key.startswith(_VERL_PREFIXES) for key in keys):
        return "verl"
    return trl_flavour(keys)


def _is_database(path: Path) -> bool:
    return read_head(path, len(_SQLITE_HEADER)) == _SQLITE_HEADER


def claim(path: Path, seen: Probe) -> Found | None:
    if path.suffix != DB_SUFFIX or not _is_database(path):
        return None
    return found_file(
        path, NAME, Reading.TRACKIO, Tier.STORE, "a SQLite database: trackio's project store"
    )


def find(directory: Path) -> list[Found]:
    """The project databases of a trackio folder (the newest wins, as any store's)."""
    named = files_named(
        directory, lambda name: name.endswith(DB_SUFFIX) and not name.startswith(REGISTRY_PREFIX)
    )
    return [
        found_file(path, NAME, Reading.TRACKIO, Tier.STORE, f"trackio project {path.stem}")
        for path in named
        if _is_database(path)
    ]


TRACKIO = FormatAdapter(
    name=NAME,
    title="trackio",
    aliases=merged_aliases(TRL_ALIASES, VERL_ALIASES),
    families=GRPO_FAMILIES + VERL_FAMILIES,
    ignored_keys=frozenset({"total_flos", "global_step", "training/global_step"}),
    version_hints=(
        ("frac_reward_zero_std", "TRL ≥ 0.18 (frac_reward_zero_std)"),
        ("entropy", "TRL ≥ 0.20 (entropy)"),
    ),
    reading=Reading.TRACKIO,
    claim=claim,
    find=find,
    flavour=flavour,
)
