"""SkyRL (sources/formats/skyrl.py) and Tinker / tinker-cookbook (formats/tinker.py): the
console logger's `Step N:` and pformat'ed dict, TensorBoard files with SkyRL's tags, and a
Tinker run folder (`metrics.jsonl`, `logs.log`, `config.json`), told from prime-rl's.
Fixtures: tests/fixtures/skyrl/ and tests/fixtures/tinker/, built from each source (their
.source.txt); event files are written here with TensorBoard's own writer."""

from __future__ import annotations

import json
import pprint
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import write_tb_events

from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.sources.discover import discover
from grpo_tui.sources.formats.skyrl import SkyRLConsoleParser

FIXTURES = Path(__file__).parent / "fixtures"
SKYRL_CONSOLE = FIXTURES / "skyrl" / "skyrl-a956457_console.log"
TINKER_METRICS = FIXTURES / "tinker" / "tinker-cookbook-9dfcc3a_metrics.jsonl"


def console_step(step: int, data: dict[str, Any]) -> list[str]:
    """tracking.py `ConsoleLogger.log` through loguru: the step line, then the dict."""
    floats = {k: f"{v:.4f}" if isinstance(v, float) else v for k, v in data.items()}
    message = f"Step {step}: \n{pprint.pformat(floats)}"
    return f"2026-08-21 10:00:00.000 | INFO     | skyrl.train.utils.tracking:log:189 - {message}".split(
        "\n"
    )


class TestSkyRLConsole:
    """SkyRL's console logger."""

    def test_the_run(self) -> None:
        """Every step once, the eval steps' dicts as eval rows, a verdict."""
        run = load_run(SKYRL_CONSOLE)
        assert run.framework == "SkyRL console log"
        store = run.store
        assert store.replaced_rows == 0
        assert store.points("reward").steps.tolist() == [float(s) for s in range(1, 41)]
        assert store.points("eval_reward").steps.tolist() == [10.0, 20.0, 30.0, 40.0]
        assert {"kl", "clip_ratio", "entropy", "completion_length", "grad_norm"} <= set(
            store.names()
        )
        assert "healthy" in {s.id.value for s in diagnose(run, Rules()).scenarios}

    def test_floats_printed_as_4_decimals(self) -> None:
        """The logger's '%.4f' is what the file holds: a 1e-6 learning rate reads 0."""
        store = load_run(SKYRL_CONSOLE).store
        assert store.points("reward").values[0] == 0.2333
        assert store.points("learning_rate").values[0] == 0.0

    def test_without_a_ray_prefix(self) -> None:
        """Run outside Ray the lines have no `(skyrl_entrypoint pid=N)` prefix."""
        parser = SkyRLConsoleParser()
        lines = console_step(
            3, {"reward/avg_raw_reward": 0.5, "policy/policy_kl": 0.01, "trainer/global_step": 3}
        )
        records = [r for i, line in enumerate(lines) for r in parser.feed(line, i + 1)]
        assert [r.values for r in records] == [
            {
                "step": 3,
                "policy/policy_kl": 0.01,
                "reward/avg_raw_reward": 0.5,
                "trainer/global_step": 3,
            }
        ]

    def test_a_dict_cut_off(self) -> None:
        """A dict the text ends inside keeps its whole pairs and is counted."""
        parser = SkyRLConsoleParser()
        lines = console_step(1, {f"policy/k{i}": 0.25 for i in range(10)})[:-1]
        for i, line in enumerate(lines):
            assert parser.feed(line, i + 1) == []
        (record,) = parser.flush()
        assert record.values["step"] == 1 and len(record.values) > 5
        assert len(parser.bad) == 1

    def test_a_step_line_without_a_dict(self) -> None:
        """Other output after a step line is no record."""
        parser = SkyRLConsoleParser()
        parser.feed("2026-08-21 10:00:00.000 | INFO     | x:y:1 - Step 2: ", 1)
        assert parser.feed("Saving checkpoint", 2) == []
        assert parser.feed("{'reward/avg_raw_reward': '0.5000'}", 3) == []


class TestSkyRLTensorBoard:
    """Event files with SkyRL's tags."""

    def test_found_and_read(self, tmp_path: Path) -> None:
        """`tensorboard_log/` under the run folder; eval/all/avg_score is the eval reward."""
        rows = [
            (
                step,
                {
                    "reward/avg_raw_reward": 0.2 + 0.012 * step + (0.02 if step % 3 else -0.01),
                    "policy/policy_kl": 0.0004 * step,
                    "policy/loss_metrics/clip_ratio": 0.002,
                    "policy/policy_entropy": 0.6 - 0.003 * step,
                    "generate/avg_num_tokens": 700.0 + step,
                },
            )
            for step in range(1, 41)
        ]
        rows.append((40, {"eval/all/avg_score": 0.55}))
        write_tb_events(tmp_path / "tensorboard_log", rows)
        assert discover(tmp_path).adapter == "skyrl-tensorboard"
        run = load_run(tmp_path)
        assert run.framework == "SkyRL (TensorBoard)"
        assert run.store.points("eval_reward").values.tolist() == [pytest.approx(0.55)]
        assert "healthy" in {s.id.value for s in diagnose(run, Rules()).scenarios}


class TestTinker:
    """A Tinker run folder as `ml_log.setup_logging` leaves it."""

    def _folder(self, tmp_path: Path) -> Path:
        run = tmp_path / "math-rl"
        run.mkdir()
        shutil.copy(TINKER_METRICS, run / "metrics.jsonl")
        (run / "logs.log").write_text(
            "tinker_cookbook.rl.train:2052 [INFO] Training completed successfully\n",
            encoding="utf-8",
        )
        config = {
            "learning_rate": 4e-05,
            "model_name": "Qwen/Qwen3-8B",
            "max_tokens": 2048,
            "dataset_builder": {"group_size": 16},
            "kl_penalty_coef": 0.0,
        }
        (run / "config.json").write_text(json.dumps(config), encoding="utf-8")
        return run

    def test_not_taken_for_prime_rl(self, tmp_path: Path) -> None:
        """Its metrics.jsonl starts like prime-rl's; the cookbook's keys say whose."""
        layout = discover(self._folder(tmp_path))
        assert (layout.adapter, layout.metrics_file) == (
            "tinker",
            tmp_path / "math-rl" / "metrics.jsonl",
        )

    def test_logs_log_leads_to_its_metrics(self, tmp_path: Path) -> None:
        """`logs.log` given by name is read through the metrics.jsonl beside it."""
        run = self._folder(tmp_path)
        layout = discover(run / "logs.log")
        assert (layout.adapter, layout.metrics_file) == ("tinker", run / "metrics.jsonl")

    def test_keys_settings_and_verdict(self, tmp_path: Path) -> None:
        """done_frac, the derived zero-spread share, config.json, and a healthy verdict."""
        run = load_run(self._folder(tmp_path))
        store = run.store
        assert store.points("done_frac").values[-1] == 1.0
        assert store.points("frac_reward_zero_std").values[0] == pytest.approx(1 - 0.35)
        assert store.points("eval_reward").steps.tolist() == [0.0, 20.0]
        assert "optim/kl_sample_train_v1" in store.names()  # sampler-trainer drift
        context = run.context
        assert (context.num_generations, context.max_completion_length) == (16, 2048)
        assert (context.model, context.beta) == ("Qwen/Qwen3-8B", 0.0)
        assert "healthy" in {s.id.value for s in diagnose(run, Rules()).scenarios}

    def test_prime_rl_stays_prime_rl(self, tmp_path: Path) -> None:
        """A prime-rl metrics.jsonl (progress/, optim/, no done_frac) is not Tinker's."""
        path = tmp_path / "metrics.jsonl"
        line = {"step": 1, "time": 1.78e9, "progress/total_tokens": 100, "optim/lr": 1e-6}
        path.write_text(json.dumps(line) + "\n", encoding="utf-8")
        assert discover(path).adapter == "prime-rl"
