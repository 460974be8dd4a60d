"""One judgement per metric on the screen: the grid's zone, the checklist's answer and every
verdict's evidence read the same judgement, on every corpus run and simulated scenario."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import CORPUS_RUNS, corpus_diagnosis

from grpo_tui.health.diagnose import Diagnosis, diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.sim import SCENARIOS, SimConfig, write_run
from grpo_tui.vocabulary import Answer, Zone

RULES = Rules()
#: checklist question -> the metric whose zone answers it
QUESTION_METRIC = {2: "reward_std", 3: "frac_reward_zero_std", 4: "clip_ratio", 8: "kl"}


def disagreements(d: Diagnosis) -> list[str]:
    """Every place two parts of the screen say different things about one metric."""
    found = []
    for scenario in d.scenarios:
        # a verdict held after its evidence went says so, with the step: it quotes then
        if not scenario.severity.warns or scenario.held_since is not None:
            continue
        for e in scenario.found:
            health = d.metrics.get(e.metric)
            # evidence read off a metric's judgement ("recent" level) names a zone that warns
            if health is None or "recent" not in e.numbers or health.zone is Zone.NA:
                continue
            if not health.zone.warns:
                found.append(
                    f"{scenario.id.word} cites {e.metric} ({e.text}) beside its zone {health.zone.word}"
                )
    for item in d.checklist:
        metric = QUESTION_METRIC.get(item.id)
        health = d.metrics.get(metric) if metric else None
        if health is None:
            continue
        if item.answer is Answer.YES and health.zone is Zone.BAD:
            found.append(f"checklist {item.id} ✓ beside {metric} bad")
        if item.answer is Answer.NO and not health.zone.warns:
            found.append(f"checklist {item.id} ✗ beside {metric} {health.zone.word}")
    return found


class TestOneJudgementPerMetric:
    """No two places on the screen disagree about a metric at one moment."""

    @pytest.mark.parametrize("name", CORPUS_RUNS)
    def test_every_corpus_run(self, name: str) -> None:
        assert disagreements(corpus_diagnosis(name)) == []

    @pytest.mark.parametrize("scenario", SCENARIOS)
    def test_every_simulated_scenario(self, scenario: str, tmp_path: Path) -> None:
        run_dir = write_run(tmp_path / scenario, config=SimConfig(scenario=scenario, seed=0))
        assert disagreements(diagnose(load_run(run_dir), RULES)) == []
