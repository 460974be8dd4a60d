"""TRL (and Unsloth, open-r1): `trainer_state.json` log_history items.

HF Trainer log dicts: an int `step`, no progress strings. Key names are the shared GRPO
vocabulary (TRL 0.14 → 1.16); `policy_loss` (≥ 1.8) is kept under its own name.

Files: TRL writes no metrics log of its own. `trainer_state.json` lands in every
`checkpoint-N/` (and at the top when the script calls `save_state()`, as open-r1 does);
the newest wins. Completions (TRL ≥ 0.28, `log_completions=True`) are one parquet file per
logged step in `<output_dir>/completions/`.

Unsloth patches TRL's trainer and open-r1 drives it unchanged, so both log TRL's keys;
`flavour` names them where the keys show it (docs/formats.md, "TRL, Unsloth, open-r1").
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from grpo_tui.sources.formats import trl_completions as parquet
from grpo_tui.sources.formats.base import CheckpointFolders, FormatAdapter
from grpo_tui.sources.formats.common import GRPO_ALIASES, GRPO_FAMILIES, merged_aliases
from grpo_tui.sources.formats.layout import (
    BatchFolder,
    CompletionsRef,
    Found,
    Probe,
    Reading,
    Tier,
    found_file,
    probe,
    read_head,
    scan,
)

NAME = "trl"
TRAINER_STATE_FILE = "trainer_state.json"
CHECKPOINT_PATTERN = re.compile(r"^checkpoint-(\d+)$")
#: what tells a trainer_state.json under another name: HF writes its keys sorted, so
#: `log_history` comes after a few short fields, near the start
_LOG_HISTORY = b'"log_history"'
_HEAD_BYTES = 1 << 16
#: reward functions only open-r1's recipes define (`accuracy_reward` and `format_reward`
#: are TRL's own examples too, so they say nothing)
OPEN_R1_REWARDS = frozenset(
    {
        "tag_count_reward",
        "reasoning_steps_reward",
        "len_reward",
        "cosine_scaled_reward",
        "repetition_penalty_reward",
        "binary_code_reward",
        "ioi_code_reward",
        "cf_code_reward",
        "code_format_reward",
        "soft_overlong_punishment_reward",
    }
)


#: TRL's async trainer's off-policy keys (docs/health.md, "Off-policy drift")
TRL_OFFPOLICY_ALIASES: dict[str, tuple[str, ...]] = {
    # (the sampling statistics of GRPOTrainer are the shared vocabulary's, common.py) the
    # async trainer (trl/experimental/async_grpo/async_grpo_trainer.py:366–387): the
    # trainer's model version minus the one that generated each sample it trains on
    # (window mean, max), and the samples dropped as staler than max_staleness (a count
    # over the logging window: a `total` word is summed, :98–100)
    "offpolicy/staleness_mean": ("sample/staleness_mean",),
    "offpolicy/staleness_max": ("sample/staleness_max",),
    "offpolicy/stale_dropped": ("sample/dropped_stale_total",),
}

#: TRL's keys: the shared vocabulary, and `cispo_clip_ratio`, which TRL (and Unsloth) log
#: instead of `clip_ratio/*` when `loss_type="cispo"` (trl/trainer/grpo_trainer.py:3284–3286
#: in the 1.16.0 wheel): the share of tokens whose importance weight was clipped at
#: `epsilon_high` with a positive advantage, the one side CISPO clips
TRL_ALIASES = merged_aliases(
    GRPO_ALIASES, {"clip_ratio": ("cispo_clip_ratio",)}, TRL_OFFPOLICY_ALIASES
)


def flavour(keys: Collection[str]) -> str | None:
    """Unsloth logs the legacy `completion_length` beside TRL's `completions/mean_length`
    (its patched compute_loss adds it); open-r1 shows by its reward functions' names."""
    if "completion_length" in keys and "completions/mean_length" in keys:
        return "Unsloth"
    open_r1 = any(k.startswith("rewards/") and k.split("/")[1] in OPEN_R1_REWARDS for k in keys)
    return "open-r1" if open_r1 else None


def log_history(document: object) -> list[object] | None:
    """trainer_state.json's `log_history` list (None when the document has none)."""
    history = document.get("log_history") if isinstance(document, dict) else None
    return history if isinstance(history, list) else None


def newest_trainer_state(directory: Path) -> Path | None:
    """`trainer_state.json` of the highest-numbered `checkpoint-N/`, or the top one when
    it is at least as new: `trainer.save_state()` writes the top one after training, and
    only it holds the history's last item (the `train_runtime` line that says the run
    ended, logged after the last checkpoint was saved). An older top one is a previous
    run's, left behind."""
    entries, _ = scan(directory)
    checkpoints = [
        (int(match.group(1)), Path(entry.path) / TRAINER_STATE_FILE)
        for entry in entries
        if (match := CHECKPOINT_PATTERN.match(entry.name))
    ]
    # highest first; a stable sort keeps the listing's order among equal numbers
    checkpoints.sort(key=lambda checkpoint: checkpoint[0], reverse=True)
    best = next(((path, seen) for _, path in checkpoints if (seen := probe(path)).is_file), None)
    top = directory / TRAINER_STATE_FILE
    top_seen = probe(top)
    if top_seen.is_file and (best is None or top_seen.mtime >= best[1].mtime):
        return top
    return None if best is None else best[0]


def _state(path: Path, why: str) -> Found:
    holder = path.parent
    run_dir = holder.parent if CHECKPOINT_PATTERN.match(holder.name) else holder
    return found_file(
        path,
        NAME,
        Reading.DOCUMENT,
        Tier.STORE,
        why,
        run_dir=run_dir,
        completions=trl_completions(run_dir),
        args_names=("args.json",),
        args_dirs=(run_dir, holder),
    )


def claim(path: Path, seen: Probe) -> Found | None:
    if path.parent.name == parquet.COMPLETIONS_DIR and parquet.FILE_PATTERN.fullmatch(path.name):
        # a completions file of a TRL run: follow the run it belongs to
        states = find(path.parent.parent)
        return states[0] if states else None
    if path.suffix != ".json":
        return None
    if path.name == TRAINER_STATE_FILE:
        return _state(path, f"named {TRAINER_STATE_FILE} (the HF Trainer's log_history)")
    if _LOG_HISTORY not in read_head(path, _HEAD_BYTES):
        return None  # another document (NeMo-RL's metrics.json, a config): not TRL's
    return _state(path, "a .json file holding a log_history: read as a trainer_state.json")


def find(directory: Path) -> list[Found]:
    state = newest_trainer_state(directory)
    if state is None:
        return []
    where = "the top" if state.parent == directory else state.parent.name
    return [_state(state, f"{TRAINER_STATE_FILE} in {where} (the newest)")]


#: TRL ≥ 0.28's `completions/completions_NNNNN.parquet`, one file per logged step
#: (an eval `log()` at a train step rewrites that step's file, docs/formats.md, "TRL, Unsloth, open-r1")
TRL_COMPLETIONS = BatchFolder(parquet.FILE_PATTERN, parquet.convert, eval_rewrites_step=True)


def trl_completions(run_dir: Path) -> CompletionsRef | None:
    """The run's completions folder, once TRL made it (`log_completions=True`)."""
    folder = run_dir / parquet.COMPLETIONS_DIR
    return CompletionsRef(folder, TRL_COMPLETIONS) if probe(folder).is_dir else None


#: the HF Trainer's checkpoints, `<output_dir>/checkpoint-<global_step>` (transformers 5.25.0
#: wheel: trainer.py:3414 `f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"`,
#: trainer_utils.py:266 `PREFIX_CHECKPOINT_DIR = "checkpoint"`); TRL, Unsloth and open-r1
#: save through it
HF_CHECKPOINTS = CheckpointFolders(
    CHECKPOINT_PATTERN, source="transformers 5.25.0 trainer.py:3414, trainer_utils.py:266"
)


TRL = FormatAdapter(
    name=NAME,
    title="TRL",
    aliases=TRL_ALIASES,
    families=GRPO_FAMILIES,
    ignored_keys=frozenset({"total_flos"}),
    version_hints=(
        ("completion_length", "TRL ≤ 0.16 (completion_length)"),
        ("frac_reward_zero_std", "TRL ≥ 0.18 (frac_reward_zero_std)"),
        ("entropy", "TRL ≥ 0.20 (entropy)"),
        ("step_time", "TRL ≥ 0.26 (step_time)"),
        ("policy_loss", "TRL ≥ 1.8 (policy_loss)"),
    ),
    reading=Reading.DOCUMENT,
    document_records=log_history,
    completion_folders=(TRL_COMPLETIONS,),
    claim=claim,
    find=find,
    flavour=flavour,
    checkpoints=(HF_CHECKPOINTS,),
)
