"""JSON lines no framework claims: read with the common GRPO key names, saying so.

A `.jsonl` whose lines show no framework's evidence (ms-swift's progress key, verl's
`{"step", "data"}`, EasyR1's layout), or any other text file nothing recognised, is read
as JSON lines with the key names GRPO trainers share (`reward`, `kl`, `completion_length`,
…), so its lines are counted and its bad lines shown. The framework it is shown as says
that no framework was recognised; `inspect` lists which keys were mapped to which metric.
A binary file (a parquet table, a database) is not read: it has no lines.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.common import GRPO_ALIASES, GRPO_FAMILIES
from grpo_tui.sources.formats.layout import Found, Probe, Reading, Tier, found_file, read_head

NAME = "jsonl"


def claim(path: Path, seen: Probe) -> Found | None:
    if path.suffix == ".jsonl":
        why = "a .jsonl file no framework claims: read as JSON lines with the common GRPO keys"
        return found_file(path, NAME, Reading.JSONL, Tier.GUESS, why)
    if not seen.is_file:
        return None
    head = read_head(path, 4096)
    if head.startswith(b"PAR1") or b"\x00" in head:
        found = found_file(path, NAME, Reading.JSONL, Tier.LAST, "a binary file")
        return replace(found, exists=False, problem=f"not a metrics log (a binary file): {path}")
    # nothing else recognised it: read as JSON lines, so its lines are counted and shown
    return found_file(
        path, NAME, Reading.JSONL, Tier.LAST, "no framework recognised it: read as JSON lines"
    )


GENERIC = FormatAdapter(
    name=NAME,
    title="JSON lines (no framework recognised)",
    aliases=GRPO_ALIASES,
    families=GRPO_FAMILIES,
    fraction_step_keys=("global_step/max_steps",),
    int_step_keys=("step", "global_step"),
    claim=claim,
)
