"""TRL's asynchronous GRPO trainer (trl/experimental/async_grpo, TRL ≥ 1.0): its log keys.

Read from huggingface/trl at f2cd57710 (2026-07-24): async_grpo_trainer.py `_compute_loss`
appends `ratio`, `kl`, `entropy`, `clip_ratio/{low,high,region}_mean`, `clip_ratio/low_min`,
`clip_ratio/high_max` (lines 1025-1037), `completions/mean_length`, `training_tok/s`,
`forward_time_s`, `train_seq_len` (1066-1078), `weight_sync_time_s` (1143); the rollout
worker's per-sample metrics (async_rollout_worker.py 875-882) are `reward`, `reward_std`,
`rewards/<fn>` (no `/mean`: a per-sample value the trainer averages) and the tool counts,
plus `queue_wait_time_s` (trainer 299). Before 2026-06-22 the clip fraction was one
`clip_ratio`. The only renames are the per-function reward and that `clip_ratio`, which
TRL's own older keys already name (the legacy `rewards/<fn>` family, TRL 0.16's
`clip_ratio`): no alias of its own is needed. Its `kl` is the drift from the rollout
policy (k3 estimate against the sampling log-probs), not a KL to a reference model: the
async config has no `beta`, so the run context leaves it unknown.
"""

from __future__ import annotations

import json
from pathlib import Path

from grpo_tui.run.follow import load_run
from grpo_tui.sources.formats.trl import TRL

#: one train log item in the async trainer's shape (values invented, names from the source)
ASYNC_ITEM: dict[str, float | int] = {
    "loss": 0.0123,
    "grad_norm": 0.41,
    "learning_rate": 1e-6,
    "reward": 0.625,
    "reward_std": 0.41,
    "rewards/accuracy_reward": 0.5,
    "rewards/format_reward": 0.125,
    "ratio": 1.002,
    "kl": 0.0007,
    "entropy": 0.61,
    "clip_ratio/low_mean": 0.001,
    "clip_ratio/high_mean": 0.002,
    "clip_ratio/region_mean": 0.003,
    "clip_ratio/low_min": 0.0,
    "clip_ratio/high_max": 0.004,
    "completions/mean_length": 812.5,
    "training_tok/s": 5120.0,
    "forward_time_s": 1.9,
    "train_seq_len": 2048.0,
    "weight_sync_time_s": 3.1,
    "queue_wait_time_s": 0.2,
    "epoch": 0.01,
    "step": 1,
}


class TestAsyncGrpoKeys:
    """The async trainer's keys reach the canonical names TRL's GRPOTrainer's keys do."""

    def test_renames_are_covered(self) -> None:
        """`rewards/<fn>` is a function's mean; the old single `clip_ratio` is the clip ratio."""
        assert TRL.canonical("rewards/accuracy_reward") == "rewards/accuracy_reward/mean"
        assert TRL.canonical("clip_ratio") == "clip_ratio"
        assert TRL.canonical("clip_ratio/region_mean") == "clip_ratio"
        assert TRL.canonical("completions/mean_length") == "completion_length"

    def test_its_own_keys_keep_their_names(self) -> None:
        """Throughput, timing and the importance ratio have no GRPOTrainer twin: shown as logged."""
        for key in (
            "ratio",
            "training_tok/s",
            "forward_time_s",
            "train_seq_len",
            "weight_sync_time_s",
        ):
            assert TRL.canonical(key) == key

    def test_a_trainer_state_of_its_lines(self, tmp_path: Path) -> None:
        """A trainer_state.json whose log_history holds async items reads into the canonical metrics."""
        items = [{**ASYNC_ITEM, "step": step} for step in (1, 2, 3)]
        (tmp_path / "trainer_state.json").write_text(
            json.dumps({"log_history": items, "global_step": 3}), encoding="utf-8"
        )
        names = set(load_run(tmp_path).store.names())
        expected = {"reward", "reward_std", "entropy", "kl", "clip_ratio", "completion_length"}
        assert expected | {"rewards/accuracy_reward/mean", "rewards/format_reward/mean"} <= names
