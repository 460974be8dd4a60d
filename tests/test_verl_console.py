"""verl's console lines as users' terminals leave them (sources/formats/verl.py through
sources/console.py): Ray's coloured prefixes of every kind, lines pasted indented."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import block_records

from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.sources.console import ConsoleReader
from grpo_tui.sources.discover import discover
from grpo_tui.sources.formats.layout import strip_terminal_codes
from grpo_tui.sources.formats.verl import VERL_CONSOLE, shows_console, verl_settings

RAY_COLOURED = Path(__file__).parent / "fixtures" / "verl" / "verl_econagent_ray_colours_first5.log"

LINE = "step:{step} - actor/entropy:np.float64(0.41) - critic/score/mean:{score}"


@pytest.mark.parametrize(
    "prefix",
    [
        "\x1b[36m(TaskRunner pid=64115)\x1b[0m ",
        "\x1b[36m(main_task pid=2217)\x1b[0m ",
        "\x1b[36m(WorkerDict pid=913, ip=10.0.0.7)\x1b[0m ",
        "(TaskRunner pid=1) ",
        "    ",  # pasted as a markdown code block
        "",
    ],
)
def test_every_ray_prefix_coloured_or_not_is_read(prefix: str, tmp_path: Path) -> None:
    text = "".join(
        prefix + LINE.format(step=step, score=score) + "\n" for step, score in ((1, 0.25), (2, 0.5))
    )
    reader = ConsoleReader("train.log", VERL_CONSOLE)
    batch = reader.read_chunk(("```\n" + text + "```\n").encode())
    records = [record for block in batch.blocks for record in block_records(block)]
    assert [(r.step, r.values["reward"], r.values["entropy"]) for r in records] == [
        (1.0, 0.25, 0.41),
        (2.0, 0.5, 0.41),
    ]
    assert not batch.bad_lines
    log = tmp_path / "train.log"
    log.write_text(text, encoding="utf-8")
    assert discover(log).adapter == "verl-console"


def test_terminal_codes_are_stripped_and_plain_text_is_left_alone() -> None:
    coloured = "\x1b[1m\x1b[32mhttp://127.0.0.1:8265 \x1b[39m\x1b[22m\x1b]0;title\x07done"
    assert strip_terminal_codes(coloured) == "http://127.0.0.1:8265 done"
    assert strip_terminal_codes("step:1 - a:1") == "step:1 - a:1"
    assert not shows_console("\x1b[36m(TaskRunner pid=1)\x1b[0m step:1 - a:1")  # unstripped
    assert shows_console(strip_terminal_codes("\x1b[36m(TaskRunner pid=1)\x1b[0m step:1 - a:1"))


def test_a_step_line_cut_at_4096_characters_is_counted_with_its_whole_values() -> None:
    """W&B cuts console lines at 4096 characters: the fields before the cut are kept, the
    line is counted as bad, and the next step reads as usual."""
    head = "step:10 - actor/entropy:np.float64(0.25) - "
    filler = " - ".join(f"val-aux/d/reward/best@{n}/mean:0.5" for n in range(200))
    cut = (head + filler)[:4096]
    assert not cut.endswith("0.5")  # the cut falls inside a field
    text = cut + "\nTraining Progress: 10/55\n" + LINE.format(step=11, score=0.75) + "\n"
    reader = ConsoleReader("output.log", VERL_CONSOLE)
    batch = reader.read_chunk(text.encode())
    (bad,) = batch.bad_lines
    assert bad.line_no == 1 and "cut off at 4096 characters" in bad.reason
    records = {r.step: r.values for block in batch.blocks for r in block_records(block)}
    assert records[10.0]["entropy"] == 0.25 and "reward" not in records[10.0]
    assert records[11.0]["reward"] == 0.75


def test_a_step_line_the_file_ends_inside_is_counted_at_the_end() -> None:
    reader = ConsoleReader("train.log", VERL_CONSOLE)
    batch = reader.read_chunk(b"step:1 - actor/entropy:0.5 - critic/score/mea\n")
    assert not batch.bad_lines  # live, the next line may still be its rest
    assert [r.values for block in batch.blocks for r in block_records(block)] == [{"entropy": 0.5}]
    assert [b.reason for b in reader.finish().bad_lines] == [
        "a step line cut off inside a field: 1 whole values kept"
    ]


def test_the_config_the_log_printed_is_the_run_context() -> None:
    """verl prints its whole config at start (pformat, Ray prefixes on every line): the
    cap, group size, KL, updates per batch and planned steps are read from it."""
    run = load_run(RAY_COLOURED)
    context = run.context
    assert context.max_completion_length == 128  # data.max_response_length
    assert context.max_steps == 300  # trainer.total_training_steps
    assert context.learning_rate == 1e-05 and context.temperature == 1.0
    assert (context.epsilon, context.epsilon_high) == (0.2, 0.2)
    assert context.beta == 0.0  # no KL loss, no KL in the reward
    assert context.num_iterations == 1 and context.off_policy is False  # 1 epoch, 1 mini-batch
    assert context.num_generations == 1  # actor_rollout_ref.rollout.n, as this run set it
    assert context.model == "/workspace/models/Qwen2.5-7B-Instruct"
    assert not run.status.notes


def test_verl_settings_name_the_kl_that_is_in_use() -> None:
    actor = {"use_kl_loss": True, "kl_loss_coef": 0.04, "ppo_epochs": 2, "ppo_mini_batch_size": 16}
    config = {
        "actor_rollout_ref": {"actor": actor, "rollout": {"n": 8}},
        "algorithm": {"use_kl_in_reward": True, "kl_ctrl": {"kl_coef": 0.001}},
        "data": {"train_batch_size": 64, "max_response_length": 1024},
    }
    settings = verl_settings(config)
    assert settings["beta"] == 0.04 and settings["num_iterations"] == 2 * 4
    actor["use_kl_loss"] = False
    assert verl_settings(config)["beta"] == 0.001  # the in-reward penalty's
    config["algorithm"]["use_kl_in_reward"] = False  # type: ignore[index]
    assert verl_settings(config)["beta"] == 0.0


def test_responses_cut_at_the_cap_are_truncation_whatever_the_mean(tmp_path: Path) -> None:
    """response_length/clip_ratio is the share cut at the cap: a third of the responses cut
    is truncation although the mean length sits at 40 % of the cap."""
    config = "{'actor_rollout_ref': {'rollout': {'n': 8}}, 'data': {'max_response_length': 128}}"
    lines = [config] + [
        f"step:{step} - critic/score/mean:{0.2 + step / 200:.3f} - response_length/mean:51.0"
        f" - response_length/max:128.0 - response_length/clip_ratio:0.34"
        for step in range(1, 61)
    ]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = load_run(log)
    assert run.context.max_completion_length == 128
    assert len(run.store.points("clipped_ratio")) == 60
    scenarios = {s.id.value for s in diagnose(run, Rules()).scenarios}
    assert "truncation" in scenarios


def _verl_log(tmp_path: Path, score: list[float], shaped: list[float]) -> Path:
    lines = [
        f"step:{step} - critic/score/mean:{s:.4f} - critic/rewards/mean:{r:.4f}"
        f" - actor/entropy:0.4 - response_length/mean:300.0"
        for step, (s, r) in enumerate(zip(score, shaped, strict=True), 1)
    ]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return log


def test_a_shaped_reward_rising_while_the_task_score_falls_is_reward_hacking(
    tmp_path: Path,
) -> None:
    """verl's critic/rewards/mean (the score less the in-reward KL penalty) climbing while
    critic/score/mean falls: the penalty is gamed, not the task (the W&B corpus run)."""
    rng = np.random.default_rng(0)
    n = 60
    score = list(-0.55 - 0.35 * np.linspace(0, 1, n) + rng.normal(0, 0.03, n))
    shaped = list(-18 + 16 * np.linspace(0, 1, n) + rng.normal(0, 0.5, n))
    diagnosis = diagnose(load_run(_verl_log(tmp_path, score, shaped)), Rules())
    hacking = [s for s in diagnosis.scenarios if s.id.value == "reward_hacking"]
    assert hacking and hacking[0].severity.word == "problem"
    assert "shaped_reward (the task score less the KL penalty) rose" in hacking[0].evidence[0].text
    assert any("KL penalty in the reward" in advice for advice in hacking[0].advice)


def test_a_shaped_reward_rising_with_the_task_score_is_no_alarm(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    n = 60
    score = list(0.2 + 0.5 * np.linspace(0, 1, n) + rng.normal(0, 0.03, n))
    shaped = list(0.1 + 0.5 * np.linspace(0, 1, n) + rng.normal(0, 0.03, n))
    diagnosis = diagnose(load_run(_verl_log(tmp_path, score, shaped)), Rules())
    assert "reward_hacking" not in {s.id.value for s in diagnosis.scenarios}
