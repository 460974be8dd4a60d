"""slime and miles (sources/formats/slime.py): the console's printed dicts merged per
rollout, Megatron's argument dump, TensorBoard files told by their tags, miles' dashboard
JSONL. Fixtures: tests/fixtures/slime/ (a real line from slime#1837, a console log built
from slime's source at 624b824); event files are written here with TensorBoard's own writer
under slime's tag names (slime/observability/tensorboard_utils.py writes `add_scalar(key,
value, step)` per logged key), one writer per process as slime opens them: the trainer's
and the rollout manager's, in one folder at once."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2, summary_pb2  # type: ignore[import-untyped]
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # type: ignore[import-untyped]

from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import RunFollower, load_run
from grpo_tui.run.live import Run
from grpo_tui.sources.discover import discover
from grpo_tui.sources.formats.slime import MilesParser, SlimeConsoleParser

FIXTURES = Path(__file__).parent / "fixtures" / "slime"
ISSUE_LINE = FIXTURES / "slime-issue-1837_perf-line.log"
CONSOLE = FIXTURES / "slime-624b824_console.log"


def add_scalars(
    writer: EventFileWriter, step: int, values: dict[str, float], at: float = 0
) -> None:
    """`add_scalar(key, value, step)` per key, as slime's `_TensorboardAdapter.log` calls
    torch's SummaryWriter: one simple_value event each (`at`: a wall time, else now)."""
    for tag, value in values.items():
        summary = summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)]
        )
        wall = at + step if at else time.time()
        writer.add_event(event_pb2.Event(wall_time=wall, step=step, summary=summary))


def write_events(
    folder: Path, rows: list[tuple[int, dict[str, float]]], start: float = 1.78e9
) -> None:
    """One process's event file, written whole by TensorBoard's own writer (the one torch's
    SummaryWriter wraps), its events at `start` + step seconds."""
    folder.mkdir(parents=True, exist_ok=True)
    writer = EventFileWriter(str(folder))
    for step, values in rows:
        add_scalars(writer, step, values, start)
    writer.close()


def trainer_rollout(step: int) -> dict[str, float]:
    """The trainer's view of rollout `step` (train_metric_utils.py:120–138)."""
    return {"rollout/raw_reward": learning(step), "rollout/rewards": 0.0}


def trainer_train(step: int) -> dict[str, float]:
    """The trainer's optimiser step (backends/megatron_utils/model.py:883–898)."""
    return {
        "train/pg_clipfrac": 0.002,
        "train/kl_loss": 0.0005 * step,
        "train/ppo_kl": 0.0,
        "train/entropy_loss": 0.6 - 0.003 * step,
        "train/lr-pg_0": 1e-6,
    }


def manager_stats(step: int) -> dict[str, float]:
    """The rollout manager's sample statistics (rollout_metrics.py:258–271)."""
    return {
        "rollout/response_len/mean": 700.0 + step,
        "rollout/truncated_ratio": 0.01,
        "rollout/zero_std/count_0": 4.0,
        "perf/rollout_time": 30.0,
    }


def learning(step: int) -> float:
    """A reward that rises over 40 steps, with a little noise."""
    return 0.2 + 0.012 * step + (0.02 if step % 3 == 0 else -0.01)


class TestConsole:
    """A console log as slime prints it."""

    def test_the_issue_line(self) -> None:
        """slime#1837's rollout-only perf line: one record at rollout 0, counts kept as counts."""
        run = load_run(ISSUE_LINE)
        assert run.framework == "slime console log"
        store = run.store
        assert store.points("completion_length").values.tolist() == [2773.71484375]
        assert store.points("clipped_ratio").values.tolist() == [0.46484375]
        assert store.points("rollout/zero_std/count_0").values.tolist() == [12.0]
        assert "frac_reward_zero_std" not in store.names()  # no group count in the excerpt

    def test_one_record_per_rollout(self) -> None:
        """perf, rollout and step dicts of a rollout make one row: nothing re-logged."""
        run = load_run(CONSOLE)
        store = run.store
        assert store.replaced_rows == 0
        assert store.points("reward").steps.tolist() == [float(s) for s in range(40)]
        assert len(store.points("completion_length")) == len(store.points("kl")) == 40

    def test_the_argument_dump(self) -> None:
        """Megatron's dump gives the settings and the group count for the zero-spread share."""
        run = load_run(CONSOLE)
        context = run.context
        assert (context.max_steps, context.num_generations) == (40, 8)
        assert (context.max_completion_length, context.beta) == (4096, 0.001)
        first = run.store.points("frac_reward_zero_std").values[0]
        counts = run.store.points("rollout/zero_std/count_0").values[0]
        assert first == pytest.approx(counts / 32)

    def test_what_each_key_means(self) -> None:
        """Raw reward is the reward, normalised rewards and ppo_kl keep their names."""
        names = load_run(CONSOLE).store.names()
        assert {"reward", "kl", "clip_ratio", "entropy", "learning_rate", "eval_reward"} <= set(
            names
        )
        assert {"rollout/rewards", "train/ppo_kl", "eval/aime-truncated_ratio"} <= set(names)

    def test_the_verdict(self) -> None:
        """A learning run reads healthy."""
        run = load_run(CONSOLE)
        assert "healthy" in {s.id.value for s in diagnose(run, Rules()).scenarios}


class TestParser:
    """The parser's rules, line by line."""

    PREFIX = "[2026-08-21 10:00:00] model.py:918 - "

    def test_a_rollout_without_a_train_line(self) -> None:
        """A debug-rollout-only run: a rollout is handed out once two later ones came."""
        parser = SlimeConsoleParser()
        out = []
        for rollout in range(4):
            line = f"[2026-08-21 10:00:00] rollout.py:1 - perf {rollout}: {{'rollout/truncated_ratio': 0.1}}"
            out += parser.feed(line, rollout + 1)
        assert [record.values["step"] for record in out] == [0, 1]
        assert [record.values["step"] for record in parser.flush()] == [2, 3]

    def test_two_optimiser_steps_on_one_rollout(self) -> None:
        """The rollout's record again, with the newer train values, nothing of it lost."""
        parser = SlimeConsoleParser()
        parser.feed("[2026-08-21 10:00:00] x.py:1 - rollout 3: {'rollout/raw_reward': 0.5}", 1)
        first = parser.feed(self.PREFIX + "step 6: {'train/loss': 0.1, 'train/step': 6}", 2)
        again = parser.feed(self.PREFIX + "step 7: {'train/loss': 0.2, 'train/step': 7}", 3)
        assert first[0].values == {"step": 3, "rollout/raw_reward": 0.5, "train/loss": 0.1}
        assert again[0].values == {"step": 3, "rollout/raw_reward": 0.5, "train/loss": 0.2}

    def test_a_dict_cut_off(self) -> None:
        """A line cut in its dict keeps its whole pairs and is counted."""
        parser = SlimeConsoleParser()
        parser.feed(self.PREFIX + "perf 0: {'rollout/truncated_ratio': 0.25, 'rollout/resp", 1)
        (record,) = parser.flush()
        assert record.values == {"step": 0, "rollout/truncated_ratio": 0.25}
        assert len(parser.bad) == 1

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.text(max_size=120), max_size=20))
    def test_any_text_is_read_without_an_error(self, lines: list[str]) -> None:
        """Whatever a log holds, the parser hands out step-numbered records or nothing."""
        parser = SlimeConsoleParser()
        records = [r for i, line in enumerate(lines) for r in parser.feed(line, i + 1)]
        records += parser.flush()
        assert all(isinstance(record.values["step"], int) for record in records)


class TestTensorBoard:
    """Event files with slime's tags are slime's."""

    def _run(self, tmp_path: Path) -> Path:
        folder = tmp_path / "tensorboard_log" / "proj" / "exp"
        rows = [
            (
                step,
                {
                    "rollout/raw_reward": learning(step),
                    "rollout/rewards": 0.0,
                    "train/pg_clipfrac": 0.002,
                    "train/kl_loss": 0.0005 * step,
                    "train/ppo_kl": 0.0,
                    "train/entropy_loss": 0.6 - 0.003 * step,
                    "train/lr-pg_0": 1e-6,
                    "rollout/zero_std/count_0": 4.0,
                },
            )
            for step in range(40)
        ]
        write_events(folder, rows)
        return tmp_path

    def test_found_from_the_run_folder(self, tmp_path: Path) -> None:
        """`tensorboard_log/<project>/<experiment>/` under the run folder."""
        layout = discover(self._run(tmp_path))
        assert layout.adapter == "slime-tensorboard"

    def test_keys_and_verdict(self, tmp_path: Path) -> None:
        """The TensorBoard names (train/ stripped) map as the console's; counts stay counts."""
        run = load_run(self._run(tmp_path))
        assert run.framework == "slime (TensorBoard)"
        store = run.store
        assert store.points("reward").values[0] == pytest.approx(learning(0))
        assert store.points("clip_ratio").values[0] == pytest.approx(0.002)
        assert "ppo_kl" in store.names() and "rollout/rewards" in store.names()
        assert "frac_reward_zero_std" not in store.names()
        assert "healthy" in {s.id.value for s in diagnose(run, Rules()).scenarios}

    def test_two_processes_two_files(self, tmp_path: Path) -> None:
        """The trainer and the rollout manager each write a file into the folder: both are
        read and merged by step, never taken for a run restarted by the other's."""
        folder = tmp_path / "tensorboard_log" / "proj" / "exp"
        write_events(folder, [(s, trainer_rollout(s) | trainer_train(s)) for s in range(40)])
        write_events(folder, [(s, manager_stats(s)) for s in range(40)])  # opened later
        layout = discover(tmp_path)
        assert layout.adapter == "slime-tensorboard" and layout.metrics_file == folder
        run = load_run(tmp_path)
        assert run.store.replaced_rows == 0
        for name in ("reward", "kl", "completion_length", "clipped_ratio"):
            assert run.store.points(name).steps.tolist() == [float(s) for s in range(40)], name
        assert run.store.points("completion_length").values[5] == pytest.approx(
            manager_stats(5)["rollout/response_len/mean"]
        )
        assert "healthy" in {s.id.value for s in diagnose(run, Rules()).scenarios}

    def test_both_files_followed_live(self, tmp_path: Path) -> None:
        """Both processes' writers open at once and flush as slime's loop goes (the manager's
        rollout, the trainer's view of it, then its train step): read between flushes, every
        step has reward, KL, length and truncation, each as written."""
        folder = tmp_path / "tensorboard_log" / "proj" / "exp"
        folder.mkdir(parents=True)
        trainer, manager = EventFileWriter(str(folder)), EventFileWriter(str(folder))
        follower = RunFollower(tmp_path)
        run = Run(tmp_path)
        for step in range(30):
            for writer, values in (
                (manager, manager_stats(step)),
                (trainer, trainer_rollout(step)),
                (trainer, trainer_train(step)),
            ):
                add_scalars(writer, step, values)
                writer.flush()
                run.apply(follower.read(time_budget=1.0))
        trainer.close()
        manager.close()
        for _ in range(3):
            run.apply(follower.read(time_budget=1.0))
        store = run.store
        assert run.framework == "slime (TensorBoard)"
        expected: tuple[tuple[str, str, Callable[[int], dict[str, float]]], ...] = (
            ("reward", "rollout/raw_reward", trainer_rollout),
            ("kl", "train/kl_loss", trainer_train),
            ("completion_length", "rollout/response_len/mean", manager_stats),
            ("clipped_ratio", "rollout/truncated_ratio", manager_stats),
        )
        for name, key, values_of in expected:
            points = store.points(name)
            assert points.steps.tolist() == [float(s) for s in range(30)], name
            assert points.values.tolist() == pytest.approx([values_of(s)[key] for s in range(30)])

    def test_a_restart_is_still_a_restart(self, tmp_path: Path) -> None:
        """Both processes start again from rollout 20: newer files with the same tags; the
        steps from 20 on are the new run's, none counted twice."""
        folder = tmp_path / "tensorboard_log" / "proj" / "exp"
        write_events(folder, [(s, trainer_rollout(s) | trainer_train(s)) for s in range(30)])
        write_events(folder, [(s, manager_stats(s)) for s in range(30)])
        newer = [(s, manager_stats(s) | {"rollout/truncated_ratio": 0.5}) for s in range(20, 40)]
        later = 1.78e9 + 1000
        write_events(
            folder, [(s, trainer_rollout(s) | trainer_train(s)) for s in range(20, 40)], later
        )
        write_events(folder, newer, later)
        run = load_run(tmp_path)
        store = run.store
        assert store.replaced_rows > 0
        cut = store.points("clipped_ratio")
        assert cut.steps.tolist() == [float(s) for s in range(40)]
        assert cut.values.tolist() == pytest.approx([0.01] * 20 + [0.5] * 20)
        assert len(store.points("reward")) == len(store.points("kl")) == 40

    def test_another_trainers_event_files(self, tmp_path: Path) -> None:
        """TRL's tags are left to the plain TensorBoard reader."""
        write_events(tmp_path / "runs", [(1, {"train/reward": 0.5, "train/loss": 0.1})])
        assert discover(tmp_path).adapter == "tensorboard"


def miles_line(step_key: str, step: int, metrics: dict[str, float]) -> str:
    """miles/dashboard/store.py MetricsRecord, as its flush writes it (json.dumps(asdict))."""
    record = {"ts": 1.78e9 + step, "step_key": step_key, "step": step, "metrics": metrics}
    return json.dumps(record) + "\n"


class TestMiles:
    """miles' `{dump_details}/dashboard/metrics.jsonl`."""

    def _write(self, tmp_path: Path, steps: int) -> Path:
        dashboard = tmp_path / "dump" / "dashboard"
        dashboard.mkdir(parents=True)
        lines = []
        for step in range(steps):
            manager = {"rollout/response_len/mean": 500.0, "rollout/truncated_ratio": 0.01}
            trainer = {"rollout/raw_reward": learning(step), "rollout/step": step}
            train = {"train/kl_loss": 0.001, "train/pg_clipfrac": 0.002, "train/step": step}
            lines += [
                miles_line("rollout/step", step, manager),
                miles_line("rollout/step", step, trainer),
                miles_line("train/step", step, train),
            ]
        (dashboard / "metrics.jsonl").write_text("".join(lines), encoding="utf-8")
        return tmp_path / "dump"

    def test_found_below_the_dump_folder(self, tmp_path: Path) -> None:
        """The dump folder holds it one level down."""
        assert discover(self._write(tmp_path, 3)).adapter == "miles"

    def test_a_step_is_one_row(self, tmp_path: Path) -> None:
        """The rollout manager's, the trainer's and the train record of a step merge."""
        run = load_run(self._write(tmp_path, 40))
        store = run.store
        assert store.replaced_rows == 0
        assert store.points("reward").steps.tolist() == [float(s) for s in range(40)]
        assert len(store.points("completion_length")) == len(store.points("kl")) == 40
        assert {"healthy", "learning"} & {s.id.value for s in diagnose(run, Rules()).scenarios}

    def test_a_line_that_is_no_record(self) -> None:
        """Any other JSON is a bad line, said, and the reading goes on."""
        parser = MilesParser()
        assert parser.feed('{"loss": 1}', 1) == []
        assert parser.feed("not json", 2) == []
        assert [reason for _, reason, _ in parser.bad] == [
            "not a miles metrics record",
            "not JSON (JSONDecodeError)",
        ]
