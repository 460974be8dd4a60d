"""Newest first: a big log's newest lines reach the screen before its history, and the
history that follows is the whole log, in order, with nothing lost or doubled."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from helpers import MS_SWIFT

from grpo_tui.run.follow import RunFollower, load_run
from grpo_tui.run.live import Run
from grpo_tui.sources.tail import PREVIEW_FROM_BYTES

LOG = MS_SWIFT / "local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl"


def big_log(path: Path, *, steps_named: bool = True) -> int:
    """A log over the preview size from a real ms-swift 4.6 line; returns its steps."""
    train = json.loads(LOG.read_text().splitlines()[0])
    line_size = len(json.dumps(train)) + 1
    steps = PREVIEW_FROM_BYTES // line_size + 2_000
    with open(path, "w") as out:
        for step in range(1, steps + 1):
            row = dict(train, reward=step / steps)
            if steps_named:
                row["global_step/max_steps"] = f"{step}/{steps}"
            else:
                del row["global_step/max_steps"]
            out.write(json.dumps(row) + "\n")
    return steps


def test_the_first_read_shows_the_newest_step_and_the_history_follows_whole(
    tmp_path: Path,
) -> None:
    path = tmp_path / "logging.jsonl"
    steps = big_log(path)
    follower = RunFollower(path, newest_first=True)
    run = Run(path)
    first = follower.read()
    assert first.preview is not None and first.more
    run.apply(first)
    assert run.store.last_step() == steps  # the newest line, before the history
    assert run.history is not None and run.reading is not None
    assert len(run.store) < steps
    while True:
        update = follower.read(time_budget=1.0)
        assert update.preview is None  # once only
        run.apply(update)
        if not update.more:
            break
    assert run.history is None and run.reading is None
    whole = load_run(path)
    assert np.array_equal(run.store.steps, whole.store.steps)
    assert np.array_equal(run.store.column("reward"), whole.store.column("reward"))
    assert run.line_counts == whole.line_counts and run.bad_line_count == 0


def test_a_small_log_is_read_from_the_start_only(tmp_path: Path) -> None:
    path = tmp_path / "logging.jsonl"
    path.write_text(LOG.read_text())
    update = RunFollower(path, newest_first=True).read()
    assert update.preview is None


def test_lines_that_name_no_step_are_not_previewed(tmp_path: Path) -> None:
    """Steps counted from the start cannot be counted from the end: no preview."""
    path = tmp_path / "metrics.jsonl"
    big_log(path, steps_named=False)
    update = RunFollower(path, newest_first=True).read()
    assert update.more and update.preview is None


def test_check_reads_the_whole_run_without_a_preview(tmp_path: Path) -> None:
    path = tmp_path / "logging.jsonl"
    steps = big_log(path)
    run = load_run(path)
    assert run.history is None and len(run.store) == steps
