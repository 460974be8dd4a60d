"""OpenPipe ART: a model folder's `history.jsonl`, and its trajectories as completions.

Read from the openpipe-art 0.5.18 wheel. A model's folder is
`<base_path>/<project>/models/<name>/` (`.art/…` by default; art/model.py:427–429).
`Model._log_metrics` (art/model.py:632–671) appends one JSON line per `log()` / train
step: the metrics with a split prefix (`train/reward`, `val/reward`) or their section's
(`loss/…`, `data/…`, `time/…`), NaN values left out, plus `training_step`,
`time/wall_clock_sec`, `step` and `recorded_at` (an ISO time, a string). A split's line
holds one split's keys, so a line with a `val/` key is an eval line. Trajectories go to
`trajectories/<split>/{step:04d}.parquet` (art_trajectories.py).

Keys (art/model.py:920–980, art/unsloth/train.py:57–66, art/metrics_taxonomy.py:45–105):
- `train/reward` is the mean trajectory reward; `train/reward_std_dev` the mean of each
  group's own reward std (`calculate_step_std_dev`), the within-group spread: `reward_std`.
- `loss/train`, `loss/entropy`, `loss/kl_policy_ref` (KL to the reference model),
  `loss/grad_norm`, `loss/learning_rate`. `loss/kl_div` is the KL the loss is charged
  with, not necessarily to a reference: its own name.
- `data/step_num_groups_trainable` counts the groups with two or more different rewards
  among `data/step_num_groups_submitted`: 1 − their ratio is the zero-spread share,
  `frac_reward_zero_std`, derived in `flatten`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grpo_tui.sources.formats import art_trajectories as trajectories
from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.layout import (
    BatchFolder,
    CompletionsRef,
    Found,
    Probe,
    Reading,
    Tier,
    entry_is_dir,
    first_record,
    found_file,
    probe,
    scan,
)

NAME = "art"
HISTORY_FILE = "history.jsonl"
MODELS_DIR = "models"
ART_DIR = ".art"
TRAINABLE = "data/step_num_groups_trainable"
SUBMITTED = "data/step_num_groups_submitted"

ART_ALIASES: dict[str, tuple[str, ...]] = {
    "reward": ("train/reward",),
    "reward_std": ("train/reward_std_dev",),
    "loss": ("loss/train",),
    "entropy": ("loss/entropy",),
    "kl": ("loss/kl_policy_ref",),
    "grad_norm": ("loss/grad_norm",),
    "learning_rate": ("loss/learning_rate",),
    "eval_reward": ("val/reward",),
}

#: the train split's trajectories, one parquet file per step
ART_TRAJECTORIES = BatchFolder(
    trajectories.FILE_PATTERN,
    trajectories.convert,
    recognise=trajectories.looks_like_trajectories,
)


def flatten(record: dict[str, Any]) -> dict[str, Any]:
    """The zero-spread share from the trainable and submitted group counts."""
    trainable, submitted = record.get(TRAINABLE), record.get(SUBMITTED)
    if (
        isinstance(trainable, (int, float))
        and isinstance(submitted, (int, float))
        and submitted > 0
        and 0 <= trainable <= submitted
    ):
        record["frac_reward_zero_std"] = 1.0 - trainable / submitted
    return record


def _completions(model_dir: Path) -> CompletionsRef | None:
    folder = model_dir.joinpath(*trajectories.TRAIN_DIR)
    return CompletionsRef(folder, ART_TRAJECTORIES) if probe(folder).is_dir else None


def _found(path: Path, why: str) -> Found:
    return found_file(
        path, NAME, Reading.MERGED_JSONL, Tier.LOG, why, completions=_completions(path.parent)
    )


def _is_history(record: dict[str, Any] | None) -> bool:
    return record is not None and "training_step" in record and "recorded_at" in record


def claim(path: Path, seen: Probe) -> Found | None:
    if path.name == HISTORY_FILE and path.parent.parent.name == MODELS_DIR:
        return _found(path, f"{HISTORY_FILE} of an ART model folder (…/models/{path.parent.name})")
    if path.suffix == ".jsonl" and _is_history(first_record(path)):
        return _found(path, "its lines are ART's history (training_step, recorded_at)")
    return None


def _newest_history(models: Path) -> Path | None:
    entries, _ = scan(models)
    histories = [
        (seen.mtime, path)
        for entry in entries
        if entry_is_dir(entry) and (seen := probe(path := Path(entry.path) / HISTORY_FILE)).is_file
    ]
    return max(histories)[1] if histories else None


def find(directory: Path) -> list[Found]:
    """A model folder's history; from a project folder (`models/` in it) or a folder
    holding `.art/` (hidden: discovery does not look into it), the newest model's."""
    history = directory / HISTORY_FILE
    seen = probe(history)
    if seen.is_file:
        claimed = claim(history, seen)
        return [] if claimed is None else [claimed]
    newest = _newest_history(directory / MODELS_DIR)
    if newest is None and probe(directory / ART_DIR).is_dir:
        entries, _ = scan(directory / ART_DIR)
        projects = [Path(entry.path) / MODELS_DIR for entry in entries if entry_is_dir(entry)]
        found = [(probe(h).mtime, h) for p in projects if (h := _newest_history(p)) is not None]
        newest = max(found)[1] if found else None
    if newest is None:
        return []
    model = newest.parent.name
    return [_found(newest, f"{HISTORY_FILE} of the newest ART model folder {model}")]


ART = FormatAdapter(
    name=NAME,
    title="OpenPipe ART",
    aliases=ART_ALIASES,
    # a step's train-split line, its loss line and its val line, merged into one record
    reading=Reading.MERGED_JSONL,
    eval_prefix="val/",
    eval_needs_all=True,
    end_keys=(),
    summary_keys=(),
    ignored_keys=frozenset({"training_step"}),
    completion_folders=(ART_TRAJECTORIES,),
    flatten=flatten,
    claim=claim,
    find=find,
)
