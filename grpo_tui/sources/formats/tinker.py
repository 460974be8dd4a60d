"""Tinker (thinking-machines-lab/tinker-cookbook): a run's `metrics.jsonl` and `logs.log`.

Read from tinker-cookbook at 9dfcc3a (2026-08). `ml_log.setup_logging(log_dir)` gives
every run folder `config.json`, `metrics.jsonl` (`JsonLogger.log_metrics` →
`TrainingRunStore.write_metrics`: `{"step": N, **metrics}` per step, stores/
training_store.py:264–272) and `logs.log` (the Python logging module's file,
`%(name)s:%(lineno)d [%(levelname)s] %(message)s`, ml_log.py:669–670; it holds no
metric, only "Wrote metrics to …/metrics.jsonl" and, at the end, rl/train.py:2052's
"Training completed successfully"). SkyRL's Tinker-compatible backend runs the same
cookbook scripts, so its runs leave the same folder.

prime-rl's file monitor writes a `metrics.jsonl` whose lines also start `{"step":` with
`progress/` and `optim/` keys, so a Tinker file is claimed by what only the cookbook logs
(`progress/done_frac`, `progress/batch`, `env/all/`), and this adapter is asked before
prime-rl's. `logs.log` given as PATH is read through the `metrics.jsonl` beside it.

Keys (rl/train.py:1738–1742, rl/metric_util.py:105–125, 200–215, rl/metrics.py:64–66, 189):
- `env/all/reward/total` is the mean total reward of the batch's trajectories: the reward
  (a recipe's own loop, recipes/rl_loop.py:257, logs `reward/total`).
- `progress/done_frac` is (batch + 1) / batches: the run's progress, `done_frac`; 1 at the
  last batch.
- `env/all/by_group/frac_mixed` is the share of groups whose rewards differ, so
  1 − it is the zero-spread share (`frac_reward_zero_std`), derived in `flatten`.
- `env/all/ac_tokens_per_turn` is the sampled tokens per turn: the completion length of a
  single-turn task (per turn, not per episode, for a multi-turn one).
- `optim/entropy` is the sampler's entropy; `kl_policy_base` the mean log-probability gap
  to the base model (the KL-penalty's estimate, rl/metrics.py:189): `kl`.
  `optim/kl_sample_train_v1|v2` is the gap between the sampler and the trainer (off-policy
  drift): its own name.
- `test/env/all/reward/total` (an evaluator's `name/` prefix, `test` by default) is the
  eval reward, logged on the train step's line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.layout import (
    Found,
    Probe,
    Reading,
    Tier,
    first_line,
    found_file,
    probe,
)

NAME = "tinker"
METRICS_FILE = "metrics.jsonl"
LOG_FILE = "logs.log"
CONFIG_FILE = "config.json"
FRAC_MIXED = "env/all/by_group/frac_mixed"

TINKER_ALIASES: dict[str, tuple[str, ...]] = {
    "reward": ("env/all/reward/total", "reward/total"),
    "done_frac": ("progress/done_frac",),
    "learning_rate": ("optim/lr",),
    "entropy": ("optim/entropy",),
    "kl": ("kl_policy_base",),
    "completion_length": ("env/all/ac_tokens_per_turn",),
}
TINKER_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"test/env/all/reward/total", "eval_reward"),
    (r"[^/]+/env/all/reward/total", "eval_reward"),
)
#: what a first line of the cookbook's carries and prime-rl's does not
_EVIDENCE = (b'"progress/done_frac"', b'"progress/batch"', b'"env/all/')


def flatten(record: dict[str, Any]) -> dict[str, Any]:
    """The zero-spread share from the share of groups with a spread."""
    mixed = record.get(FRAC_MIXED)
    if isinstance(mixed, (int, float)) and not isinstance(mixed, bool) and 0 <= mixed <= 1:
        record["frac_reward_zero_std"] = 1.0 - mixed
    return record


def tinker_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The cookbook's `config.json` (rl/train.py `Config`) under args.json's names."""
    builder = config.get("dataset_builder")
    group_size = builder.get("group_size") if isinstance(builder, dict) else None
    settings = {
        "learning_rate": config.get("learning_rate"),
        "max_completion_length": config.get("max_tokens"),
        "model": config.get("model_name"),
        "temperature": config.get("temperature"),
        "num_generations": group_size,
        # the KL penalty's coefficient (rl/train.py `Config.kl_penalty_coef`)
        "beta": config.get("kl_penalty_coef"),
    }
    return {name: value for name, value in settings.items() if value is not None}


def _shows_tinker(path: Path) -> bool:
    line = first_line(path)
    return line.startswith(b'{"step":') and any(mark in line for mark in _EVIDENCE)


def _found(path: Path, why: str) -> Found:
    return found_file(path, NAME, Reading.JSONL, Tier.LOG, why, args_names=(CONFIG_FILE,))


def claim(path: Path, seen: Probe) -> Found | None:
    if path.name == LOG_FILE:
        beside = path.parent / METRICS_FILE
        if probe(beside).is_file and _shows_tinker(beside):
            return _found(beside, f"{LOG_FILE} of a Tinker run: its metrics are in {METRICS_FILE}")
        return None
    if path.suffix != ".jsonl" or not _shows_tinker(path):
        return None
    return _found(path, "its lines carry tinker-cookbook's keys (progress/done_frac, env/all/)")


def find(directory: Path) -> list[Found]:
    metrics = directory / METRICS_FILE
    seen = probe(metrics)
    if not seen.is_file:
        return []
    claimed = claim(metrics, seen)
    return [] if claimed is None else [claimed]


TINKER = FormatAdapter(
    name=NAME,
    title="Tinker (tinker-cookbook)",
    aliases=TINKER_ALIASES,
    families=TINKER_FAMILIES,
    eval_prefix="test/",
    eval_needs_all=True,
    end_keys=(),
    summary_keys=(),
    ignored_keys=frozenset({"progress/batch"}),
    settings=tinker_settings,
    flatten=flatten,
    claim=claim,
    find=find,
)
