"""The hand-off: `grpo_tui.load_run(PATH).to_pandas()` and `grpo-tui export`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import grpo_tui
from grpo_tui.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
LOG = FIXTURES / "ms-swift" / "local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl"
CONSOLE = Path(__file__).parent / "corpus" / "trl-qwen7b-gsm8k-vanilla-s43"


def test_one_row_per_step_with_eval_columns_beside_train_ones() -> None:
    frame = grpo_tui.load_run(LOG).to_pandas()
    # train lines at 1, 2, 4, 6; eval lines at 3 and 6 (6 holds both in one row)
    assert list(frame.index) == [1, 2, 3, 4, 6] and frame.index.name == "step"
    lines = [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines()]
    train6 = next(r for r in lines if r.get("global_step/max_steps") == "6/6" and "loss" in r)
    eval6 = next(r for r in lines if r.get("global_step/max_steps") == "6/6" and "eval_reward" in r)
    assert frame.loc[6, "reward"] == pytest.approx(train6["reward"])
    assert frame.loc[6, "eval_reward"] == pytest.approx(eval6["eval_reward"])
    assert frame["reward"].isna()[3] and not frame["eval_reward"].isna()[3]
    assert "rewards/Format/mean" in frame.columns


def test_console_log_and_trainer_state_give_the_same_table() -> None:
    """The corpus run's trainer_state.json was made from its console log, values unchanged:
    both readers must hand over the same numbers."""
    console = grpo_tui.load_run(CONSOLE / "console.log").to_pandas()
    state = grpo_tui.load_run(CONSOLE / "checkpoint-200" / "trainer_state.json").to_pandas()
    assert list(console.index) == list(state.index) == list(range(5, 201, 5))
    for name in ("loss", "reward", "reward_std", "learning_rate", "completion_length"):
        assert console[name].to_numpy() == pytest.approx(state[name].to_numpy(), nan_ok=True)


def test_export_csv_and_parquet(tmp_path: Path) -> None:
    assert main(["export", str(LOG), "-o", str(tmp_path / "m.csv")]) == 0
    csv = pd.read_csv(tmp_path / "m.csv", index_col="step")
    expected = grpo_tui.load_run(LOG).to_pandas()
    assert list(csv.columns) == list(expected.columns)
    assert csv["reward"].to_numpy() == pytest.approx(expected["reward"].to_numpy(), nan_ok=True)
    assert main(["export", str(LOG), "-o", str(tmp_path / "m.parquet")]) == 0
    parquet = pd.read_parquet(tmp_path / "m.parquet")
    assert parquet.shape == expected.shape


def test_export_never_writes_into_the_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "v0-20260101-000000"
    run_dir.mkdir()
    shutil.copy(LOG, run_dir / "logging.jsonl")
    before = sorted(p.name for p in run_dir.iterdir())
    assert main(["export", str(run_dir), "-o", str(run_dir / "out.csv")]) == 64
    assert "never writes there" in capsys.readouterr().err
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_export_says_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(LOG), "-o", str(tmp_path / "m.xlsx")]) == 64
    assert "--format csv or parquet" in capsys.readouterr().err
    (tmp_path / "run").mkdir()
    empty = tmp_path / "run" / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert main(["export", str(empty), "-o", str(tmp_path / "e.csv")]) == 3
    assert not (tmp_path / "e.csv").exists()


def ms_swift_output(tmp_path: Path) -> tuple[Path, Path]:
    """ms-swift's output dir with one version folder: its log beside its args.json."""
    out = tmp_path / "output"
    version = out / "v0-20260101-000000"
    version.mkdir(parents=True)
    shutil.copy(LOG, version / "logging.jsonl")
    (version / "args.json").write_text(json.dumps({"num_generations": 8}), encoding="utf-8")
    return out, version


def test_export_of_a_log_beside_its_args_is_refused_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log with its run's other files beside it is in a run folder (issue 46)."""
    _, version = ms_swift_output(tmp_path)
    before = sorted(p.name for p in version.iterdir())
    assert main(["export", str(version / "logging.jsonl"), "-o", str(version / "m.csv")]) == 64
    assert "never writes there" in capsys.readouterr().err
    assert sorted(p.name for p in version.iterdir()) == before


def test_export_into_the_output_dir_holding_the_versions_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`export OUT/v0-… -o OUT/m.csv`: OUT holds the run's versions (issue 46)."""
    out, version = ms_swift_output(tmp_path)
    assert main(["export", str(version), "-o", str(out / "m.csv")]) == 64
    assert "holds the run's versions" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == [version.name]
    # beside the output dir is fine
    assert main(["export", str(version), "-o", str(tmp_path / "m.csv")]) == 0


def test_a_lone_log_may_be_exported_beside_itself(tmp_path: Path) -> None:
    """A log file with nothing of its run beside it: its folder is not a run's."""
    shutil.copy(LOG, tmp_path / "train.jsonl")
    assert main(["export", str(tmp_path / "train.jsonl"), "-o", str(tmp_path / "m.csv")]) == 0
