"""The diagnosis's cost against the run's length: 1 000 rows vs 1 000 000, same metrics.

The diagnosis judges windows (sampled when long), never loops over history in Python, so
a run a thousand times longer should cost a few times more at most. Both runs are built
in this process and timed side by side (best of --repeat).

    python bench/diagnose_cost.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from grpo_tui.context import RunContext
from grpo_tui.health.diagnose import diagnose, diagnose_snapshot
from grpo_tui.health.rules import Rules
from grpo_tui.health.series import snapshot
from grpo_tui.run.live import Run
from grpo_tui.sources.feed import FeedStatus
from grpo_tui.sources.records import Batch, ColumnGroup, RowBlock

NAMES = (
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


def run_of(rows: int, seed: int = 0) -> Run:
    values = np.random.default_rng(seed).random((rows, len(NAMES)))
    block = RowBlock(
        np.zeros(rows, np.uint8),
        np.arange(1, rows + 1, dtype=float),
        [ColumnGroup(np.arange(rows), NAMES, {}, values)],
    )
    run = Run(
        Path("bench"),
        status=FeedStatus(context=RunContext(num_iterations=2, max_completion_length=2)),
    )
    run.ingest(Batch(blocks=[block]))
    return run


def best_time(judge: Callable[[], object], repeat: int) -> float:
    judge()  # imports and caches
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        judge()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    small, big = run_of(1_000), run_of(1_000_000)
    rules = Rules()
    # `diagnose` replays the history (check, and the panel once at start); the live panel
    # then judges one moment a second (`diagnose_snapshot` on a fresh snapshot)
    for what, judge in (
        ("diagnose (replayed)", lambda run: diagnose(run, rules)),
        ("one live moment", lambda run: diagnose_snapshot(snapshot(run), rules)),
    ):
        t_small = best_time(partial(judge, small), args.repeat)
        t_big = best_time(partial(judge, big), args.repeat)
        print(f"{what}, 1 000 rows:     {1000 * t_small:8.1f} ms")
        print(f"{what}, 1 000 000 rows: {1000 * t_big:8.1f} ms")
        print(f"  ratio 1M / 1k: {t_big / t_small:.2f}  (target ≤ 10: windows, not history)")


if __name__ == "__main__":
    main()
