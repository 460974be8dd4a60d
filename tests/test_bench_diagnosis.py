"""bench/diagnosis.py on a small scale: the labelled real runs all agree, and a few
simulated runs judged live meet the targets (the bench runs every scenario x 10 seeds)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from helpers import load_bench

from grpo_tui.health.rules import Rules
from grpo_tui.health.verdict import Diagnosis, Evidence, Scenario, Window
from grpo_tui.vocabulary import ScenarioId, Severity, Status


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("diagnosis")


def test_every_labelled_real_run_agrees(bench: ModuleType) -> None:
    results = bench.label_agreement(bench.LABEL_SETS, Rules())
    names = {r.name for r in results}
    # the corpus and our own fixtures are both there
    assert {
        "corpus/aaipl-minesweeper-trl",
        "fixtures/chaos-economy",
        "fixtures/deepclima-sft",
    } <= names
    assert {r.name: r.problems for r in results if not r.agreed} == DISAGREEMENTS


#: where the tool and a label part ways, and why the tool's reading is kept (issue 43's
#: closing note gives the figures)
DISAGREEMENTS = {
    # 100 of 2013 steps (the run stopped): the label calls it not learning or truncated. The
    # reward's noise (σ 4.6 per point) leaves a rise of 0.64 possible at 99 %, above the
    # quarter of its within-batch spread that matters (0.36): "not learning" would rest on
    # no evidence; the cut share is 0 on most points (0.03 in the last eighth), no
    # truncation. The run is "too early to say", its KL offset noted.
    "corpus/trl-qwen3-8b-verilog-debug-lr2e-5-r32": ["none of not_learning, truncation"],
}


def test_a_label_is_checked_rule_by_rule(bench: ModuleType) -> None:
    shown = Scenario(
        ScenarioId.TRUNCATION,
        "Truncation",
        Severity.PROBLEM,
        1.0,
        [Evidence("x", Window(1, 1, 1), {}, "x")],
        [],
    )
    d = Diagnosis(Status.PROBLEM, [shown], [], {})
    assert bench.label_problems(d, {"must": ["truncation"], "status": ["problem"]}) == []
    problems = bench.label_problems(
        d,
        {
            "must": ["saturated"],
            "any_of": ["healthy"],
            "never": ["truncation"],
            "status": ["caution"],
            "zones": {"kl": ["healthy"]},
        },
    )
    assert problems == [
        "missing saturated",
        "none of healthy",
        "has truncation",
        "status problem, expected caution",
        "kl absent, expected healthy",
    ]


def test_fixtures_are_read_from_copies_never_in_place(bench: ModuleType, tmp_path: Path) -> None:
    fixtures = Path(__file__).parent / "fixtures"
    label = dict(bench.labelled_runs(fixtures))["msswift-3rewards-eval"]
    top = bench.run_path(fixtures, "msswift-3rewards-eval", label, tmp_path)
    run_dir = top / bench.SWIFT_RUN_DIR
    assert sorted(p.name for p in run_dir.iterdir()) == ["completions.jsonl", "logging.jsonl"]
    assert top.is_relative_to(tmp_path)


@pytest.mark.parametrize("scenario", ["healthy", "truncation", "blow_up", "early_collapse"])
def test_simulated_runs_judged_live_meet_the_targets(bench: ModuleType, scenario: str) -> None:
    (result,) = bench.evaluate_sims([scenario], [3], Rules(), max_steps=1000)
    assert result.judged > 150  # judged after every logged step past warm-up
    assert result.false_alarms == 0, result.false_alarm_examples
    assert result.headline_changes <= result.change_target, result.headlines
    assert all(d is not None and d <= bench.DELAY_TARGET for d in result.delays), result.delays


def test_real_runs_replayed_live_raise_no_false_alarm(bench: ModuleType) -> None:
    """The live replay on the runs that raised alarms before (rising runs early, a KL offset)."""
    names = (
        "trl-qwen35-9b-gsm8k-learning",
        "trl-qwen3-8b-verilog-curriculum-lr6e-6",
        "unsloth-gsm8k-llama-imjonezz",
    )
    results = bench.live_replay(bench.CORPUS, Rules(), names)
    assert [r.name for r in results] == [
        n for n, _ in bench.labelled_runs(bench.CORPUS) if n in names
    ]
    assert all(r.judged >= 7 for r in results)  # after warm-up, most cuts are judged
    assert [(r.name, r.false_alarms) for r in results if r.false_alarms] == []


def test_a_cut_is_the_file_the_trainer_had_written_then(bench: ModuleType, tmp_path: Path) -> None:
    """A trainer_state.json ends its log_history at the cut; a console log just after its line."""
    import json

    top = bench.CORPUS / "trl-qwen35-9b-gsm8k-learning"
    cut = bench.cut_run(top, 60.0, tmp_path)
    state = json.loads((cut / "checkpoint-200" / "trainer_state.json").read_text())
    assert max(e["step"] for e in state["log_history"]) == 60
    verl = bench.cut_run(bench.CORPUS / "verl-qwen7b-econagent-300st", 30.0, tmp_path)
    log = (verl / "train_300steps.log").read_text(errors="replace").splitlines()
    assert "step:30 " in log[-1] or "step:30 -" in log[-1]
