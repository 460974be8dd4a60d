"""prime-rl's metrics.jsonl (sources/formats/primerl.py) and its lines merged by step
(sources/merged.py).

No public prime-rl metrics file was found, so the lines here are written in the real shape:
the key names come from PrimeIntellect-ai/prime-rl at 559b44772,
- the line itself: src/prime_rl/monitors/file.py `log_metrics` (`{"step", "time", **metrics}`);
- the orchestrator's: src/prime_rl/orchestrator/orchestrator.py lines 697-747 (the
  `train/{agg,<env>}/{all,effective}/…` matrix, `progress/…`, `time/…`, `off_policy/…`),
  with the statistics of src/prime_rl/orchestrator/metrics.py (`Stat.to_dict` mean/max/min/
  p10/p90, `TraceMetrics.to_dict`: reward, num_output_tokens, is_truncated/mean,
  rewards/<fn>, solved_none/solved_all for `all`);
- the trainer's: src/prime_rl/trainer/rl/train.py lines 651-693 (perf/…, optim/lr,
  optim/grad_norm, the tensor statistics loss/mean, entropy/all/mean, mismatch_kl/all/mean,
  time/…, and trainer/utils.py `get_ckpt_disk_metrics`'s system/ckpt_disk_…), the loss's
  is_masked{,_low,_high} (trainer/rl/loss.py 152-158, logged as `<key>/mean` and `/max` by
  train.py 537-539 and trainer/utils.py `filter_rl_trainer_tensor_stats_for_wandb`);
- the eval's: orchestrator.py 935-938 with metrics.py `EvalMetrics` (`avg@<k>`).
The values are invented; the agent is named `policy`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from grpo_tui.context import RunContext
from grpo_tui.run.follow import RunFollower, load_run
from grpo_tui.run.live import Run
from grpo_tui.sources.discover import discover
from grpo_tui.sources.formats.primerl import PRIMERL
from grpo_tui.sources.merged import MergedStepsStore

AGENT = "train/agg/effective/policy"


def orchestrator_line(step: int) -> dict[str, Any]:
    """The orchestrator's line of a step (orchestrator.py 697-747)."""
    reward = 0.1 * step
    return {
        "step": step,
        "time": 1_780_000_000.0 + step,
        "train/agg/all/num_output_tokens/mean": 400.0 + step,
        "train/agg/all/has_error/mean": 0.0,
        "train/agg/all/policy/reward/mean": reward,
        "train/agg/all/policy/solved_none": 0.5 - 0.05 * step,
        "train/agg/all/policy/solved_all": 0.05 * step,
        "train/agg/all/policy/solved_some": 0.5,
        "train/agg/effective/num_output_tokens/mean": 400.0 + step,
        f"{AGENT}/reward/mean": reward,
        f"{AGENT}/reward/max": 1.0,
        f"{AGENT}/reward/min": 0.0,
        f"{AGENT}/reward/p10": 0.0,
        f"{AGENT}/reward/p90": 1.0,
        f"{AGENT}/num_output_tokens/mean": 400.0 + step,
        f"{AGENT}/num_output_tokens/min": 12.0,
        f"{AGENT}/num_output_tokens/max": 2048.0,
        f"{AGENT}/is_truncated/mean": 0.02,
        f"{AGENT}/rewards/correct_answer/mean": reward,
        f"{AGENT}/is_trainable/mean": 0.9,
        "progress/tokens": 100_000,
        "progress/total_tokens": 100_000 * step,
        "time/step": 30.0,
        "time/wait_for_policy": 1.0,
        "off_policy/mean": 1.0,
        "off_policy/dropped": 0.0,
        "batch/gsm8k": 1.0,
    }


def trainer_lines(step: int) -> list[dict[str, Any]]:
    """The trainer's burst of lines of a step (train.py 651-693)."""
    stamp = {"step": step, "time": 1_780_000_010.0 + step}
    return [
        {**stamp, "perf/throughput": 9000.0, "perf/mfu": 40.0, "perf/peak_memory": 60.0},
        {**stamp, "optim/lr": 1e-6, "optim/grad_norm": 0.2 + 0.01 * step},
        {
            **stamp,
            "loss/mean": 0.01 * step,
            "entropy/all/mean": 0.5 - 0.01 * step,
            "entropy/all/std": 0.1,
            "mismatch_kl/all/mean": 0.001,
            "is_masked/mean": 0.004,
            "is_masked/max": 0.1,
            "is_masked_low/mean": 0.001,
            "is_masked_high/mean": 0.003,
            "kl_ent_ratio/mean": 0.002,
        },
        {**stamp, "time/step": 25.0, "time/forward_backward": 20.0},
        {**stamp, "system/ckpt_disk_free_gib": 500.0},
    ]


def eval_line(step: int) -> dict[str, Any]:
    return {
        "step": step,
        "time": 1_780_000_020.0 + step,
        "eval/gsm8k/effective/policy/avg@4": 0.3,
        "eval/gsm8k/all/num_output_tokens/mean": 380.0,
    }


def run_lines(steps: int) -> Iterator[dict[str, Any]]:
    """A run's file: the orchestrator a step ahead of the trainer, an eval at step 2."""
    yield orchestrator_line(1)
    for step in range(1, steps + 1):
        if step + 1 <= steps:
            yield orchestrator_line(step + 1)
        yield from trainer_lines(step)
        if step == 2:
            yield eval_line(2)


def write(path: Path, lines: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")


class FakeClock:
    """A clock the test moves (no sleeping)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _store(path: Path, clock: FakeClock) -> MergedStepsStore:
    return MergedStepsStore(path, PRIMERL.writers, PRIMERL.eval_prefix, clock=clock)


class TestDiscovery:
    """prime-rl's run folder and output folder are found without naming the file."""

    def test_a_run_folder(self, tmp_path: Path) -> None:
        """`<run_dir>/metrics.jsonl` beside `configs/` (the rl entrypoint's layout)."""
        run = tmp_path / "gsm8k--qwen3-0.6b--1a2b3c4d"
        (run / "configs").mkdir(parents=True)
        write(run / "metrics.jsonl", run_lines(3))
        layout = discover(run)
        assert (layout.adapter, layout.metrics_file) == ("prime-rl", run / "metrics.jsonl")

    def test_the_newest_run_of_an_output_folder(self, tmp_path: Path) -> None:
        """`<output_dir>/<run.name>/`: the run folder written last is followed."""
        for name, mtime in (("old-run", 1_700_000_000), ("new-run", 1_700_000_100)):
            (tmp_path / name / "rollouts").mkdir(parents=True)
            write(tmp_path / name / "metrics.jsonl", run_lines(2))
            os.utime(tmp_path / name / "metrics.jsonl", (mtime, mtime))
        layout = discover(tmp_path)
        assert layout.adapter == "prime-rl"
        assert layout.metrics_file == tmp_path / "new-run" / "metrics.jsonl"

    def test_the_file_by_its_keys(self, tmp_path: Path) -> None:
        """A metrics.jsonl copied out of its run folder is known by its first line's keys."""
        path = tmp_path / "copy" / "metrics.jsonl"
        write(path, trainer_lines(1))
        assert discover(path).adapter == "prime-rl"

    def test_another_metrics_jsonl(self, tmp_path: Path) -> None:
        """A metrics.jsonl of someone else's is not taken for prime-rl's."""
        path = tmp_path / "metrics.jsonl"
        write(path, [{"step": 1, "reward": 0.5}])
        assert discover(path).adapter != "prime-rl"


class TestMergedSteps:
    """The lines of one step, from two processes, become one record, handed out once complete."""

    def test_a_step_waits_for_the_slower_writer(self, tmp_path: Path) -> None:
        """The orchestrator's step 2 is held until the trainer moved past it."""
        path = tmp_path / "metrics.jsonl"
        clock = FakeClock()
        store = _store(path, clock)
        write(path, [orchestrator_line(1), orchestrator_line(2), *trainer_lines(1)])
        assert store.poll().records == []  # the trainer may still write step 1
        write(path, trainer_lines(2)[:1])
        records = store.poll().records
        assert [r["step"] for r in records] == [1]
        assert {"optim/grad_norm", f"{AGENT}/reward/mean", "system/ckpt_disk_free_gib"} <= set(
            records[0]
        )

    def test_a_quiet_file_settles_the_slowest_writers_step(self, tmp_path: Path) -> None:
        """Nothing new for settle_s: the trainer's newest step is complete; the orchestrator's
        lead still waits for it."""
        path = tmp_path / "metrics.jsonl"
        clock = FakeClock()
        store = _store(path, clock)
        write(path, [orchestrator_line(1), orchestrator_line(2), *trainer_lines(1)])
        store.poll()
        clock.now = 6.0
        assert [r["step"] for r in store.poll().records] == [1]
        assert [r["step"] for r in store.finish().records] == [2]

    def test_an_eval_is_a_record_of_its_own(self, tmp_path: Path) -> None:
        """An eval line is handed out when it comes, not merged into its step."""
        path = tmp_path / "metrics.jsonl"
        store = _store(path, FakeClock())
        write(path, [eval_line(4)])
        assert store.poll().records == [eval_line(4)]

    def test_a_late_line_hands_its_steps_out_again(self, tmp_path: Path) -> None:
        """A line of a new shape for a step already handed out: that step again, merged,
        and the ones after it."""
        path = tmp_path / "metrics.jsonl"
        clock = FakeClock()
        store = _store(path, clock)
        lines = trainer_lines(1)
        write(path, [orchestrator_line(1), orchestrator_line(2), *lines[:2], *trainer_lines(2)[:1]])
        assert [r["step"] for r in store.poll().records] == [1]
        write(path, lines[2:])
        write(path, [orchestrator_line(3), *trainer_lines(3)[:1]])
        records = store.poll().records
        assert [r["step"] for r in records] == [1, 2]
        assert {"loss/mean", "optim/lr", f"{AGENT}/reward/mean"} <= set(records[0])

    def test_a_resumed_run_starts_its_steps_over(self, tmp_path: Path) -> None:
        """A line shape a handed-out step has already: the run resumed there; it starts over."""
        path = tmp_path / "metrics.jsonl"
        store = _store(path, FakeClock())
        write(path, [*trainer_lines(1), *trainer_lines(2), *trainer_lines(3)])
        assert [r["step"] for r in store.poll().records] == [1, 2]
        resumed = [{**line, "optim/grad_norm": 9.0} for line in trainer_lines(2)]
        write(path, [*resumed, *trainer_lines(3)])
        records = store.poll().records
        assert [r["step"] for r in records] == [2]
        assert records[0]["optim/grad_norm"] == 9.0 and "loss/mean" in records[0]

    def test_a_bad_line_is_counted_and_its_neighbours_kept(self, tmp_path: Path) -> None:
        """Not JSON, or no step: a bad line with its number; the lines around it still count."""
        path = tmp_path / "metrics.jsonl"
        store = _store(path, FakeClock())
        write(path, trainer_lines(1)[:1])
        with path.open("a", encoding="utf-8") as handle:
            handle.write('{"step": 1, "optim/lr": \n{"optim/lr": 1e-6}\n')
        write(path, trainer_lines(2)[:1])
        polled = store.poll()
        assert [(bad.line_no, bad.reason) for bad in polled.bad][1:] == [(3, "no integer step")]
        assert [bad.line_no for bad in polled.bad] == [2, 3]
        assert [r["step"] for r in polled.records] == [1]


class TestARunInTheRealShape:
    """A whole metrics.jsonl reads into the canonical metrics, one row per step."""

    def test_canonical_metrics(self, tmp_path: Path) -> None:
        """Reward, lengths, truncation, solve rates, entropy, loss, grad norm, lr, eval."""
        run = tmp_path / "run"
        (run / "configs").mkdir(parents=True)
        write(run / "metrics.jsonl", run_lines(5))
        loaded = load_run(run)
        store = loaded.store
        assert store.replaced_rows == 0
        expected = {
            "reward": [0.1, 0.2, 0.3, 0.4, 0.5],
            "rewards/correct_answer/mean": [0.1, 0.2, 0.3, 0.4, 0.5],
            "completion_length": [401.0, 402.0, 403.0, 404.0, 405.0],
            "completion_length_max": [2048.0] * 5,
            "clipped_ratio": [0.02] * 5,
            "samples/all_fail": [0.45, 0.4, 0.35, 0.3, 0.25],
            "samples/all_pass": [0.05, 0.1, 0.15, 0.2, 0.25],
            "entropy": [0.49, 0.48, 0.47, 0.46, 0.45],
            "loss": [0.01, 0.02, 0.03, 0.04, 0.05],
            "grad_norm": [0.21, 0.22, 0.23, 0.24, 0.25],
            "learning_rate": [1e-6] * 5,
            "clip_ratio": [0.004] * 5,
            "clip_ratio_high": [0.003] * 5,
        }
        for name, values in expected.items():
            points = store.points(name)
            np.testing.assert_allclose(points.values, values, err_msg=name)
            np.testing.assert_array_equal(points.steps, [1, 2, 3, 4, 5])
        eval_points = store.points("eval_reward")
        assert eval_points.values.tolist() == [0.3] and eval_points.steps.tolist() == [2.0]
        # not a KL to a reference: the off-policy mismatch (docs/health.md, "Off-policy drift")
        assert store.source_key("offpolicy/mismatch_kl") == "mismatch_kl/all/mean"
        assert "kl" not in store.names()
        assert "time" not in store.names()


#: the resolved orchestrator config's fields read (configs/orchestrator.py OrchestratorConfig,
#: TrainConfig.sampling, ModelConfig), as `write_subconfigs` dumps it (values invented)
ORCHESTRATOR_CONFIG: dict[str, Any] = {
    "model": {"name": "Qwen/Qwen3-0.6B"},
    "train": {"sampling": {"temperature": 0.8, "max_completion_tokens": 512}},
    "group_size": 8,
    "seq_len": 4096,
    "max_steps": 40,
    "max_off_policy_steps": 8,
}


class TestSettings:
    """The resolved configs in `<run_dir>/configs/` fill the run context."""

    def _context_of(self, tmp_path: Path, name: str, config: dict[str, Any]) -> RunContext:
        run = tmp_path / "run"
        (run / "configs").mkdir(parents=True)
        (run / "configs" / name).write_text(json.dumps(config), encoding="utf-8")
        write(run / "metrics.jsonl", run_lines(3))
        return load_run(run).context

    def test_the_orchestrators_config(self, tmp_path: Path) -> None:
        """orchestrator.json: steps, group size, model, temperature (not the per-turn cap)."""
        context = self._context_of(tmp_path, "orchestrator.json", ORCHESTRATOR_CONFIG)
        assert (context.max_steps, context.num_generations) == (40, 8)
        assert (context.model, context.temperature) == ("Qwen/Qwen3-0.6B", 0.8)
        assert context.max_completion_length is None

    def test_rl_json_nests_it(self, tmp_path: Path) -> None:
        """rl.json holds the orchestrator's config under `orchestrator`."""
        context = self._context_of(tmp_path, "rl.json", {"orchestrator": ORCHESTRATOR_CONFIG})
        assert (context.max_steps, context.num_generations) == (40, 8)


class TestFollowing:
    """Followed live, the run gets each step once, whole, in step order."""

    def test_lines_as_the_two_processes_write_them(self, tmp_path: Path) -> None:
        """The orchestrator a step ahead, the trainer's burst after: no step re-logged."""
        run = tmp_path / "run"
        (run / "configs").mkdir(parents=True)
        path = run / "metrics.jsonl"
        follower = RunFollower(run)
        live = Run(run)
        write(path, [orchestrator_line(1)])
        for step in range(1, 6):
            write(path, [orchestrator_line(step + 1)])
            write(path, trainer_lines(step))
            live.apply(follower.read())
        assert live.store.replaced_rows == 0
        # step 5 waits for the trainer's step 6 (or for the file to settle, on a slow machine)
        steps = live.store.points("reward").steps.tolist()
        assert steps in ([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0, 5.0])
        assert live.store.points("loss").steps.tolist() == steps


def monitored_lines(steps: int) -> Iterator[dict[str, Any]]:
    """The run's rows as the file monitor writes them since prime-rl#3444
    (src/prime_rl/monitors/file/monitor.py @ ceb33a4): each row tagged with its
    `producer`, and time-keyed inference rows with `"step": null` between them (the
    producer names are the two processes'; the exact strings were not confirmed)."""
    for line in run_lines(steps):
        producer = (
            "trainer"
            if any(k.startswith(("optim/", "perf/", "loss/")) for k in line)
            else "orchestrator"
        )
        yield {**line, "producer": producer}
        if producer == "orchestrator":
            yield {
                "step": None,
                "time": 1.75e9,
                "inference/vllm:num_requests_running": 12.0,
                "producer": "orchestrator",
            }


class TestTheFileMonitorLayout:
    """prime-rl#3444: `<run>/monitors/file/metrics.jsonl`, `configs/` two levels up."""

    def _run(self, tmp_path: Path) -> Path:
        run = tmp_path / "outputs" / "run-a"
        (run / "configs").mkdir(parents=True)
        (run / "configs" / "orchestrator.json").write_text(json.dumps(ORCHESTRATOR_CONFIG))
        write(run / "monitors" / "file" / "metrics.jsonl", monitored_lines(6))
        return run

    def test_found_from_the_run_and_the_output_folder(self, tmp_path: Path) -> None:
        """The run folder, its output folder and the file itself lead to the same file."""
        run = self._run(tmp_path)
        metrics = run / "monitors" / "file" / "metrics.jsonl"
        for path in (run, run.parent, metrics):
            layout = discover(path)
            assert (layout.adapter, layout.metrics_file, layout.run_dir) == (
                "prime-rl",
                metrics,
                run,
            )

    def test_the_settings_two_levels_up(self, tmp_path: Path) -> None:
        """max_steps and the group size come from `<run>/configs/`."""
        context = load_run(self._run(tmp_path)).context
        assert (context.max_steps, context.num_generations) == (40, 8)

    def test_time_keyed_rows_are_no_bad_lines_and_no_steps(self, tmp_path: Path) -> None:
        """`"step": null` rows are counted as time-keyed and said, never plotted."""
        run = load_run(self._run(tmp_path))
        assert run.bad_line_count == 0
        assert sorted({int(step) for step in run.store.steps}) == [1, 2, 3, 4, 5, 6]
        assert "inference/vllm:num_requests_running" not in run.store.names()
        said = [event for event in run.events if "time-keyed" in event]
        assert [event.split(":")[1].split(" time-keyed")[0].strip() for event in said] == [
            "1",
            "10",
        ]

    def test_the_producer_is_no_metric(self, tmp_path: Path) -> None:
        """`producer` is bookkeeping: the eval line stays an eval, no step is re-logged."""
        run = load_run(self._run(tmp_path))
        assert "producer" not in run.store.names()
        assert run.line_counts["eval"] == 1 and run.store.replaced_rows == 0
        assert np.isfinite(run.store.points("reward").values).all()
