"""Shared test helpers: where the copied real fixtures live."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
MS_SWIFT = FIXTURES / "ms-swift"
TRL = FIXTURES / "trl"


@pytest.fixture
def ms_swift_fixtures() -> Path:
    return MS_SWIFT


def msswift_run_dir(
    tmp_path: Path, name: str, args: dict[str, object], *, completions: bool
) -> Path:
    """An ms-swift output dir rebuilt from a fixture: its logging.jsonl (and completions), with
    the args.json its .source.txt command implies (ms-swift 4.6 defaults num_iterations 1)."""
    run_dir = tmp_path / "output" / "v0-20261202-132949"
    run_dir.mkdir(parents=True)
    shutil.copy(MS_SWIFT / f"{name}_logging.jsonl", run_dir / "logging.jsonl")
    if completions:
        shutil.copy(MS_SWIFT / f"{name}_completions.jsonl", run_dir / "completions.jsonl")
    (run_dir / "args.json").write_text(json.dumps(args), encoding="utf-8")
    return tmp_path / "output"


#: the args.json implied by the recorded command of the 4.6.0 "3rewards-eval" local run
THREE_REWARDS = "local-run-msswift-4.6.0_grpo-3rewards-eval"
THREE_REWARDS_ARGS: dict[str, object] = {
    "rlhf_type": "grpo",
    "reward_funcs": ["format", "length_bonus", "coin_flip"],
    "max_completion_length": 24,
    "num_generations": 4,
    "max_steps": 6,
    "logging_steps": 2,
    "learning_rate": 1e-4,
    "beta": 0.04,
    "temperature": 1.0,
    "num_iterations": 1,
    "epsilon": 0.2,
    "loss_type": "grpo",
}
