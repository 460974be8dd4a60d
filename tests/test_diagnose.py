"""The diagnosis on hand-made runs with known answers, the simulator's scenarios, and real
fixtures (asserting what each one's .source.txt says the data shows)."""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import MS_SWIFT, THREE_REWARDS_ARGS, msswift_run_dir

from grpo_tui.health.diagnose import (
    Diagnosis,
    diagnose,
    reward_role,
    zone_bands,
    zone_of_values,
)
from grpo_tui.health.rules import Rules, rules_from_dict
from grpo_tui.run.completion_stats import CompletionsSummary, StepSampleStats
from grpo_tui.run.follow import load_run
from grpo_tui.run.live import Run
from grpo_tui.sim import SCENARIOS, write_run
from grpo_tui.sources.context import RunContext
from grpo_tui.sources.feed import FeedStatus
from grpo_tui.sources.formats.trl import TRL
from grpo_tui.sources.records import Batch, ColumnGroup, Record, RowBlock
from grpo_tui.vocabulary import LineKind, ScenarioId, Zone

FIXTURES = Path(__file__).parent / "fixtures"
RULES = Rules()

Column = Sequence[float | None]


def make_run(
    columns: dict[str, Column],
    *,
    context: RunContext | None = None,
    steps: Sequence[float] | None = None,
    source_keys: dict[str, str] | None = None,
    samples: CompletionsSummary | None = None,
) -> Run:
    """A run with one train line per row: None = not logged on that line, NaN = logged NaN."""
    n = max(len(values) for values in columns.values())
    steps = list(steps) if steps is not None else list(range(1, n + 1))
    records = []
    for i in range(n):
        values = {k: float(v[i]) for k, v in columns.items() if i < len(v) and v[i] is not None}
        records.append(Record(LineKind.TRAIN, float(steps[i]), values, dict(source_keys or {})))
    run = Run(Path("run"), status=FeedStatus(context=context or RunContext()))
    run.ingest(Batch(blocks=[RowBlock.of(records)]))
    run.samples = samples
    return run


def noise(n: int, sigma: float, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, sigma, n)


def healthy_columns(n: int = 200, seed: int = 0) -> dict[str, Column]:
    x = np.arange(n) / n
    return {
        "reward": list(0.2 + 0.5 * x + noise(n, 0.03, seed)),
        "reward_std": list(0.3 + noise(n, 0.02, seed + 1)),
        "frac_reward_zero_std": list(np.clip(0.45 - 0.3 * x + noise(n, 0.03, seed + 2), 0, 1)),
        "clip_ratio": [0.0] * n,
        "kl": list(0.001 + 0.02 * x),
        "entropy": list(0.8 - 0.1 * x + noise(n, 0.01, seed + 3)),
        "completion_length": list(300 + noise(n, 10, seed + 4)),
        "clipped_ratio": [0.02] * n,
        "loss": list(noise(n, 0.01, seed + 5)),
        "grad_norm": list(0.3 + noise(n, 0.03, seed + 6)),
    }


ON_POLICY = RunContext(num_iterations=1, max_completion_length=1024, beta=0.04)


def ids(diagnosis: Diagnosis, severity: str | None = None) -> list[str]:
    return [
        s.id.word for s in diagnosis.scenarios if severity is None or s.severity.word == severity
    ]


def evidence_text(diagnosis: Diagnosis, scenario_id: str) -> str:
    scenario = diagnosis.scenario(ScenarioId(scenario_id))
    assert scenario is not None, f"{scenario_id} not in {ids(diagnosis)}"
    return "\n".join(e.text for e in scenario.evidence)


def answer(diagnosis: Diagnosis, number: int) -> str:
    return diagnosis.checklist[number - 1].answer.word


# -- shape of the result --------------------------------------------------------------------


def test_healthy_run() -> None:
    d = diagnose(make_run(healthy_columns(), context=ON_POLICY), RULES)
    assert d.status.word == "healthy"
    assert ids(d) == ["healthy"]
    assert [c.id for c in d.checklist] == list(range(1, 9))
    assert [answer(d, i) for i in range(1, 9)] == [
        "yes",
        "yes",
        "yes",
        "yes",
        "yes",
        "unknown",
        "unknown",
        "yes",
    ]
    assert d.metrics["clip_ratio"].zone.word == "n/a"
    assert d.metrics["reward"].trend.word == "rising"
    healthy = d.scenario(ScenarioId.HEALTHY)
    assert healthy is not None and healthy.severity.word == "ok" and healthy.onset_step is not None
    assert all(e.window.points > 0 for e in healthy.evidence)


def test_empty_run_is_unknown() -> None:
    d = diagnose(Run(Path("nothing")), RULES)
    assert d.status.word == "unknown" and d.scenarios == [] and d.metrics == {}
    assert [c.answer.word for c in d.checklist] == ["unknown"] * 8


def test_scenarios_are_sorted_worst_first_and_ids_are_known() -> None:
    columns = healthy_columns()
    columns["clipped_ratio"] = [0.7] * 200  # truncation: problem
    columns["reward"] = list(0.4 + noise(200, 0.03))  # flat: not learning, caution
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert ids(d) == ["truncation", "not_learning"]
    assert [s.severity.word for s in d.scenarios] == ["problem", "caution"]
    assert d.status.word == "problem"
    assert set(ids(d)) <= {scenario.word for scenario in ScenarioId}
    assert {zone.word: zone.glyph for zone in Zone} == {
        "healthy": "✓",
        "caution": "!",
        "bad": "✗",
        "unknown": "?",
        "n/a": "·",
    }


# -- warming up --------------------------------------------------------------------------------


def test_short_run_is_warming_up_not_a_verdict() -> None:
    d = diagnose(
        make_run({k: v[:5] for k, v in healthy_columns().items()}, context=ON_POLICY),
        RULES,
    )
    assert ids(d) == ["warming_up"]
    assert d.status.word == "unknown"
    assert d.metrics["reward"].trend.word == "unknown"
    assert answer(d, 1) == "unknown"


def test_unmistakable_zero_spread_is_a_problem_even_while_warming_up() -> None:
    d = diagnose(
        make_run(
            {
                "reward": [0.0] * 3,
                "reward_std": [0.0] * 3,
                "frac_reward_zero_std": [1.0] * 3,
            }
        ),
        RULES,
    )
    assert ids(d, "problem") == ["not_learning"]
    assert "warming_up" in ids(d)
    assert d.status.word == "problem"


# -- zero spread: all fail or all pass ----------------------------------------------------------


def test_zero_spread_all_fail_with_onset() -> None:
    n = 120
    columns = healthy_columns(n)
    # healthy until step 60, then every group fails: reward 0, no spread
    columns["reward"] = list(columns["reward"][:60]) + [0.0] * 60  # type: ignore[index]
    columns["reward_std"] = list(columns["reward_std"][:60]) + [0.0] * 60  # type: ignore[index]
    columns["frac_reward_zero_std"] = list(columns["frac_reward_zero_std"][:60]) + [1.0] * 60  # type: ignore[index]
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    scenario = d.scenario(ScenarioId.NOT_LEARNING)
    assert scenario is not None and scenario.severity.word == "problem"
    assert scenario.onset_step == 61
    assert any("too hard" in advice for advice in scenario.advice)  # the all-fail advice
    assert answer(d, 2) == "no" and answer(d, 3) == "no"
    assert d.metrics["reward_std"].zone.word == "bad"
    assert d.metrics["frac_reward_zero_std"].zone.word == "bad"


def test_zero_spread_all_pass_is_saturation_not_a_failure_to_learn() -> None:
    n = 120
    x = np.arange(n) / n
    reward = np.minimum(1.0, 0.3 + 1.2 * x) + noise(n, 0.005)
    reward[80:] = 1.0
    frac = np.clip(0.2 + 0.9 * x, 0, 1)
    frac[80:] = 0.95
    std = np.clip(0.4 - 0.4 * x, 0, 1)
    std[80:] = 0.0
    d = diagnose(
        make_run(
            {
                "reward": list(reward),
                "reward_std": list(std),
                "frac_reward_zero_std": list(frac),
            }
        ),
        RULES,
    )
    assert "not_learning" not in ids(d)
    saturated = d.scenario(ScenarioId.SATURATED)
    assert (
        saturated is not None and saturated.severity.word == "caution"
    )  # >0.8 all-pass: nothing left to learn
    assert "all pass" in evidence_text(d, "saturated")


def test_zero_spread_kind_from_the_logged_groups() -> None:
    stats = tuple(
        StepSampleStats(float(s), 4, 32, 1.0, 1.0, 0.0, 0.6, 0.1, None, 400.0, None)
        for s in range(1, 31)
    )
    run = make_run(
        {
            "reward": [0.5] * 30,
            "reward_std": [0.0] * 30,
            "frac_reward_zero_std": [1.0] * 30,
        },
        samples=CompletionsSummary(30, stats),
    )
    d = diagnose(run, RULES)
    scenario = d.scenario(ScenarioId.NOT_LEARNING)
    assert scenario is not None and scenario.severity.word == "problem"
    assert "100% all fail" in "\n".join(e.text for e in scenario.evidence)


# -- reward functions ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("accuracy_reward", "task"),
        ("MathAccuracy", "task"),
        ("PointwiseRMAccuracyORM", "task"),
        ("correctness_reward", "task"),
        ("math_verify", "task"),
        ("format_reward", "aux"),
        ("LengthBonus", "aux"),
        ("reasoning_steps_reward", "aux"),
        ("cosine_scaled_reward", "aux"),
        ("think_response_format_reward", "aux"),
        ("CoinFlip", "other"),
        ("if_rewrite_reward", "other"),
    ],
)
def test_reward_roles_from_names(name: str, role: str) -> None:
    assert reward_role(name, RULES) == role


def test_reward_roles_are_configurable() -> None:
    rules, _ = rules_from_dict({"rewards": {"task_patterns": ["rewrite"]}})
    assert reward_role("if_rewrite_reward", rules) == "task"


def test_function_stuck_at_its_floor_is_named() -> None:
    columns = healthy_columns(100)
    columns["rewards/correctness_reward/mean"] = [0.0] * 100
    columns["rewards/correctness_reward/std"] = [0.0] * 100
    columns["rewards/format_reward/mean"] = list(np.linspace(0.2, 0.9, 100))
    columns["rewards/format_reward/std"] = [0.3] * 100
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    scenario = d.scenario(ScenarioId.NOT_LEARNING)
    assert (
        scenario is not None and scenario.severity.word == "problem"
    )  # the only task reward is dead
    assert "correctness_reward: 0 on every completion" in evidence_text(d, "not_learning")
    assert d.metrics["rewards/correctness_reward/mean"].zone.word == "bad"
    assert "healthy" not in ids(d)


def aux_only_columns(n: int, format_curve: np.ndarray) -> dict[str, Column]:
    accuracy = 0.3 + noise(n, 0.03, 11)
    columns = healthy_columns(n)
    columns["rewards/accuracy_reward/mean"] = list(accuracy)
    columns["rewards/accuracy_reward/std"] = list(0.4 + noise(n, 0.01, 12))
    columns["rewards/format_reward/mean"] = list(format_curve)
    columns["rewards/format_reward/std"] = list(np.maximum(0.0, 0.3 * (1 - format_curve)))
    columns["reward"] = list(accuracy + format_curve)
    return columns


def test_reward_rising_only_through_an_auxiliary_reward_is_never_healthy() -> None:
    n = 200
    d = diagnose(
        make_run(aux_only_columns(n, np.linspace(0.1, 0.6, n)), context=ON_POLICY),
        RULES,
    )
    assert "healthy" not in ids(d)
    text = evidence_text(d, "not_learning")
    assert "only through auxiliary rewards" in text and "accuracy_reward flat" in text


def test_auxiliary_reward_saturating_while_the_task_stalls_is_reward_hacking() -> None:
    n = 200
    curve = np.minimum(1.0, np.linspace(0.1, 2.0, n))
    d = diagnose(make_run(aux_only_columns(n, curve), context=ON_POLICY), RULES)
    assert ids(d, "problem") == ["reward_hacking"]
    assert "format_reward saturated" in evidence_text(d, "reward_hacking")
    hacking = d.scenario(ScenarioId.REWARD_HACKING)
    assert (
        hacking is not None and hacking.onset_step is not None and 80 <= hacking.onset_step <= 110
    )


# -- clip ratio context rule ----------------------------------------------------------------------


def test_on_policy_zero_clip_is_not_applicable() -> None:
    d = diagnose(make_run(healthy_columns(), context=ON_POLICY), RULES)
    assert d.metrics["clip_ratio"].zone.word == "n/a"
    assert answer(d, 4) == "yes"


def test_unknown_context_says_so_instead_of_warning() -> None:
    d = diagnose(make_run(healthy_columns(), context=RunContext()), RULES)
    assert d.metrics["clip_ratio"].zone.word == "unknown"
    assert "not known" in d.metrics["clip_ratio"].reason
    assert answer(d, 4) == "unknown"
    assert d.status.word == "healthy"


def test_off_policy_zero_clip_is_too_weak() -> None:
    context = RunContext(num_iterations=2, max_completion_length=1024)
    d = diagnose(make_run(healthy_columns(), context=context), RULES)
    assert d.metrics["clip_ratio"].zone.word == "caution"
    assert answer(d, 4) == "no"
    assert "clip_ratio" in evidence_text(d, "not_learning")


def reuse_columns(n: int, reuse_clip: float) -> dict[str, Column]:
    """num_iterations 2: odd lines generate (reward logged, clip 0), even lines re-use the
    batch (no reward keys, real clip values)."""
    base = healthy_columns(n)
    columns: dict[str, Column] = {}
    for name, values in base.items():
        if name in ("clip_ratio", "loss", "grad_norm", "kl", "entropy"):
            columns[name] = values
        else:
            columns[name] = [v if i % 2 == 0 else None for i, v in enumerate(values)]
    columns["clip_ratio"] = [0.0 if i % 2 == 0 else reuse_clip for i in range(n)]
    return columns


def test_clip_is_judged_on_reuse_steps_only() -> None:
    context = RunContext(num_iterations=2, max_completion_length=1024)
    moderate = diagnose(make_run(reuse_columns(200, 0.1), context=context), RULES)
    assert (
        moderate.metrics["clip_ratio"].zone.word == "healthy"
    )  # the generation steps' zeros do not count
    assert "re-use steps only" in moderate.metrics["clip_ratio"].reason
    high = diagnose(make_run(reuse_columns(200, 0.45), context=context), RULES)
    assert high.metrics["clip_ratio"].zone.word == "bad"
    assert ids(high, "problem") == ["too_aggressive"]


def test_nonzero_clip_proves_off_policy_whatever_the_args_say() -> None:
    columns = healthy_columns()
    columns["clip_ratio"] = list(0.05 + noise(200, 0.005))
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert d.metrics["clip_ratio"].zone.word == "healthy"
    assert "prove" in d.metrics["clip_ratio"].reason


def test_clip_spike_is_a_caution() -> None:
    columns = healthy_columns()
    clip = [0.05] * 200
    clip[195] = 0.6
    columns["clip_ratio"] = clip
    d = diagnose(
        make_run(columns, context=RunContext(num_iterations=2, max_completion_length=1024)),
        RULES,
    )
    assert d.metrics["clip_ratio"].zone.word == "caution"
    assert "spike 0.6 at step 196" in d.metrics["clip_ratio"].reason


# -- KL scale rule -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "zone", "scenario"),
    [(0.5, "caution", "caution"), (2.0, "bad", "problem")],
)
def test_kl_levels(level: float, zone: str, scenario: str) -> None:
    columns = healthy_columns()
    columns["kl"] = list(level + noise(200, 0.01))
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert d.metrics["kl"].zone.word == zone
    too_aggressive = d.scenario(ScenarioId.TOO_AGGRESSIVE)
    assert too_aggressive is not None and too_aggressive.severity.word == scenario
    assert answer(d, 8) == "no"


def test_kl_exploding() -> None:
    columns = healthy_columns()
    # steady at 0.02, then a hundredfold climb within the last window
    columns["kl"] = list(np.concatenate([0.02 + noise(180, 0.001), np.linspace(0.05, 2.0, 20)]))
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert d.metrics["kl"].zone.word == "bad"
    assert d.metrics["kl"].trend.word == "exploding"
    assert "exploding" in d.metrics["kl"].reason
    assert ids(d, "problem") == ["too_aggressive"]


def test_kl_only_nan_is_unknown_not_bad() -> None:
    columns = healthy_columns(30)
    columns["kl"] = [math.nan] * 30
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert d.metrics["kl"].zone.word == "unknown"
    assert answer(d, 8) == "unknown"
    assert "too_aggressive" not in ids(d)


def test_kl_on_another_scale_is_judged_on_its_own_history() -> None:
    columns = healthy_columns()
    columns["kl"] = list(25.0 + noise(200, 0.5))  # a per-sequence sum: far above per-token levels
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert d.metrics["kl"].zone.word == "healthy"
    assert "per-sequence" in d.metrics["kl"].reason
    columns["kl"] = list(0.004 + noise(200, 0.0005))
    drift = diagnose(
        make_run(columns, context=ON_POLICY, source_keys={"kl": "actor/ppo_kl"}), RULES
    )
    assert "not a per-token KL" in drift.metrics["kl"].reason


def test_beta_zero_makes_kl_not_applicable() -> None:
    columns = healthy_columns()
    columns["kl"] = [0.0] * 200
    d = diagnose(make_run(columns, context=RunContext(num_iterations=1, beta=0.0)), RULES)
    assert d.metrics["kl"].zone.word == "n/a"


# -- optimiser -------------------------------------------------------------------------------------


def test_nan_loss_is_a_problem() -> None:
    columns = healthy_columns()
    columns["loss"] = list(columns["loss"][:-3]) + [math.nan] * 3  # type: ignore[index]
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert d.metrics["loss"].zone.word == "bad"
    assert ids(d, "problem") == ["too_aggressive"]


def test_grad_norm_spike_is_a_caution_and_zero_grad_norm_means_not_learning() -> None:
    columns = healthy_columns()
    grad = list(0.3 + noise(200, 0.01))
    grad[190] = 12.0
    columns["grad_norm"] = grad
    spiky = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert spiky.metrics["grad_norm"].zone.word == "caution"
    assert "1 spike(s)" in spiky.metrics["grad_norm"].reason
    columns["grad_norm"] = [0.0] * 200
    dead = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert dead.metrics["grad_norm"].zone.word == "bad"
    assert ids(dead, "problem") == ["not_learning"]
    assert "no update reaches the weights" in evidence_text(dead, "not_learning")


# -- length ---------------------------------------------------------------------------------------


def test_truncation_from_clipped_ratio_and_from_the_cap() -> None:
    columns = healthy_columns()
    columns["clipped_ratio"] = [0.8] * 200
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert ids(d, "problem") == ["truncation"]
    columns["clipped_ratio"] = [0.02] * 200
    columns["completion_length"] = [1010.0] * 200  # 98.6% of 1024
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert ids(d, "problem") == ["truncation"]
    assert "of max 1024" in evidence_text(d, "truncation")


def test_length_zone_without_max_comes_from_clipped_ratio() -> None:
    columns = healthy_columns()
    d = diagnose(make_run(columns, context=RunContext(num_iterations=1)), RULES)
    assert d.metrics["completion_length"].zone.word == "healthy"
    assert "max_completion_length unknown" in d.metrics["completion_length"].reason
    del columns["clipped_ratio"]
    d = diagnose(make_run(columns, context=RunContext(num_iterations=1)), RULES)
    assert d.metrics["completion_length"].zone.word == "unknown"
    assert answer(d, 5) == "unknown"


@pytest.mark.parametrize(("end", "severity"), [(40.0, "problem"), (250.0, "caution")])
def test_length_collapse(end: float, severity: str) -> None:
    columns = healthy_columns()
    columns["completion_length"] = list(
        np.concatenate([np.full(100, 400.0), np.linspace(400, end, 50), np.full(50, end)])
    )
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    collapse = d.scenario(ScenarioId.LENGTH_COLLAPSE)
    assert collapse is not None and collapse.severity.word == severity
    assert collapse.onset_step is not None and 100 < collapse.onset_step < 150
    assert answer(d, 5) == "no"


# -- diversity and samples --------------------------------------------------------------------------


def sample_stats(
    n: int, overlap: Sequence[float], fmt: Sequence[float | None]
) -> CompletionsSummary:
    steps = tuple(
        StepSampleStats(float(i + 1), 4, 32, 0.1, 0.05, 0.05, 0.5, overlap[i], fmt[i], 500.0, 0.0)
        for i in range(n)
    )
    return CompletionsSummary(n, steps)


def test_identical_completions_are_low_diversity() -> None:
    samples = sample_stats(30, [0.9] * 30, [0.8] * 30)
    d = diagnose(make_run(healthy_columns(), context=ON_POLICY, samples=samples), RULES)
    scenario = d.scenario(ScenarioId.LOW_DIVERSITY)
    assert scenario is not None and scenario.severity.word == "problem"
    assert scenario.onset_step == 1
    assert answer(d, 6) == "no"


def test_samples_answer_the_sixth_question() -> None:
    better = sample_stats(20, [0.2] * 20, list(np.linspace(0.3, 0.9, 20)))
    d = diagnose(make_run(healthy_columns(), context=ON_POLICY, samples=better), RULES)
    assert answer(d, 6) == "yes"
    worse = sample_stats(20, [0.2] * 20, list(np.linspace(0.9, 0.3, 20)))
    d = diagnose(make_run(healthy_columns(), context=ON_POLICY, samples=worse), RULES)
    assert answer(d, 6) == "no"
    assert "format compliance falling" in d.checklist[5].evidence
    # only #1 ✓ while the samples get worse: never healthy
    assert answer(d, 1) == "yes"
    assert "healthy" not in ids(d)
    assert "format compliance falls" in evidence_text(d, "reward_hacking")
    no_format = sample_stats(20, [0.2] * 20, [None] * 20)
    assert (
        answer(
            diagnose(make_run(healthy_columns(), context=ON_POLICY, samples=no_format), RULES),
            6,
        )
        == "unknown"
    )


def test_entropy_collapse_is_low_diversity() -> None:
    columns = healthy_columns()
    columns["entropy"] = [0.001] * 200
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert d.metrics["entropy"].zone.word == "bad"
    scenario = d.scenario(ScenarioId.LOW_DIVERSITY)
    assert scenario is not None and scenario.severity.word == "problem"


def test_eval_answers_the_seventh_question() -> None:
    columns = healthy_columns()
    run = make_run(columns, context=ON_POLICY)
    for i, value in enumerate([0.3, 0.35, 0.42, 0.5, 0.55, 0.61]):
        run.store.add(Record(LineKind.EVAL, float(30 * (i + 1)), {"eval_reward": value}))
    d = diagnose(run, RULES)
    assert answer(d, 7) == "yes"
    assert d.metrics["eval_reward"].trend.word == "rising"


# -- zones for the UI -----------------------------------------------------------------------------


def test_zone_of_values_applies_context_rules() -> None:
    values = np.array([0.0, 0.05, 0.25, 0.4, np.nan])
    on = zone_of_values("clip_ratio", values, RULES, RunContext(num_iterations=1))
    assert on.tolist() == [Zone.NA, 1, 2, 3, 0]
    unknown = zone_of_values("clip_ratio", values, RULES, RunContext())
    assert unknown.tolist()[0] == Zone.UNKNOWN
    off = zone_of_values("clip_ratio", values, RULES, RunContext(num_iterations=4))
    assert off.tolist()[0] == Zone.CAUTION
    assert zone_of_values("kl", np.array([0.0, 2.0]), RULES, RunContext(beta=0.0)).tolist() == [
        4,
        4,
    ]
    assert zone_of_values("reward", np.array([0.5, np.nan]), RULES, RunContext()).tolist() == [4, 0]
    assert zone_of_values("eval_clipped_ratio", np.array([0.6]), RULES, RunContext()).tolist() == [
        3
    ]
    assert (
        zone_of_values("completion_length", np.array([500.0]), RULES, RunContext()).dtype == np.int8
    )


def test_zone_bands() -> None:
    assert zone_bands("kl", RULES, RunContext()) == [
        (-math.inf, 0.1, Zone.HEALTHY),
        (0.1, 1.0, Zone.CAUTION),
        (1.0, math.inf, Zone.BAD),
    ]
    length = zone_bands("completion_length", RULES, RunContext(max_completion_length=1000))
    assert length == [
        (-math.inf, 50.0, Zone.CAUTION),
        (50.0, 900.0, Zone.HEALTHY),
        (900.0, 970.0, Zone.CAUTION),
        (970.0, math.inf, Zone.BAD),
    ]
    assert zone_bands("completion_length", RULES, RunContext()) == []
    assert zone_bands("reward", RULES, RunContext()) == []
    assert zone_bands("clip_ratio", RULES, RunContext(num_iterations=1))[0][2] == Zone.NA


# -- performance ------------------------------------------------------------------------------------


def big_run(rows: int) -> Run:
    rng = np.random.default_rng(0)
    names = (
        "reward",
        "reward_std",
        "frac_reward_zero_std",
        "clip_ratio",
        "kl",
        "entropy",
        "completion_length",
        "completion_length_min",
        "completion_length_max",
        "clipped_ratio",
        "loss",
        "grad_norm",
        "learning_rate",
        "rewards/accuracy/mean",
        "rewards/accuracy/std",
        "rewards/format/mean",
        "rewards/format/std",
    )
    values = rng.random((rows, len(names)))
    block = RowBlock(
        kinds=np.zeros(rows, dtype=np.uint8),
        steps=np.arange(1, rows + 1, dtype=float),
        groups=[ColumnGroup(np.arange(rows), names, {}, values)],
    )
    run = Run(
        Path("big"),
        status=FeedStatus(context=RunContext(num_iterations=2, max_completion_length=2)),
    )
    run.ingest(Batch(blocks=[block]))
    return run


def test_a_million_rows_are_diagnosed() -> None:
    """Windows are sampled, not looped over (its cost against 1 000 rows: bench/diagnose_cost.py)."""
    run = big_run(1_000_000)
    assert len(run.store) == 1_000_000
    d = diagnose(run, RULES)
    assert d.metrics["reward"].last is not None


# -- the simulator's scenarios ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def sim_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    out = tmp_path_factory.mktemp("sim")
    return {
        scenario: load_run(write_run(out / scenario, scenario, seed=0)) for scenario in SCENARIOS
    }


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_simulated_scenario_is_named_and_nothing_else_is_a_problem(
    scenario: str, sim_runs: dict[str, Run]
) -> None:
    d = diagnose(sim_runs[scenario], RULES)
    assert scenario in ids(d), f"{scenario}: got {[(s.id, s.severity) for s in d.scenarios]}"
    others = [s for s in ids(d, "problem") if s != scenario]
    assert others == [], f"{scenario}: unexpected problems {others}"
    if scenario == "healthy":
        assert d.status.word == "healthy"
    else:
        assert d.status.word in ("problem", "caution")


# -- real fixtures ----------------------------------------------------------------------------------


def test_issue_4465_nan_kl_is_unknown_not_bad() -> None:
    # .source.txt: bare NaN tokens for kl and every clip_ratio key on one logging.jsonl line
    run = load_run(MS_SWIFT / "ms-swift-issue-4465_grpo-v3.5_nan.jsonl")
    d = diagnose(run, RULES)
    assert d.metrics["kl"].zone.word == "unknown"
    assert d.metrics["clip_ratio"].zone.word == "unknown"
    assert "NaN" in d.metrics["kl"].reason
    assert "too_aggressive" not in ids(d)
    assert "warming_up" in ids(d)
    json.dumps({k: v.last for k, v in d.metrics.items() if v.last is None or math.isfinite(v.last)})


def test_on_policy_local_run_does_not_warn_about_clip_ratio(tmp_path: Path) -> None:
    path = msswift_run_dir(
        tmp_path,
        "local-run-msswift-4.6.0_grpo-3rewards-eval",
        THREE_REWARDS_ARGS,
        completions=True,
    )
    run = load_run(path)
    assert run.context.num_iterations == 1
    d = diagnose(run, RULES)
    assert d.metrics["clip_ratio"].zone.word == "n/a"
    assert answer(d, 4) == "yes"
    for scenario in d.scenarios:
        assert all(
            e.metric != "clip_ratio" or "n/a" in e.text or "construction" in e.text
            for e in scenario.evidence
        )
    # .source.txt: clipped_ratio 0.875-1.0 at max_completion_length 24; Format always 0
    assert ids(d, "problem") == ["truncation"]
    assert "Format: 0 on every completion" in evidence_text(d, "not_learning")
    assert "warming_up" in ids(d)


def test_numiter2_overlong_filter_run(tmp_path: Path) -> None:
    # .source.txt: num_iterations 2, every completion truncated (clipped_ratio 1.0) with
    # overlong_filter => every token masked => loss 0.0 and grad_norm 0.0; beta 0 => no kl
    args = dict(THREE_REWARDS_ARGS, num_iterations=2, beta=0.0, max_steps=4, logging_steps=1)
    run = load_run(
        msswift_run_dir(
            tmp_path,
            "local-run-msswift-4.6.0_grpo-numiter2-dapo-beta0",
            args,
            completions=False,
        )
    )
    d = diagnose(run, RULES)
    assert set(ids(d, "problem")) == {"truncation", "not_learning"}
    assert "no update reaches the weights" in evidence_text(d, "not_learning")
    assert "kl" not in d.metrics
    assert answer(d, 8) == "yes"  # beta 0: no KL penalty to control
    # off-policy, clip 0 on the re-use steps: updates too weak, said as a caution
    assert d.metrics["clip_ratio"].zone.word == "caution"


def test_trl_issue_3857_zero_std_paste_is_not_learning() -> None:
    # .source.txt: frac_reward_zero_std 1.0, reward_std 0.0, loss 0.0, grad_norm 0.0 on the
    # only line => every group has identical rewards. It is a console dict repr, mapped here
    # with the TRL adapter's vocabulary when the loader does not read console pastes.
    path = FIXTURES / "trl" / "trl_issue3857_zero_std_loss0.log"
    run = load_run(path)
    if len(run.store) == 0:
        line = ast.literal_eval(path.read_text(encoding="utf-8").strip())
        values = {TRL.canonical(key): float(value) for key, value in line.items()}
        run = Run(path)
        run.ingest(Batch(blocks=[RowBlock.of([Record(LineKind.TRAIN, 1.0, values)])]))
    d = diagnose(run, RULES)
    assert ids(d, "problem") == ["not_learning"]
    assert d.status.word == "problem"
    assert d.metrics["reward_std"].zone.word == "bad"
    assert d.metrics["frac_reward_zero_std"].zone.word == "bad"
    assert d.metrics["grad_norm"].zone.word == "bad"
    assert answer(d, 2) == "no" and answer(d, 3) == "no"


def test_chaos_economy_late_truncation() -> None:
    # .source.txt: completions/clipped_ratio rises to 0.95-1.0 late; kl grows from ~1e-5 to
    # ~0.05; reward oscillates around 0
    d = diagnose(load_run(FIXTURES / "unsloth" / "chaos-economy_trainer_state.json"), RULES)
    assert ids(d, "problem") == ["truncation"]
    assert d.metrics["kl"].zone.word == "healthy"
    assert d.metrics["reward"].trend.word in ("flat", "falling")
    assert "healthy" not in ids(d)
