"""Reading real ms-swift / TRL files into the canonical store (fixtures in tests/fixtures)."""

from __future__ import annotations

import io
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import MS_SWIFT, TRL

from grpo_tui.commands.inspect import inspect_data, render_text
from grpo_tui.run.follow import RunFollower, load_run
from grpo_tui.run.live import Run
from grpo_tui.run.metrics import MetricStore
from grpo_tui.sources.formats.values import (
    parse_duration,
    parse_fraction,
    parse_percentage,
)

RUN1 = MS_SWIFT / "local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl"
NUMITER2 = MS_SWIFT / "local-run-msswift-4.6.0_grpo-numiter2-dapo-beta0_logging.jsonl"
NAN_LINE = MS_SWIFT / "ms-swift-issue-4465_grpo-v3.5_nan.jsonl"


def last_value(store: MetricStore, name: str) -> float:
    """The value of `name` at its last logged step."""
    last = store.last(name)
    assert last is not None, f"{name} never logged"
    return last[1]


def make_run_dir(
    root: Path, name: str, logging: Path, args: dict[str, object] | None = None
) -> Path:
    run_dir = root / name
    run_dir.mkdir(parents=True)
    shutil.copy(logging, run_dir / "logging.jsonl")
    if args is not None:
        (run_dir / "args.json").write_text(json.dumps(args))
    return run_dir


# -- value parsing --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0s", 0),
        ("45m 20s", 2720),
        ("1d 21h 10m 47s", 162647),
        ("1m 60s", 120),
        ("10d 9h 50m 13s", 899413),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_progress_strings() -> None:
    assert parse_fraction("12/500") == (12, 500)
    assert parse_fraction(7) == (7, None)
    assert parse_fraction("x/y") is None
    assert parse_percentage("2.40%") == pytest.approx(2.4)


# -- ms-swift 4.6.0 real run -----------------------------------------------------------------
def test_msswift_46_run_line_kinds_and_values() -> None:
    run = load_run(RUN1)
    store = run.store
    assert run.framework == "ms-swift"
    assert dict(run.line_counts) == {"train": 4, "eval": 2, "end": 1, "summary": 1}
    assert run.finished
    assert run.max_steps == 6
    # the summary line embeds the whole log_history: it must not become rows
    assert len(store) == 7
    assert store.points("reward").steps.tolist() == [1, 2, 4, 6]
    assert store.last("reward") == (6.0, 1.50625002)
    assert store.points("eval_reward").steps.tolist() == [3, 6]
    assert store.last("eval_reward") == (6.0, 1.36640625)
    # canonical names and where they came from
    assert store.source_key("completion_length") == "completions/mean_length"
    assert store.source_key("clip_ratio") == "clip_ratio/region_mean"
    assert store.source_key("entropy") == "entropy/mean"
    assert store.source_key("eval_completion_length") == "eval_completions/mean_length"
    for fn in ("Format", "LengthBonus", "CoinFlip"):
        assert store.count(f"rewards/{fn}/mean") == 4
        assert store.count(f"eval_rewards/{fn}/mean") == 2
    # unknown numeric keys are kept under their own names
    assert store.count("step_time") == 4 and store.count("entropy/max") == 4
    # one canonical seconds-per-step; elapsed parsed from "16s"
    assert last_value(store, "speed") == pytest.approx(2.687603)
    assert last_value(store, "elapsed") == 16
    # no memory key on CPU: not logged, never 0
    assert "memory" not in store
    assert run.status.version_hints[0].startswith("ms-swift ≥ 3.12.5")


def test_keys_absent_are_not_logged_numiter2() -> None:
    """num_iterations 2: the re-use steps (2, 4) have no reward or completions keys."""
    run = load_run(NUMITER2)
    store = run.store
    assert store.points("reward").steps.tolist() == [1, 3]
    assert np.isnan(store.column("reward")[store.steps == 2]).all()
    assert store.points("clip_ratio").steps.tolist() == [1, 2, 3, 4]
    assert "kl" not in store  # beta 0
    assert store.count("entropy/threshold") == 4
    assert store.points("grad_norm").values.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert run.finished


def test_nan_tokens_are_data_not_bad_lines() -> None:
    run = load_run(NAN_LINE)
    store = run.store
    assert run.bad_line_count == 0
    assert store.count("kl") == 0 and store.nonfinite_steps("kl").tolist() == [300.0]
    assert store.nonfinite_steps("clip_ratio").tolist() == [300.0]
    assert store.last("reward") == (300.0, 1.55)
    assert last_value(store, "percentage") == pytest.approx(23.15)
    assert last_value(store, "elapsed") == 20 * 3600 + 20 * 60 + 38
    assert last_value(store, "remaining") == 2 * 86400 + 19 * 3600 + 32 * 60 + 31
    # train_speed(iter/s) 0.004094 is inverted into seconds per step
    assert last_value(store, "speed") == pytest.approx(1 / 0.004094)
    assert last_value(store, "memory") == pytest.approx(146.13)
    assert run.max_steps == 1296


def test_two_pasted_runs_newer_step_replaces_older() -> None:
    run = load_run(MS_SWIFT / "ms-swift-issue-5890_grpo-v3.8plus_no-memory.jsonl")
    # line 2 ("2/4389") comes from a restarted run: it supersedes step 9 of the first
    assert run.store.steps.tolist() == [2.0]
    assert run.store.replaced_rows == 1
    assert last_value(run.store, "remaining") == parse_duration("10d 9h 50m 13s")
    assert "memory" not in run.store


def test_msswift_37_train_and_eval_lines() -> None:
    run = load_run(MS_SWIFT / "confluence-sql-grpo-20250813_grpo-v3.7_train-eval.jsonl")
    assert dict(run.line_counts) == {"train": 1, "eval": 2}
    store = run.store
    assert store.count("eval_kl") == 1  # present on one eval line, absent on the other
    assert store.count("eval_reward") == 2
    assert store.count("rewards/CompletenessReward/mean") == 1
    assert last_value(store, "memory") == pytest.approx(52.21)


def test_sft_file_with_summary_line() -> None:
    run = load_run(MS_SWIFT / "deepclima-r1_sft-v3.x_logging.jsonl")
    assert run.finished
    assert run.line_counts["summary"] == 1
    assert run.line_counts["end"] == 1
    assert len(run.store) == run.line_counts["train"] + run.line_counts["eval"] + 1
    assert "log_history" not in run.store.names()
    assert run.store.count("eval_loss") == run.line_counts["eval"]


def test_log_history_items_with_int_steps() -> None:
    run = load_run(MS_SWIFT / "ms-swift-issue-6295_grpo-v3.10dev_log_history-items.jsonl")
    assert run.store.steps.tolist() == [19.0, 29.0]
    assert run.store.count("num_turns") == 2
    assert run.store.count("rewards/F1Reward/mean") == 2


# -- bad input --------------------------------------------------------------------------------
def test_bad_lines_are_counted_and_neighbours_kept(tmp_path: Path) -> None:
    lines = RUN1.read_bytes().splitlines(keepends=True)
    path = tmp_path / "logging.jsonl"
    path.write_bytes(
        lines[0]
        + lines[1][:200]
        + b"\n"
        + b"[1, 2, 3]\n"
        + b"not json at all\n"
        + lines[2]
        + lines[3]
    )
    run = load_run(path)
    assert run.bad_line_count == 3
    assert [b.line_no for b in run.bad_lines] == [2, 3, 4]
    assert "cut off" in run.bad_lines[0].reason
    assert "not an object" in run.bad_lines[1].reason
    assert run.store.points("reward").steps.tolist() == [1, 4]


# -- finding the run ----------------------------------------------------------------------------
def test_output_dir_uses_newest_version_and_follows_a_resume(tmp_path: Path) -> None:
    output = tmp_path / "output"
    lines = RUN1.read_bytes().splitlines(keepends=True)
    v0 = output / "v0-20261202-132949"
    v0.mkdir(parents=True)
    (v0 / "logging.jsonl").write_bytes(b"".join(lines[:4]))  # steps 1, 2, 3(eval), 4
    (v0 / "args.json").write_text(json.dumps({"num_iterations": 1, "max_completion_length": 24}))
    follower = RunFollower(output)
    run = Run(output)
    run.apply(follower.read())
    assert run.store.points("reward").steps.tolist() == [1, 2, 4]
    assert run.context.max_completion_length == 24
    # the run is resumed from checkpoint-3: a new v1 dir re-logs step 4 onwards
    v1 = output / "v1-20261202-140000"
    v1.mkdir()
    (v1 / "args.json").write_text(json.dumps({"num_iterations": 1, "max_completion_length": 48}))
    resumed = lines[3].replace(b'"reward": ', b'"reward": 9') + lines[4] + lines[5]
    (v1 / "logging.jsonl").write_bytes(resumed)
    follower.feed.wake()
    run.apply(follower.read())
    assert any("newer run directory" in e for e in run.events)
    assert str(v1 / "logging.jsonl") in run.status.followed
    assert run.store.points("reward").steps.tolist() == [1, 2, 4, 6]
    assert run.store.points("reward").values[2] >= 9  # step 4 is the resumed run's record
    assert run.context.max_completion_length == 48


def test_missing_path_is_waited_for(tmp_path: Path) -> None:
    target = tmp_path / "output"
    follower = RunFollower(target)
    run = Run(target)
    run.apply(follower.read())
    assert run.waiting_for and len(run.store) == 0
    assert any("waiting for" in e for e in run.events)
    assert not target.exists(), "waiting must not create anything"
    make_run_dir(target, "v0-20261202-132949", RUN1)
    follower.feed.wake()
    run.apply(follower.read())
    assert run.waiting_for is None
    assert len(run.store) == 7


def test_trainer_state_in_checkpoints_msswift(tmp_path: Path) -> None:
    run_dir = tmp_path / "v0-20261202-132949"
    for n in (3, 6):
        (run_dir / f"checkpoint-{n}").mkdir(parents=True)
    state = MS_SWIFT / "local-run-msswift-4.6.0_grpo-3rewards-eval_checkpoint-6_trainer_state.json"
    document = json.loads(state.read_text())
    early = dict(document, log_history=document["log_history"][:3], global_step=3)
    (run_dir / "checkpoint-3" / "trainer_state.json").write_text(json.dumps(early))
    follower = RunFollower(run_dir)
    run = Run(run_dir)
    run.apply(follower.read())
    assert run.store.points("reward").steps.tolist() == [1, 2]
    # a newer checkpoint appears: it is followed, and only its new items are added
    shutil.copy(state, run_dir / "checkpoint-6" / "trainer_state.json")
    follower.feed.wake()
    run.apply(follower.read())
    assert run.store.points("reward").steps.tolist() == [1, 2, 4, 6]
    assert run.store.points("eval_reward").steps.tolist() == [3, 6]
    assert run.store.replaced_rows == 0
    assert run.context.max_steps == 6 and run.context.logging_steps == 2


def test_trl_trainer_state_directory(tmp_path: Path) -> None:
    (tmp_path / "checkpoint-9").mkdir()
    shutil.copy(
        TRL / "local-run-trl1.16.0-tf5.20.0_trainer_state.json",
        tmp_path / "checkpoint-9" / "trainer_state.json",
    )
    run = load_run(tmp_path)
    assert run.framework == "TRL"
    assert run.store.count("reward") >= 1
    assert run.store.source_key("entropy") == "entropy"
    assert "rewards/format_reward/mean" in run.store


def _trl_checkpoint_and_top(tmp_path: Path) -> dict[str, Any]:
    """A TRL output dir as a finished run leaves it: checkpoint-6 saved at the last step
    (its history stops before the train_runtime item), then the top trainer_state.json
    from `trainer.save_state()` with the whole history."""
    document: dict[str, Any] = json.loads(
        (TRL / "local-run-trl1.16.0-tf5.20.0_trainer_state.json").read_text()
    )
    assert "train_runtime" in document["log_history"][-1]
    (tmp_path / "checkpoint-6").mkdir()
    checkpoint = dict(document, log_history=document["log_history"][:-1])
    (tmp_path / "checkpoint-6" / "trainer_state.json").write_text(json.dumps(checkpoint))
    (tmp_path / "trainer_state.json").write_text(json.dumps(document))
    return document


def test_trl_top_trainer_state_written_after_the_last_checkpoint_is_read(tmp_path: Path) -> None:
    _trl_checkpoint_and_top(tmp_path)
    checkpoint_time = (tmp_path / "checkpoint-6" / "trainer_state.json").stat().st_mtime
    os.utime(tmp_path / "trainer_state.json", (checkpoint_time + 5, checkpoint_time + 5))
    run = load_run(tmp_path)
    assert run.status.followed == [str(tmp_path / "trainer_state.json")]
    assert run.line_counts["end"] == 1
    assert run.finished, "the train_runtime item says training ended"


def test_trl_top_trainer_state_older_than_the_checkpoints_is_a_previous_runs(
    tmp_path: Path,
) -> None:
    _trl_checkpoint_and_top(tmp_path)
    checkpoint_time = (tmp_path / "checkpoint-6" / "trainer_state.json").stat().st_mtime
    os.utime(tmp_path / "trainer_state.json", (checkpoint_time - 600, checkpoint_time - 600))
    run = load_run(tmp_path)
    assert run.status.followed == [str(tmp_path / "checkpoint-6" / "trainer_state.json")]
    assert run.line_counts["end"] == 0
    assert not run.finished


def test_end_line_finishes_and_a_train_line_after_it_makes_the_run_live_again(
    tmp_path: Path,
) -> None:
    lines = RUN1.read_bytes().splitlines(keepends=True)
    end_line = next(i for i, line in enumerate(lines) if b'"train_runtime"' in line)
    path = tmp_path / "logging.jsonl"
    path.write_bytes(b"".join(lines[:end_line]))
    follower = RunFollower(path)
    run = Run(path)
    run.apply(follower.read())
    assert not run.finished
    with path.open("ab") as f:
        f.write(lines[end_line])  # the end-of-train line alone, before the summary line
    run.apply(follower.read())
    assert run.finished
    # the run is resumed and logs on (say, a longer max_steps): it is live again
    resumed = json.loads(lines[0])
    resumed["global_step/max_steps"] = "7/12"
    with path.open("ab") as f:
        f.write(json.dumps(resumed).encode() + b"\n")
    run.apply(follower.read())
    assert not run.finished
    assert run.store.last_step() == 7


def test_reading_changes_nothing_in_the_run_dir(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, "v0-20261202-132949", RUN1, {"num_iterations": 1})
    before = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in run_dir.rglob("*")}
    load_run(tmp_path)
    after = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in run_dir.rglob("*")}
    assert before == after


def test_live_appends_arrive_in_order(tmp_path: Path) -> None:
    path = tmp_path / "logging.jsonl"
    lines = RUN1.read_bytes().splitlines(keepends=True)
    follower = RunFollower(path)
    run = Run(path)
    for i, line in enumerate(lines[:6]):
        with path.open("ab") as f:
            f.write(line[:50])
        run.apply(follower.read())
        with path.open("ab") as f:
            f.write(line[50:])
        run.apply(follower.read())
        assert sum(run.line_counts.values()) == i + 1
    assert run.store.points("reward").steps.tolist() == [1, 2, 4, 6]


def test_backlog_is_reported_until_the_history_is_read(tmp_path: Path) -> None:
    """The feed says how much of the log it has read while reads stop at their budget,
    and nothing once it has caught up (the header shows it as READING HISTORY)."""
    path = tmp_path / "logging.jsonl"
    shutil.copy(RUN1, path)
    size = path.stat().st_size
    follower = RunFollower(path)
    seen: list[tuple[int, int] | None] = []
    while True:
        update = follower.read(time_budget=0.0, chunk_bytes=1500)
        seen.append(update.status.backlog)
        if not update.more:
            break
    assert seen[0] is not None and seen[0][1] == size and 0 < seen[0][0] < size
    assert all(b is not None and b[0] < size for b in seen[:-1])
    assert seen[-1] is None


def test_inspect_json_document(tmp_path: Path) -> None:
    make_run_dir(tmp_path, "v0-20261202-132949", RUN1, {"num_iterations": 1, "beta": 0.04})
    data = inspect_data(load_run(tmp_path))
    for key in (
        "framework",
        "files",
        "context",
        "lines",
        "bad_lines",
        "steps",
        "metrics",
        "finished",
    ):
        assert key in data
    assert data["framework"] == "ms-swift"
    assert data["steps"] == {"first": 1.0, "last": 6.0, "count": 5, "max_steps": 6}
    assert data["metrics"]["reward"] == {
        "source_key": "reward",
        "count": 4,
        "last": 1.50625002,
        "nonfinite": 0,
        "held": "dense",
        "bytes": 8192,
    }
    assert data["context"]["beta"] == 0.04
    assert data["finished"] is True
    nan_data = inspect_data(load_run(NAN_LINE))
    assert nan_data["metrics"]["kl"]["last"] is None and nan_data["metrics"]["kl"]["nonfinite"] == 1
    assert not math.isnan(nan_data["metrics"]["reward"]["last"])


def test_inspect_text_table_stays_aligned_with_long_reward_names() -> None:
    """ms-swift issue 6295 logs reward names of 37 characters: the count column stays put,
    and the key a metric came from is shown only where it differs from the name."""
    out = io.StringIO()
    render_text(
        inspect_data(
            load_run(MS_SWIFT / "ms-swift-issue-6295_grpo-v3.10dev_log_history-items.jsonl")
        ),
        out,
    )
    lines = out.getvalue().splitlines()
    table = lines[lines.index(next(line for line in lines if line.startswith("metric "))) :]
    header, rows = table[0], table[1:]
    count_end = header.index("count") + len("count")
    assert rows and all(row[count_end - 1].isdigit() and row[count_end] == " " for row in rows)
    by_name = {row.split()[0]: row for row in rows}
    assert by_name["completion_length"].rstrip().endswith("completions/mean_length")
    assert "rewards/AnswerFaithfulnessReward/mean" in by_name
    assert by_name["rewards/AnswerFaithfulnessReward/mean"].split()[1:] == ["2", "0.0625"]


def test_cli_inspect_json_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from grpo_tui.cli import main

    assert main(["inspect", str(RUN1), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["lines"]["train"] == 4
    assert main(["inspect", str(tmp_path / "nothing-here")]) == 3
    assert "waiting" in capsys.readouterr().out
    os.environ.pop("GRPO_TUI_UNUSED", None)


def test_inspect_follow_prints_a_line_per_batch(tmp_path: Path) -> None:
    """`inspect --follow --json` in a pipe: appended lines come out as batch lines."""
    import subprocess
    import sys

    path = tmp_path / "logging.jsonl"
    lines = RUN1.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0])
    proc = subprocess.Popen(
        [sys.executable, "-m", "grpo_tui.cli", "inspect", str(path), "--follow", "--json"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        # the first document ends with a closing brace alone on a line
        while proc.stdout.readline().rstrip("\n") != "}":
            pass
        with path.open("ab") as f:
            f.write(lines[1])
        first = json.loads(proc.stdout.readline())
        assert first["rows"] == 1 and first["last_step"] == 2.0
        with path.open("ab") as f:
            f.write(lines[-1])  # the summary line
        second = json.loads(proc.stdout.readline())  # readline waits for it
        assert second["finished"] is True
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_short_run_buckets_share_the_train_step_axis() -> None:
    """Every metric's cells are the train steps: an eval line between train lines leaves
    no gap in a train metric, and the evals sit in the cells of their own steps."""
    store = load_run(RUN1).store
    reward = store.buckets("reward", 60)
    assert reward.step_lo.tolist() == [1, 2, 4, 6] and reward.count.tolist() == [1, 1, 1, 1]
    evals = store.buckets("eval_reward", 60)
    assert evals.step_lo.tolist() == [1, 2, 4, 6]  # the eval at step 3 is in the cell 2–3
    assert evals.count.tolist() == [0, 1, 0, 1]
    assert evals.mean[1] == pytest.approx(1.35859378) and np.isnan(evals.mean[0])
    halves = store.buckets("reward", 2)
    assert halves.count.tolist() == [2, 2]
    assert halves.mean[0] == pytest.approx((1.32187498 + 1.48749995) / 2)
    assert halves.last.tolist() == [1.48749995, 1.50625002]
    # a logged NaN is its own point, drawn as a gap
    kl = load_run(NAN_LINE).store.buckets("kl", 10)
    assert kl.count.tolist() == [0] and np.isnan(kl.mean).all()


def test_long_run_buckets_from_block_summaries() -> None:
    from grpo_tui.run.metric_column import BLOCK
    from grpo_tui.run.metrics import MetricStore
    from grpo_tui.sources.records import ColumnGroup, RowBlock

    n = 2 * BLOCK * 10 * 4
    values = np.sin(np.arange(n) / 500.0)
    values[::1000] = np.nan
    store = MetricStore()
    store.add_block(
        RowBlock(
            kinds=np.zeros(n, np.uint8),
            steps=np.arange(1, n + 1, dtype=float),
            groups=[ColumnGroup(np.arange(n), ("x",), {}, values.reshape(-1, 1))],
        )
    )
    buckets = store.buckets("x", 10)
    assert len(buckets) == 10
    edges = np.linspace(0, n, 11).astype(int)
    for i in range(10):
        part = values[edges[i] : edges[i + 1]]
        assert buckets.mean[i] == pytest.approx(np.nanmean(part))
        assert buckets.min[i] == pytest.approx(np.nanmin(part))
        assert buckets.max[i] == pytest.approx(np.nanmax(part))
        assert buckets.last[i] == pytest.approx(part[np.isfinite(part)][-1])
    assert buckets.step_lo[0] == 1 and buckets.step_hi[-1] == n
