"""`grpo-tui check PATH --since N` (views/check_since.py): only what changed after step N,
cut from `check --json`'s own object, on real corpus runs."""

from __future__ import annotations

import functools
import io
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS, hostile_run, leaks

from grpo_tui.cli import main
from grpo_tui.commands.check import check_command, check_document
from grpo_tui.commands.headless import read_run
from grpo_tui.commands.output import EXIT_USAGE
from grpo_tui.health.diagnose import Diagnosis, diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.live import Run
from grpo_tui.views.check_since import since_to_json
from grpo_tui.views.report import diagnosis_to_json

#: a finished TRL run: unstable from step 40, truncation from 145 (caution) and 190 (problem)
COLLAPSE = CORPUS / "trl-qwen7b-gsm8k-lr1e-4-collapse"
#: runs of several kinds: a collapse, a healthy learner, a stuck one, verl's console
RUNS = (
    "trl-qwen7b-gsm8k-lr1e-4-collapse",
    "trl-qwen35-9b-gsm8k-learning",
    "trl-qwen35-9b-gsm8k-g3-stuck",
    "verl-console-deepseek7b-gsm8k-grpo-1119st",
)
FIXED_NOW = 1_900_000_000.0


pytestmark = pytest.mark.usefixtures("no_user_rules")


@functools.cache
def _judged(name: str) -> tuple[Run, Diagnosis]:
    """A corpus run read and diagnosed once for the module."""
    run = read_run(CORPUS / name)
    return run, diagnose(run, Rules())


def _documents(name: str, since: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """(check --json's object, check --since's) for a corpus run, at one moment."""
    run, diagnosis = _judged(name)
    whole = diagnosis_to_json(run, diagnosis, now=FIXED_NOW)
    return whole, since_to_json(run, diagnosis, since, now=FIXED_NOW)


def _after(value: float | None, step: float) -> bool:
    return value is not None and value > step


class TestWhatChanged:
    """The since object is check --json's, cut at N."""

    def test_the_collapse_after_step_100(self) -> None:
        """Unstable since 40 is old news at 100; the truncation (onset 145) is new, with
        both of its history spans; the state held at 100 is the state now."""
        _, cut = _documents(COLLAPSE.name, 100)
        ids = [s["id"] for s in cut["scenarios"]]
        assert "truncation" in ids
        assert "too_aggressive" not in ids
        spans = [(h["id"], h["from_step"], h["to_step"]) for h in cut["history"]]
        assert [span for span in spans if span[0] in ("truncation", "too_aggressive")] == [
            ("truncation", 145, 190),
            ("truncation", 190, None),
        ]
        assert cut["since"] == {
            "step": 100,
            "last_step": 200,
            "new_steps": 20,
            "state_then": "unstable",
            "state_now": "unstable",
            "state_changed": False,
            "nothing_new": False,
        }

    def test_the_collapse_after_step_30(self) -> None:
        """At step 30 no state was held yet (the first began at 40): too early → unstable."""
        _, cut = _documents(COLLAPSE.name, 30)
        assert {"too_aggressive", "truncation"} <= {s["id"] for s in cut["scenarios"]}
        assert (cut["since"]["state_then"], cut["since"]["state_changed"]) == (
            "too early",
            True,
        )

    @pytest.mark.parametrize("name", RUNS)
    def test_each_part_is_check_json_s_cut_at_n(self, name: str) -> None:
        """At each quarter of the run: the scenarios, history and notes are check --json's
        own items, those after N; status, state and run facts are the same."""
        whole, _ = _documents(name, 0)
        first, last = whole["run"]["steps"]["first"], whole["run"]["steps"]["last"]
        for quarter in range(5):
            step = first + (last - first) * quarter / 4
            _, cut = _documents(name, step)
            assert cut["scenarios"] == [
                s for s in whole["scenarios"] if _after(s["onset_step"], step)
            ]
            assert cut["history"] == [
                h
                for h in whole["history"]
                if _after(h["from_step"], step) or _after(h["to_step"], step)
            ]
            assert cut["notes"] == [n for n in whole["notes"] if _after(n["step"], step)]
            for key in ("schema", "path", "status", "state", "run"):
                assert cut[key] == whole[key]
            assert cut["since"]["state_now"] == whole["state"]["word"]
            assert cut["since"]["nothing_new"] is (step >= last)

    @pytest.mark.parametrize("name", RUNS)
    def test_before_the_first_step_everything_is_new(self, name: str) -> None:
        whole, cut = _documents(name, -1)
        assert cut["history"] == whole["history"]
        assert cut["scenarios"] == [s for s in whole["scenarios"] if s["onset_step"] is not None]
        assert cut["since"]["state_then"] == "too early"

    @pytest.mark.parametrize("name", RUNS)
    def test_at_the_last_step_nothing_is_new(self, name: str) -> None:
        whole, _ = _documents(name, 0)
        _, cut = _documents(name, whole["run"]["steps"]["last"])
        assert (cut["scenarios"], cut["history"], cut["notes"]) == ([], [], [])
        assert (cut["since"]["nothing_new"], cut["since"]["new_steps"]) == (True, 0)
        assert cut["since"]["state_changed"] is False


class TestCommand:
    """The command line: text, JSON, exit codes."""

    def test_the_document_is_the_command_s(self, capsys: pytest.CaptureFixture[str]) -> None:
        """check_document (the MCP server's) gives what the command prints, and its code."""
        code = main(["check", str(COLLAPSE), "--since", "100", "--json"])
        printed = json.loads(capsys.readouterr().out)
        document, exit_code = check_document(COLLAPSE, Rules(), since=100)
        for ages in (printed["run"], document["run"]):
            ages.pop("data_age_s")
            ages.pop("log_age_s")
        assert (document, exit_code) == (printed, code)

    def test_the_exit_code_is_check_s(self) -> None:
        plain = check_command(COLLAPSE, as_json=True, rules_file=None, out=io.StringIO())
        since = check_command(
            COLLAPSE, as_json=False, rules_file=None, out=io.StringIO(), since=100
        )
        assert since == plain == 2

    def test_the_text_is_short_and_fits_80_columns(self) -> None:
        out = io.StringIO()
        check_command(
            COLLAPSE, as_json=False, rules_file=None, width=80, now=FIXED_NOW, out=out, since=100
        )
        lines = out.getvalue().splitlines()
        assert max(len(line) for line in lines) <= 80
        assert "20 logged steps after step 100, up to step 200." in lines
        assert "State: unstable, as at step 100" in lines
        assert "Began after step 100" in lines
        assert not any("Checklist" in line for line in lines)
        text = out.getvalue()
        assert "truncation (caution) 145 → 190" in text
        assert "truncation (problem) 190 → now" in text

    def test_a_changed_state_is_said(self) -> None:
        out = io.StringIO()
        check_command(COLLAPSE, as_json=False, rules_file=None, width=80, out=out, since=30)
        assert "State: too early at step 30 → unstable now" in out.getvalue().splitlines()

    def test_json_from_the_command_line(self, capsys: pytest.CaptureFixture[str]) -> None:
        code = main(["check", str(COLLAPSE), "--since", "100", "--json"])
        document = json.loads(capsys.readouterr().out)
        assert code == 2
        assert document["since"]["step"] == 100
        assert "checklist" not in document

    def test_since_takes_one_run(self, capsys: pytest.CaptureFixture[str]) -> None:
        other = CORPUS / RUNS[1]
        assert main(["check", str(COLLAPSE), str(other), "--since", "10"]) == EXIT_USAGE
        assert "--since takes one run" in capsys.readouterr().err

    def test_a_step_that_is_no_number_is_a_usage_error(self) -> None:
        with pytest.raises(SystemExit) as stopped:
            main(["check", str(COLLAPSE), "--since", "nan"])
        assert stopped.value.code == EXIT_USAGE


class TestHostileText:
    """A run whose names, values and files are hostile: `--since` prints nothing that acts."""

    def test_text_and_json_are_inert(self, tmp_path: Path) -> None:
        path = hostile_run(tmp_path)
        for as_json in (False, True):
            out = io.StringIO()
            check_command(path, as_json=as_json, rules_file=None, out=out, since=0)
            assert leaks(out.getvalue()) == []
        assert json.loads(out.getvalue())["since"]["step"] == 0
