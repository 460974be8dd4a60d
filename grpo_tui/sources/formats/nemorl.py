"""NeMo-RL (NVIDIA-NeMo/RL): its metric vocabulary, `metrics.json`, and its rollout dumps.

Read from NVIDIA-NeMo/RL at 7ea279abfbeb698b092856d0dab61e7cf39bc909 (2026-08-22).

Where: `Logger` (nemo_rl/utils/logger.py:964–1030) writes under `logger.log_dir`, which
`examples/run_grpo.py` makes `<log_dir>/exp_NNN` (`get_next_experiment_dir`):
`tensorboard/` (event files; read by the TensorBoard adapter, which holds this table),
`wandb/`, and after every step `train_data_step{N}.jsonl` (nemorl_rollouts.py: the
completions). Tags are `<prefix>/<key>` (`TensorboardLogger.log_metrics`, :158–187):
`train/…`, `validation/…`, `timing/train/…`, `performance/…`, `ray/…`. NeMo-RL's own tests
merge the event files into `metrics.json` (tests/json_dump_tb_logs.py
`merge_tb_logs_to_json`): one JSON object `{tag: {"<step>": value}}`, tags sorted, written
whole with `json.dump(…, indent=2)`. That document is read here (Reading.DOCUMENT): its
tags become one record per step, `train/` removed as the TensorBoard reader removes it.

Keys (grpo.py:3431–3500, loss/loss_functions.py:337–350 and 771–787,
experience/rollouts.py:1064–1087):
- `reward` (the mean total reward), `loss`, `grad_norm`: the shared names.
- `approx_entropy` is the entropy; `lr` the learning rate.
- `kl_penalty` is the KL to the reference policy: the loss logs the KL term divided by its
  coefficient (`kl.item() / reference_policy_kl_penalty`, :777), so it is the KL itself,
  not β·KL; 0 when there is no KL term (β 0, or `use_kl_in_reward`).
- `truncation_rate` is the share of samples cut (at the generation or the sequence cap):
  the truncation share; `mean_gen_tokens_per_sample` the completion length in generated
  tokens (no prompt), `max_gen_tokens_per_sample` its maximum.
- `baseline_reward/pct_0`, `pct_1`, `pct_mixed` (grpo.py:2430–2445): PERCENTAGES of the
  samples whose baseline is 0 / 1 / other. With binary rewards a baseline of 0 (1) means
  the rest of the group all failed (passed), so (pct_0 + pct_1) / 100 is the zero-spread
  share, which `flatten` derives under ZERO_SPREAD_KEY. Under the leave-one-out baseline
  (`use_leave_one_out_baseline`, the default, algorithms/utils.py:104–190) a group with
  exactly one success (or failure) adds its one odd sample: at most 1/n too high for
  groups of n; with rewards outside {0, 1} the percentages say nothing of the spread. The
  three keys keep their own names too.
- `token_mult_prob_error` (NeMo-RL flags it above 1.05, grpo.py:3661) and `gen_kl_error`
  measure the inference engine against the trainer (off-policy drift: mapped to
  `offpolicy/…` below), `probs_ratio*` and `sampling_importance_ratio` the importance
  ratio (their own names): never KL to the reference.
- `validation/accuracy` is the mean reward of the validation rollouts (grpo.py:3944–3981):
  the eval reward; `validation/avg_length` the eval length; other `validation/<k>` become
  `eval_<k>`.
- `ray/…` are the GPU monitor's (`RayGpuMonitorLogger`, logger.py:566–583, 768–788),
  logged at seconds since start, not at a step: left out of `metrics.json`'s records.

Settings: `setup` logs the whole config (`logger.log_hyperparams(master_config.model_dump())`,
grpo.py:545) before training. TensorBoard gets it flattened with dots (`flatten_dict`,
logger.py:1324–1373) through torch's `add_hparams` (logger.py:196–203), which writes the
HParams session-start record into a subfolder `tensorboard/<time.time()>/`; W&B gets it
nested. `nemorl_settings` reads either (names from `GRPOConfig`, grpo.py:241–300,
`ClippedPGLossConfig`, loss/loss_functions.py:128–141, examples/configs/grpo_math_1B.yaml):
- `grpo.max_num_steps` → max_steps. The run stops at the smaller of it and
  `max_num_epochs` × the batches in the data set (grpo.py:2720–2801, 1124–1128); the data
  set's size is in no config, and the default 1 000 000 (grpo.py:245, the example configs)
  says the epochs bind: then max_steps stays unknown.
- `grpo.num_generations_per_prompt` → num_generations; `policy.model_name` → model.
- `policy.generation.max_new_tokens` and `policy.max_total_sequence_length` (prompt
  included; vLLM's `max_model_len` is set to it): the smaller is the most a completion can
  be, max_completion_length.
- `loss_fn.reference_policy_kl_penalty` → beta (the loss's KL coefficient, or the
  reward's with `use_kl_in_reward`, loss_functions.py:240–242); `loss_fn.ratio_clip_min` /
  `ratio_clip_max` → epsilon / epsilon_high; `policy.generation.temperature`.
- the learning rate: `policy.megatron_cfg.optimizer.lr` with Megatron
  (`policy.megatron_cfg.enabled`), else `policy.optimizer.kwargs.lr`.
- updates per step (num_iterations): the step's samples (`num_prompts_per_step` ×
  `num_generations_per_prompt`) over `policy.train_global_batch_size`, one optimiser step
  per global batch (policy/workers/dtensor_policy_worker.py:624).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from grpo_tui.sources.formats import nemorl_rollouts as rollouts
from grpo_tui.sources.formats.base import CheckpointFolders, FormatAdapter
from grpo_tui.sources.formats.common import GRPO_ALIASES, GRPO_FAMILIES, merged_aliases
from grpo_tui.sources.formats.layout import (
    BatchFolder,
    CompletionsRef,
    Found,
    Probe,
    Reading,
    Tier,
    entry_is_dir,
    found_file,
    probe,
    read_head,
    scan,
)

NAME = "nemo-rl"
METRICS_FILE = "metrics.json"
#: the key `flatten` adds: (pct_0 + pct_1) / 100, the zero-spread share (see above)
ZERO_SPREAD_KEY = "baseline_reward/(pct_0+pct_1)/100"
_PCT_0, _PCT_1 = "baseline_reward/pct_0", "baseline_reward/pct_1"
#: tag prefixes: the train one is removed (as TensorBoard's reader does), the GPU
#: monitor's are time-keyed (seconds since start), not steps
TRAIN_PREFIX = "train/"
TIME_KEYED_PREFIX = "ray/"

NEMORL_ALIASES: dict[str, tuple[str, ...]] = {
    "entropy": ("approx_entropy",),
    "kl": ("kl_penalty",),
    "clipped_ratio": ("truncation_rate",),
    "completion_length": ("mean_gen_tokens_per_sample",),
    "completion_length_max": ("max_gen_tokens_per_sample",),
    "learning_rate": ("lr",),
    "frac_reward_zero_std": (ZERO_SPREAD_KEY,),
    # the generation engine against the trainer (docs/health.md, "Off-policy drift"), at 7ea279a:
    # mean over tokens of exp(|logp_gen − logp_train|) (nemo_rl/algorithms/loss/
    # loss_functions.py:404–411; NeMo-RL itself plots a sample above 1.05, grpo.py:3661), and
    # KL(P_gen ‖ P_train) with the configured estimator, k3 by default (:413–427); async GRPO's
    # mean age of the trajectories trained on, in steps (grpo.py:4624, 5293)
    "offpolicy/token_prob_error": ("token_mult_prob_error",),
    "offpolicy/mismatch_kl": ("gen_kl_error",),
    "offpolicy/staleness_mean": ("avg_trajectory_age",),
}

NEMORL_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"validation/accuracy", "eval_reward"),
    (r"validation/avg_length", "eval_completion_length"),
    (r"validation/(.+)", r"eval_\1"),
)


def flatten(record: dict[str, Any]) -> dict[str, Any]:
    """The zero-spread share from the baseline percentages, beside them (a record without
    both is returned as it is)."""
    zero, one = record.get(_PCT_0), record.get(_PCT_1)
    if isinstance(zero, (int, float)) and isinstance(one, (int, float)):
        record[ZERO_SPREAD_KEY] = (float(zero) + float(one)) / 100.0
    return record


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- settings ------------------------------------------------------------------------------

#: `grpo.max_num_steps`' default: no step limit of its own (the epochs bind)
UNLIMITED_STEPS = 1_000_000
#: args.json's name → NeMo-RL's dotted config name (taken as they are)
_SETTINGS = {
    "num_generations": "grpo.num_generations_per_prompt",
    "model": "policy.model_name",
    "beta": "loss_fn.reference_policy_kl_penalty",
    "epsilon": "loss_fn.ratio_clip_min",
    "epsilon_high": "loss_fn.ratio_clip_max",
    "temperature": "policy.generation.temperature",
}


def _setting(config: dict[str, Any], dotted: str) -> Any:
    """A dotted name's value in a flat config (TensorBoard's hparams) or a nested one (W&B)."""
    if dotted in config:
        return config[dotted]
    value: Any = config
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _whole(value: Any) -> int | None:
    """A positive whole number (hparams store numbers as floats), else None."""
    if not _is_number(value) or not math.isfinite(value) or value != int(value) or value <= 0:
        return None
    return int(value)


def nemorl_settings(config: dict[str, Any]) -> dict[str, Any]:
    """NeMo-RL's config (TensorBoard's flat hparams, or W&B's nested config) under
    args.json's names (see the module docstring)."""
    settings = {
        name: v for name, key in _SETTINGS.items() if (v := _setting(config, key)) is not None
    }
    steps = _whole(_setting(config, "grpo.max_num_steps"))
    if steps is not None and steps != UNLIMITED_STEPS:
        settings["max_steps"] = steps
    caps = [
        cap
        for key in ("policy.generation.max_new_tokens", "policy.max_total_sequence_length")
        if (cap := _whole(_setting(config, key))) is not None
    ]
    if caps:
        settings["max_completion_length"] = min(caps)
    megatron = _setting(config, "policy.megatron_cfg.enabled") is True
    lr = _setting(
        config, "policy.megatron_cfg.optimizer.lr" if megatron else "policy.optimizer.kwargs.lr"
    )
    if lr is not None:
        settings["learning_rate"] = lr
    prompts = _whole(_setting(config, "grpo.num_prompts_per_step"))
    generations = _whole(settings.get("num_generations"))
    batch = _whole(_setting(config, "policy.train_global_batch_size"))
    if prompts and generations and batch and prompts * generations >= batch:
        settings["num_iterations"] = prompts * generations // batch
    return settings


# -- metrics.json ------------------------------------------------------------------------

#: `json.dump(indent=2)` of `{tag: {"<step>": value}}`: an object whose first value is an
#: object keyed by a step number
_DOCUMENT_START = re.compile(rb'\A\s*\{\s*"[^"\n]{1,512}"\s*:\s*\{\s*"\d+"\s*:')


def is_metrics_document(path: Path) -> bool:
    """The file's start is a NeMo-RL metrics document (not a trainer_state.json)."""
    return _DOCUMENT_START.match(read_head(path, 4096)) is not None


def document_records(document: object) -> list[Any] | None:
    """`{tag: {"<step>": value}}` → one record per step, in step order (tags under
    `train/` without the prefix, `ray/` left out); None when it is no such document."""
    if not isinstance(document, dict) or not document:
        return None
    steps: dict[int, dict[str, Any]] = {}
    for tag, series in document.items():
        if not isinstance(series, dict):
            return None
        if not isinstance(tag, str) or tag.startswith(TIME_KEYED_PREFIX):
            continue
        key = tag.removeprefix(TRAIN_PREFIX)
        for step_text, value in series.items():
            if not (isinstance(step_text, str) and step_text.isdigit()):
                continue
            if _is_number(value):
                steps.setdefault(int(step_text), {})[key] = value
    return [{"step": step, **steps[step]} for step in sorted(steps)]


# -- the rollout dumps ---------------------------------------------------------------------

NEMORL_ROLLOUTS = BatchFolder(
    rollouts.FILE_PATTERN,
    rollouts.convert,
    settle_s=rollouts.SETTLE_S,
    recognise=rollouts.looks_like_dump,
)
#: folders looked into, per level, for the dumps beside a metrics.json
_FOLDERS_LOOKED_AT = 32


def rollouts_near(directory: Path, depth: int = 2) -> CompletionsRef | None:
    """The dumps in `directory`, else in the newest folder below holding them, `depth`
    levels down at most (`metrics.json` beside `logs/exp_NNN/`)."""
    if NEMORL_ROLLOUTS.holds(directory):
        return CompletionsRef(directory, NEMORL_ROLLOUTS)
    if depth <= 0:
        return None
    entries, _ = scan(directory)
    folders = [Path(e.path) for e in entries if entry_is_dir(e) and not e.name.startswith(".")]
    folders.sort(key=lambda folder: probe(folder).mtime, reverse=True)
    for folder in folders[:_FOLDERS_LOOKED_AT]:
        found = rollouts_near(folder, depth - 1)
        if found is not None:
            return found
    return None


def event_files_rollouts(holder: Path) -> CompletionsRef | None:
    """The dumps of the run whose event files are in `holder` (`<log_dir>/tensorboard/`:
    the dumps are in `<log_dir>`)."""
    if NEMORL_ROLLOUTS.holds(holder):
        return CompletionsRef(holder, NEMORL_ROLLOUTS)
    if NEMORL_ROLLOUTS.holds(holder.parent):
        return CompletionsRef(holder.parent, NEMORL_ROLLOUTS)
    return None


def _found(path: Path, why: str) -> Found:
    return found_file(
        path,
        NAME,
        Reading.DOCUMENT,
        Tier.STORE,
        why,
        completions=rollouts_near(path.parent),
    )


def claim(path: Path, seen: Probe) -> Found | None:
    if path.suffix != ".json" or not is_metrics_document(path):
        return None
    return _found(path, 'its content is NeMo-RL\'s metrics document ({tag: {"<step>": value}})')


def find(directory: Path) -> list[Found]:
    path = directory / METRICS_FILE
    if not probe(path).is_file:
        return []
    found = claim(path, probe(path))
    return [found] if found is not None else []


NEMORL = FormatAdapter(
    name=NAME,
    title="NeMo-RL",
    aliases=merged_aliases(GRPO_ALIASES, NEMORL_ALIASES),
    families=GRPO_FAMILIES + NEMORL_FAMILIES,
    reading=Reading.DOCUMENT,
    document_records=document_records,
    end_keys=(),
    summary_keys=(),
    eval_prefix="validation/",
    eval_needs_all=True,
    completion_folders=(NEMORL_ROLLOUTS,),
    flatten=flatten,
    settings=nemorl_settings,
    claim=claim,
    find=find,
    # `<checkpointing.checkpoint_dir>/step_<N>/` (nemo_rl/utils/checkpoint.py:298 at
    # NVIDIA-NeMo/RL 7ea279a; `tmp_step_<N>` while it is written, not a checkpoint yet);
    # the example configs put it at `results/<algorithm>` apart from the logs: listed where
    # the run folder or the folder given holds them
    checkpoints=(
        CheckpointFolders(
            re.compile(r"step_(\d+)"),
            source="NVIDIA-NeMo/RL 7ea279a nemo_rl/utils/checkpoint.py:298",
        ),
    ),
)
