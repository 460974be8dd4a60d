"""Every real sample in tests/fixtures (copied from ../shared/fixtures) is recognised by the
right adapter, read at the right steps with the canonical metrics it holds, and diagnosed
as its `.source.txt` describes. A sample added to the folder without a row here fails."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.sources.discover import discover

FIXTURES = Path(__file__).parent / "fixtures"
#: files beside the samples that are not logs (provenance notes, dumps, listings)
NOT_SAMPLES = (".source.txt", "-dump.txt", "_output-tree.txt", "labels.json")


@dataclass(frozen=True)
class Expected:
    adapter: str | None
    framework: str | None
    steps: tuple[float, ...] | None  # train and eval rows' steps in order (None: not checked)
    bad: int
    #: canonical metric → its value at the first row that logged it
    first: tuple[tuple[str, float], ...] = ()
    #: a scenario the diagnosis must show (None: too few points to say)
    scenario: str | None = None


EXPECTED: dict[str, Expected] = {
    # ms-swift
    "confluence-sql-grpo-20250813_grpo-v3.7_train-eval.jsonl": Expected(
        "ms-swift", "ms-swift", None, 0
    ),
    "deepclima-r1_sft-v3.x_logging.jsonl": Expected("ms-swift", "ms-swift", None, 0),
    "local-run-msswift-4.6.0_grpo-3rewards-eval_checkpoint-6_trainer_state.json": Expected(
        "trl", "TRL", None, 0
    ),
    # a completions file under another name: no metrics log of any framework
    "local-run-msswift-4.6.0_grpo-3rewards-eval_completions.jsonl": Expected(
        "jsonl", "JSON lines (no framework recognised)", None, 0
    ),
    "local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl": Expected(
        "ms-swift", "ms-swift", None, 0
    ),
    "local-run-msswift-4.6.0_grpo-numiter2-dapo-beta0_completions.jsonl": Expected(
        "jsonl", "JSON lines (no framework recognised)", None, 0
    ),
    "local-run-msswift-4.6.0_grpo-numiter2-dapo-beta0_logging.jsonl": Expected(
        "ms-swift", "ms-swift", None, 0
    ),
    "ms-swift-issue-4465_grpo-v3.5_nan.jsonl": Expected("ms-swift", "ms-swift", None, 0),
    "ms-swift-issue-5890_grpo-v3.8plus_no-memory.jsonl": Expected("ms-swift", "ms-swift", None, 0),
    # log_history items without ms-swift's progress key: no evidence of whose, but flat
    # records with a step and a reward, what a custom trainer writes (formats/custom.py)
    "ms-swift-issue-6295_grpo-v3.10dev_log_history-items.jsonl": Expected(
        "jsonl-custom", "JSON lines (custom)", None, 0
    ),
    "ms-swift-issue-5571_grpo-v3.8plus_console-repr.txt": Expected(
        "ms-swift-console",
        "ms-swift console log",
        (5.0,),
        0,
        (("grad_norm", 0.0), ("reward", 0.34375), ("frac_reward_zero_std", 0.0)),
    ),
    "ms-swift-issue-6718_megatron-grpo-v3.x_console.txt": Expected(
        "ms-swift-console",
        "ms-swift console log",
        (7.0,),
        0,
        (("reward", 0.7617188), ("frac_reward_zero_std", 0.71875), ("clip_ratio_high", 0.07975136)),
    ),
    # TRL
    "local-run-trl1.16.0-tf5.20.0_console.log": Expected("trl-console", "TRL console log", None, 0),
    "local-run-trl1.16.0-tf5.20.0_trainer_state.json": Expected("trl", "TRL", None, 0),
    "local-run-trl0.29.1-tf4.57.1_console.log": Expected(
        "trl-console",
        "TRL console log",
        None,
        0,
        (("clipped_ratio", 0.75), ("completion_length", 19.75)),
    ),
    "local-run-trl0.29.1-tf4.57.1_trainer_state.json": Expected(
        "trl", "TRL", None, 0, (("clipped_ratio", 0.75), ("completion_length", 19.75))
    ),
    "memgen_pr33_console.log": Expected(
        "trl-console",
        "TRL console log",
        (1.0, 2.0),
        1,  # line 2 is cut mid-dict: its whole values are read, the line counted
        (("grad_norm", 6.230460166931152),),
    ),
    "tinylora_issue4_num_iterations4.log": Expected(
        "trl-console", "TRL console log", (1.0, 2.0, 3.0, 4.0, 5.0), 0
    ),
    "trl_issue3452_legacy_0.14-0.16.log": Expected("trl-console", "TRL console log", None, 0),
    "trl_issue3857_zero_std_loss0.log": Expected(
        "trl-console", "TRL console log", None, 0, (("frac_reward_zero_std", 1.0),)
    ),
    "trl_transformers5_console_steps1-8.log": Expected("trl-console", "TRL console log", None, 0),
    # completions tables alone (no run around them): not a metrics log, said so
    "local-run-trl1.16.0-tf5.20.0_completions_00003.parquet": Expected(None, None, (), 0),
    "local-run-trl0.29.1-tf4.57.1_completions_00001.parquet": Expected(None, None, (), 0),
    # Unsloth, open-r1
    "chaos-economy_trainer_state.json": Expected(
        "trl", "Unsloth (TRL)", None, 0, scenario="truncation"
    ),
    "chaos-economy_training_logs.json": Expected(
        "trl", "Unsloth (TRL)", None, 0, scenario="truncation"
    ),
    "tau-bench_trainer_state.json": Expected(
        "trl",
        "Unsloth (TRL)",
        (10.0,),
        0,
        (("clipped_ratio", 0.9125), ("frac_reward_zero_std", 0.45), ("loss", 0.0)),
    ),
    "unsloth2026.5.8_transformers5.5_console_excerpt.log": Expected(
        "trl-console",
        "Unsloth (TRL console log)",
        None,
        0,
        (("frac_reward_zero_std", 0.8),),
    ),
    "unsloth_tf5_mode_collapse_terminal_wrapped.log": Expected(
        "trl-console", "Unsloth (TRL console log)", None, 0, (("frac_reward_zero_std", 1.0),)
    ),
    "openr1_issue255_trl0.14.log": Expected(
        "trl-console", "open-r1 (TRL console log)", (1.0, 2.0, 3.0), 1
    ),
    # verl, OpenRLHF (a paste that ends inside a step line: one line cut off, counted)
    "agent_r1_issue30_nan.log": Expected(
        "verl-console", "verl console log", (83.0,), 1, (("reward", -1.0),)
    ),
    # run from a terminal through tee: Ray's coloured prefix on every line
    "verl_econagent_ray_colours_first5.log": Expected(
        "verl-console",
        "verl console log",
        (1.0, 2.0, 3.0, 4.0, 5.0),
        0,
        (("reward", 0.13470733165740967),),
    ),
    "verl_filelogger_intercode_rl-debug-run1.jsonl": Expected(
        "verl",
        "verl",
        tuple(float(step) for step in range(25)),
        0,
        (("reward", 0.7103906273841858),),
    ),
    # W&B's files/output.log: lines cut at 4096 characters (two step lines), counted
    "verl_wandb_output_log_cut_at_4096.log": Expected(
        "verl-console",
        "verl console log",
        tuple(float(step) for step in range(14)),
        2,
        (("reward", -0.5189452767372131),),
    ),
    "verl_entropy_mechanism_issue21_val.log": Expected(
        "verl-console", "verl console log", (4.0,), 1
    ),
    "verl_issue2060_step0_val_and_step1.log": Expected(
        "verl-console", "verl console log", (0.0, 1.0), 1, (("reward", 0.558),)
    ),
    "verl_issue316_v0.2_main_task.log": Expected(
        "verl-console", "verl console log", (5.0,), 1, (("entropy", 5.683),)
    ),
    "verl_issue498_ppo_critic_vf_loss_nan.log": Expected(
        "verl-console", "verl console log", (1.0,), 0
    ),
    "verl_issue7412_console_newengine.log": Expected(
        "verl-console", "verl console log", (34.0,), 1
    ),
    # a fragment from the middle of a line: no step in it, nothing to read
    "verl_issue7412_console_newengine_timing_fragment.log": Expected(
        "trl-console", "TRL console log", (), 0
    ),
    "verl_sglang_tutorial_issue106_v0.3_zero_adv.log": Expected(
        "verl-console", "verl console log", (83.0,), 0, (("reward", 0.906),)
    ),
    # NeMo-RL's metrics.json (its json_dump_tb_logs.py): the issue-44 collapse
    "nemo-rl-7ea279a_grpo-collapse_metrics.json": Expected(
        "nemo-rl",
        "NeMo-RL",
        None,
        0,
        (("entropy", 0.6), ("clipped_ratio", 0.1), ("eval_reward", 0.2)),
    ),
    "openrlhf_dr_grpo_abridged.log": Expected(
        "openrlhf", "OpenRLHF console log", (2.0,), 0, (("grad_norm", 501.68092449284933),)
    ),
    "openrlhf_lfm2_smoke_abridged.log": Expected(
        "openrlhf", "OpenRLHF console log", (1.0, 2.0), 0, (("reward_std", 0.0),)
    ),
    # issue 44's trainers (tests/test_slime.py, test_skyrl.py, test_areal.py, test_roll.py,
    # test_art.py, test_custom_jsonl.py): built from each trainer's source but slime's
    # issue-1837 line
    "slime-issue-1837_perf-line.log": Expected(
        "slime-console",
        "slime console log",
        (0.0,),
        0,
        (("completion_length", 2773.71484375), ("clipped_ratio", 0.46484375)),
    ),
    "slime-624b824_console.log": Expected(
        "slime-console",
        "slime console log",
        None,
        0,
        (("reward", 0.23332279251016055), ("frac_reward_zero_std", 0.3125)),
        "healthy",
    ),
    "skyrl-a956457_console.log": Expected(
        "skyrl-console", "SkyRL console log", None, 0, (("reward", 0.2333),), "healthy"
    ),
    "tinker-cookbook-9dfcc3a_metrics.jsonl": Expected(
        "tinker",
        "Tinker (tinker-cookbook)",
        None,
        0,
        (("reward", 0.23332279251016055), ("frac_reward_zero_std", 0.65), ("done_frac", 0.025)),
        "healthy",
    ),
    "areal-4aef98d_console.log": Expected(
        "areal-console",
        "AReaL console log",
        None,
        0,
        (("reward", 0.23332), ("completion_length", 722.7)),
        "healthy",
    ),
    "roll-8eb27cc_console.log": Expected(
        "roll-console", "ROLL console log", None, 0, (("reward", 0.23332279251016055),), "healthy"
    ),
    "art-0.5.18_history.jsonl": Expected(
        "art",
        "OpenPipe ART",
        None,
        0,
        (("reward", 0.23332279251016055), ("frac_reward_zero_std", 0.5625)),
        "healthy",
    ),
    "custom-trainer_train_metrics.jsonl": Expected(
        "jsonl-custom",
        "JSON lines (custom)",
        None,
        0,
        (("reward", 0.23332279251016055),),
        "healthy",
    ),
    # the lines that end runs (tests/test_stop_lines.py): console text with no metric
    # dict but ms-swift's eval line at step 480 before its SIGHUP
    **{
        name: Expected("trl-console", "TRL console log", (), 0)
        for name in (
            "dmlcloud-issue-47_gloo-timeout.log",
            "open-r1-issue-620_nccl-watchdog.log",
            "skyrl-source_training-failed.log",
            "stoke-issue-31_sigkill.log",
            "tinker-source_training-completed.log",
            "toolrl-issue-39_verl-oom.log",
            "trl-issue-3455_traceback.log",
            "verl-issue-2987_actor-died.log",
            "landmark-issue-65_killed.log",
            "zetta-utils-issue-671_slurm-time-limit.log",
            "rrhf-issue-35_signal-exception.log",
        )
    },
    "ms-swift-issue-9788_sighup.log": Expected(
        "ms-swift-console", "ms-swift console log", (480.0,), 0, (("eval_loss", 3.055),)
    ),
}


def samples() -> list[Path]:
    return sorted(
        path
        for path in FIXTURES.glob("*/*")
        if path.is_file() and not path.name.endswith(NOT_SAMPLES)
    )


def test_every_sample_has_its_expectation() -> None:
    assert {path.name for path in samples()} == set(EXPECTED)


@pytest.mark.parametrize("path", samples(), ids=lambda path: path.name)
def test_a_sample_is_read_by_the_right_adapter_at_the_right_steps(path: Path) -> None:
    expected = EXPECTED[path.name]
    assert discover(path).adapter == expected.adapter
    run = load_run(path)
    assert run.framework == expected.framework
    assert run.bad_line_count == expected.bad, [b.reason for b in run.bad_lines]
    if expected.steps is not None:
        assert tuple(float(s) for s in run.store.steps) == expected.steps
    for name, value in expected.first:
        points = run.store.points(name)
        assert len(points), name
        assert points.values[0] == pytest.approx(value, rel=1e-6), name
    if expected.scenario is not None:
        scenarios = {s.id.value for s in diagnose(run, Rules()).scenarios}
        assert expected.scenario in scenarios


def test_no_sample_is_read_at_a_step_that_is_not_a_number() -> None:
    for path in samples():
        steps = load_run(path).store.steps
        assert all(math.isfinite(float(s)) for s in steps), path
