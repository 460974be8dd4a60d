"""A verl run logged to trackio (`trainer.logger=["console","trackio"]`), written by the real
trackio library as verl's tracking backend calls it (`trackio.log(data, step=step)` with
verl's flat keys, verl/utils/tracking.py:406–410 at verl-project/verl 1dda039): read with
its reward, lengths, entropy and KL, and named as verl's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers import TrackioWriter as Writer

from grpo_tui.run.follow import load_run
from grpo_tui.sources.discover import discover

STEPS = 12


@pytest.fixture(scope="module")
def writer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Writer]:
    process = Writer(tmp_path_factory.mktemp("trackio"))
    yield process
    process.close()


def verl_step(step: int) -> dict[str, Any]:
    """The keys verl's `compute_data_metrics` and the actor log for a GRPO step
    (verl/trainer/ppo/metric_utils.py:554–592), as the file logger writes them too."""
    return {
        "critic/score/mean": 0.1 + step / 50,
        "critic/rewards/mean": 0.1 + step / 50,
        "actor/entropy": 0.5 - step / 100,
        "actor/kl_loss": step / 1000,
        "actor/ppo_kl": 0.0001,
        "actor/pg_clipfrac": 0.002,
        "actor/pg_loss": -0.01,
        "actor/grad_norm": 0.3,
        "actor/lr": 1e-6,
        "response_length/mean": 300.0 + step,
        "response_length/max": 1024.0,
        "response_length/min": 20.0,
        "training/global_step": step,
    }


@pytest.fixture(scope="module")
def project(writer: Writer) -> Any:
    writer.init("verl_grpo", "qwen-gsm8k")
    # ray_trainer.fit: a validation before training at step 0, then the validation
    # metrics merged into the step's dict every `test_freq` steps, one log call a step
    writer.log({"val-core/openai/gsm8k/acc/mean@1": 0.3}, step=0)
    for step in range(1, STEPS + 1):
        metrics = verl_step(step)
        if step % 4 == 0:
            metrics["val-core/openai/gsm8k/acc/mean@1"] = 0.3 + step / 100
        writer.log(metrics, step=step)
    writer.finish()
    return writer.directory / "verl_grpo.db"


class TestVerlInTrackio:
    """verl's keys in a trackio project map as verl's file logger's do."""

    def test_the_signals_are_mapped(self, project: Any) -> None:
        run = load_run(project)
        sources = {name: run.store.source_key(name) for name in run.store.names()}
        assert sources["reward"] == "critic/score/mean"
        assert sources["shaped_reward"] == "critic/rewards/mean"
        assert sources["entropy"] == "actor/entropy"
        assert sources["kl"] == "actor/kl_loss"
        assert sources["clip_ratio"] == "actor/pg_clipfrac"
        assert sources["completion_length"] == "response_length/mean"
        assert sources["eval_reward"] == "val-core/openai/gsm8k/acc/mean@1"
        # drift from the rollout policy is not KL to the reference
        assert sources["actor/ppo_kl"] == "actor/ppo_kl"
        last = run.store.last("reward")
        assert last is not None and last[0] == STEPS and last[1] == pytest.approx(0.1 + STEPS / 50)

    def test_named_as_verl(self, project: Any) -> None:
        assert discover(project.parent).adapter == "trackio"
        assert load_run(project.parent).framework == "verl (trackio)"

    def test_steps_are_verls(self, project: Any) -> None:
        run = load_run(project)
        assert sorted({int(step) for step in run.store.steps}) == list(range(0, STEPS + 1))
        assert run.bad_line_count == 0
