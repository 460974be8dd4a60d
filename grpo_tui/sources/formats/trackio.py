"""trackio (TRL's `report_to="trackio"`, local-first): one SQLite database per project.

Where: `$TRACKIO_DIR`, else `$HF_HOME/trackio` (`~/.cache/huggingface/trackio`), one
`<project>.db` each; PATH is that folder (its newest project) or one database. A project
holds many runs: the newest is followed (a newer one starting is a new run), `--run NAME`
picks one. On network filesystems trackio writes JSONL fragments under `inbox/` instead,
and the reader (sources/trackio.py) reads them too. Keys are TRL's (`train/` and `eval/`
prefixes removed by the reader), so the vocabulary and the Unsloth/open-r1 names are TRL's.
"""

from __future__ import annotations

from pathlib import Path

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.common import GRPO_ALIASES, GRPO_FAMILIES
from grpo_tui.sources.formats.layout import (
    Found,
    Probe,
    Reading,
    Tier,
    files_named,
    found_file,
    read_head,
)
from grpo_tui.sources.formats.trl import flavour

NAME = "trackio"
DB_SUFFIX = ".db"
#: trackio reserves this prefix for artifact registries, stored as databases beside projects
REGISTRY_PREFIX = "registry-"
#: the first bytes of every SQLite database
_SQLITE_HEADER = b"SQLite format 3\x00"


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
    aliases=GRPO_ALIASES,
    families=GRPO_FAMILIES,
    ignored_keys=frozenset({"total_flos", "global_step"}),
    version_hints=(
        ("frac_reward_zero_std", "TRL ≥ 0.18 (frac_reward_zero_std)"),
        ("entropy", "TRL ≥ 0.20 (entropy)"),
    ),
    reading=Reading.TRACKIO,
    claim=claim,
    find=find,
    flavour=flavour,
)
