"""`check` output: human report (80 columns, plain when piped / NO_COLOR), JSON, exit
codes, and snapshots of both on a real fixture (UPDATE_SNAPSHOTS=1 rewrites them)."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import THREE_REWARDS, THREE_REWARDS_ARGS, msswift_run_dir, records_block, simulated_run
from rich.console import Console

from grpo_tui.commands.check import check_command, exit_code
from grpo_tui.commands.output import (
    EXIT_BAD_RULES,
    EXIT_CAUTION,
    EXIT_HEALTHY,
    EXIT_NOTHING,
    EXIT_PROBLEM,
    EXIT_UNREADABLE,
    EXIT_USAGE,
)
from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.run.live import Run
from grpo_tui.sim import write_run
from grpo_tui.sources.records import Batch, Record
from grpo_tui.views.presentation import bars
from grpo_tui.views.report import diagnosis_to_json, render_check
from grpo_tui.vocabulary import LearningState, LineKind

FIXTURES = Path(__file__).parent / "fixtures"
SNAPSHOTS = Path(__file__).parent / "snapshots"
RULES = Rules()
#: the fixture files' mtime in the snapshot run, and "now" 95 s later
DATA_TIME = 1_790_000_000.0
NOW = DATA_TIME + 95.0
COLOUR_SGR = re.compile(r"\x1b\[[0-9;]*(?:3[0-9]|9[0-7]|38;|48;)[0-9;]*m")


pytestmark = pytest.mark.usefixtures("no_user_rules")


# -- small pieces -----------------------------------------------------------------------------


def test_sparkline() -> None:
    assert bars(np.array([0.0, 1.0, np.nan, 0.5])) == "▁█ ▅"
    assert bars(np.array([2.0, 2.0])) == "▄▄"
    assert bars(np.array([np.nan, np.nan])) == "  "
    assert bars(np.empty(0)) == ""


def small_run(values: dict[str, list[float]]) -> Run:
    run = Run(Path("r"))
    n = len(next(iter(values.values())))
    run.ingest(
        Batch(
            blocks=[
                records_block(
                    [
                        Record(LineKind.TRAIN, float(i + 1), {k: v[i] for k, v in values.items()})
                        for i in range(n)
                    ]
                )
            ]
        )
    )
    return run


def test_exit_codes(tmp_path: Path) -> None:
    empty = Run(tmp_path)  # there, nothing in it yet
    assert exit_code(empty, diagnose(empty, RULES)) == EXIT_NOTHING
    missing = Run(tmp_path / "no-such-run")  # not there: no such path, not "waiting"
    assert exit_code(missing, diagnose(missing, RULES)) == EXIT_UNREADABLE
    dead = small_run(
        {"reward": [0.0] * 12, "reward_std": [0.0] * 12, "frac_reward_zero_std": [1.0] * 12}
    )
    assert exit_code(dead, diagnose(dead, RULES)) == EXIT_PROBLEM
    # three dead points: warming up with an early warning, never a problem yet (docs/health.md, "Warm-up")
    early = small_run(
        {"reward": [0.0] * 3, "reward_std": [0.0] * 3, "frac_reward_zero_std": [1.0] * 3}
    )
    assert [s.id.word for s in diagnose(early, RULES).scenarios] == ["warming_up"]
    assert exit_code(early, diagnose(early, RULES)) == EXIT_CAUTION
    warming = small_run({"reward": [0.1, 0.2, 0.3], "reward_std": [0.3] * 3})
    assert diagnose(warming, RULES).status.word == "unknown"
    assert exit_code(warming, diagnose(warming, RULES)) == EXIT_CAUTION


# -- human report -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sim_dirs() -> dict[str, Path]:
    return {
        name: simulated_run(name, seed=1) for name in ("healthy", "reward_hacking", "truncation")
    }


def render_text(run: Run, *, width: int = 80, terminal: bool = False) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=width, force_terminal=terminal, highlight=False, emoji=False
    )
    console.print(render_check(run, diagnose(run, RULES), RULES, now=NOW))
    return buffer.getvalue()


@pytest.mark.parametrize("name", ["healthy", "reward_hacking", "truncation"])
def test_report_fits_80_columns(name: str, sim_dirs: dict[str, Path]) -> None:
    text = render_text(load_run(sim_dirs[name]))
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert not any(line.endswith(" ") for line in lines)
    assert "\x1b[" not in text  # not a terminal: plain
    assert "Checklist" in text and "Metrics" in text


def test_no_color_keeps_glyphs_and_drops_colour(
    sim_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = load_run(sim_dirs["reward_hacking"])
    coloured = render_text(run, terminal=True)
    assert COLOUR_SGR.search(coloured)
    monkeypatch.setenv("NO_COLOR", "1")
    plain = render_text(run, terminal=True)
    assert not COLOUR_SGR.search(plain)
    for glyph in ("✗", "✓", "!"):
        assert glyph in plain


def test_check_command_exit_codes(
    sim_dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        check_command(sim_dirs["healthy"], as_json=False, rules_file=None, width=80, now=NOW)
        == EXIT_HEALTHY
    )
    assert "Status: HEALTHY" in capsys.readouterr().out
    assert check_command(sim_dirs["truncation"], as_json=True, rules_file=None) == EXIT_PROBLEM
    assert json.loads(capsys.readouterr().out)["status"] == "problem"
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert check_command(empty, as_json=False, rules_file=None, width=80, now=NOW) == EXIT_NOTHING
    assert "Nothing readable" in capsys.readouterr().out
    bad_rules = tmp_path / "rules.toml"
    bad_rules.write_text("[window\n", encoding="utf-8")
    assert check_command(sim_dirs["healthy"], as_json=False, rules_file=bad_rules) == EXIT_BAD_RULES
    assert "not valid TOML" in capsys.readouterr().err


def test_rules_file_changes_the_verdict(
    sim_dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the truncation run logs clipped_ratio ~0.75: with the bad bound raised it is only a caution
    rules = tmp_path / "rules.toml"
    rules.write_text(
        "[zones.clipped_ratio]\nbad_above = 0.95\n[zones.completion_length]\nbad_above = 2.0\n",
        encoding="utf-8",
    )
    code = check_command(sim_dirs["truncation"], as_json=True, rules_file=rules)
    data = json.loads(capsys.readouterr().out)
    truncation = next(s for s in data["scenarios"] if s["id"] == "truncation")
    assert truncation["severity"] == "caution"
    assert code in (EXIT_CAUTION, EXIT_PROBLEM)


# -- JSON ----------------------------------------------------------------------------------------


def test_json_shape(sim_dirs: dict[str, Path]) -> None:
    run = load_run(sim_dirs["reward_hacking"])
    data = diagnosis_to_json(run, diagnose(run, RULES))
    json.dumps(data, allow_nan=False)
    assert set(data) == {
        "schema",
        "path",
        "name",
        "file",
        "status",
        "state",
        "scenarios",
        "checklist",
        "metrics",
        "run",
        "notes",
        "history",
        "checkpoints",
        "prompts",
    }
    # the run's one state: its word and the block that shows it
    assert data["state"]["word"] in {s.word for s in LearningState}
    assert set(data["state"]) == {
        "word",
        "id",
        "title",
        "severity",
        "onset_step",
        "evidence",
        "advice",
    }
    assert data["schema"] == 2
    for scenario in data["scenarios"]:
        assert set(scenario) == {
            "id",
            "title",
            "severity",
            "onset_step",
            "evidence",
            "advice",
        }
        for evidence in scenario["evidence"]:
            assert set(evidence) == {"metric", "window", "numbers", "text", "detail", "word"}
            assert set(evidence["window"]) == {"first_step", "last_step", "points"}
    assert [set(item) for item in data["checklist"]] == [
        {"id", "question", "answer", "evidence"}
    ] * 8
    assert all(
        set(m) == {"zone", "last", "level", "trend", "course", "course_text"}
        for m in data["metrics"].values()
    )
    age = data["run"].pop("data_age_s")
    assert isinstance(age, float) and age >= 0
    assert data["run"] == {
        "framework": "ms-swift",
        "name": None,
        "steps": {"first": 1, "last": 300, "count": 61},
        "max_steps": 300,
        "finished": True,
        "state": "finished",
        # a simulated run writes no console text: no log age, no line it ended by
        "log_age_s": None,
        "stopped": None,
        "unreadable": None,
        "notes": [],
    }


def test_check_says_a_run_with_no_new_data_for_long_is_stalled(tmp_path: Path) -> None:
    """What the header shows as STALLED, a cron job reads too (human and JSON)."""
    run = load_run(FIXTURES / "ms-swift" / "ms-swift-issue-4465_grpo-v3.5_nan.jsonl")
    assert run.last_data_time is not None
    later = run.last_data_time + 3 * 3600
    out = io.StringIO()
    Console(file=out, width=80, no_color=True).print(
        render_check(run, diagnose(run, RULES), RULES, now=later)
    )
    head = out.getvalue().split("Status:")[0]  # the title (the path may wrap) and run line
    assert "STALLED: no data for 3h00m" in head, head
    data = diagnosis_to_json(run, diagnose(run, RULES), now=later)
    assert data["run"]["state"] == "stalled"
    assert data["run"]["data_age_s"] == pytest.approx(3 * 3600)
    # a minute after its last line the same run is live
    data = diagnosis_to_json(run, diagnose(run, RULES), now=run.last_data_time + 60)
    assert data["run"]["state"] == "live"


def test_json_has_no_nan(tmp_path: Path) -> None:
    run = load_run(FIXTURES / "ms-swift" / "ms-swift-issue-4465_grpo-v3.5_nan.jsonl")
    data = diagnosis_to_json(run, diagnose(run, RULES))
    json.dumps(data, allow_nan=False)
    assert data["metrics"]["kl"] == {
        "zone": "unknown",
        "last": None,
        "level": None,
        "trend": "unknown",
        "course": "",
        "course_text": "",
    }


# -- snapshots -----------------------------------------------------------------------------------


def snapshot_run_dir(root: Path) -> Path:
    """The ms-swift 4.6.0 3-rewards run rebuilt as an output dir: logging.jsonl plus the
    args.json its .source.txt command implies; every file's mtime fixed."""
    output = msswift_run_dir(root, THREE_REWARDS, THREE_REWARDS_ARGS, completions=False)
    run_dir = output / "v0-20261202-132949"
    for path in (run_dir / "logging.jsonl", run_dir / "args.json"):
        os.utime(path, (DATA_TIME, DATA_TIME))
    return Path("output")


def compare_snapshot(name: str, actual: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        if os.environ.get("UPDATE_SNAPSHOTS") != "1":
            pytest.fail(f"snapshot {name} was missing and has been written; run again")
    assert actual == path.read_text(encoding="utf-8"), (
        f"{name} changed (UPDATE_SNAPSHOTS=1 to accept)"
    )


def test_check_snapshot_human(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    code = check_command(
        snapshot_run_dir(tmp_path), as_json=False, rules_file=None, width=80, now=NOW
    )
    out = capsys.readouterr().out
    assert code == EXIT_CAUTION  # 4 points: warming up, the truncation an early warning
    assert "last data 1m ago" in out  # ages to the minute past the first
    compare_snapshot("check_msswift_3rewards.txt", out)


def test_check_snapshot_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = check_command(snapshot_run_dir(tmp_path), as_json=True, rules_file=None, now=NOW)
    out = capsys.readouterr().out
    assert code == EXIT_CAUTION  # 4 points: warming up, the truncation an early warning
    compare_snapshot("check_msswift_3rewards.json", out)


# -- --max-completion-length --------------------------------------------------------------------


def _length_evidence(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    from grpo_tui.cli import main

    main(["check", "--json", *argv])
    data = json.loads(capsys.readouterr().out)
    return str(data["checklist"][4]["evidence"])


def test_the_cap_given_on_the_command_line_fills_what_the_args_do_not_say(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "trl"
    run_dir.mkdir()
    state = (
        Path(__file__).parent
        / "fixtures"
        / "trl"
        / "local-run-trl1.16.0-tf5.20.0_trainer_state.json"
    )
    (run_dir / "trainer_state.json").write_bytes(state.read_bytes())
    # no args: the cap is inferred from the longest completion pinned at 24
    assert "cap 24, inferred" in _length_evidence(capsys, str(run_dir))
    given = _length_evidence(capsys, str(run_dir), "--max-completion-length", "64")
    assert "cap 64, from the command line" in given
    # the run's own args win over the command line
    sim_dir = write_run(tmp_path / "sim", "healthy", seed=1, max_steps=20)
    stated = json.loads((sim_dir / "args.json").read_text(encoding="utf-8"))[
        "max_completion_length"
    ]
    evidence = _length_evidence(capsys, str(sim_dir), "--max-completion-length", "7")
    assert "cap 7" not in evidence and "command line" not in evidence
    assert f"{stated}" in evidence or "healthy band" in evidence


@pytest.mark.parametrize("value", ["0", "-5", "many"])
def test_a_cap_that_is_not_a_positive_number_is_a_usage_error(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from grpo_tui.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["check", str(tmp_path), "--max-completion-length", value])
    assert exited.value.code == EXIT_USAGE
    assert "--max-completion-length" in capsys.readouterr().err


def test_check_verbose_says_how_the_numbers_were_read(tmp_path: Path) -> None:
    """The headline quotes levels; `--verbose` adds how they were read under them (means,
    the noise around the local course, its autocorrelation, the threshold)."""
    from grpo_tui.commands.check import check_command

    corpus = Path(__file__).parent / "corpus" / "trl-redteam-finance-sparse"
    plain, verbose = io.StringIO(), io.StringIO()
    check_command(corpus, as_json=False, rules_file=None, width=100, out=plain)
    check_command(corpus, as_json=False, rules_file=None, width=100, out=verbose, verbose=True)
    assert "autocorrelation" not in plain.getvalue() and "standard errors" not in plain.getvalue()
    assert "means of the first and last" in verbose.getvalue()
    assert "lag-1 autocorrelation" in verbose.getvalue()
