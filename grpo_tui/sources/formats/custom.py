"""JSON lines a custom trainer writes by hand: found in a run folder by their content.

People who write their own GRPO loop log with a few lines of their own:
`f.write(json.dumps({"step": step, "reward": r, "reward_std": s, ...}) + "\\n")` into
`train_metrics.jsonl`, `metrics.jsonl`, `log.jsonl`. No name is shared, so the content
says it: a `.jsonl` whose first record is flat (no list or object values), has a
step-like key holding a whole number and a reward-like key holding a number. Such a file
is found from its folder (the plain JSON-lines reader, formats/generic.py, only reads a
file given by name) and shown as "JSON lines (custom)", its keys mapped to the canonical
metrics by the names GRPO trainers share plus the usual hand-written variants below;
`inspect` lists the keys mapped and the keys kept under their own names.

It is a guess (Tier.GUESS): any framework's own log in the same folder wins.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.common import GRPO_ALIASES, GRPO_FAMILIES, merged_aliases
from grpo_tui.sources.formats.layout import (
    Found,
    Probe,
    Reading,
    Tier,
    files_named,
    first_record,
    found_file,
)

NAME = "jsonl-custom"
#: keys a hand-written log numbers its steps with (the first present is the step)
STEP_KEYS = ("step", "global_step", "train_step", "iteration", "iter", "update", "batch")
#: a key naming a reward (`reward`, `mean_reward`, `rewards/accuracy`, `score`)
_REWARD_LIKE = re.compile(r"(?:^|[/_.\-])(?:rewards?|score|return)(?:$|[/_.\-])", re.IGNORECASE)

#: the variants hand-written logs use, beside the names TRL made common
CUSTOM_ALIASES: dict[str, tuple[str, ...]] = merged_aliases(
    GRPO_ALIASES,
    {
        "reward": ("reward_mean", "mean_reward", "avg_reward", "reward/mean", "train/reward"),
        "reward_std": ("reward_stddev", "reward/std", "train/reward_std"),
        "frac_reward_zero_std": ("zero_std_frac", "frac_zero_std"),
        "kl": ("kl_div", "kl_mean", "train/kl"),
        "entropy": ("entropy_mean", "train/entropy"),
        "completion_length": ("response_length", "mean_length", "completion_len", "avg_length"),
        "clipped_ratio": ("truncated_ratio", "truncation_rate", "clipped_frac"),
        "loss": ("train/loss",),
        "grad_norm": ("gradient_norm",),
        "learning_rate": ("lr",),
    },
)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def shows_custom(record: dict[str, Any] | None) -> bool:
    """A flat record with a whole-number step-like key and a numeric reward-like key."""
    if record is None or any(isinstance(v, (list, dict)) for v in record.values()):
        return False
    step = next((record[k] for k in STEP_KEYS if k in record), None)
    if not isinstance(step, int) or isinstance(step, bool):
        return False
    return any(_REWARD_LIKE.search(k) and _number(v) for k, v in record.items())


def claim(path: Path, seen: Probe) -> Found | None:
    if path.suffix != ".jsonl" or not shows_custom(first_record(path)):
        return None
    why = "flat JSON records with a step and a reward: a custom trainer's log"
    return found_file(path, NAME, Reading.JSONL, Tier.GUESS, why, args_names=("args.json",))


def find(directory: Path) -> list[Found]:
    named = files_named(directory, lambda name: name.endswith(".jsonl"))
    return [found for path in named if (found := claim(path, Probe())) is not None]


CUSTOM = FormatAdapter(
    name=NAME,
    title="JSON lines (custom)",
    aliases=CUSTOM_ALIASES,
    families=GRPO_FAMILIES,
    int_step_keys=STEP_KEYS,
    claim=claim,
    find=find,
)
