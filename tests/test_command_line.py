"""The command line in plain words: where `export` may write (anywhere but the run's folder
and the files the run is read from), what a wrong path or command is told, what `inspect`
says of completions it could not use, and what `check --help` and `--json` promise."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from grpo_tui.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
LOG = FIXTURES / "ms-swift" / "local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl"
STATE = (
    FIXTURES
    / "ms-swift"
    / "local-run-msswift-4.6.0_grpo-3rewards-eval_checkpoint-6_trainer_state.json"
)
VERL = FIXTURES / "verl" / "verl_econagent_ray_colours_first5.log"


class TestWhereItWrites:
    """The run's folder and its files are refused; the rest is the user's."""

    def test_a_lone_log_beside_its_export(self, tmp_path: Path) -> None:
        log = tmp_path / "train.log"
        shutil.copy(VERL, log)
        assert main(["export", str(log), "-o", str(tmp_path / "metrics.csv")]) == 0
        assert (tmp_path / "metrics.csv").read_text(encoding="utf-8").startswith("step,")

    def test_never_over_the_log(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        log = tmp_path / "train.csv"  # a console log named like the export
        shutil.copy(VERL, log)
        before = log.read_bytes()
        assert main(["export", str(log), "--format", "csv", "-o", str(log)]) == 64
        assert "a file the run is read from" in capsys.readouterr().err
        assert log.read_bytes() == before

    def test_a_file_below_the_runs_top_folder(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        state = tmp_path / "run" / "checkpoint-6" / "trainer_state.json"
        state.parent.mkdir(parents=True)
        shutil.copy(STATE, state)
        assert main(["export", str(state), "-o", str(tmp_path / "run" / "m.csv")]) == 64
        assert "inside the run's folder" in capsys.readouterr().err
        assert not (tmp_path / "run" / "m.csv").exists()
        assert main(["export", str(state), "-o", str(tmp_path / "m.csv")]) == 0


@pytest.mark.parametrize("chosen", [[], ["--format", "parquet"]])
def test_a_hostile_key_is_escaped_in_the_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], chosen: list[str]
) -> None:
    """A metric named with an OSC title sequence and an OSC 52 clipboard write: escaped as
    --json writes it, nothing of it reaches the terminal (`-o -` is CSV whatever the
    format asked)."""
    run_dir = tmp_path / "output" / "v0-20260101-000000"
    run_dir.mkdir(parents=True)
    title, clipboard = "\x1b]0;PWNED\x07", "\x1b]52;c;ZWNobyBwd25lZA==\x07"
    lines = [
        json.dumps({**json.loads(line), title: 1.0, clipboard: 2.0})
        for line in LOG.read_text(encoding="utf-8").splitlines()
        if '"loss"' in line
    ]
    (run_dir / "logging.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["export", str(tmp_path / "output"), "-o", "-", *chosen]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "\\u001b]0;PWNED\\u0007" in out.splitlines()[0]


class TestWrongPaths:
    """A wrong first word or a path that is not there gets plain words."""

    def test_a_typo_of_a_command_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["chekc", "output/"]) == 64
        assert "chekc is neither a command nor a path: did you mean check?" in (
            capsys.readouterr().err
        )

    def test_check_on_a_path_that_is_not_there(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        missing = tmp_path / "runs" / "does-not-exist"
        assert main(["check", str(missing)]) == 5  # no such path, not 3 (waiting)
        out = "".join(capsys.readouterr().out.split())  # long paths wrap anywhere
        assert f"{missing},whichdoesnotexistyet".replace(" ", "") in out
        assert f"thenearestfolderthatdoes:{tmp_path}" in out


def test_inspect_counts_and_shows_the_completions_it_could_not_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rollout dump with a damaged line: the line is counted and shown, the step's
    other responses kept."""
    shutil.copy(VERL, tmp_path / "train.log")
    dumps = tmp_path / "rollouts"
    dumps.mkdir()
    row = '{{"input": "What is 2+2?", "output": "{answer}", "score": {score}, "step": 1}}\n'
    (dumps / "1.jsonl").write_text(
        row.format(answer="4", score=1.0) + "{damaged\n" + row.format(answer="5", score=0.0),
        encoding="utf-8",
    )
    os.utime(dumps / "1.jsonl", (1_700_000_000, 1_700_000_000))  # settled long ago
    assert main(["inspect", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"completions {dumps}: 1 batches, 1 bad" in out
    assert "1.jsonl: line 2: invalid JSON" in out


def test_check_help_lists_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    help_text = capsys.readouterr().out
    for code in (0, 1, 2, 3, 4, 5, 64, 70, 130, 141):
        assert f"\n  {code:>3}  " in help_text


def test_check_json_says_its_schema_and_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "output" / "v0-20260101-000000"
    run_dir.mkdir(parents=True)
    shutil.copy(LOG, run_dir / "logging.jsonl")
    main(["check", str(tmp_path / "output"), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert (data["schema"], data["path"]) == (2, str(tmp_path / "output"))


def test_check_on_random_bytes_says_so_with_exit_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Random bytes are bad lines and nothing else: not "waiting" (3) but unreadable (5)."""
    damaged = tmp_path / "metrics.jsonl"
    damaged.write_bytes(bytes(range(256)) * 64 + b"\n" + bytes(range(255, -1, -1)) * 64 + b"\n")
    lines = damaged.read_bytes().count(b"\n")
    assert main(["check", str(damaged)]) == 5
    out = " ".join(capsys.readouterr().out.split())
    assert f"no training metrics found in metrics.jsonl ({lines} lines read)" in out
    assert " bad lines" in out and "· 0 bad lines" not in out
