"""The order metrics are listed in: what tells whether GRPO learns comes first."""

from __future__ import annotations

from collections.abc import Iterable

#: the group-spread and policy signals, in the order a reader scans them
GRPO_SIGNALS: tuple[str, ...] = (
    "reward",
    "reward_std",
    "frac_reward_zero_std",
    "clip_ratio",
    "kl",
    "completion_length",
    "clipped_ratio",
    "entropy",
)
OPTIMISER: tuple[str, ...] = ("loss", "grad_norm", "learning_rate")


def _is_function_reward(name: str) -> bool:
    return name.startswith("rewards/") and name.endswith("/mean")


def _group(name: str) -> tuple[int, int]:
    """(group, rank inside the group); equal keys keep the store's first-appearance order."""
    if name in GRPO_SIGNALS:
        return 0, GRPO_SIGNALS.index(name)
    if _is_function_reward(name):
        return 1, 0
    if name.startswith("eval_"):
        inner = name[len("eval_") :]
        if inner in GRPO_SIGNALS:
            return 2, GRPO_SIGNALS.index(inner)
        if _is_function_reward(inner):
            return 2, len(GRPO_SIGNALS)
        if inner in OPTIMISER:
            return 2, len(GRPO_SIGNALS) + 1
        # eval bookkeeping (runtime, samples/s) and eval spreads go with the rest
        return 4, 0
    if name in OPTIMISER:
        return 3, OPTIMISER.index(name)
    return 4, 0


def order_metrics(names: Iterable[str]) -> list[str]:
    """GRPO signals, per-function rewards, eval metrics (the eval_ mirrors of those and
    eval_loss), optimiser metrics, then the rest (each in first-appearance order unless the
    group has its own order)."""
    return sorted(names, key=_group)  # sorted() is stable: ties keep first appearance


def matches_filter(name: str, query: str) -> bool:
    """Case-insensitive substring match; every space-separated word must match."""
    lowered = name.lower()
    return all(word in lowered for word in query.lower().split())
