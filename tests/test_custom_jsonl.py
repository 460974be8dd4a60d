"""A custom trainer's hand-written JSON lines (sources/formats/custom.py): found from its
run folder by content, named "JSON lines (custom)", its keys mapped and not mapped said.
Fixture: tests/fixtures/custom/custom-trainer_train_metrics.jsonl (its .source.txt)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.sources.discover import discover
from grpo_tui.sources.formats.custom import shows_custom

LOG = Path(__file__).parent / "fixtures" / "custom" / "custom-trainer_train_metrics.jsonl"


def write_lines(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


class TestFound:
    """Found from the run folder, by what its records hold."""

    def test_from_the_run_folder(self, tmp_path: Path) -> None:
        """Not "waiting for a metrics log": the hand-written file is the run's log."""
        shutil.copy(LOG, tmp_path / "train_metrics.jsonl")
        layout = discover(tmp_path)
        assert (layout.adapter, layout.metrics_file) == (
            "jsonl-custom",
            tmp_path / "train_metrics.jsonl",
        )

    def test_a_file_without_a_reward(self, tmp_path: Path) -> None:
        """Records with a step but nothing reward-like are no GRPO log: still waited for."""
        write_lines(tmp_path / "timing.jsonl", [{"step": 1, "seconds": 3.5}])
        assert discover(tmp_path).waiting

    def test_nested_records(self, tmp_path: Path) -> None:
        """Records holding lists or objects are someone else's (completions, configs)."""
        write_lines(tmp_path / "samples.jsonl", [{"step": 1, "reward": [1.0, 0.0]}])
        assert discover(tmp_path).waiting

    def test_a_frameworks_log_wins(self, tmp_path: Path) -> None:
        """verl's file logger beside it is the run's log."""
        shutil.copy(LOG, tmp_path / "train_metrics.jsonl")
        write_lines(tmp_path / "exp.jsonl", [{"step": 1, "data": {"critic/score/mean": 0.5}}])
        assert discover(tmp_path).adapter == "verl"

    @settings(max_examples=80, deadline=None)
    @given(st.dictionaries(st.text(max_size=20), st.integers() | st.floats() | st.text(max_size=5)))
    def test_the_content_test_never_fails(self, record: dict[str, Any]) -> None:
        """Any flat record is judged, and only one with a whole-number step and a number
        under a reward-like key passes."""
        if shows_custom(record):
            steps = ("step", "global_step", "train_step", "iteration", "iter", "update", "batch")
            assert any(isinstance(record.get(k), int) for k in steps)
            words = ("reward", "score", "return")
            assert any(
                w in k.lower() and isinstance(v, (int, float))
                for k, v in record.items()
                for w in words
            )


class TestRead:
    """Read with the common names and the usual hand-written variants."""

    def test_keys_and_verdict(self) -> None:
        """`truncated_ratio` and `lr` are known variants; components keep their names."""
        run = load_run(LOG)
        assert run.framework == "JSON lines (custom)"
        names = set(run.store.names())
        assert {"reward", "reward_std", "clipped_ratio", "learning_rate", "kl"} <= names
        assert {"reward_correct", "reward_format", "seconds"} <= names
        assert "healthy" in {s.id.value for s in diagnose(run, Rules()).scenarios}

    def test_inspect_names_what_it_mapped_and_not(self, tmp_path: Path) -> None:
        """`inspect --json`: every key with the one it came from, or none."""
        shutil.copy(LOG, tmp_path / "train_metrics.jsonl")
        done = subprocess.run(
            [sys.executable, "-m", "grpo_tui", "inspect", str(tmp_path), "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
        report = json.loads(done.stdout)
        assert report["framework"] == "JSON lines (custom)"
        metrics = report["metrics"]
        assert metrics["clipped_ratio"]["source_key"] == "truncated_ratio"
        assert metrics["learning_rate"]["source_key"] == "lr"
        assert metrics["reward_format"]["source_key"] == "reward_format"
