"""One run, one story: every surface (the verdict line, the diagnosis pane, `check`'s text
and JSON, the checklist, the grid's rows, the board's row, an event) tells the same story
about a run, on every corpus run at its end and half-way, and on every simulated scenario
at three moments of its run (bench/consistency.py names what a contradiction is)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from helpers import load_bench

from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.health.series import snapshot
from grpo_tui.run.follow import load_run
from grpo_tui.sim import SCENARIOS, SimConfig, write_run

CORPUS = Path(__file__).resolve().parent / "corpus"
#: a fixed clock: the board's and the header's ages read the same on every machine
NOW = 2_000_000_000.0


def _module(name: str) -> ModuleType:
    return load_bench(name)


@pytest.fixture(scope="module")
def consistency() -> ModuleType:
    return _module("consistency")


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _module("diagnosis")


def _corpus_runs() -> list[str]:
    return sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


class TestEveryCorpusRun:
    """A real run at its end and half-way: no two surfaces disagree."""

    @pytest.mark.parametrize("name", _corpus_runs())
    def test_at_its_end_and_half_way(
        self, name: str, consistency: ModuleType, bench: ModuleType, tmp_path: Path
    ) -> None:
        top = CORPUS / name
        run = load_run(top)
        found = consistency.contradictions(run, diagnose(run, Rules()), Rules(), NOW)
        steps = np.unique(snapshot(run).train_steps)
        half = float(steps[steps.size // 2])
        cut = load_run(bench.cut_run(top, half, tmp_path))
        found += [
            f"half-way (step {half:g}): {c}"
            for c in consistency.contradictions(cut, diagnose(cut, Rules()), Rules(), NOW)
        ]
        assert found == []


class TestEverySimulatedScenario:
    """A simulated run of every scenario, cut at a third, two thirds and its end."""

    @pytest.mark.parametrize("scenario", SCENARIOS)
    def test_at_three_moments(
        self, scenario: str, consistency: ModuleType, bench: ModuleType, tmp_path: Path
    ) -> None:
        config = SimConfig(scenario=scenario, seed=5, max_steps=300)
        top = write_run(tmp_path / scenario, config=config)
        found: list[str] = []
        for upto in (100.0, 200.0, 300.0):
            run = load_run(bench.cut_run(top, upto, tmp_path / "cuts"))
            d = diagnose(run, Rules())
            found += [
                f"step {upto:g}: {c}" for c in consistency.contradictions(run, d, Rules(), NOW)
            ]
        assert found == []


def test_a_contradiction_is_found_when_two_surfaces_disagree(consistency: ModuleType) -> None:
    """The check is no rubber stamp: a state shown twice, a JSON status that differs."""
    from dataclasses import replace

    from grpo_tui.vocabulary import Status

    run = load_run(CORPUS / "trl-redteam-finance-sparse")
    d = diagnose(run, Rules())
    assert consistency.contradictions(run, d, Rules(), NOW) == []
    state = next(s for s in d.scenarios if s.id.is_state)
    twice = replace(d, scenarios=[*d.scenarios, replace(state, title="Another")])
    assert any(
        "2 states at once" in c for c in consistency.contradictions(run, twice, Rules(), NOW)
    )
    calmer = replace(d, status=Status.HEALTHY)
    assert consistency.contradictions(run, calmer, Rules(), NOW)
