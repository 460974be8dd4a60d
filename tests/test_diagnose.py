"""The diagnosis, rule by rule.

Each test states one rule of docs/health.md (or one failure class of the diagnosis rebuild) and
checks it on a hand-made run whose answer is known, on a real run, or on the simulator.
`diagnose` judges a run the way the live panel does (replayed, steady); the rules of one
moment are `diagnose_snapshot`'s.
"""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from helpers import (
    CORPUS_RUNS,
    MS_SWIFT,
    THREE_REWARDS_ARGS,
    corpus_diagnosis,
    msswift_run_dir,
    records_block,
    simulated_run,
)

from grpo_tui.context import RunContext
from grpo_tui.health.building import at_least, onset
from grpo_tui.health.diagnose import (
    Diagnosis,
    LiveJudge,
    diagnose,
    diagnose_snapshot,
    zone_of_values,
)
from grpo_tui.health.findings import find
from grpo_tui.health.rewards import Role, reward_range, reward_role
from grpo_tui.health.rules import Rules, rules_from_dict
from grpo_tui.health.series import SeriesView, snapshot
from grpo_tui.health.steady import VerdictTracker
from grpo_tui.health.verdict import CheckItem, Evidence, Scenario, Window
from grpo_tui.health.zones import zone_bands
from grpo_tui.run.completion_stats import CompletionsSummary, StepSampleStats
from grpo_tui.run.follow import load_run
from grpo_tui.run.live import Run
from grpo_tui.sim import SCENARIO_REGIMES, SCENARIOS
from grpo_tui.sources.feed import FeedStatus
from grpo_tui.sources.formats.trl import TRL
from grpo_tui.sources.records import Batch, ColumnGroup, Record, RowBlock
from grpo_tui.views.presentation import order_metrics, status_word, verdict_line
from grpo_tui.vocabulary import Answer, LearningState, LineKind, ScenarioId, Severity, Status, Zone

FIXTURES = Path(__file__).parent / "fixtures"
RULES = Rules()
ON_POLICY = RunContext(num_iterations=1, max_completion_length=1024, beta=0.04)

Column = Sequence[float | None]


def make_run(
    columns: Mapping[str, Column],
    *,
    context: RunContext | None = None,
    steps: Sequence[float] | None = None,
    source_keys: dict[str, str] | None = None,
    samples: CompletionsSummary | None = None,
) -> Run:
    """A run of train lines: one row per index, a metric absent where its value is None."""
    n = max(len(v) for v in columns.values())
    steps = list(steps) if steps is not None else list(range(1, n + 1))
    records = []
    for i in range(n):
        values = {k: float(x) for k, v in columns.items() if i < len(v) and (x := v[i]) is not None}
        records.append(Record(LineKind.TRAIN, float(steps[i]), values, dict(source_keys or {})))
    run = Run(Path("run"), status=FeedStatus(context=context or RunContext()))
    run.ingest(Batch(blocks=[records_block(records)]))
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


def ids(diagnosis: Diagnosis, severity: str | None = None) -> list[str]:
    return [
        s.id.word for s in diagnosis.scenarios if severity is None or s.severity.word == severity
    ]


def scenario(diagnosis: Diagnosis, scenario_id: ScenarioId) -> Scenario:
    found = diagnosis.scenario(scenario_id)
    assert found is not None, f"{scenario_id.word} not in {ids(diagnosis)}"
    return found


def evidence_text(diagnosis: Diagnosis, scenario_id: ScenarioId) -> str:
    return "\n".join(e.text for e in scenario(diagnosis, scenario_id).evidence)


def answer(diagnosis: Diagnosis, number: int) -> str:
    return diagnosis.checklist[number - 1].answer.word


def answer_text(diagnosis: Diagnosis, number: int) -> str:
    return next(c.evidence for c in diagnosis.checklist if c.id == number)


def notes(diagnosis: Diagnosis) -> str:
    return "\n".join(n.text for n in diagnosis.notes)


# -- the result ---------------------------------------------------------------------------------


def test_healthy_run() -> None:
    d = diagnose(make_run(healthy_columns(), context=ON_POLICY), RULES)
    assert d.status is Status.HEALTHY
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
    assert d.metrics["clip_ratio"].zone is Zone.NA
    healthy = scenario(d, ScenarioId.HEALTHY)
    assert healthy.severity is Severity.OK and healthy.onset_step is not None
    assert all(e.window.points > 0 for e in healthy.evidence)
    # the history names the state: learning, still going on
    assert [(h.id, h.end) for h in d.history] == [(ScenarioId.LEARNING, None)]


def test_empty_run_is_unknown() -> None:
    d = diagnose(Run(Path("nothing")), RULES)
    assert d.status is Status.UNKNOWN and d.scenarios == [] and d.metrics == {}
    assert [c.answer for c in d.checklist] == [Answer.UNKNOWN] * 8


def test_scenarios_are_sorted_worst_first() -> None:
    columns = healthy_columns()
    columns["clipped_ratio"] = [0.7] * 200  # truncation: a problem
    columns["entropy"] = list(np.linspace(0.8, 0.4, 200))
    d = diagnose(make_run(columns, context=RunContext(num_iterations=1, beta=0.04)), RULES)
    severities = [s.severity.rank for s in d.scenarios]
    assert severities == sorted(severities)
    # a cut the rising reward learns despite is a caution (the task is learned), still first
    assert ids(d)[0] == "truncation" and d.status is Status.CAUTION


# -- a verdict from one point: warming up (failure class 8) ----------------------------------------


def test_a_few_points_are_warming_up_never_a_problem() -> None:
    """Three points of zero spread: unmistakable, yet too few for a verdict. It is shown as an
    early warning; `check` exits 1, never 2."""
    d = diagnose(
        make_run({"reward": [0.0] * 3, "reward_std": [0.0] * 3, "frac_reward_zero_std": [1.0] * 3}),
        RULES,
    )
    assert ids(d) == ["warming_up"]
    assert d.status is not Status.PROBLEM
    assert "early warning (Not learning)" in evidence_text(d, ScenarioId.WARMING_UP)
    assert answer(d, 1) == "unknown"


def test_a_run_that_ended_with_a_few_points_is_too_short_not_waited_for() -> None:
    """A run over at step 3 of 3 gets no more points: it is too short to judge, and the
    advice is to log more often, never to wait for more steps."""
    columns: dict[str, Column] = {"reward": [0.1, 0.2, 0.1], "reward_std": [0.3] * 3}
    live = diagnose(make_run(columns), RULES)
    ended = diagnose(make_run(columns, context=RunContext(max_steps=3)), RULES)
    assert ids(live) == ids(ended) == ["warming_up"]
    assert scenario(live, ScenarioId.WARMING_UP).title == "Warming up"
    assert scenario(ended, ScenarioId.WARMING_UP).title == "Too short to judge"
    assert "the run ended after 3 train points; a verdict needs" in evidence_text(
        ended, ScenarioId.WARMING_UP
    )
    assert [a.split(":")[0] for a in scenario(live, ScenarioId.WARMING_UP).advice] == [
        "Wait for more steps"
    ]
    assert [a.split(":")[0] for a in scenario(ended, ScenarioId.WARMING_UP).advice] == [
        "Log more often or train longer"
    ]
    assert answer_text(live, 1).startswith("reward warming up")
    assert answer_text(ended, 1).startswith("reward too few points")
    assert verdict_line(live).word == "WARMING UP"
    assert verdict_line(ended).word == status_word(ended) == "TOO SHORT TO JUDGE"
    assert ended.status is Status.UNKNOWN


def test_every_completion_so_far_hit_the_cap_is_an_early_warning() -> None:
    d = diagnose(make_run({"reward": [0.1, 0.2, 0.1], "clipped_ratio": [1.0, 1.0, 1.0]}), RULES)
    assert ids(d) == ["warming_up"]
    assert "early warning (Truncation): clipped_ratio > 0.5" in evidence_text(
        d, ScenarioId.WARMING_UP
    )


# -- shape before slope (failure class 1) ---------------------------------------------------------------


def learn_then_plateau(n: int = 150, sigma: float = 1.1, seed: int = 3) -> dict[str, Column]:
    """A small-batch run: the reward rises from 0.2 to 1.6 over the first 40% and levels off,
    each point noisy (σ 1.1 around a mean of 1.6, as a real run had)."""
    x = np.arange(n) / n
    mean = 0.2 + 1.4 * np.minimum(x / 0.4, 1.0)
    return {
        "reward": list(mean + noise(n, sigma, seed)),
        "reward_std": list(0.9 + noise(n, 0.1, seed + 1)),
        "frac_reward_zero_std": list(np.clip(0.3 + noise(n, 0.05, seed + 2), 0, 1)),
        "kl": list(0.01 + 0.02 * x),
        "completion_length": list(400 + noise(n, 20, seed + 3)),
        "grad_norm": list(0.3 + noise(n, 0.03, seed + 4)),
    }


def test_learned_then_levelled_off_is_the_late_stage_never_not_learning() -> None:
    d = diagnose(make_run(learn_then_plateau(n=300, sigma=0.6), context=ON_POLICY), RULES)
    assert "not_learning" not in ids(d)
    late = scenario(d, ScenarioId.SATURATED)
    assert "levelled off after rising" in late.evidence[0].text
    assert any("harder prompts" in a for a in late.advice)
    assert not any("learning rate" in a for a in late.advice)


def test_a_noisy_rise_is_read_from_the_whole_course() -> None:
    """Per-step noise of 1.1 hides a rise of 1.4 from a slope on the last half; the stretch
    medians of the whole run do not."""
    columns = learn_then_plateau(n=150)
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert answer(d, 1) == "yes"
    assert "not_learning" not in ids(d)
    # 90 flat points at this noise do not yet show the rise has slowed (about 1.2 standard
    # errors): it is read as still rising, never as flat
    assert "flat" not in d.checklist[0].evidence


def test_a_steady_slow_rise_is_never_called_a_plateau() -> None:
    """A linear rise whose latest third is too short to show a significant rise on its own:
    rising at every step, never "levelled off"."""
    columns = healthy_columns()
    for last in range(40, 201, 20):
        d = diagnose(
            make_run({k: list(v)[:last] for k, v in columns.items()}, context=ON_POLICY), RULES
        )
        assert "saturated" not in ids(d), last


def test_not_learning_needs_a_run_that_never_rose_and_little_spread() -> None:
    flat_dead = {"reward": [0.0] * 60, "reward_std": [0.0] * 60, "frac_reward_zero_std": [1.0] * 60}
    d = diagnose(make_run(flat_dead, context=ON_POLICY), RULES)
    not_learning = scenario(d, ScenarioId.NOT_LEARNING)
    assert not_learning.severity is Severity.PROBLEM
    assert any("easier prompts" in a for a in not_learning.advice)  # every group fails
    # flat, but the groups still differ: no verdict on it
    flat_alive = {
        "reward": list(0.4 + noise(60, 0.03)),
        "reward_std": list(0.3 + noise(60, 0.02, 1)),
    }
    assert "not_learning" not in ids(diagnose(make_run(flat_alive, context=ON_POLICY), RULES))


def test_a_reward_that_fell_to_nothing_with_dead_spread_is_not_learning_from_then() -> None:
    n = 120
    columns = healthy_columns(n)
    columns["reward"] = list(columns["reward"][:60]) + [0.0] * 60
    columns["reward_std"] = list(columns["reward_std"][:60]) + [0.0] * 60
    columns["frac_reward_zero_std"] = list(columns["frac_reward_zero_std"][:60]) + [1.0] * 60
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    not_learning = scenario(d, ScenarioId.NOT_LEARNING)
    assert not_learning.severity is Severity.PROBLEM
    assert 60 <= (not_learning.onset_step or 0) <= 75
    assert answer(d, 2) == "no" and answer(d, 3) == "no"


# -- ranges, not positions in the observed range (failure class 2) -----------------------------------


def test_a_0_1_reward_at_093_is_at_its_top_even_in_a_narrow_observed_range() -> None:
    """The run never left 0.85–0.95; frac_reward_zero_std high and grad_norm 0 on most late
    steps (every group tied) corroborate: saturated, and training has stalled."""
    n = 80
    reward = list(np.clip(0.93 + noise(n, 0.03), 0.85, 0.96))
    reward[5] = 1.0  # one batch all correct
    std = list(np.abs(0.1 + noise(n, 0.02, 1)))
    std[5] = 0.0
    columns = {
        "reward": reward,
        "reward_std": std,
        "frac_reward_zero_std": list(np.clip(0.86 + noise(n, 0.03, 2), 0, 1)),
        "grad_norm": [0.0 if i % 5 else 0.2 for i in range(n)],
    }
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    saturated = scenario(d, ScenarioId.SATURATED)
    assert saturated.severity is Severity.CAUTION
    text = evidence_text(d, ScenarioId.SATURATED)
    assert "at the top of its range" in text and "0–1" in text
    assert "grad_norm 0" in text
    assert "not_learning" not in ids(d) and "healthy" not in ids(d)


def test_the_real_range_of_a_reward_is_read_from_its_values() -> None:
    def view(values: list[float]) -> SeriesView:
        return SeriesView(
            "reward", np.arange(len(values), dtype=float), np.array(values), np.empty(0)
        )

    unit = reward_range(view([0.2, 0.5, 0.75, 0.75]), None, RULES)
    assert unit is not None and (unit.low, unit.high, unit.known) == (0.0, 1.0, True)
    # a top every completion of a batch scored (std 0 there) is the real top
    std = SeriesView(
        "reward_std", np.arange(4, dtype=float), np.array([0.3, 0.0, 0.2, 0.0]), np.empty(0)
    )
    pinned = reward_range(view([-0.3, 0.5, 0.1, 0.5]), std, RULES)
    assert pinned is not None and pinned.high == 0.5 and pinned.known
    observed = reward_range(view([0.4, 1.2, 1.5]), None, RULES)
    assert observed is not None and not observed.known  # a rising reward tops what it has seen


# -- spikes are events, not scales (failure class 3) ---------------------------------------------------


def test_one_kl_spike_is_a_spike_and_the_level_is_still_judged() -> None:
    n = 200
    kl = list(0.4 + noise(n, 0.02))
    kl[129] = 197.0
    columns = healthy_columns(n)
    columns["kl"] = kl
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert d.metrics["kl"].zone is Zone.CAUTION  # 0.4 sits in the caution band: still judged
    assert "per-sequence" not in d.metrics["kl"].reason
    assert "kl spike: 197 at step 130 from 0.4" in notes(d)
    assert "back to 0.4" in notes(d)


def test_a_jump_that_stays_is_a_new_level_not_a_spike() -> None:
    columns = healthy_columns()
    columns["kl"] = list(np.concatenate([0.04 + noise(120, 0.002), 0.9 + noise(80, 0.01, 1)]))
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert "kl spike" not in notes(d)
    assert d.metrics["kl"].zone.warns  # the new level is judged


def test_a_lone_grad_norm_spike_is_an_event_not_a_verdict() -> None:
    columns = healthy_columns()
    grad = list(columns["grad_norm"])
    grad[150] = 30.0
    columns["grad_norm"] = grad
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert ids(d) == ["healthy"]
    assert "grad_norm spike: 30 at step 151" in notes(d)


# -- absolute levels too (failure class 4) -----------------------------------------------------------


def collapsed_at_once(n: int) -> dict[str, Column]:
    """Length 53 → 2.6 tokens and entropy 0.96 → 0.04 between the first two logged points."""
    return {
        "reward": [0.1, *list(0.5 + noise(n - 1, 0.05))],
        "reward_std": [0.3, *list(0.2 + noise(n - 1, 0.02, 1))],
        "completion_length": [53.0, *list(2.6 + noise(n - 1, 0.1, 2))],
        "entropy": [0.96, *list(0.04 + noise(n - 1, 0.002, 3))],
    }


def test_a_collapse_before_the_second_point_is_bad_whatever_the_history() -> None:
    d = diagnose(make_run(collapsed_at_once(40)), RULES)
    assert scenario(d, ScenarioId.LENGTH_COLLAPSE).severity is Severity.PROBLEM
    assert scenario(d, ScenarioId.LOW_DIVERSITY).severity is Severity.PROBLEM
    assert "53 tokens" in evidence_text(d, ScenarioId.LENGTH_COLLAPSE)
    assert "healthy" not in ids(d)
    early = diagnose(make_run(collapsed_at_once(2)), RULES)
    assert ids(early) == ["warming_up"] and "early warning (Length collapse)" in evidence_text(
        early, ScenarioId.WARMING_UP
    )


def test_entropy_exploding_is_bad_whatever_the_history() -> None:
    columns = healthy_columns()
    columns["entropy"] = list(np.concatenate([0.15 + noise(100, 0.01), 5.0 + noise(100, 0.1, 1)]))
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert d.metrics["entropy"].zone is Zone.BAD
    assert "exploded" in d.metrics["entropy"].reason


def test_short_from_the_start_is_the_task_not_a_collapse() -> None:
    """Completions of ~8 tokens for the whole run (a classification answer): no collapse."""
    columns = healthy_columns()
    columns["completion_length"] = list(8 + noise(200, 0.5))
    assert "length_collapse" not in ids(diagnose(make_run(columns, context=ON_POLICY), RULES))


# -- a blow-up is too aggressive (failure class 5) -------------------------------------------------------


def blow_up(n: int = 120) -> dict[str, Column]:
    onset = 70
    x = np.arange(n)
    reward = np.where(x < onset, 0.2 + 0.6 * x / onset, 0.02)
    entropy = np.where(x < onset, 0.3, 5.0)
    clipped = np.where(x < onset, 0.02, 0.97)
    return {
        "reward": list(reward + noise(n, 0.02)),
        "reward_std": list(np.where(x < onset, 0.3, 0.01) + np.abs(noise(n, 0.005, 1))),
        "entropy": list(entropy + noise(n, 0.01, 2)),
        "clipped_ratio": list(np.clip(clipped + noise(n, 0.005, 3), 0, 1)),
        "completion_length": list(np.where(x < onset, 300, 510) + noise(n, 2, 4)),
    }


def test_reward_collapsing_while_entropy_explodes_is_too_aggressive_not_not_learning() -> None:
    d = diagnose(
        make_run(blow_up(), context=RunContext(max_completion_length=512, beta=0.0)), RULES
    )
    aggressive = scenario(d, ScenarioId.TOO_AGGRESSIVE)
    assert aggressive.severity is Severity.PROBLEM and aggressive is d.scenarios[0]
    assert (
        "policy collapse" in aggressive.evidence[0].text
        and "entropy exploded" in aggressive.evidence[0].text
    )
    assert "not_learning" not in ids(d)
    assert any("learning rate" in a for a in aggressive.advice)
    assert "truncation" in ids(d)


# -- evidence is data (failure class 6) ----------------------------------------------------------------------


def test_evidence_quotes_values_the_series_took() -> None:
    """A reward that was never negative is never quoted negative: levels are medians of
    observed points, not the ends of a fitted line."""
    reward = list(
        np.clip(
            np.concatenate([0.8 - 0.8 * np.arange(60) / 60, np.zeros(60)])
            + np.abs(noise(120, 0.02)),
            0,
            None,
        )
    )
    columns = {"reward": reward, "reward_std": [0.0] * 120, "frac_reward_zero_std": [1.0] * 120}
    d = diagnose(make_run(columns), RULES)
    lo, hi = min(reward), max(reward)
    for s in d.scenarios:
        for e in s.evidence:
            if e.metric == "reward":
                for key in ("first", "peak", "last"):
                    value = e.numbers.get(key)
                    assert value is None or lo <= value <= hi


# -- truncation with no cap known (failure class 7) ---------------------------------------------------


def flat_columns(n: int = 200, seed: int = 0) -> dict[str, Column]:
    """A run that does not learn (reward flat in its noise), otherwise sound."""
    columns = healthy_columns(n, seed)
    columns["reward"] = list(0.3 + noise(n, 0.03, seed))
    return columns


def test_lengths_pinned_at_one_value_are_truncation_with_the_cap_inferred() -> None:
    """Pinned lengths alone suggest a cap; no clipped ratio confirms it: a caution."""
    columns = flat_columns()
    columns["completion_length"] = list(np.minimum(128.0, 127.8 + np.abs(noise(200, 0.5))))
    columns.pop("clipped_ratio")
    d = diagnose(make_run(columns, context=RunContext(num_iterations=1)), RULES)
    truncation = scenario(d, ScenarioId.TRUNCATION)
    assert "inferred" in evidence_text(d, ScenarioId.TRUNCATION)
    assert "no clipped ratio confirms" in evidence_text(d, ScenarioId.TRUNCATION)
    assert truncation.severity is Severity.CAUTION
    assert "cap 128 tokens inferred" in notes(d)


def test_an_inferred_cap_a_clipped_ratio_confirms_is_a_problem() -> None:
    """The same pinned lengths with completions counted as cut there: truncation, a problem."""
    columns = flat_columns()
    columns["completion_length"] = list(np.minimum(128.0, 127.8 + np.abs(noise(200, 0.5))))
    columns["completion_length_max"] = [128.0] * 200
    columns["clipped_ratio"] = [0.9] * 200
    d = diagnose(make_run(columns, context=RunContext(num_iterations=1)), RULES)
    assert scenario(d, ScenarioId.TRUNCATION).severity is Severity.PROBLEM
    assert "where clipped_ratio is above 0" in notes(d)


def test_the_cap_given_on_the_command_line_is_used() -> None:
    columns = healthy_columns()
    columns.pop("clipped_ratio")
    columns["completion_length"] = list(950 + noise(200, 5))
    run = make_run(columns, context=RunContext(num_iterations=1))
    assert "truncation" not in ids(diagnose(run, RULES))
    run.given = RunContext(max_completion_length=1000)  # what check does with the option
    d = diagnose(run, RULES)
    assert "truncation" in ids(d)


# -- reward roles (failure class 9) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("accuracy_reward", Role.TASK),
        ("MathAccuracy", Role.TASK),
        ("correctness_reward", Role.TASK),
        ("math_verify", Role.TASK),
        ("gameplay_scores", Role.TASK),
        ("exact_match", Role.TASK),
        ("format_reward", Role.AUX),
        ("valid_json_reward", Role.AUX),
        ("xmlcount_reward_func", Role.AUX),
        ("LengthBonus", Role.AUX),
        ("reasoning_steps_reward", Role.AUX),
        ("cosine_scaled_reward", Role.AUX),
        ("repetition_penalty", Role.AUX),
        ("CoinFlip", Role.OTHER),
        ("if_rewrite_reward", Role.OTHER),
    ],
)
def test_reward_roles_from_names(name: str, role: Role) -> None:
    assert reward_role(name, RULES) is role


def test_reward_roles_are_configurable() -> None:
    rules, warnings = rules_from_dict({"rewards": {"task_patterns": ["rewrite"]}})
    assert warnings == []
    assert reward_role("if_rewrite_reward", rules) is Role.TASK


def test_a_dead_reward_is_a_note_on_that_function_not_a_verdict_on_the_run() -> None:
    columns = healthy_columns()
    columns["rewards/accuracy/mean"] = list(columns["reward"])
    columns["rewards/strict_format/mean"] = [0.0] * 200
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert "healthy" in ids(d)
    assert "not_learning" not in ids(d)
    assert "strict_format is 0 on every completion for the whole run" in notes(d)
    assert d.status is Status.CAUTION


def test_an_auxiliary_reward_pinned_at_its_top_while_the_task_is_flat_is_reward_hacking() -> None:
    n = 200
    x = np.arange(n) / n
    fmt = np.clip(0.2 + 2 * x, 0, 1.0)
    accuracy = 0.3 + noise(n, 0.03)
    columns = healthy_columns(n)
    columns.update(
        {
            "rewards/format_reward/mean": list(fmt),
            "rewards/format_reward/std": list(np.where(fmt >= 1.0, 0.0, 0.3)),
            "rewards/accuracy_reward/mean": list(accuracy),
            "reward": list(fmt + accuracy),
        }
    )
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    hacking = scenario(d, ScenarioId.REWARD_HACKING)
    assert hacking.severity is Severity.PROBLEM
    assert (
        "format_reward at its top" in hacking.evidence[0].text
        and "accuracy_reward does not improve" in hacking.evidence[0].text
    )
    assert "healthy" not in ids(d)
    assert any("correctness reward" in a for a in hacking.advice)


def test_a_reward_rising_only_through_an_auxiliary_reward_is_never_healthy() -> None:
    n = 200
    x = np.arange(n) / n
    columns = healthy_columns(n)
    columns["rewards/format_reward/mean"] = list(0.1 + 0.5 * x + noise(n, 0.02))
    columns["rewards/accuracy_reward/mean"] = list(0.3 + noise(n, 0.02, 9))
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    # the format still being learned: the task reward usually follows it, so this is a
    # note, not yet a verdict; and never healthy
    assert "healthy" not in ids(d) and "not_learning" not in ids(d)
    assert "so far the reward" in notes(d) and "format_reward" in notes(d)
    # the format done (at the top of its range) and the task still flat: gaming the easy
    # reward, with "not learning the task" as what followed (one mechanism, one verdict)
    columns["rewards/format_reward/mean"] = list(np.minimum(0.1 + 2.0 * x, 0.97) + noise(n, 0.01))
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert ids(d) == ["reward_hacking"]
    assert (
        "and so no learning signal: reward rises only through auxiliary rewards"
        in evidence_text(d, ScenarioId.REWARD_HACKING)
    )


# -- context rules ---------------------------------------------------------------------------------------


def test_on_policy_zero_clip_is_not_applicable() -> None:
    d = diagnose(make_run(healthy_columns(), context=ON_POLICY), RULES)
    assert d.metrics["clip_ratio"].zone is Zone.NA and answer(d, 4) == "yes"


def test_unknown_context_says_so_instead_of_warning() -> None:
    d = diagnose(make_run(healthy_columns()), RULES)
    assert d.metrics["clip_ratio"].zone is Zone.UNKNOWN
    assert "num_iterations is not known" in d.metrics["clip_ratio"].reason
    assert answer(d, 4) == "unknown"


def test_off_policy_zero_clip_on_a_flat_run_is_updates_too_weak() -> None:
    columns = {k: v for k, v in healthy_columns().items() if k != "reward"}
    columns["reward"] = list(0.3 + noise(200, 0.02))
    columns["reward_std"] = list(0.02 + np.abs(noise(200, 0.002, 1)))  # small spread
    columns["clip_ratio"] = [0.0002] * 200
    d = diagnose(make_run(columns, context=RunContext(num_iterations=2, beta=0.04)), RULES)
    assert "barely move the policy" in evidence_text(d, ScenarioId.NOT_LEARNING)


def test_a_clip_ratio_near_0_that_just_rose_is_no_instability() -> None:
    """The corpus's lr 1e-4 TRL run at step 135: clip_ratio < 0.001 on 14 of its 20 latest
    points, the last few up to 0.01; a caution for sitting near 0, never too-aggressive
    evidence (it was, quoting "< 0.001" as the sign)."""
    columns = healthy_columns()
    columns["clip_ratio"] = [0.0003] * 194 + [0.002, 0.004, 0.003, 0.006, 0.008, 0.01]
    run = make_run(columns, context=RunContext(num_iterations=2, beta=0.04))
    # judged at that one moment, as the raw judgement the live tracker is fed
    d = diagnose_snapshot(snapshot(run), RULES)
    assert d.metrics["clip_ratio"].zone is Zone.CAUTION
    assert "< 0.001" in d.metrics["clip_ratio"].reason
    assert "too_aggressive" not in ids(d)


def test_a_jump_not_sustained_yet_dates_from_where_it_began() -> None:
    """The lr 1e-4 TRL run's cut share: 0 until step 145, then 0.5-1 (9 of the 20 latest
    points): its onset is step 145, not the window's start (which said "since step 90")."""
    columns = healthy_columns()
    columns["clipped_ratio"] = [0.0] * 191 + [0.6] * 9
    f = find(snapshot(make_run(columns)), RULES)
    assert onset(f, "clipped_ratio", at_least(0.5)) == 192.0
    assert onset(f, "clipped_ratio", at_least(0.7)) is None  # holds neither way
    columns["clipped_ratio"] = [0.0] * 140 + [0.6] * 30 + [0.0] * 30  # held, long gone
    assert onset(find(snapshot(make_run(columns)), RULES), "clipped_ratio", at_least(0.5)) is None


def test_clip_ratio_is_judged_on_the_reuse_steps_only() -> None:
    n = 200
    clip = [0.25 if i % 2 else 0.0 for i in range(n)]
    reward = [None if i % 2 else v for i, v in enumerate(healthy_columns(n)["reward"])]
    columns = healthy_columns(n)
    columns.update({"clip_ratio": clip, "reward": reward})
    d = diagnose(make_run(columns, context=RunContext(num_iterations=2, beta=0.04)), RULES)
    assert d.metrics["clip_ratio"].zone is Zone.CAUTION
    assert "re-use steps only" in d.metrics["clip_ratio"].reason


@pytest.mark.parametrize(
    ("level", "zone", "severity"), [(0.5, Zone.CAUTION, "caution"), (2.0, Zone.BAD, "problem")]
)
def test_kl_levels(level: float, zone: Zone, severity: str) -> None:
    """A KL that climbed from ~0 into its caution band (still climbing) or its bad band."""
    columns = healthy_columns()
    x = np.arange(200) / 200
    columns["kl"] = list(0.005 + level * x + noise(200, 0.005))
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert d.metrics["kl"].zone is zone
    assert scenario(d, ScenarioId.TOO_AGGRESSIVE).severity.word == severity


class TestKlOffsetIsNotDrift:
    """KL high from the first steps, before the policy could move, is a reference mismatch."""

    def test_a_kl_high_from_the_start_is_a_caution_about_the_reference(self) -> None:
        columns = healthy_columns()
        columns["kl"] = list(0.5 + noise(200, 0.01))
        columns["learning_rate"] = list(np.minimum(1.0, np.arange(200) / 20) * 1e-6)
        d = diagnose(make_run(columns, context=ON_POLICY), RULES)
        assert "too_aggressive" not in ids(d)
        assert d.metrics["kl"].zone is Zone.CAUTION
        assert "offset between the policy and its reference" in d.metrics["kl"].reason
        assert d.status is Status.CAUTION
        assert "offset" in notes(d)

    def test_a_learning_rate_logged_from_later_steps_is_read_from_its_first(self) -> None:
        columns = healthy_columns()
        columns["kl"] = list(0.5 + noise(200, 0.01))
        # logged from the 11th point on, warming up, then at its peak
        columns["learning_rate"] = [None] * 10 + list(np.minimum(1.0, np.arange(190) / 20) * 1e-6)
        d = diagnose(make_run(columns, context=ON_POLICY), RULES)
        assert "offset between the policy and its reference" in d.metrics["kl"].reason

    def test_the_note_writes_its_step_as_every_message_does(self) -> None:
        """A run resumed at step 100 000 says "to step 100003", not "1.00e+05"."""
        columns = healthy_columns()
        columns["kl"] = list(0.5 + noise(200, 0.01))
        columns["learning_rate"] = list(np.minimum(1.0, np.arange(200) / 20) * 1e-6)
        steps = [100_001 + i for i in range(200)]
        d = diagnose(make_run(columns, context=ON_POLICY, steps=steps), RULES)
        assert "points to step 100003)" in d.metrics["kl"].reason

    def test_a_kl_that_rose_far_above_its_offset_is_drift(self) -> None:
        columns = healthy_columns()
        x = np.arange(200) / 200
        columns["kl"] = list(0.4 + 1.6 * x + noise(200, 0.01))
        d = diagnose(make_run(columns, context=ON_POLICY), RULES)
        assert "too_aggressive" in ids(d)

    def test_a_kl_settled_in_its_caution_band_alone_is_watched_not_a_verdict(self) -> None:
        columns = healthy_columns()
        x = np.arange(200) / 200
        columns["kl"] = list(np.minimum(0.15, 0.005 + 0.6 * x) + noise(200, 0.003))
        d = diagnose(make_run(columns, context=ON_POLICY), RULES)
        assert "too_aggressive" not in ids(d)
        watched = [s for s in d.scenarios if s.id is ScenarioId.WATCH]
        assert watched and "watch it" in watched[0].evidence[0].text
        assert d.status is Status.CAUTION


def test_a_tiny_kl_growing_fast_is_never_too_aggressive_and_a_falling_one_is_settling() -> None:
    columns = healthy_columns()
    columns["kl"] = list(np.geomspace(1e-5, 0.002, 200))
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert "too_aggressive" not in ids(d) and d.metrics["kl"].zone is Zone.HEALTHY
    columns["kl"] = list(np.linspace(0.09, 0.01, 200))
    assert "too_aggressive" not in ids(diagnose(make_run(columns, context=ON_POLICY), RULES))


def test_kl_exploding() -> None:
    columns = healthy_columns()
    columns["kl"] = list(np.concatenate([0.02 + noise(150, 0.002), 0.9 + noise(50, 0.01, 1)]))
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert d.metrics["kl"].zone is Zone.BAD and "exploding" in d.metrics["kl"].reason
    assert d.metrics["kl"].trend.word == "exploding"


def test_kl_on_another_scale_is_judged_on_its_own_history() -> None:
    columns = healthy_columns()
    columns["kl"] = list(3.0 + noise(200, 0.05))
    d = diagnose(make_run(columns, context=ON_POLICY, source_keys={"kl": "actor/ppo_kl"}), RULES)
    assert d.metrics["kl"].zone is Zone.HEALTHY
    assert "drift from the rollout policy" in d.metrics["kl"].reason
    columns["kl"] = list(25.0 + noise(200, 0.5))  # a per-sequence sum (kl_in_reward)
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert d.metrics["kl"].zone is Zone.HEALTHY and "per-sequence sum" in d.metrics["kl"].reason


def test_beta_zero_makes_kl_not_applicable() -> None:
    columns = healthy_columns()
    columns["kl"] = [0.0] * 200
    d = diagnose(make_run(columns, context=RunContext(num_iterations=1, beta=0.0)), RULES)
    assert d.metrics["kl"].zone is Zone.NA


def test_a_nan_loss_is_a_problem_at_once() -> None:
    columns = healthy_columns()
    columns["loss"] = [*list(columns["loss"])[:-1], math.nan]
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    aggressive = scenario(d, ScenarioId.TOO_AGGRESSIVE)
    assert aggressive.severity is Severity.PROBLEM and aggressive.onset_step == 200
    assert d.status is Status.PROBLEM


def test_no_gradient_while_the_groups_differ_means_nothing_trains() -> None:
    columns = {k: v for k, v in healthy_columns().items() if k != "reward"}
    columns["reward"] = list(0.3 + noise(200, 0.02))
    columns["grad_norm"] = [0.0] * 200
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert "grad_norm ≈0" in evidence_text(d, ScenarioId.NOT_LEARNING)
    assert any("parameters really train" in a for a in scenario(d, ScenarioId.NOT_LEARNING).advice)


def test_truncation_from_clipped_ratio_and_from_the_cap() -> None:
    columns = flat_columns()
    columns["clipped_ratio"] = [0.6] * 200
    assert (
        scenario(
            diagnose(make_run(columns, context=ON_POLICY), RULES), ScenarioId.TRUNCATION
        ).severity
        is Severity.PROBLEM
    )
    columns = healthy_columns()
    columns["completion_length"] = list(960 + noise(200, 3))
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert "of cap 1024" in evidence_text(d, ScenarioId.TRUNCATION)
    assert any("max_completion_length" in a for a in scenario(d, ScenarioId.TRUNCATION).advice)


def test_a_cut_the_task_is_learned_despite_is_a_caution() -> None:
    """A rising reward with many completions cut: worth fixing, not a run that fails."""
    columns = healthy_columns()
    columns["clipped_ratio"] = [0.6] * 200
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert scenario(d, ScenarioId.TRUNCATION).severity is Severity.CAUTION
    assert "learned despite the cut" in evidence_text(d, ScenarioId.TRUNCATION)


# -- samples -------------------------------------------------------------------------------------------------


def sample_stats(
    n: int, overlap: Sequence[float], fmt: Sequence[float | None]
) -> CompletionsSummary:
    steps = tuple(
        StepSampleStats(float(i + 1), 4, 32, 0.1, 0.05, 0.05, 0.5, overlap[i], fmt[i], 0.0)
        for i in range(n)
    )
    return CompletionsSummary(n, steps)


def test_identical_completions_are_low_diversity() -> None:
    samples = sample_stats(200, [0.9] * 200, [0.8] * 200)
    d = diagnose(make_run(healthy_columns(), context=ON_POLICY, samples=samples), RULES)
    assert scenario(d, ScenarioId.LOW_DIVERSITY).severity is Severity.PROBLEM
    assert answer(d, 6) == "no"


def test_samples_answer_the_sixth_question_and_worse_samples_are_never_healthy() -> None:
    better = sample_stats(200, [0.2] * 200, list(np.linspace(0.3, 0.9, 200)))
    assert (
        answer(diagnose(make_run(healthy_columns(), context=ON_POLICY, samples=better), RULES), 6)
        == "yes"
    )
    worse = sample_stats(200, [0.2] * 200, list(np.linspace(0.9, 0.3, 200)))
    d = diagnose(make_run(healthy_columns(), context=ON_POLICY, samples=worse), RULES)
    assert answer(d, 6) == "no" and answer(d, 1) == "yes"
    assert "healthy" not in ids(d)
    assert "format compliance falls" in evidence_text(d, ScenarioId.REWARD_HACKING)


def test_looping_and_cut_off_samples_answer_no_to_the_sixth_question() -> None:
    """Completions that start repeating themselves, or get cut off mid-tag more often, are
    samples getting worse, with the numbers that say so."""
    loops = np.linspace(0.05, 0.6, 200)
    steps = tuple(
        StepSampleStats(float(i + 1), 4, 32, 0.1, 0.05, 0.05, 0.5, 0.2, 0.8, 0.0, float(loops[i]))
        for i in range(200)
    )
    d = diagnose(
        make_run(healthy_columns(), context=ON_POLICY, samples=CompletionsSummary(200, steps)),
        RULES,
    )
    assert answer(d, 6) == "no"
    item = next(item for item in d.checklist if item.id == 6)
    assert "completions repeating themselves" in item.evidence
    assert "repeated shingles" in item.evidence
    cut = np.linspace(0.0, 0.5, 200)
    steps = tuple(
        StepSampleStats(float(i + 1), 4, 32, 0.1, 0.05, 0.05, 0.5, 0.2, 0.8, float(cut[i]))
        for i in range(200)
    )
    d = diagnose(
        make_run(healthy_columns(), context=ON_POLICY, samples=CompletionsSummary(200, steps)),
        RULES,
    )
    item = next(item for item in d.checklist if item.id == 6)
    assert item.answer.word == "no" and "more completions cut off mid-answer" in item.evidence


def test_zero_spread_kind_from_the_logged_groups() -> None:
    stats = tuple(
        StepSampleStats(float(s), 4, 32, 1.0, 1.0, 0.0, 0.6, 0.1, None, None) for s in range(1, 41)
    )
    run = make_run(
        {"reward": [0.5] * 40, "reward_std": [0.0] * 40, "frac_reward_zero_std": [1.0] * 40},
        samples=CompletionsSummary(40, stats),
    )
    d = diagnose(run, RULES)
    assert scenario(d, ScenarioId.NOT_LEARNING).severity is Severity.PROBLEM
    assert "100% all fail" in evidence_text(d, ScenarioId.NOT_LEARNING)


def test_eval_answers_the_seventh_question() -> None:
    columns = healthy_columns()
    columns["eval_reward"] = [None if (i + 1) % 20 else 0.2 + 0.003 * i for i in range(200)]
    d = diagnose(make_run(columns, context=ON_POLICY), RULES)
    assert answer(d, 7) == "yes"


# -- steady while live -----------------------------------------------------------------------------------------


def raw(*scenarios: tuple[ScenarioId, Severity]) -> Diagnosis:
    found = [
        Scenario(sid, sid.title, severity, None, [Evidence("reward", Window(1, 1, 1), {}, "x")], [])
        for sid, severity in scenarios
    ]
    return Diagnosis(Status.UNKNOWN, found, [CheckItem(1, "q", Answer.UNKNOWN, "")], {})


def test_a_verdict_enters_once_it_held_and_leaves_once_it_cleared() -> None:
    tracker = VerdictTracker(RULES)
    caution = (ScenarioId.TRUNCATION, Severity.CAUTION)
    shown = [tracker.feed(raw(caution), step).ids for step in (1, 2)]
    assert shown == [[], []]  # not held long enough yet
    assert tracker.feed(raw(caution), 3).ids == ["truncation"]
    # a flicker does not drop it
    assert tracker.feed(raw(), 4).ids == ["truncation"]
    assert tracker.feed(raw(caution), 5).ids == ["truncation"]
    for step in (6, 7):
        assert tracker.feed(raw(), step).ids == ["truncation"]
    final = tracker.feed(raw(), 8)
    assert final.ids == []
    assert [(h.id, h.start, h.end) for h in final.history] == [(ScenarioId.TRUNCATION, 1, 8)]


def test_a_verdict_back_with_evidence_from_before_it_left_continues_its_span() -> None:
    tracker = VerdictTracker(RULES)
    caution = (ScenarioId.TRUNCATION, Severity.CAUTION)
    for step in (1, 2, 3):
        tracker.feed(raw(caution), step)
    for step in (4, 5, 6):
        tracker.feed(raw(), step)
    assert [(h.start, h.end) for h in tracker.history] == [(1, 6)]  # absent 3 steps in a row
    # back, its evidence beginning at step 5 (before the span ended): one span goes on
    back = raw(caution)
    back.scenarios[0].onset_step = 5.0
    for step in (8, 9, 10):
        shown = tracker.feed(back, step)
    assert [(h.start, h.end) for h in shown.history] == [(1, None)]
    # back after a real gap: a second span
    for step in range(11, 16):
        tracker.feed(raw(), step)
    later = raw(caution)
    later.scenarios[0].onset_step = 16.0
    for step in (16, 17, 18):
        shown = tracker.feed(later, step)
    assert [(h.start, h.end) for h in shown.history] == [(1, 13), (16, None)]


#: two verdicts that begin at the same step, fed to a tracker in a fresh interpreter
_SAME_START = """
from grpo_tui.health.rules import Rules
from grpo_tui.health.steady import VerdictTracker
from grpo_tui.health.verdict import CheckItem, Diagnosis, Evidence, Scenario, Window
from grpo_tui.vocabulary import Answer, ScenarioId, Severity, Status

found = [
    Scenario(sid, sid.title, Severity.CAUTION, None, [Evidence("x", Window(1, 1, 1), {}, "x")], [])
    for sid in ScenarioId
    if sid is not ScenarioId.WARMING_UP
]
tracker = VerdictTracker(Rules())
for step in (1, 2, 3, 4):
    shown = tracker.feed(Diagnosis(Status.UNKNOWN, found, [CheckItem(1, "q", Answer.UNKNOWN, "")], {}), step)
print(" ".join(span.id.value for span in shown.history))
"""


def test_verdicts_that_begin_together_keep_one_order_in_every_process() -> None:
    """The history's order does not follow Python's string hashing (a set's order)."""
    orders = {
        subprocess.run(
            [sys.executable, "-c", _SAME_START],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(4)
    }
    assert len(orders) == 1
    # the five findings, and one state: never two at once (the worst, a blow-up)
    assert orders.pop().split() == [
        "length_collapse",
        "truncation",
        "low_diversity",
        "off_policy",
        "watch",
        "too_aggressive",
    ]


def test_judging_the_same_step_again_counts_once() -> None:
    tracker = VerdictTracker(RULES)
    for _ in range(5):
        shown = tracker.feed(raw((ScenarioId.NOT_LEARNING, Severity.PROBLEM)), 10)
    assert shown.ids == []


def test_the_healthy_simulation_never_cries_wolf_while_live() -> None:
    """Judged after every logged step as the live panel does: after warm-up, no caution or
    problem headline on the simulator's healthy run (bench/diagnosis.py does every seed)."""
    run = load_run(simulated_run("healthy", seed=1))
    snap = snapshot(run)
    tracker = VerdictTracker(RULES)
    for step in np.unique(snap.train_steps).tolist():
        d = tracker.feed(
            diagnose_snapshot(snap.upto(step), RULES, tracker.holding, full=False), step
        )
        assert d.status not in (Status.CAUTION, Status.PROBLEM), (step, d.ids)


def _ingest(run: Run, columns: dict[str, Column], rows: range) -> None:
    records = [
        Record(
            LineKind.TRAIN,
            float(i + 1),
            {k: float(x) for k, v in columns.items() if (x := v[i]) is not None},
        )
        for i in rows
    ]
    run.ingest(Batch(blocks=[records_block(records)]))


def test_the_live_judge_replays_what_was_read_then_follows_the_new_steps() -> None:
    columns = healthy_columns(200)
    columns["clipped_ratio"] = [0.02] * 120 + [0.9] * 80  # truncation from step 121
    run = Run(Path("run"), status=FeedStatus(context=ON_POLICY))
    judge = LiveJudge(RULES)
    # judged before anything was read: no verdict, and the replay waits for the data
    assert judge.judge(run).ids == []
    _ingest(run, columns, range(0, 100))
    first = judge.judge(run)
    assert first.ids == ["healthy"] and [h.start for h in first.history] == [1.0]
    shown: list[list[str]] = []
    for end in range(101, 201):
        _ingest(run, columns, range(end - 1, end))
        shown.append(judge.judge(run).ids)
    # the truncation enters once it held on most of a window (70% of 20 points), then holds;
    # its onset is where it began
    entered = next(i for i, ids in enumerate(shown) if "truncation" in ids) + 101
    assert 121 < entered <= 121 + RULES.window.points
    assert all("truncation" in ids for ids in shown[entered - 101 :])
    final = judge.judge(run)
    assert (scenario(final, ScenarioId.TRUNCATION).onset_step or 0) >= 121
    # reset (a restarted run): the next call replays from scratch and agrees with diagnose()
    judge.reset()
    assert judge.judge(run).ids == diagnose(run, RULES).ids


def test_advice_follows_the_evidence() -> None:
    dead = {"reward": [0.0] * 60, "reward_std": [0.0] * 60, "frac_reward_zero_std": [1.0] * 60}
    advice = scenario(diagnose(make_run(dead), RULES), ScenarioId.NOT_LEARNING).advice
    assert len(advice) <= 3 and "easier prompts" in advice[0]
    columns = healthy_columns()
    columns["clipped_ratio"] = [0.95] * 200
    advice = scenario(
        diagnose(make_run(columns, context=ON_POLICY), RULES), ScenarioId.TRUNCATION
    ).advice
    assert any("EOS" in a for a in advice) and any("max_completion_length" in a for a in advice)


# -- zones for the UI ---------------------------------------------------------------------------------------------


def test_zone_of_values_applies_context_rules() -> None:
    values = np.array([0.0, 0.05, 0.25, 0.4, np.nan])
    on = zone_of_values("clip_ratio", values, RULES, RunContext(num_iterations=1))
    assert on.tolist() == [Zone.NA, Zone.HEALTHY, Zone.CAUTION, Zone.BAD, Zone.UNKNOWN]
    unknown = zone_of_values("clip_ratio", values, RULES, RunContext())
    assert unknown[0] == Zone.UNKNOWN
    off = zone_of_values("clip_ratio", values, RULES, RunContext(num_iterations=2))
    assert off[0] == Zone.CAUTION
    length = zone_of_values(
        "completion_length",
        np.array([10.0, 500.0, 950.0, 1000.0]),
        RULES,
        RunContext(max_completion_length=1000),
    )
    assert length.tolist() == [Zone.CAUTION, Zone.HEALTHY, Zone.CAUTION, Zone.BAD]
    assert zone_of_values("kl", np.array([0.5]), RULES, RunContext(beta=0.0)).tolist() == [Zone.NA]


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


# -- size ------------------------------------------------------------------------------------------------------------


def big_run(rows: int, seed: int = 0) -> Run:
    rng = np.random.default_rng(seed)
    names = ("reward", "reward_std", "frac_reward_zero_std", "clip_ratio", "kl", "entropy", "completion_length",
             "clipped_ratio", "loss", "grad_norm", "rewards/accuracy/mean", "rewards/format/mean")  # fmt: skip
    values = rng.random((rows, len(names)))
    block = RowBlock(
        np.zeros(rows, dtype=np.uint8),
        np.arange(1, rows + 1, dtype=float),
        [ColumnGroup(np.arange(rows), names, {}, values)],
    )
    run = Run(
        Path("big"),
        status=FeedStatus(context=RunContext(num_iterations=2, max_completion_length=2)),
    )
    run.ingest(Batch(blocks=[block]))
    return run


def test_a_million_rows_are_diagnosed() -> None:
    """Long series are read as bucket means with the latest points exact (its cost against
    1 000 rows: bench/diagnose_cost.py)."""
    run = big_run(1_000_000)
    d = diagnose(run, RULES)
    assert d.metrics["reward"].last is not None


# -- the simulator ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sim_runs() -> dict[str, Run]:
    return {name: load_run(simulated_run(name)) for name in SCENARIOS}


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_simulated_scenario_is_named(name: str, sim_runs: dict[str, Run]) -> None:
    d = diagnose(sim_runs[name], RULES)
    # what an expert names at the end of the run: its last regime
    expected = SCENARIO_REGIMES[name][-1].headline
    assert expected in ids(d), f"{name}: got {[(s.id.word, s.severity.word) for s in d.scenarios]}"
    if name == "healthy":
        assert d.status is Status.HEALTHY
    if name == "fast_convergence":  # the negative control: honest convergence is no hack
        assert "reward_hacking" not in ids(d)


# -- real runs ----------------------------------------------------------------------------------------------------------


def test_issue_4465_nan_kl_is_unknown_not_bad() -> None:
    # .source.txt: bare NaN tokens for kl and every clip_ratio key on one logging.jsonl line
    d = diagnose(load_run(MS_SWIFT / "ms-swift-issue-4465_grpo-v3.5_nan.jsonl"), RULES)
    assert d.metrics["kl"].zone is Zone.UNKNOWN and "NaN" in d.metrics["kl"].reason
    assert ids(d) == ["warming_up"] and d.status is not Status.PROBLEM
    json.dumps({k: v.last for k, v in d.metrics.items() if v.last is None or math.isfinite(v.last)})


def test_a_four_point_local_run_is_warming_up_with_early_warnings(tmp_path: Path) -> None:
    path = msswift_run_dir(
        tmp_path, "local-run-msswift-4.6.0_grpo-3rewards-eval", THREE_REWARDS_ARGS, completions=True
    )
    d = diagnose(load_run(path), RULES)
    assert d.metrics["clip_ratio"].zone is Zone.NA and answer(d, 4) == "yes"
    assert ids(d) == ["warming_up"]
    # .source.txt: clipped_ratio 0.875-1.0 at max_completion_length 24; Format always 0
    assert "early warning (Truncation)" in evidence_text(d, ScenarioId.WARMING_UP)
    assert "Format is 0 on every completion" in notes(d)


def test_trl_issue_3857_one_line_of_zero_spread_is_an_early_warning() -> None:
    # .source.txt: frac_reward_zero_std 1.0, reward_std 0.0, loss 0.0, grad_norm 0.0 on the
    # only line: every group tied. One point is no verdict, but the warning shows.
    path = FIXTURES / "trl" / "trl_issue3857_zero_std_loss0.log"
    run = load_run(path)
    if len(run.store) == 0:
        line = ast.literal_eval(path.read_text(encoding="utf-8").strip())
        values = {TRL.canonical(key): float(value) for key, value in line.items()}
        run = Run(path)
        run.ingest(Batch(blocks=[records_block([Record(LineKind.TRAIN, 1.0, values)])]))
    d = diagnose(run, RULES)
    assert ids(d) == ["warming_up"] and d.status is not Status.PROBLEM
    assert "early warning (Not learning)" in evidence_text(d, ScenarioId.WARMING_UP)
    # the fact in the grid, and a caution (never a problem) while it warms up
    assert d.metrics["reward_std"].zone is Zone.BAD and d.status is Status.CAUTION


def test_chaos_economy_late_truncation() -> None:
    # .source.txt: completions/clipped_ratio rises to 0.95-1.0 late; kl grows from ~1e-5 to
    # ~0.05; reward oscillates around 0
    d = diagnose(load_run(FIXTURES / "unsloth" / "chaos-economy_trainer_state.json"), RULES)
    assert scenario(d, ScenarioId.TRUNCATION).severity is Severity.PROBLEM
    assert d.metrics["kl"].zone is Zone.HEALTHY
    assert "healthy" not in ids(d)


def test_an_entropy_held_by_adaptive_control_is_controlled_not_healthy() -> None:
    """TRL's adaptive entropy control moves entropy_coef to hold the entropy at a target:
    the entropy in its band says nothing by itself then (and the coefficient sits beside
    it in the metric order)."""
    columns = healthy_columns()
    n = len(columns["reward"])
    columns["entropy"] = list(0.45 + noise(n, 0.01, 3))
    held = dict(columns, entropy_coef=list(np.linspace(0.01, 0.05, n)))
    controlled = diagnose(make_run(held), Rules()).metrics["entropy"]
    assert controlled.zone is Zone.NA
    assert "adaptive entropy control (entropy_coef 0.01–0.05)" in controlled.reason
    fixed = dict(columns, entropy_coef=[0.01] * n)
    assert diagnose(make_run(fixed), Rules()).metrics["entropy"].zone is Zone.HEALTHY
    assert diagnose(make_run(columns), Rules()).metrics["entropy"].zone is Zone.HEALTHY
    order = order_metrics(["entropy_coef", "loss", "entropy", "shaped_reward", "reward"])
    assert order == ["reward", "shaped_reward", "entropy", "entropy_coef", "loss"]


def test_a_live_judge_fed_in_bursts_says_what_check_says(tmp_path: Path) -> None:
    """A buffered console writes its log dicts in bursts: the live panel's judge sees the
    run three times, and says what `check` says of the whole run (it judges the moments
    a burst passed, as a whole run's replay does)."""
    source = Path(__file__).parent / "corpus" / "trl-qwen7b-gsm8k-vanilla-s43" / "console.log"
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    log = tmp_path / "console.log"
    judge = LiveJudge(Rules())
    for upto in (len(lines) // 3, 2 * len(lines) // 3, len(lines)):
        log.write_text("".join(lines[:upto]), encoding="utf-8")
        live = judge.judge(load_run(log))
    whole = diagnose(load_run(log), Rules())
    assert live.status is whole.status
    assert {s.id for s in live.scenarios} == {s.id for s in whole.scenarios}


class TestEvalCounterpart:
    """A reward function's own held-out measure is found under the run's own eval key."""

    def test_both_directions_and_not_a_mirror_of_every_function(self) -> None:
        from grpo_tui.health.rewards import eval_counterpart

        assert eval_counterpart("ndcg", ["eval_ndcg@10", "eval_loss"]) == "eval_ndcg@10"
        assert eval_counterpart("accuracy_reward", ["eval_accuracy"]) == "eval_accuracy"
        # ms-swift logs eval_rewards/<fn>/mean for every function: no sign of the task
        assert eval_counterpart("CoinFlip", ["eval_rewards/CoinFlip/mean"]) is None
        assert eval_counterpart("accuracy", ["eval_reward"]) is None


class TestOneMechanismOneVerdict:
    """A collapse to a few tokens that maxes out an auxiliary reward is the collapse, not a hack."""

    def test_a_length_penalty_at_its_top_after_a_collapse_is_no_hack(self) -> None:
        n = 200
        x = np.arange(n) / n
        columns = flat_columns(n)
        columns["completion_length"] = list(np.where(x < 0.3, 300.0, 3.0) + noise(n, 0.2))
        columns["rewards/accuracy_reward/mean"] = list(0.3 + noise(n, 0.03))
        columns["rewards/length_penalty/mean"] = list(np.where(x < 0.3, 0.2, 1.0))
        d = diagnose(
            make_run(columns, context=RunContext(num_iterations=1, max_completion_length=1024)),
            RULES,
        )
        assert "length_collapse" in ids(d)
        assert "reward_hacking" not in ids(d)


def test_the_checklist_gives_a_metric_the_zone_the_grid_gives_it() -> None:
    """One thing said about each metric: where the checklist answers from a metric's zone
    (reward_std, frac_reward_zero_std, kl), its glyph is the grid's for that metric on every
    corpus run (a reward_std in its caution zone was a green "yes" beside a yellow "!")."""
    zoned = {2: "reward_std", 3: "frac_reward_zero_std", 8: "kl"}
    cautions = 0
    for run in CORPUS_RUNS:
        d = corpus_diagnosis(run)
        for item in d.checklist:
            name = zoned.get(item.id)
            if name is None or name not in d.metrics or not item.evidence.startswith(name):
                continue
            assert item.answer.zone is d.metrics[name].zone, (run, item)
            cautions += item.answer is Answer.CAUTION
    assert cautions  # the corpus has metrics in their caution zone


def test_an_eval_clip_ratio_of_0_is_no_caution() -> None:
    """ms-swift's eval lines log every clip ratio as 0 (an eval pass updates nothing): the
    grid said `!` for eval_clip_ratio beside the context rule's `?` for clip_ratio."""
    d = corpus_diagnosis("msswift-qwen3vl-summary-pein")
    assert d.metrics["eval_clip_ratio"].zone is Zone.NA
    assert d.metrics["clip_ratio"].zone is Zone.UNKNOWN
    assert d.metrics["eval_frac_reward_zero_std"].zone is Zone.CAUTION  # still mirrored


def test_reward_std_at_zero_counts_the_points_of_the_window_it_judged() -> None:
    """reward_std ≈0 on a long run: "k/n points" is over the judged window (its 10 % of the
    run), the same window the grid's zone and the share are taken on, not a window of it."""
    n = 400
    columns = {
        "reward": list(0.3 + noise(n, 0.01)),
        "reward_std": [0.2] * (n - 50) + [0.0] * 50,
        "frac_reward_zero_std": [0.1] * (n - 50) + [1.0] * 50,
    }
    judged = diagnose(make_run(columns), RULES).metrics["reward_std"]
    assert judged.zone is Zone.BAD
    assert judged.points == RULES.window_size(n) == 40
    assert "on 40/40 points (steps 361–400)" in judged.reason


# -- what the blind set taught (session of 2026-12-08) ----------------------------------------


class TestNoSpreadLoggedAtTheFloor:
    """A reward at its floor with no gradient is every group tied, even with no spread logged."""

    def test_a_score_at_0_with_no_gradient_is_not_learning(self) -> None:
        # verl's score alone (no reward_std, no zero-std share): 0 on every step, grad_norm 0
        n = 49
        columns = {"reward": [0.0] * n, "grad_norm": [0.0] * n, "entropy": [0.04] * n}
        d = diagnose(make_run(columns, context=ON_POLICY), RULES)
        block = scenario(d, ScenarioId.NOT_LEARNING)
        assert block.severity is Severity.PROBLEM
        assert "every group tied" in evidence_text(d, ScenarioId.NOT_LEARNING)
        # the grid says what the verdict cites: no update reaches the weights
        assert d.metrics["grad_norm"].zone is Zone.CAUTION

    def test_a_moving_gradient_at_the_floor_is_not_this_evidence(self) -> None:
        n = 49
        columns = {
            "reward": [0.0] * n,
            "grad_norm": list(0.3 + noise(n, 0.03)),
            "entropy": [0.04] * n,
        }
        d = diagnose(make_run(columns, context=ON_POLICY), RULES)
        assert "every group tied" not in " ".join(e.text for s in d.scenarios for e in s.evidence)


class TestNoRewardIsAClaimAboutTheWholeLog:
    """ "No reward is logged" is said only once the log has been read."""

    def test_while_the_history_is_read_it_is_not_said(self) -> None:
        run = make_run({"loss": [0.1] * 40})
        assert diagnose(run, RULES).state is LearningState.NO_REWARD
        run.status = replace(run.status, backlog=(1_000, 50_000))
        d = diagnose(run, RULES)
        assert d.state is LearningState.TOO_EARLY
        said = " ".join(e.text for s in d.scenarios for e in s.evidence)
        assert "still being read" in said and "no reward is logged" not in said
