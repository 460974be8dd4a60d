"""The run's reward weights: read from its settings, and used wherever the functions are summed.

The trainer's total is the weighted sum of its reward functions (ms-swift; TRL ≥ 1.0 logs it
so, PR #5353; TRL before logged the plain sum while its advantages used the weights), the
per-function means are not weighted. The ms-swift issue 4465 line is a real weighted log
(`reward` 1.55 = 2.0 × `rewards/ToolAccuracy/mean` 0.775); the 4.6.0 three-rewards run is
a real unweighted one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from helpers import (
    FIXTURES,
    MS_SWIFT,
    THREE_REWARDS,
    THREE_REWARDS_ARGS,
    groups_of,
    msswift_run_dir,
    records_block,
)

from grpo_tui.context import RunContext
from grpo_tui.health.findings import find
from grpo_tui.health.rewards import RewardRange, function_weights, reward_functions, total_range
from grpo_tui.health.rules import Rules
from grpo_tui.health.series import RunSnapshot, snapshot
from grpo_tui.run.follow import RunFollower, load_run
from grpo_tui.run.live import Run
from grpo_tui.sources.completion_batches import JsonlBatches
from grpo_tui.sources.context import context_and_problems
from grpo_tui.sources.feed import FeedStatus
from grpo_tui.sources.formats import trl_completions
from grpo_tui.sources.formats.msswift_completions import parse_record
from grpo_tui.sources.records import Batch, Record
from grpo_tui.vocabulary import LineKind

RULES = Rules()
ISSUE_4465 = "ms-swift-issue-4465_grpo-v3.5_nan"
THREE_COMPLETIONS = MS_SWIFT / f"{THREE_REWARDS}_completions.jsonl"


def _run_dir(tmp_path: Path, name: str, args: Mapping[str, object]) -> Path:
    """An ms-swift output folder holding one fixture's logging.jsonl and the given args."""
    run_dir = tmp_path / "output" / "v0-20250604-000000"
    run_dir.mkdir(parents=True)
    (run_dir / "logging.jsonl").write_bytes((MS_SWIFT / f"{name}.jsonl").read_bytes())
    (run_dir / "args.json").write_text(json.dumps(dict(args)), encoding="utf-8")
    return tmp_path / "output"


def _range_of(path: Path) -> RewardRange | None:
    return find(snapshot(load_run(path)), RULES).reward_range


def _snap(columns: Mapping[str, Sequence[float]], context: RunContext) -> RunSnapshot:
    """A snapshot of hand-made train lines (one row per index)."""
    n = max(len(v) for v in columns.values())
    records = [
        Record(LineKind.TRAIN, float(i + 1), {k: float(v[i]) for k, v in columns.items()}, {})
        for i in range(n)
    ]
    run = Run(Path("run"), status=FeedStatus(context=context))
    run.ingest(Batch(blocks=[records_block(records)]))
    return snapshot(run)


class TestReadingTheWeights:
    """`reward_weights` in args.json (and any settings file read like it) fills the context."""

    def test_a_list_of_numbers(self) -> None:
        """ms-swift's args.json holds a list of floats (or null)."""
        assert context_and_problems({"reward_weights": [2.0, 1]})[0].reward_weights == [2.0, 1.0]
        assert context_and_problems({"reward_weights": None})[0].reward_weights is None
        assert context_and_problems({})[0].reward_weights is None

    def test_an_unusable_weight_makes_them_unknown(self) -> None:
        """One weight that is no number: which weight is whose is not known, and the user hears why."""
        context, problems = context_and_problems({"reward_weights": [1.0, "high"]})
        assert context.reward_weights is None
        assert any(p.startswith("reward_weights") for p in problems)

    def test_the_run_folder_args(self, tmp_path: Path) -> None:
        """A real ms-swift line whose run used reward_weights 2.0, with its args.json."""
        run = load_run(_run_dir(tmp_path, ISSUE_4465, {"reward_weights": [2.0]}))
        assert run.context.reward_weights == [2.0]


class TestWhichWeightIsWhose:
    """Weights are matched to the logged functions by name when the args name them, else in order."""

    def test_by_name_without_case_or_punctuation(self) -> None:
        """ms-swift's `length_bonus` logs as `LengthBonus` (the real 4.6.0 run)."""
        context = RunContext(
            reward_funcs=["format", "length_bonus", "coin_flip"], reward_weights=[1.0, 0.5, 2.0]
        )
        assert function_weights(context, ["CoinFlip", "Format", "LengthBonus"]) == [2.0, 1.0, 0.5]

    def test_in_order_when_the_names_differ(self) -> None:
        """ms-swift's `accuracy` logs as `MathAccuracy`: the order of first appearance decides."""
        context = RunContext(reward_funcs=["accuracy", "format"], reward_weights=[1.0, 0.5])
        assert function_weights(context, ["MathAccuracy", "Format"]) == [1.0, 0.5]

    def test_not_one_weight_per_function(self) -> None:
        """A count that does not match: no function has a known weight."""
        context = RunContext(reward_weights=[1.0, 0.5])
        assert function_weights(context, ["a", "b", "c"]) is None
        assert function_weights(RunContext(), ["a"]) is None


class TestTheTotalsRange:
    """The total's range is the weighted sum of the functions' ranges when the weights are known."""

    def test_a_real_weighted_log(self, tmp_path: Path) -> None:
        """Issue 4465: reward 1.55 = 2.0 × ToolAccuracy 0.775, a 0–1 function: the total is 0–2."""
        weighted = _range_of(_run_dir(tmp_path / "w", ISSUE_4465, {"reward_weights": [2.0]}))
        assert weighted is not None and (weighted.low, weighted.high) == (0.0, 2.0)
        assert weighted.known and "reward weights 2" in weighted.how
        plain = _range_of(_run_dir(tmp_path / "p", ISSUE_4465, {}))
        assert plain is not None and not plain.known  # 1.55 alone says no range

    def test_a_real_unweighted_log_keeps_the_plain_sum(self, tmp_path: Path) -> None:
        """The 4.6.0 run logged the plain sum: weights its log does not hold are not taken."""
        args = {**THREE_REWARDS_ARGS, "reward_weights": [1.0, 0.5, 2.0]}
        output = msswift_run_dir(tmp_path, THREE_REWARDS, args, completions=False)
        rng = _range_of(output)
        plain = _range_of(
            msswift_run_dir(tmp_path / "p", THREE_REWARDS, THREE_REWARDS_ARGS, completions=False)
        )
        assert rng is not None and plain is not None
        assert (rng.low, rng.high, rng.how) == (plain.low, plain.high, plain.how)
        assert rng.how == "the sum of 3 functions' ranges"

    def test_a_negative_weight_swaps_its_bounds(self) -> None:
        """A penalty weighted -0.5 adds -0.5–0 to the total, not 0–-0.5."""
        acc = [0.0, 0.25, 0.5, 0.75, 1.0, 0.5, 0.25, 0.75]
        pen = [1.0, 0.5, 0.0, 0.25, 0.75, 1.0, 0.5, 0.0]
        total = [a - 0.5 * p for a, p in zip(acc, pen, strict=True)]
        columns = {"reward": total, "rewards/acc/mean": acc, "rewards/pen/mean": pen}
        snap = _snap(columns, RunContext(reward_funcs=["acc", "pen"], reward_weights=[1.0, -0.5]))
        functions = reward_functions(snap, RULES)
        assert [fn.weight for fn in functions] == [1.0, -0.5]
        view = snap.get("reward")
        assert view is not None
        rng = total_range(view, functions, RULES)
        assert rng is not None and (rng.low, rng.high) == (-0.5, 1.0) and rng.known

    def test_weights_matched_wrongly_are_not_taken(self) -> None:
        """A total that is not the weighted sum of the means (weights in another order) is
        read from its own values."""
        acc = [0.0, 0.25, 0.5, 0.75, 1.0, 0.5, 0.25, 0.75]
        fmt = [1.0, 0.5, 0.0, 0.25, 0.75, 1.0, 0.5, 0.0]
        total = [a + 0.1 * f for a, f in zip(acc, fmt, strict=True)]
        columns = {"reward": total, "rewards/acc/mean": acc, "rewards/fmt/mean": fmt}
        right = _snap(columns, RunContext(reward_weights=[1.0, 0.1]))
        wrong = _snap(columns, RunContext(reward_weights=[0.1, 1.0]))
        for snap, known in ((right, True), (wrong, False)):
            view = snap.get("reward")
            assert view is not None
            rng = total_range(view, reward_functions(snap, RULES), RULES)
            assert rng is not None and rng.known is known


class TestWeightedCompletionTotals:
    """A completion's total is the weighted sum of its rewards when the weights are known."""

    def test_an_msswift_line(self) -> None:
        """The real 4.6.0 line: Format, LengthBonus, CoinFlip weighted 1, 0.5, 2."""
        record = json.loads(THREE_COMPLETIONS.read_text(encoding="utf-8").splitlines()[0])
        plain = parse_record(record)
        weighted = parse_record(record, weights=[1.0, 0.5, 2.0])
        f, b, c = (
            np.asarray(record[k], dtype=float) for k in ("Format", "LengthBonus", "CoinFlip")
        )
        np.testing.assert_allclose(plain.totals, f + b + c)
        np.testing.assert_allclose(weighted.totals, f + 0.5 * b + 2.0 * c)

    def test_not_one_weight_per_column(self) -> None:
        """Weights that are not one per reward column: which is whose is unknown, the plain sum."""
        record = json.loads(THREE_COMPLETIONS.read_text(encoding="utf-8").splitlines()[0])
        np.testing.assert_array_equal(
            parse_record(record, weights=[2.0]).totals, parse_record(record).totals
        )

    def test_a_trl_parquet_file(self) -> None:
        """TRL 1.16's real completions parquet, its reward columns weighted in order."""
        pytest.importorskip("pyarrow")
        path = FIXTURES / "trl" / "local-run-trl1.16.0-tf5.20.0_completions_00003.parquet"
        converted = trl_completions.convert(path)
        assert converted is not None
        names = [
            k for k in converted.columns if k not in ("step", "prompt", "completion", "advantages")
        ]
        weights = [0.5 * (i + 1) for i in range(len(names))]
        rows = parse_record(dict(converted.columns), weights=weights)
        expected = sum(
            w * np.asarray(converted.columns[n], dtype=float)
            for w, n in zip(weights, names, strict=True)
        )
        np.testing.assert_allclose(rows.totals, expected)

    def test_the_file_source(self) -> None:
        """The JSON-lines source hands its weights to every line it reads."""
        rows = (
            JsonlBatches(THREE_COMPLETIONS, reward_weights=[0.0, 0.0, 1.0]).read().batches[0].rows
        )
        record = json.loads(THREE_COMPLETIONS.read_text(encoding="utf-8").splitlines()[0])
        assert rows is not None
        np.testing.assert_allclose(rows.totals, np.asarray(record["CoinFlip"], dtype=float))

    def test_a_followed_run(self, tmp_path: Path) -> None:
        """Following a run folder: the groups' totals use its args.json weights."""
        args = {**THREE_REWARDS_ARGS, "reward_weights": [0.0, 0.0, 1.0]}
        follower = RunFollower(msswift_run_dir(tmp_path, THREE_REWARDS, args, completions=True))
        load_run(follower.path, follower=follower)
        assert follower.completions is not None
        groups = groups_of(follower.completions)
        assert groups
        for group in groups:
            coin = group.rewards["CoinFlip"]
            assert all(
                math.isclose(t, c)
                for t, c in zip(group.totals.tolist(), coin.tolist(), strict=True)
            )
