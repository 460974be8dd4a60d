"""OpenPipe ART (sources/formats/art.py, art_trajectories.py): a model folder's
`history.jsonl` (a step in several lines, merged), the zero-spread share from its group
counts, and `trajectories/<split>/NNNN.parquet` as completions. Fixture:
tests/fixtures/art/, built from the openpipe-art 0.5.18 wheel (its .source.txt); the
parquet files are written here with pyarrow under ART's own schema
(art/utils/trajectory_logging.py:115-140)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.sources.completion_batches import open_batches
from grpo_tui.sources.discover import completions_in, discover
from grpo_tui.sources.formats.art import ART_TRAJECTORIES
from grpo_tui.sources.formats.art_trajectories import convert

HISTORY = Path(__file__).parent / "fixtures" / "art" / "art-0.5.18_history.jsonl"

#: art/utils/trajectory_logging.py `write_trajectory_groups_parquet`'s schema
MESSAGE = pa.struct(
    [
        ("role", pa.string()),
        ("content", pa.string()),
        ("tool_calls", pa.string()),
        ("tool_call_id", pa.string()),
        ("trainable", pa.bool_()),
    ]
)
SCHEMA = pa.schema(
    [
        ("group_index", pa.int64()),
        ("group_metadata", pa.string()),
        ("group_metrics", pa.string()),
        ("group_logs", pa.list_(pa.string())),
        ("reward", pa.float64()),
        ("metrics", pa.string()),
        ("metadata", pa.string()),
        ("tools", pa.string()),
        ("logs", pa.list_(pa.string())),
        ("messages", pa.list_(MESSAGE)),
    ]
)


def message(role: str, content: str, trainable: bool) -> dict[str, Any]:
    return {
        "role": role,
        "content": content,
        "tool_calls": None,
        "tool_call_id": None,
        "trainable": trainable,
    }


def write_trajectories(path: Path, groups: list[list[float]]) -> None:
    """A step's groups as ART writes them: a row per trajectory, the prompt's messages
    not trainable, the model's choice trainable (ZSTD, as ART compresses)."""
    rows = []
    for index, rewards in enumerate(groups):
        for n, reward in enumerate(rewards):
            messages = [
                message("system", "You are a helpful assistant.", False),
                message("user", f"What is {index} + {index}?", False),
                message("assistant", f"<answer>{2 * index + n % 2}</answer>", True),
            ]
            rows.append(
                {
                    "group_index": index,
                    "group_metadata": None,
                    "group_metrics": None,
                    "group_logs": None,
                    "reward": reward,
                    "metrics": json.dumps({"correct": reward}),
                    "metadata": None,
                    "tools": None,
                    "logs": None,
                    "messages": messages,
                }
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path, compression="zstd")


def model_folder(root: Path) -> Path:
    model = root / ".art" / "proj" / "models" / "m1"
    model.mkdir(parents=True)
    shutil.copy(HISTORY, model / "history.jsonl")
    return model


class TestHistory:
    """history.jsonl, found and read."""

    @pytest.mark.parametrize("where", ["model", "project", "art", "root", "file"])
    def test_found_from_every_level(self, tmp_path: Path, where: str) -> None:
        """The model folder, its project, `.art/`, the folder holding `.art/`, the file."""
        model = model_folder(tmp_path)
        path = {
            "model": model,
            "project": model.parent.parent,
            "art": tmp_path / ".art",
            "root": tmp_path,
            "file": model / "history.jsonl",
        }[where]
        layout = discover(path)
        assert (layout.adapter, layout.metrics_file) == ("art", model / "history.jsonl")

    def test_a_step_in_several_lines_is_one_row(self) -> None:
        """The train split's line, the loss line and the val line of a step merge."""
        run = load_run(HISTORY)
        store = run.store
        assert store.replaced_rows == 0
        assert store.points("reward").steps.tolist() == [float(s) for s in range(1, 41)]
        assert store.points("kl").steps.tolist() == [float(s) for s in range(1, 41)]
        assert store.points("eval_reward").steps.tolist() == [10.0, 20.0, 30.0, 40.0]
        assert "loss/kl_div" in store.names()  # not necessarily to a reference

    def test_the_zero_spread_share(self) -> None:
        """1 − trainable / submitted groups."""
        store = load_run(HISTORY).store
        assert store.points("frac_reward_zero_std").values[0] == pytest.approx(1 - 7 / 16)
        assert store.points("reward_std").values[0] == pytest.approx(0.21125)

    def test_the_verdict(self) -> None:
        """A learning run reads healthy."""
        run = load_run(HISTORY)
        assert "healthy" in {s.id.value for s in diagnose(run, Rules()).scenarios}


class TestTrajectories:
    """`trajectories/train/NNNN.parquet` as the completions."""

    def test_the_run_folder_names_them(self, tmp_path: Path) -> None:
        """The model folder's train split is the run's completions folder."""
        model = model_folder(tmp_path)
        write_trajectories(model / "trajectories" / "train" / "0001.parquet", [[1.0, 0.0]])
        completions = discover(model).completions
        assert completions is not None
        assert (completions.path, completions.folder) == (
            model / "trajectories" / "train",
            ART_TRAJECTORIES,
        )

    def test_groups_prompts_and_rewards(self, tmp_path: Path) -> None:
        """Each trajectory a row: its prompt the untrainable messages, its completion the
        model's, its reward ART's; the step from the file name."""
        folder = tmp_path / "trajectories" / "train"
        write_trajectories(folder / "0003.parquet", [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
        source = open_batches(completions_in(folder))  # as `--completions` names it
        (batch,) = source.read().batches
        rows = batch.rows
        assert rows is not None
        assert rows.steps == ["3"] * 6
        assert rows.completions[:2] == ["<answer>0</answer>", "<answer>1</answer>"]
        assert "What is 1 + 1?" in rows.prompts[3]
        assert rows.totals.tolist() == [1.0, 0.0, 1.0, 0.0, 0.0, 0.0]

    def test_a_file_being_written(self, tmp_path: Path) -> None:
        """No footer yet: not complete, read again later."""
        path = tmp_path / "0001.parquet"
        write_trajectories(path, [[1.0, 0.0]])
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        assert convert(path) is None

    def test_another_tools_parquet(self, tmp_path: Path) -> None:
        """A `0001.parquet` without ART's columns is not taken for trajectories."""
        path = tmp_path / "0001.parquet"
        pq.write_table(pa.table({"x": [1, 2]}), path)
        assert not ART_TRAJECTORIES.holds(tmp_path)
