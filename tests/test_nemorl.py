"""NeMo-RL read from its log folder as it leaves it: the TensorBoard tags its `Logger` writes
(through TensorBoard's own event writer, as torch's SummaryWriter does), the
`metrics.json` its test scripts merge them into, and the `train_data_step{N}.jsonl` rollout
dumps as the completions. Shapes from NVIDIA-NeMo/RL 7ea279a (formats/nemorl.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2  # type: ignore[import-untyped]
from tensorboard.plugins.hparams.summary_v2 import hparams_pb  # type: ignore[import-untyped]
from tensorboard.summary.writer.event_file_writer import (  # type: ignore[import-untyped]
    EventFileWriter,
)

from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.sources.discover import discover
from grpo_tui.sources.formats.nemorl import (
    UNLIMITED_STEPS,
    ZERO_SPREAD_KEY,
    document_records,
    flatten,
    nemorl_settings,
)
from grpo_tui.sources.formats.nemorl_rollouts import convert
from grpo_tui.vocabulary import Status

FIXTURES = Path(__file__).parent / "fixtures" / "nemo-rl"
METRICS_JSON = FIXTURES / "nemo-rl-7ea279a_grpo-collapse_metrics.json"
RUN_DIR = FIXTURES / "grpo-collapse-logs"

#: completions per prompt and prompts per step of the written run
GROUP, PROMPTS = 4, 2
CAP = 4096


def collapse(step: int, steps: int) -> dict[str, float]:
    """The issue's run: reward rising while entropy falls 0.6 → 0.01, 90 % of the
    completions cut at the 4 096-token cap and KL to the reference rising."""
    t = (step - 1) / max(1, steps - 1)
    return {
        "reward": 0.2 + 0.5 * t,
        "loss": 0.05 - 0.02 * t,
        "grad_norm": 0.4 + 0.1 * t,
        "approx_entropy": 0.6 * (1 - t) + 0.01 * t,
        "kl_penalty": 0.12 * t,
        "truncation_rate": min(0.9, 0.1 + 1.6 * t),
        "natural_termination_rate": 1 - min(0.9, 0.1 + 1.6 * t),
        "mean_gen_tokens_per_sample": float(CAP) if t > 0.2 else 1800.0 + 11000.0 * t,
        "max_gen_tokens_per_sample": float(CAP),
        "lr": 1e-6,
        "token_mult_prob_error": 1.01,
        "gen_kl_error": 0.0004,
        "baseline_reward/pct_0": 50.0 * (1 - t),
        "baseline_reward/pct_1": 40.0 * t,
        "baseline_reward/pct_mixed": 100 - 50.0 * (1 - t) - 40.0 * t,
    }


class TensorBoardLogger:
    """NeMo-RL's TensorboardLogger.log_metrics (nemo_rl/utils/logger.py:158–187): a tag
    `<prefix>/<name>` per metric, one simple_value event each (torch's `add_scalar`),
    through the event writer torch's SummaryWriter wraps."""

    def __init__(self, log_dir: Path) -> None:
        self.writer = EventFileWriter(str(log_dir))

    def log_metrics(self, metrics: dict[str, float], step: int, prefix: str) -> None:
        for name, value in metrics.items():
            tag = f"{prefix}/{name}" if prefix else name
            summary = summary_pb2.Summary(
                value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)]
            )
            self.writer.add_event(
                event_pb2.Event(step=step, summary=summary, wall_time=1.7e9 + step)
            )

    def close(self) -> None:
        self.writer.close()


def dump_line(sample: dict[str, Any], idx: int) -> str:
    """One line of `Logger.log_batched_dict_as_jsonl` (logger.py:1071–1098)."""
    return json.dumps({**sample, "idx": idx}, default=str) + "\n"


def write_dump(log_dir: Path, step: int, rewards: list[float]) -> None:
    """`train_data_step{step}.jsonl` as grpo.py:3631–3653 builds it: one sample per line,
    every value a one-sample slice."""
    lines = []
    for i, reward in enumerate(rewards):
        group = rewards[(i // GROUP) * GROUP : (i // GROUP + 1) * GROUP]
        advantage = reward - (sum(group) - reward) / (GROUP - 1)  # leave-one-out baseline
        prompt = (
            f"<|im_start|>user\nWhat is {i // GROUP + step}+1?<|im_end|>\n<|im_start|>assistant\n"
        )
        response = f"The answer is {i // GROUP + step + 1 if reward else 0}.<|im_end|>"
        tokens = 6
        sample = {
            "content": [[prompt, response]],
            "rewards": [reward],
            "input_lengths": [12 + tokens],
            "token_ids": [list(range(12 + tokens))],
            "token_loss_mask": [[0] * 12 + [1] * tokens],
            "sample_loss_mask": [1.0],
            "advantages": [[advantage] * (12 + tokens)],
            "generation_logprobs": [[0.0] * 12 + [-0.5] * tokens],
            "prev_logprobs": [[0.0] * 12 + [-0.5] * tokens],
        }
        lines.append(dump_line(sample, i))
    (log_dir / f"train_data_step{step}.jsonl").write_text("".join(lines))


def config(steps: int) -> dict[str, Any]:
    """The parts of NeMo-RL's `MasterConfig.model_dump()` read as settings, flattened with
    dots as `flatten_dict` does (logger.py:1324–1373), names as in grpo_math_1B.yaml."""
    return {
        "grpo.num_prompts_per_step": PROMPTS,
        "grpo.num_generations_per_prompt": GROUP,
        "grpo.max_num_epochs": 1,
        "grpo.max_num_steps": steps,
        "loss_fn.reference_policy_kl_penalty": 0.01,
        "loss_fn.ratio_clip_min": 0.2,
        "loss_fn.ratio_clip_max": 0.28,
        "policy.model_name": "Qwen/Qwen2.5-1.5B",
        "policy.train_global_batch_size": GROUP * PROMPTS,
        "policy.max_total_sequence_length": CAP + 512,
        "policy.generation.max_new_tokens": CAP,
        "policy.generation.temperature": 1.0,
        "policy.optimizer.kwargs.lr": 1e-6,
        "policy.megatron_cfg.enabled": False,
        "policy.megatron_cfg.optimizer.lr": 5e-6,
        "logger.tensorboard_enabled": True,
    }


def add_hparams(log_dir: Path, hparams: dict[str, Any]) -> None:
    """torch's `SummaryWriter.add_hparams(hparams, {})` (what NeMo-RL's
    `TensorboardLogger.log_hyperparams` calls, logger.py:196–203): a writer in the subfolder
    `str(time.time())` with the HParams plugin's session-start record (made here by
    tensorboard's own `summary_v2.hparams_pb`: torch is not installed)."""
    writer = EventFileWriter(str(log_dir / "1796679100.1234567"))
    writer.add_event(event_pb2.Event(wall_time=1.7e9, summary=hparams_pb(hparams)))
    writer.close()


def write_run(
    root: Path, steps: int = 40, *, gpu_monitor: bool = True, max_num_steps: int | None = None
) -> Path:
    """`<root>/exp_001/` as `examples/run_grpo.py` leaves it with the TensorBoard logger on:
    validation at step 0 and every 10 steps, the train metrics every step, the GPU
    monitor's `ray/` scalars at seconds since start, a rollout dump per step."""
    log_dir = root / "exp_001"
    tb_dir = log_dir / "tensorboard"
    tb_dir.mkdir(parents=True)
    logger = TensorBoardLogger(tb_dir)
    add_hparams(tb_dir, config(steps if max_num_steps is None else max_num_steps))
    logger.log_metrics({"accuracy": 0.2, "avg_length": 1500.0}, 0, "validation")
    for step in range(1, steps + 1):
        if gpu_monitor:
            logger.log_metrics(
                {"node.0.gpu.0.util": 0.9, "ray_step": 30.0 * step}, 30 * step, "ray"
            )
        if step % 10 == 0:
            logger.log_metrics(
                {"accuracy": 0.2 + step / 200, "avg_length": 4000.0}, step, "validation"
            )
        metrics = collapse(step, steps)
        logger.log_metrics(metrics, step, "train")
        logger.log_metrics({"total_step_time": 60.0}, step, "timing/train")
        passed = round(metrics["reward"] * GROUP * PROMPTS)
        write_dump(log_dir, step, [1.0] * passed + [0.0] * (GROUP * PROMPTS - passed))
    logger.close()
    return log_dir


class TestTensorBoardTags:
    """The tags of a NeMo-RL run map to the GRPO signals."""

    def test_the_issues_run_is_not_healthy(self, tmp_path: Path) -> None:
        """Entropy 0.6 → 0.01, 90 % cut, length at the cap, KL rising: a problem."""
        write_run(tmp_path)
        run = load_run(tmp_path)
        assert run.framework == "NeMo-RL (TensorBoard)"
        diagnosis = diagnose(run, Rules())
        assert diagnosis.status in (Status.CAUTION, Status.PROBLEM)
        assert "truncation" in {scenario.id.value for scenario in diagnosis.scenarios}
        sources = {name: run.store.source_key(name) for name in run.store.names()}
        assert sources["entropy"] == "approx_entropy"
        assert sources["kl"] == "kl_penalty"
        assert sources["clipped_ratio"] == "truncation_rate"
        assert sources["completion_length"] == "mean_gen_tokens_per_sample"
        assert sources["learning_rate"] == "lr"
        assert sources["eval_reward"] == "validation/accuracy"
        assert sources["frac_reward_zero_std"] == ZERO_SPREAD_KEY
        # drift from the inference engine is an off-policy measure, never KL to the reference
        assert sources["offpolicy/token_prob_error"] == "token_mult_prob_error"
        assert sources["offpolicy/mismatch_kl"] == "gen_kl_error"
        last = run.store.last("clipped_ratio")
        assert last is not None and last[0] == 40.0 and last[1] == pytest.approx(0.9)

    def test_the_gpu_monitors_seconds_are_no_steps(self, tmp_path: Path) -> None:
        """`ray/` scalars logged at seconds since start leave the step axis alone."""
        write_run(tmp_path, steps=12)
        run = load_run(tmp_path)
        train_steps = sorted({int(s) for s in run.store.steps})
        assert train_steps == list(range(0, 13))

    def test_the_dumps_beside_tensorboard_are_the_completions(self, tmp_path: Path) -> None:
        """`<log_dir>/train_data_step*.jsonl` are found from the event files' folder."""
        log_dir = write_run(tmp_path, steps=3)
        layout = discover(tmp_path)
        assert layout.completions is not None
        assert layout.completions.path == log_dir


class TestSettings:
    """The config NeMo-RL logs as TensorBoard hparams gives the run's settings."""

    def test_from_the_hparams_folder(self, tmp_path: Path) -> None:
        """max_steps, group size, completion cap, KL coefficient: the run finishes at 40."""
        write_run(tmp_path)
        run = load_run(tmp_path)
        context = run.context
        assert (context.max_steps, context.num_generations) == (40, GROUP)
        assert (context.max_completion_length, context.beta) == (CAP, 0.01)
        assert (context.epsilon, context.epsilon_high, context.num_iterations) == (0.2, 0.28, 1)
        assert (context.learning_rate, context.model) == (1e-6, "Qwen/Qwen2.5-1.5B")
        assert run.reached_max_steps() and run.ended()

    def test_the_default_step_limit_is_no_max_steps(self, tmp_path: Path) -> None:
        """`grpo.max_num_steps` at its default: the epochs bind, the step count is unknown."""
        write_run(tmp_path, steps=5, max_num_steps=UNLIMITED_STEPS)
        run = load_run(tmp_path)
        assert run.context.max_steps is None and run.context.num_generations == GROUP
        assert not run.ended()

    def test_a_nested_config(self) -> None:
        """W&B keeps the config nested: the same settings; Megatron's learning rate with it."""
        nested: dict[str, Any] = {}
        for dotted, value in config(100).items():
            *parents, leaf = dotted.split(".")
            place = nested
            for parent in parents:
                place = place.setdefault(parent, {})
            place[leaf] = value
        nested["policy"]["megatron_cfg"]["enabled"] = True
        settings = nemorl_settings(nested)
        assert settings["max_steps"] == 100 and settings["learning_rate"] == 5e-6
        assert settings["max_completion_length"] == CAP

    @pytest.mark.parametrize("steps", [0, -3, 2.5, "40", None, float("nan"), True])
    def test_unusable_step_limits(self, steps: object) -> None:
        """A step limit that is no positive whole number is no max_steps."""
        assert "max_steps" not in nemorl_settings({"grpo.max_num_steps": steps})


class TestZeroSpread:
    """pct_0 and pct_1 are percentages: their sum over 100 is the zero-spread share."""

    def test_derived_beside_the_percentages(self) -> None:
        record = flatten({"step": 1, "baseline_reward/pct_0": 25.0, "baseline_reward/pct_1": 12.5})
        assert record[ZERO_SPREAD_KEY] == pytest.approx(0.375)

    def test_not_without_both(self) -> None:
        assert ZERO_SPREAD_KEY not in flatten({"step": 1, "baseline_reward/pct_0": 25.0})


class TestMetricsDocument:
    """`metrics.json` is told from a trainer_state.json by its content."""

    def test_claimed_as_nemo_rl_not_trl(self) -> None:
        layout = discover(METRICS_JSON)
        assert layout.adapter == "nemo-rl"
        assert not any("TRL" in other for other in layout.passed_over)

    def test_read_by_step_with_the_signals_mapped(self) -> None:
        run = load_run(METRICS_JSON)
        assert run.framework == "NeMo-RL"
        assert run.bad_line_count == 0
        names = set(run.store.names())
        assert {"reward", "entropy", "kl", "clipped_ratio", "completion_length"} <= names
        assert {"eval_reward", "frac_reward_zero_std"} <= names
        assert diagnose(run, Rules()).status is Status.PROBLEM

    def test_records_from_the_document(self) -> None:
        document = {
            "train/reward": {"1": 0.5, "2": 0.6},
            "validation/accuracy": {"0": 0.1},
            "ray/node.0.gpu.0.util": {"37": 0.9},
        }
        assert document_records(document) == [
            {"step": 0, "validation/accuracy": 0.1},
            {"step": 1, "reward": 0.5},
            {"step": 2, "reward": 0.6},
        ]

    @pytest.mark.parametrize("document", [[], {}, {"a": 1}, {"log_history": []}])
    def test_other_documents_hold_no_records(self, document: object) -> None:
        assert document_records(document) is None

    def test_a_trainer_state_json_stays_trls(self, tmp_path: Path) -> None:
        state = tmp_path / "state.json"
        state.write_text(json.dumps({"global_step": 1, "log_history": [{"step": 1, "loss": 1.0}]}))
        assert discover(state).adapter == "trl"


class TestRolloutDumps:
    """`train_data_step{N}.jsonl`: one sample per line, grouped by prompt."""

    def test_converted(self, tmp_path: Path) -> None:
        write_dump(tmp_path, 3, [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
        converted = convert(tmp_path / "train_data_step3.jsonl")
        assert converted is not None
        columns = converted.columns
        assert len(columns["completion"]) == 8
        assert columns["reward"][:4] == [1.0, 0.0, 0.0, 0.0]
        assert columns["advantages"][0] == pytest.approx(1.0)
        assert columns["prompt"][0].startswith("<|im_start|>user")
        assert columns["completion"][0].startswith("The answer is")

    def test_a_line_being_written_waits(self, tmp_path: Path) -> None:
        path = tmp_path / "train_data_step1.jsonl"
        path.write_text(dump_line({"content": [["p", "c"]], "rewards": [1.0]}, 0)[:-5])
        assert convert(path) is None

    def test_a_bad_line_is_skipped_and_said(self, tmp_path: Path) -> None:
        path = tmp_path / "train_data_step1.jsonl"
        path.write_text("not json\n" + dump_line({"content": [["p", "c"]], "rewards": [1.0]}, 0))
        converted = convert(path)
        assert converted is not None
        assert converted.columns["completion"] == ["c"]
        assert converted.skipped and "line 1" in converted.skipped[0]

    def test_the_run_folder_in_the_fixtures(self) -> None:
        """The checked-in folder reads as a whole: metrics, zero spread, completions."""
        run = load_run(RUN_DIR)
        assert run.completions is not None
        state = run.completions.state()
        assert state.lines > 0 and state.bad_line_count == 0
        zero = run.store.points("frac_reward_zero_std").values
        assert len(zero) and all(0.0 <= v <= 1.0 and math.isfinite(v) for v in zero)


def test_the_fixture_run_is_what_write_run_writes(tmp_path: Path) -> None:
    """The checked-in run folder's dumps are `write_run(…)`'s (regenerate it with that)."""
    write_run(tmp_path)
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.jsonl"))
    fixture = sorted(p.relative_to(RUN_DIR).as_posix() for p in RUN_DIR.rglob("*.jsonl"))
    assert written == fixture
    for name in written:
        assert (tmp_path / name).read_bytes() == (RUN_DIR / name).read_bytes()
