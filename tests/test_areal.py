"""AReaL (sources/formats/areal.py): StatsLogger's console tables and TensorBoard files with
AReaL's tags. Fixture: tests/fixtures/areal/, built from AReaL's source at 4aef98d (its
.source.txt); event files are written here with TensorBoard's own writer (StatsLogger's
`add_scalar(key, value, log_step)`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import write_tb_events

from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.sources.discover import discover
from grpo_tui.sources.formats.areal import ArealConsoleParser

CONSOLE = Path(__file__).parent / "fixtures" / "areal" / "areal-4aef98d_console.log"


class TestConsole:
    """StatsLogger's tables."""

    def test_the_run(self) -> None:
        """One row per train step, the step and total from "Train step N/M done.", a verdict."""
        run = load_run(CONSOLE)
        assert run.framework == "AReaL console log"
        store = run.store
        assert store.points("reward").steps.tolist() == [float(s) for s in range(1, 41)]
        assert run.max_steps == 40
        assert store.points("eval_reward").steps.tolist() == [10.0, 20.0, 30.0, 40.0]
        assert "healthy" in {s.id.value for s in diagnose(run, Rules()).scenarios}

    def test_lengths_and_the_no_eos_share(self) -> None:
        """seq_len is prompt plus response: the response length is their difference, and
        the no-EOS share (against the batch's padded width) is no truncated share."""
        store = load_run(CONSOLE).store
        total = store.points("sequence_length").values[0]
        prompt = store.points("ppo_actor/prompt_len/avg").values[0]
        assert store.points("completion_length").values[0] == pytest.approx(total - prompt)
        assert "clipped_ratio" not in store.names()
        assert "ppo_actor/no_eos_ratios/avg" in store.names()
        assert "ppo_actor/update/approx_kl/avg" in store.names()  # drift, not KL to a reference

    def test_a_table_cut_off(self) -> None:
        """Other output inside a table ends it: its rows so far kept, the table counted."""
        parser = ArealConsoleParser()
        lines = [
            "(AReaL) 20260821-10:00:00.000 StatsLogger INFO: Epoch 1/1 Step 1/2 Train step 1/2 done.",
            "╒══════╤═════╕",
            "│ ppo_actor/task_reward/avg │ 5.0000e-01 │ ppo_actor/seq_len/avg │ 9.0000e+02 │",
            "Traceback (most recent call last):",
        ]
        records = [r for i, line in enumerate(lines) for r in parser.feed(line, i + 1)]
        assert [r.values for r in records] == [
            {
                "train_step/total_train_steps": "1/2",
                "ppo_actor/task_reward/avg": 0.5,
                "ppo_actor/seq_len/avg": 900.0,
            }
        ]
        assert [reason for _, reason, _ in parser.bad] == ["a stats table cut off"]

    def test_a_table_before_any_step(self) -> None:
        """A table with no "Train step" line before it (an eval's) is no train row."""
        parser = ArealConsoleParser()
        lines = ["╒═╤═╕", "│ grpo-eval/task_reward/avg │ 5.0000e-01 │", "╘═╧═╛"]
        assert [r for i, line in enumerate(lines) for r in parser.feed(line, i + 1)] == []


class TestTensorBoard:
    """Event files with AReaL's tags."""

    def test_found_and_read(self, tmp_path: Path) -> None:
        """The configured folder; the response length derived there too."""
        rows = [
            (
                step,
                {
                    "ppo_actor/task_reward/avg": 0.2 + 0.012 * step + (0.02 if step % 3 else -0.01),
                    "ppo_actor/seq_len/avg": 900.0 + step,
                    "ppo_actor/prompt_len/avg": 200.0,
                    "ppo_actor/update/actor_loss/avg": 0.01,
                    "ppo_actor/update/clip_ratio/avg": 0.002,
                    "ppo_actor/update/entropy/avg": 0.6 - 0.003 * step,
                },
            )
            for step in range(40)
        ]
        write_tb_events(tmp_path / "tensorboard", rows)
        assert discover(tmp_path).adapter == "areal-tensorboard"
        run = load_run(tmp_path)
        assert run.framework == "AReaL (TensorBoard)"
        assert run.store.points("completion_length").values[0] == pytest.approx(700.0)
        assert "healthy" in {s.id.value for s in diagnose(run, Rules()).scenarios}
