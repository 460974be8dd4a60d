"""The diagnosis on other people's real runs (tests/corpus), one class per principle of
issue 22 / docs/health.md, "Stated error rates"; the live moments are cut in the
layout the trainer writes (bench/diagnosis.py's cut_run), as a panel opened then sees them."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from helpers import CORPUS, corpus_diagnosis, load_bench

from grpo_tui.health.diagnose import Diagnosis, diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.health.series import snapshot
from grpo_tui.run.follow import load_run
from grpo_tui.vocabulary import ScenarioId, Status

RULES = Rules()


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("diagnosis")


def whole(name: str) -> Diagnosis:
    return corpus_diagnosis(name)


def at(bench: ModuleType, name: str, share: float, tmp_path: Path) -> Diagnosis:
    """The run as it stood after `share` of its logged train points."""
    top = CORPUS / name
    steps = np.unique(snapshot(load_run(top)).train_steps)
    upto = float(steps[max(0, math.ceil(share * steps.size) - 1)])
    return diagnose(load_run(bench.cut_run(top, upto, tmp_path)), RULES)


def notes(d: Diagnosis) -> str:
    return "\n".join(n.text for n in d.notes)


class TestARisingRunIsNeverNotLearning:
    """A run whose reward rises is never "not learning", least of all early on."""

    @pytest.mark.parametrize("share", [0.1, 0.2, 0.3])
    def test_the_learning_gsm8k_run_early(
        self, bench: ModuleType, share: float, tmp_path: Path
    ) -> None:
        d = at(bench, "trl-qwen35-9b-gsm8k-learning", share, tmp_path)
        assert "not_learning" not in d.ids and d.status is not Status.PROBLEM

    def test_a_sparse_run_that_never_rose_is_not_learning(self) -> None:
        d = whole("trl-redteam-finance-sparse")
        assert "not_learning" in d.ids
        evidence = "\n".join(e.text for s in d.scenarios for e in s.evidence)
        assert "rose by less than" in evidence  # the bound it rests on, in numbers

    def test_undecided_early_is_too_early_to_say_with_what_would_decide_it(
        self, bench: ModuleType, tmp_path: Path
    ) -> None:
        d = at(bench, "trl-qwen35-9b-gsm8k-learning", 0.1, tmp_path)
        # the state says it: not learning? too early to say, and what would decide it
        assert d.state_block is not None and d.state_block.id is ScenarioId.TOO_EARLY
        said = "\n".join(e.text for e in d.state_block.evidence)
        assert "too early to say" in said
        assert "more steps at this noise would decide it" in said


class TestKlOffsetIsNotDrift:
    """KL high from the first steps with the learning rate still low is a reference mismatch."""

    def test_the_verilog_curriculum_run(self) -> None:
        d = whole("trl-qwen3-8b-verilog-curriculum-lr6e-6")
        assert "too_aggressive" not in d.ids
        assert "offset between the policy and its reference" in notes(d)
        assert d.metrics["kl"].zone.word == "caution"


class TestLengthsByDesign:
    """Truncation rests on the framework's cut share first, the cap second."""

    def test_short_answers_under_a_known_cap_are_not_truncation(self) -> None:
        assert "truncation" not in whole("verl-qwen7b-econagent-300st").ids

    def test_lengths_growing_into_the_cap_with_a_cut_share_are_truncation(self) -> None:
        assert "truncation" in whole("trl-qwen3-8b-verilog-lr2e-5-lengthblowup").ids

    def test_a_cut_the_task_is_learned_despite_is_never_a_problem(
        self, bench: ModuleType, tmp_path: Path
    ) -> None:
        d = at(bench, "trl-qwen35-9b-gsm8k-rho1-s43-json", 0.5, tmp_path)
        assert "truncation" in d.ids and d.status is Status.CAUTION


class TestWhichRewardIsTheTask:
    """With names that do not say, the function the run evaluates is the task."""

    def test_a_bonus_carrying_the_total_while_task_and_eval_fall_is_hacking(self) -> None:
        d = whole("custom-grpo-genrec-coldbonus-lambda8")
        assert d.ids[0] == ScenarioId.REWARD_HACKING.word
        eval_answer = d.checklist[6]
        assert "eval_ndcg@10" in eval_answer.evidence  # eval found under its own key
        advice = [a for s in d.scenarios for a in s.advice]
        assert not any("eval set" in a for a in advice)  # it has one


class TestOneMechanismOneVerdictButTheLoudestFactShows:
    """A collapse to a few tokens is named beside the hack that caused it."""

    def test_the_verl_shaped_reward_run(self) -> None:
        d = whole("verl-wandb-opd-qwen25-3b-kl005-lengthhack-collapse")
        assert "length_collapse" in d.ids and "reward_hacking" in d.ids
