"""Is run B better than run A, or is that seed noise (grpo_tui/health/difference.py): on
real corpus runs, on the simulator's same-setting seeds (bench/compare_noise.py), and on
series built to test one property at a time."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from helpers import CORPUS, load_bench, simulated_run
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from grpo_tui.context import RunContext
from grpo_tui.health.course import MAX_RHO, Noise
from grpo_tui.health.difference import (
    Difference,
    Reading,
    Side,
    Undecided,
    compare_rewards,
    difference,
    task_key,
)
from grpo_tui.health.rules import Rules
from grpo_tui.health.series import RunSnapshot, SeriesView, snapshot
from grpo_tui.run.follow import load_run

RULES = Rules()
VANILLA = "trl-qwen7b-gsm8k-vanilla"


@functools.cache
def corpus_snapshot(name: str) -> RunSnapshot:
    return snapshot(load_run(CORPUS / name))


@functools.cache
def sim_snapshot(scenario: str, seed: int) -> RunSnapshot:
    return snapshot(load_run(simulated_run(scenario, seed)))


def task(a: str, b: str) -> Reading:
    """B's task reward against A's, two corpus runs."""
    return compare_rewards(corpus_snapshot(a), corpus_snapshot(b), (a, b), RULES)[0]


def decided(reading: Reading) -> Difference:
    assert isinstance(reading, Difference), reading.describe()
    return reading


def view(steps: np.ndarray, values: np.ndarray, name: str = "reward") -> SeriesView:
    return SeriesView(name, steps.astype(float), values.astype(float), np.empty(0))


def built(change: float, half_width: float, *, first: float = 100, last: float = 300) -> Difference:
    """A difference with these numbers (each run 41 independent points over the span)."""
    noise = Noise(1.0, 0.0, 80.0)
    error = half_width / 2.0 / math.sqrt(2.0)
    a = Side("A", "reward", 0.5, error, 41, noise)
    b = Side("B", "reward", 0.5 + change, error, 41, noise)
    return Difference("task reward", a, b, first, last, False, 2.0, 80.0, 0.98, 8)


class TestRealRuns:
    """Two seeds of one setting are not beyond noise; two settings that differ are."""

    def test_two_seeds_of_the_vanilla_setting_are_not_beyond_noise(self) -> None:
        """seed 42 and seed 43 of Qwen2.5-7B on GSM8K: 0.91 against 0.79 (seed 43 dipped to
        0.07-0.42 at steps 20-40 and came back): seed noise, and said so."""
        reading = decided(task(VANILLA, f"{VANILLA}-s43"))
        assert not reading.beyond_noise
        assert reading.a.key == reading.b.key == "reward" and not reading.across_rewards
        assert (reading.first_step, reading.last_step) == (5, 200)
        assert reading.a.points == reading.b.points == 40
        assert reading.change == pytest.approx(0.788 - 0.908, abs=0.002)
        assert reading.low < 0 < reading.high
        assert reading.more_steps is not None and reading.more_steps > 0
        assert reading.describe() == (
            f"task reward: {VANILLA}-s43 below {VANILLA} by 0.1 ± 1.0 over steps 5–200: "
            f"not beyond noise; about {reading.more_steps} more steps at this noise would tell"
        )

    def test_a_setting_that_blew_up_is_named_below_beyond_noise(self) -> None:
        """rho 0.30 (same harness, same seed) blew up at step ~20 and sat at 0: 0.83 below
        the vanilla run, beyond noise, with the steps such a gap needs."""
        reading = decided(task(VANILLA, "trl-qwen7b-gsm8k-rho030-s42-blowup-entropy0"))
        assert reading.beyond_noise and reading.high < 0
        assert reading.change == pytest.approx(0.0744 - 0.908, abs=0.002)
        steps = reading.steps_to_tell
        assert steps is not None and steps <= reading.last_step - reading.first_step
        assert reading.more_steps is None
        assert reading.describe().endswith(
            f"below {VANILLA} by 0.83 ± 0.14 over steps 5–200: beyond noise "
            f"(about {steps} steps at this noise tell it)"
        )

    def test_a_run_that_learned_against_one_stuck_at_its_cap(self) -> None:
        """Qwen3.5-9B on GSM8K: 0.23 → 0.68 against G=3 with every completion cut at 128
        tokens, 0.02: beyond noise; B first, the sign turns and nothing else does."""
        learning, stuck = "trl-qwen35-9b-gsm8k-learning", "trl-qwen35-9b-gsm8k-g3-stuck"
        one, other = decided(task(learning, stuck)), decided(task(stuck, learning))
        assert one.beyond_noise and other.beyond_noise
        assert one.change == pytest.approx(-other.change) and one.change < -0.4
        assert one.half_width == pytest.approx(other.half_width)
        assert "below" in one.describe() and "above" in other.describe()

    def test_two_short_dapo_runs_are_not_told_apart(self) -> None:
        """verl GRPO against Dr.GRPO on DAPO-Math, 20 steps each at -0.13 and -0.17: not
        beyond noise (their labels: flat within noise)."""
        reading = decided(task("verl-qwen3-8b-dapomath-grpo-A", "verl-qwen3-8b-dapomath-drgrpo-E"))
        assert not reading.beyond_noise and reading.a.points == reading.b.points == 20

    def test_a_run_against_itself_would_never_be_told(self) -> None:
        reading = decided(task(VANILLA, VANILLA))
        assert reading.change == 0 and not reading.beyond_noise and reading.hopeless
        assert reading.steps_to_tell is None and reading.more_steps is None
        assert reading.describe().endswith(
            "level with trl-qwen7b-gsm8k-vanilla (0 ± 0.04) over steps 5–200: not beyond "
            "noise; no number of steps at this noise would tell"
        )

    def test_an_eval_only_one_run_logs_is_not_compared(self) -> None:
        """econagent-300st evaluates once (step 300), rltrain-699st never: the task reward
        only; v5reward evaluates at step 700 alone: no shared eval steps, said so."""
        base = corpus_snapshot("verl-qwen7b-econagent-300st")
        readings = compare_rewards(
            base, corpus_snapshot("verl-qwen7b-econagent-rltrain-699st"), ("A", "B"), RULES
        )
        assert [r.what for r in readings] == ["task reward"]
        readings = compare_rewards(
            base, corpus_snapshot("verl-qwen7b-econagent-v5reward-700st"), ("A", "B"), RULES
        )
        assert isinstance(readings[1], Undecided)
        assert (
            readings[1].describe()
            == "eval reward: the runs share no steps (A step 300, B step 700)"
        )


class TestWhichReward:
    """The task reward the diagnosis judges, the same key in both runs where possible."""

    def test_the_task_function_of_a_run_that_names_one(self) -> None:
        assert task_key(sim_snapshot("healthy", 0), RULES) == "rewards/MathAccuracy/mean"
        # reward_fn's name says no role: the total is the task reward, as in the diagnosis
        assert task_key(corpus_snapshot(VANILLA), RULES) == "reward"

    def test_totals_of_other_reward_functions_are_said_to_be_across_rewards(self) -> None:
        """GSM8K's reward_fn against the simulator's accuracy + format: the total both log."""
        readings = compare_rewards(
            corpus_snapshot(VANILLA), sim_snapshot("healthy", 0), ("gsm8k", "sim"), RULES
        )
        reading = decided(readings[0])
        assert reading.across_rewards and reading.a.key == reading.b.key == "reward"
        assert reading.describe().startswith("task reward (across different rewards): sim ")

    def test_each_runs_own_task_reward_when_no_key_is_shared(self) -> None:
        sim = sim_snapshot("healthy", 0)
        functions = {k: v for k, v in sim.series.items() if k != "reward"}
        reading = decided(
            compare_rewards(
                corpus_snapshot(VANILLA), RunSnapshot(functions, sim.context), ("A", "B"), RULES
            )[0]
        )
        assert reading.across_rewards
        assert (reading.a.key, reading.b.key) == ("reward", "rewards/MathAccuracy/mean")

    def test_a_task_function_both_log_is_preferred_to_the_total(self) -> None:
        a, b = sim_snapshot("healthy", 0), sim_snapshot("healthy", 1)
        reading = decided(compare_rewards(a, b, ("A", "B"), RULES)[0])
        assert reading.a.key == reading.b.key == "rewards/MathAccuracy/mean"
        assert not reading.across_rewards

    def test_one_total_over_other_reward_functions_is_across_rewards(self) -> None:
        base = corpus_snapshot(VANILLA)
        other = RunSnapshot(
            dict(base.series), RunContext(reward_funcs=["accuracy", "format"]), step=base.step
        )
        reading = decided(compare_rewards(base, other, ("A", "B"), RULES)[0])
        assert reading.across_rewards and reading.change == 0

    def test_a_run_with_no_reward_is_said(self) -> None:
        empty = RunSnapshot({}, RunContext())
        (reading,) = compare_rewards(corpus_snapshot(VANILLA), empty, ("A", "B"), RULES)
        assert reading.describe() == "task reward: B logs no reward to set beside A's"
        assert reading.describe(("run 1", "run 2")).endswith(
            "run 2 logs no reward to set beside run 1's"
        )


class TestSharedSteps:
    """Only the steps both runs logged are compared; too few are said to be too few."""

    def test_runs_that_share_too_few_steps(self) -> None:
        steps = np.arange(1.0, 101.0)
        values = np.sin(steps)
        reading = difference(
            "task reward", ("A", "B"), (view(steps, values), view(steps + 95, values)), RULES
        )
        assert isinstance(reading, Undecided)
        assert reading.describe() == (
            "task reward: the runs share steps 96–100 (5 and 5 points): too few to tell "
            "(at least 8 points each)"
        )

    def test_only_the_shared_span_is_read(self) -> None:
        """A run three times as long, far higher after the span: its later steps do not count."""
        steps = np.arange(1.0, 301.0)
        rng = np.random.default_rng(7)
        long = np.where(steps <= 100, 0.5, 5.0) + rng.normal(0, 0.05, steps.size)
        short = 0.5 + rng.normal(0, 0.05, 100)
        reading = decided(
            difference(
                "task reward", ("A", "B"), (view(steps[:100], short), view(steps, long)), RULES
            )
        )
        assert (reading.first_step, reading.last_step) == (1, 100) and reading.b.points == 100
        assert not reading.beyond_noise

    def test_a_sparser_logging_stride_is_no_obstacle(self) -> None:
        """Every step against every fifth step of the same level: each run's own mean."""
        rng = np.random.default_rng(3)
        every = np.arange(1.0, 201.0)
        fifth = np.arange(5.0, 201.0, 5.0)
        reading = decided(
            difference(
                "task reward",
                ("A", "B"),
                (
                    view(every, 0.3 + rng.normal(0, 0.1, every.size)),
                    view(fifth, 0.6 + rng.normal(0, 0.1, fifth.size)),
                ),
                RULES,
            )
        )
        assert (reading.a.points, reading.b.points) == (196, 40)
        assert reading.beyond_noise and reading.change == pytest.approx(0.3, abs=0.05)


class TestWords:
    """The numbers to the error's precision; the verdict decided by the interval shown."""

    def test_the_issues_sentence(self) -> None:
        reading = built(0.02, 0.03)
        assert reading.describe() == (
            f"task reward: B above A by 0.02 ± 0.03 over steps 100–300: not beyond noise; "
            f"about {reading.more_steps} more steps at this noise would tell"
        )
        # (0.03 / 0.02)² = 2.25 times the 205 steps the span covers: 256 more, said as 260
        assert reading.more_steps == 260

    def test_beyond_noise_names_the_steps_it_needs(self) -> None:
        reading = built(-0.21, 0.05, first=1)
        assert reading.describe() == (
            "task reward: B below A by 0.21 ± 0.05 over steps 1–300: beyond noise "
            f"(about {reading.steps_to_tell} steps at this noise tell it)"
        )
        # (0.05 / 0.21)² of 307 steps is 17; never fewer than 8 points' worth of steps
        assert reading.steps_to_tell == round(8 * 307 / 41)

    @given(
        change=st.floats(-1.0, 1.0, allow_nan=False),
        half_width=st.floats(1e-4, 1.0, allow_nan=False),
    )
    @settings(max_examples=200, deadline=None)
    def test_the_words_follow_the_interval(self, change: float, half_width: float) -> None:
        reading = built(change, half_width)
        text = reading.describe()
        assert reading.beyond_noise == (reading.low > 0 or reading.high < 0)
        assert ("not beyond noise" in text) == (not reading.beyond_noise)
        if reading.beyond_noise:
            assert reading.steps_to_tell is not None and reading.more_steps is None
        elif reading.hopeless:
            assert "no number of steps" in text and reading.more_steps is None
        else:
            assert reading.more_steps is not None and f"about {reading.more_steps} more" in text

    def test_an_eval_of_a_few_points_counts_its_autocorrelation_unknown(self) -> None:
        """The simulator's eval: 6 points over one fixed set of prompts, worth one point."""
        readings = compare_rewards(
            sim_snapshot("healthy", 0), sim_snapshot("healthy", 1), ("A", "B"), RULES
        )
        assert [r.what for r in readings] == ["task reward", "eval reward"]
        evaluated = decided(readings[1])
        assert evaluated.a.key == "eval_reward" and evaluated.a.points == 6
        assert evaluated.a.noise.rho == MAX_RHO and evaluated.a.effective == 1
        assert decided(readings[0]).a.noise.rho < MAX_RHO


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("compare_noise")


class TestFalseBeyondNoise:
    """Same-setting seeds of the simulator are called apart at most 5 % of the time."""

    def test_same_setting_seeds_are_rarely_called_apart(
        self, bench: ModuleType, tmp_path: Path
    ) -> None:
        """24 healthy pairs (48 comparisons): no more beyond-noise claims than a true rate
        of 5 % gives with probability 99 % (the bench runs 200 pairs of four scenarios)."""
        tally = bench.false_claims("healthy", 24, RULES, tmp_path, start=5000)
        claims, compared = tally.total()
        assert compared == 48
        assert claims <= binom.ppf(0.99, compared, bench.TARGET), tally.examples
