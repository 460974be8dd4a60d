"""EasyR1 (verl fork, file logger since 2025-10-05): `experiment_log.jsonl`, nested.

`trainer.logger` with "file" truncates `<save_checkpoint_path>/experiment_log.jsonl` at
start and appends `json.dumps({"step": N, **unflatten_dict(metrics)})`: the `a/b` keys come
back nested (`{"actor": {"pg_loss": …}, "reward": {"overall": …}}`) and are flattened here
with `/`. Python's json writes NaN as a bare token (the lenient reader takes it).

Semantics (docs/formats.md, "EasyR1"): `reward/<k>` are the reward function's score keys
(`overall` the total, the others its parts, as per-function means); `actor/pg_clipfrac_higher`
is the high-side clip; `actor/pg_clipfrac_lower` is verl's dual-clip bound (kept as it is);
`actor/ppo_kl` is drift from the rollout policy (kept as it is); `actor/entropy_loss` is the
mean −log p of the sampled tokens, an estimate of the entropy. Validation keys (`val/…`,
`val_response_length/…`) make an eval row only when a record holds nothing else.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from grpo_tui.sources.formats.base import CheckpointFolders, FormatAdapter
from grpo_tui.sources.formats.layout import Found, Probe, Reading, Tier, first_record, found_file

NAME = "easyr1"
LOG_FILE = "experiment_log.jsonl"

EASYR1_ALIASES: dict[str, tuple[str, ...]] = {
    "reward": ("reward/overall", "critic/score/mean", "critic/rewards/mean"),
    "clip_ratio_high": ("actor/pg_clipfrac_higher",),
    "kl": ("actor/kl_loss", "actor/kl_penalty"),
    "entropy": ("actor/entropy_loss",),
    "completion_length": ("response_length/mean",),
    "completion_length_min": ("response_length/min",),
    "completion_length_max": ("response_length/max",),
    "loss": ("actor/pg_loss",),
    "grad_norm": ("actor/grad_norm",),
    "learning_rate": ("actor/lr",),
    "eval_reward": ("val/reward_score",),
}


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts → `a/b/c` keys, in order."""
    flat: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}/"))
        else:
            flat[name] = value
    return flat


def is_nested_record(record: dict[str, Any] | None) -> bool:
    """A `step` and at least one nested object: EasyR1's unflattened metrics."""
    return (
        record is not None
        and "step" in record
        and "data" not in record
        and any(isinstance(v, dict) for v in record.values())
    )


def claim(path: Path, seen: Probe) -> Found | None:
    if path.name == LOG_FILE:
        why = f"named {LOG_FILE} (EasyR1's file logger)"
    elif path.suffix == ".jsonl" and is_nested_record(first_record(path)):
        why = "its lines are nested step records (EasyR1's file logger)"
    else:
        return None
    return found_file(path, NAME, Reading.JSONL, Tier.LOG, why)


def find(directory: Path) -> list[Found]:
    log = directory / LOG_FILE
    found = claim(log, Probe())
    return [found] if found is not None and (found.exists or found.problem) else []


EASYR1 = FormatAdapter(
    name=NAME,
    title="EasyR1",
    aliases=EASYR1_ALIASES,
    families=((r"reward/(?!overall$)([^/]+)", r"rewards/\1/mean"),),
    eval_prefix="val",
    eval_needs_all=True,
    end_keys=(),
    summary_keys=(),
    flatten=flatten,
    claim=claim,
    find=find,
    # `<trainer.save_checkpoint_path>/global_step_<N>/` (verl/trainer/ray_trainer.py:474,
    # config.py:87 default `checkpoints/<project>/<experiment>`; read in a fork's copy,
    # CyrilSterling/EasyR1@e31ff54): listed where the run folder or the folder given holds them
    checkpoints=(
        CheckpointFolders(
            re.compile(r"global_step_(\d+)"),
            source="EasyR1 (CyrilSterling/EasyR1 e31ff54) verl/trainer/ray_trainer.py:474",
        ),
    ),
)
