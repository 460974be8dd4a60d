"""The prompt ledger (run/completions/ledger.py): each train prompt followed from visit to
visit, incrementally, in memory bounded by prompts; its words (views/prompts.py) on `check`
and `check --json`."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_tui.run.completions import CompletionsIndex
from grpo_tui.run.completions.ledger import (
    LINKED,
    VISITS_KEPT,
    Category,
    PromptLedger,
    Span,
    prompt_key,
)
from grpo_tui.sim import DEMO_PROMPT_POOL, SimConfig, write_run
from grpo_tui.views.prompts import forecast_words, prompts_headline, prompts_json, prompts_lines

FIXTURES = Path(__file__).parent / "fixtures"
MSSWIFT = FIXTURES / "ms-swift" / "local-run-msswift-4.6.0_grpo-3rewards-eval_completions.jsonl"
#: totals 0..1: a pass is a completion at 1
SPAN = Span(0.0, 1.0)


def ledger_of(visits: list[tuple[str, float, int, int]], top: float = 1.0) -> PromptLedger:
    """A ledger fed one batch per visit: (prompt, step, passes, size), entry = its place."""
    ledger = PromptLedger()
    for entry, (prompt, step, passes, size) in enumerate(visits):
        ledger.add(entry, step, [(prompt, passes, size)], top)
    return ledger


def category(ledger: PromptLedger, prompt: str, span: Span = SPAN) -> Category | None:
    return ledger.categories([prompt], span)[0]


class TestCategories:
    """Each prompt falls in one category from its visits in step order."""

    def test_first_solved(self) -> None:
        """Unsolved on its first visit, solved on its latest: first solved."""
        ledger = ledger_of([("a", 1, 0, 8), ("a", 5, 0, 8), ("a", 9, 3, 8)])
        assert category(ledger, "a") is Category.FIRST_SOLVED

    def test_regressed(self) -> None:
        """Solved before, unsolved on its latest visit: regressed."""
        ledger = ledger_of([("a", 1, 2, 8), ("a", 5, 0, 8)])
        assert category(ledger, "a") is Category.REGRESSED

    def test_never_and_always_solved(self) -> None:
        """No pass on any visit is never solved; all-pass on every visit is always solved."""
        ledger = ledger_of([("a", 1, 0, 8), ("a", 5, 0, 8), ("b", 1, 8, 8), ("b", 5, 8, 8)])
        assert category(ledger, "a") is Category.NEVER_SOLVED
        assert category(ledger, "b") is Category.ALWAYS_SOLVED

    def test_kept_solved_and_seen_once(self) -> None:
        """Solved first and last, not all-pass every time: kept solved; one visit: none."""
        ledger = ledger_of([("a", 1, 8, 8), ("a", 5, 4, 8), ("b", 3, 1, 8)])
        assert category(ledger, "a") is Category.KEPT_SOLVED
        assert category(ledger, "b") is None

    def test_whitespace_does_not_split_a_prompt(self) -> None:
        """A prompt is keyed on its text with whitespace collapsed, not on the text itself."""
        assert prompt_key("What is  2+2?\n") == prompt_key("What is 2+2?")
        ledger = ledger_of([("What is  2+2?\n", 1, 0, 4), ("What is 2+2?", 2, 4, 4)])
        assert len(ledger) == 1

    def test_a_prompt_twice_in_a_batch_is_one_visit(self) -> None:
        """Two groups of one prompt in one batch count as one visit, their completions summed."""
        ledger = PromptLedger()
        ledger.add(0, 1.0, [("a", 0, 4), ("a", 4, 4)], 1.0)
        ledger.add(1, 2.0, [("a", 0, 4)], 1.0)
        report = ledger.report(SPAN)
        assert report.visits == 2
        assert report.counts[Category.REGRESSED] == 1


class TestOrder:
    """Visits arriving out of step order take their place; judgements follow the top."""

    def test_out_of_order_visits_are_put_in_step_order(self) -> None:
        """A back-filled earlier visit makes a solved prompt first solved, not kept."""
        ledger = ledger_of([("a", 9, 3, 8), ("a", 5, 3, 8)])
        assert category(ledger, "a") is Category.KEPT_SOLVED
        ledger.add(7, 1.0, [("a", 0, 8)], 1.0)
        assert category(ledger, "a") is Category.FIRST_SOLVED

    def test_a_higher_top_makes_earlier_passes_fails(self) -> None:
        """Passes judged at a top since passed count none: no total there reached the new top."""
        ledger = ledger_of([("a", 1, 8, 8), ("a", 2, 8, 8)])
        assert category(ledger, "a", Span(0.0, 1.0)) is Category.ALWAYS_SOLVED
        ledger.add(5, 3.0, [("a", 2, 8)], 2.0)
        assert category(ledger, "a", Span(0.0, 2.0)) is Category.FIRST_SOLVED

    def test_one_value_passes_only_when_positive(self) -> None:
        """Totals all one value: a pass when it is positive, none when it is 0 or below."""
        ledger = ledger_of([("a", 1, 4, 4), ("a", 2, 4, 4)], top=0.0)
        assert category(ledger, "a", Span(0.0, 0.0)) is Category.NEVER_SOLVED
        ledger = ledger_of([("a", 1, 4, 4), ("a", 2, 4, 4)], top=1.0)
        assert category(ledger, "a", Span(1.0, 1.0)) is Category.ALWAYS_SOLVED

    def test_drop_takes_a_batch_back(self) -> None:
        """A batch relabelled eval leaves the ledger, read again or not."""
        ledger = ledger_of([("a", 1, 0, 8), ("a", 5, 8, 8), ("b", 5, 8, 8)])
        ledger.drop(1, ["a"])
        assert category(ledger, "a") is None
        ledger.drop(2)
        assert len(ledger) == 1

    @settings(max_examples=60, deadline=None)
    @given(
        visits=st.lists(
            st.tuples(
                st.integers(0, 5),
                st.integers(0, 8),
                st.sampled_from([1.0, 2.0]),
            ),
            min_size=1,
            max_size=40,
        ),
        seed=st.integers(0, 2**16),
    )
    def test_incremental_equals_batch_whatever_the_order(
        self, visits: list[tuple[int, int, float]], seed: int
    ) -> None:
        """Fed in any order, the ledger reports what it reports fed in step order."""
        batches = [
            (entry, float(entry // 3), f"prompt {p}", passes, top)
            for entry, (p, passes, top) in enumerate(visits)
        ]
        shuffled = batches[:]
        random.Random(seed).shuffle(shuffled)
        in_order, out_of_order = PromptLedger(), PromptLedger()
        for ledger, feed in ((in_order, batches), (out_of_order, shuffled)):
            for entry, step, prompt, passes, top in feed:
                ledger.add(entry, step, [(prompt, passes, 8)], top)
        span = Span(0.0, max(top for *_, top in batches))
        assert out_of_order.report(span) == in_order.report(span)

    def test_categories_survive_folding_out_of_order(self) -> None:
        """Beyond VISITS_KEPT the middle visits fold, and categories still do not depend on
        the order the visits came in."""
        rng = random.Random(3)
        visits = [("a", float(step), rng.choice([0, 8]), 8) for step in range(3 * VISITS_KEPT)]
        visits[0] = ("a", 0.0, 0, 8)
        visits[-1] = ("a", float(3 * VISITS_KEPT - 1), 8, 8)
        shuffled = visits[:]
        rng.shuffle(shuffled)
        assert category(ledger_of(visits), "a") is Category.FIRST_SOLVED
        ledger = PromptLedger()
        for prompt, step, passes, size in shuffled:
            ledger.add(int(step), step, [(prompt, passes, size)], 1.0)
        assert category(ledger, "a") is Category.FIRST_SOLVED
        assert ledger.report(SPAN).visits == 3 * VISITS_KEPT


class TestMemory:
    """A record per prompt, whatever the number of visits."""

    def test_records_are_prompts(self) -> None:
        """10 prompts seen 200 times each: 10 records of at most VISITS_KEPT visits."""
        ledger = PromptLedger()
        for entry in range(200):
            ledger.add(entry, float(entry), [(f"p{i}", entry % 9, 8) for i in range(10)], 1.0)
        assert len(ledger) == 10
        report = ledger.report(SPAN)
        assert report.prompts == 10 and report.visits == 2000
        assert all(len(r.visits) <= VISITS_KEPT for r in ledger._records.values())


class TestForecast:
    """When every group would be all-pass at the current rate."""

    def ledger_with(self, all_pass_by_visit: list[int], prompts: int = 10) -> PromptLedger:
        ledger = PromptLedger()
        for visit, passing in enumerate(all_pass_by_visit):
            groups = [(f"p{i}", 8 if i < passing else 3, 8) for i in range(prompts)]
            ledger.add(visit, 10.0 * (visit + 1), groups, 1.0)
        return ledger

    def test_rising_share_meets_every_group(self) -> None:
        """All-pass 0 %, 20 %, 40 %: every group all-pass around visit 6, step 60."""
        report = self.ledger_with([0, 2, 4]).report(SPAN)
        assert [v.share for v in report.by_visit] == [0.0, 0.2, 0.4]
        assert report.forecast is not None and report.forecast.visit == pytest.approx(6.0)
        assert report.forecast.step == pytest.approx(60.0)
        assert forecast_words(report) == (
            "at the current rate (+20.0 points a visit) every group all-pass around visit 6, step 60"
        )

    def test_flat_share_is_not_at_the_current_rate(self) -> None:
        """A share that does not rise never gets there at the current rate."""
        report = self.ledger_with([3, 3, 2]).report(SPAN)
        assert report.forecast is not None and not report.forecast.rising
        words = forecast_words(report)
        assert words is not None and "not at the current rate" in words

    def test_all_pass_already(self) -> None:
        """Every group all-pass on the latest visit: said, no forecast needed."""
        report = self.ledger_with([5, 10]).report(SPAN)
        assert forecast_words(report) == "every group all-pass on visit 2 already (around step 20)"


class TestRealRuns:
    """The ledger on real completions and on the simulator's demo runs, through the index."""

    def test_prompts_that_never_come_back_are_said_so(self) -> None:
        """The real ms-swift run logged 9 prompts once each: one line, nothing to follow."""
        index = CompletionsIndex(MSSWIFT)
        index.poll()
        report = index.prompt_ledger()
        assert prompts_headline(report) == (
            "9 prompts, each seen once: prompts never came back, nothing to follow"
        )
        assert prompts_lines(report) == []
        data = prompts_json(report)
        assert data is not None and data["repeated"] == 0 and data["forecast"] is None

    @pytest.mark.parametrize(
        ("scenario", "category"),
        [
            ("healthy", Category.FIRST_SOLVED),
            ("not_learning", Category.NEVER_SOLVED),
            ("saturated", Category.ALWAYS_SOLVED),
        ],
    )
    def test_demo_scenarios_show_their_category(
        self, tmp_path: Path, scenario: str, category: Category
    ) -> None:
        """The demo's prompt set, iterated: healthy prompts get first solved, not_learning's
        are never solved, saturated's always solved (each the largest pool but kept)."""
        config = SimConfig(scenario=scenario, seed=0, prompt_pool=DEMO_PROMPT_POOL)
        run = write_run(tmp_path, config=config)
        index = CompletionsIndex(run / "completions.jsonl")
        index.poll()
        report = index.prompt_ledger()
        assert report.repeated == report.prompts > 0
        assert index.ledger_prompts == report.prompts  # a record per prompt, not per group
        named = {c: n for c, n in report.counts.items() if c is not Category.KEPT_SOLVED}
        assert max(named, key=lambda c: named[c]) is category

    def test_read_in_pieces_or_at_once_alike(self, tmp_path: Path) -> None:
        """Indexed a few batches a read, the ledger ends as indexed in one read."""
        run = write_run(
            tmp_path, config=SimConfig("healthy", seed=2, prompt_pool=40, max_steps=120)
        )
        whole = CompletionsIndex(run / "completions.jsonl")
        whole.poll()
        pieces = CompletionsIndex(run / "completions.jsonl")
        while True:
            pieces.poll(max_bytes=20_000)
            if not pieces.more:
                break
        assert pieces.prompt_ledger() == whole.prompt_ledger()

    def test_pool_off_leaves_the_pinned_runs_alone(self, tmp_path: Path) -> None:
        """prompt_pool 0 (the default) draws a new prompt every time, as the pinned runs do."""
        config = SimConfig(scenario="healthy", seed=11, max_steps=24, eval_steps=10)
        first = write_run(tmp_path / "a", config=config)
        second = write_run(tmp_path / "b", config=replace(config, prompt_pool=0))
        assert (first / "completions.jsonl").read_bytes() == (
            second / "completions.jsonl"
        ).read_bytes()

    def test_json_numbers_are_the_report_s(self, tmp_path: Path) -> None:
        """`check --json`'s prompts field quotes the report, shares of repeated prompts."""
        config = SimConfig(scenario="not_learning", seed=0, prompt_pool=DEMO_PROMPT_POOL)
        run = write_run(tmp_path, config=config)
        index = CompletionsIndex(run / "completions.jsonl")
        index.poll()
        report = index.prompt_ledger()
        data = prompts_json(report)
        assert data is not None
        never = data["categories"]["never_solved"]
        assert never["prompts"] == report.counts[Category.NEVER_SOLVED]
        assert math.isclose(never["share"], report.share(Category.NEVER_SOLVED))
        assert data["answer"] == prompts_headline(report)
        assert sum(c["prompts"] for c in data["categories"].values()) == report.repeated


class TestCategoryKey:
    """`c` in the completions pane passes over the categories no prompt is in."""

    def test_every_category_in_turn_without_counts(self) -> None:
        """Before a ledger report, each linked category comes in turn, then all groups."""
        from grpo_tui.ui.completions_cursor import next_category

        seen, at = [], next_category(None)
        while at is not None:
            seen.append(at)
            at = next_category(at)
        assert tuple(seen) == LINKED

    def test_empty_categories_are_passed_over(self) -> None:
        """The healthy demo's ledger has no never solved prompt: `c` starts at regressed."""
        from grpo_tui.ui.completions_cursor import next_category

        counts = {Category.NEVER_SOLVED: 0, Category.REGRESSED: 1, Category.FIRST_SOLVED: 60}
        assert next_category(None, counts) is Category.REGRESSED
        assert next_category(Category.REGRESSED, counts) is Category.FIRST_SOLVED
        assert next_category(Category.FIRST_SOLVED, counts) is None  # always solved: 0
        assert next_category(None, dict.fromkeys(LINKED, 0)) is None
