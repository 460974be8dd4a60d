"""The GRPO key vocabulary TRL and ms-swift share (ms-swift builds on TRL's trainer).

canonical metric → framework keys, highest priority first. Adapters start from this and
add their own keys; everything not listed keeps its own name, so nothing logged is hidden.
"""

from __future__ import annotations

GRPO_ALIASES: dict[str, tuple[str, ...]] = {
    "reward": ("reward",),
    "reward_std": ("reward_std",),
    "frac_reward_zero_std": ("frac_reward_zero_std",),
    # region = low ∪ high; the single key is 3.2–3.3 / TRL 0.16 / the Liger path
    "clip_ratio": ("clip_ratio/region_mean", "clip_ratio"),
    "clip_ratio_low": ("clip_ratio/low_mean",),
    "clip_ratio_high": ("clip_ratio/high_mean",),
    "kl": ("kl",),
    "entropy": ("entropy", "entropy/mean"),
    "completion_length": ("completions/mean_length", "completion_length"),
    "completion_length_min": ("completions/min_length",),
    "completion_length_max": ("completions/max_length",),
    # 3.2's response_clip_ratio compared length > max: the same idea, effectively 0
    "clipped_ratio": ("completions/clipped_ratio", "response_clip_ratio"),
    # miles (radixark/miles, ray/rollout/metrics.py) logs the share of groups whose every
    # completion scored 0 and 1 as rollout/zero_std/all_{zero,one}_percentage (a fraction,
    # its name notwithstanding; older versions: zero_std/all_{zero,one}_ratio): the
    # all-fail / all-pass shares grpo-tui otherwise derives from the completions
    "samples/all_fail": (
        "rollout/zero_std/all_zero_percentage",
        "zero_std/all_zero_percentage",
        "zero_std/all_zero_ratio",
    ),
    "samples/all_pass": (
        "rollout/zero_std/all_one_percentage",
        "zero_std/all_one_percentage",
        "zero_std/all_one_ratio",
    ),
    # the sampler (vLLM) against the trainer, per completion token, where TRL's
    # vllm_importance_sampling_correction is on (trl/trainer/grpo_trainer.py:2861–2893 in the
    # 1.16.0 wheel; docs/health.md, "Off-policy drift"): |logp_trainer − logp_vLLM| (mean,
    # max), and the importance ratio exp(logp_trainer − logp_vLLM) after TRL's cap (min,
    # mean, max). Shared: a trainer built on TRL's logs them too, whatever format carries them
    "offpolicy/logp_diff_mean": ("sampling/sampling_logp_difference/mean",),
    "offpolicy/logp_diff_max": ("sampling/sampling_logp_difference/max",),
    "offpolicy/is_ratio_mean": ("sampling/importance_sampling_ratio/mean",),
    "offpolicy/is_ratio_min": ("sampling/importance_sampling_ratio/min",),
    "offpolicy/is_ratio_max": ("sampling/importance_sampling_ratio/max",),
    "loss": ("loss",),
    "grad_norm": ("grad_norm",),
    "learning_rate": ("learning_rate",),
    "epoch": ("epoch",),
}

#: legacy per-function reward `rewards/<fn>` (TRL ≤ 0.16, ms-swift 3.1–3.2) → `/mean`;
#: a function name can hold "." and "-" (reward-model basenames) but not "/"
GRPO_FAMILIES: tuple[tuple[str, str], ...] = ((r"rewards/([^/]+)", r"rewards/\1/mean"),)


def merged_aliases(*tables: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Several frameworks' alias tables as one (priority: earlier tables first), for a
    store any of them may have written."""
    canonicals = dict.fromkeys(canonical for table in tables for canonical in table)
    return {
        canonical: tuple(dict.fromkeys(key for table in tables for key in table.get(canonical, ())))
        for canonical in canonicals
    }
