"""`grpo-tui check A B --compare` (grpo_tui/commands/compare.py): text and JSON quote the
one Difference core made, each run against the first, on real corpus runs."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from helpers import CORPUS

from grpo_tui.cli import main
from grpo_tui.commands.compare import COMPARE_JSON_SCHEMA, compare_command, compare_document
from grpo_tui.commands.output import EXIT_CAUTION, EXIT_PROBLEM, EXIT_UNREADABLE, EXIT_USAGE
from grpo_tui.health.difference import compare_rewards
from grpo_tui.health.rules import Rules
from grpo_tui.health.series import snapshot
from grpo_tui.run.follow import load_run
from grpo_tui.sources.runs import RunRef

VANILLA = str(CORPUS / "trl-qwen7b-gsm8k-vanilla")
SEED_43 = str(CORPUS / "trl-qwen7b-gsm8k-vanilla-s43")
BLOW_UP = str(CORPUS / "trl-qwen7b-gsm8k-rho030-s42-blowup-entropy0")


@pytest.fixture(scope="module")
def three() -> dict[str, object]:
    """The vanilla run against its other seed and against a setting that blew up."""
    return compare_document([VANILLA, SEED_43, BLOW_UP], Rules())


class TestDocument:
    """compare_document: the JSON-ready object the MCP tool returns."""

    def test_each_run_against_the_first(self, three: dict[str, object]) -> None:
        doc = json.loads(json.dumps(three))  # JSON-ready: plain data throughout
        assert doc["schema"] == COMPARE_JSON_SCHEMA
        assert doc["baseline"] == "trl-qwen7b-gsm8k-vanilla"
        assert [r["name"] for r in doc["runs"]] == [
            Path(p).name for p in (VANILLA, SEED_43, BLOW_UP)
        ]
        assert [r["exit_code"] for r in doc["runs"]] == [EXIT_CAUTION, EXIT_CAUTION, EXIT_PROBLEM]
        assert [(c["run"], c["against"]) for c in doc["comparisons"]] == [
            ("trl-qwen7b-gsm8k-vanilla-s43", "trl-qwen7b-gsm8k-vanilla"),
            ("trl-qwen7b-gsm8k-rho030-s42-blowup-entropy0", "trl-qwen7b-gsm8k-vanilla"),
        ]
        seed, blow_up = (c["readings"][0] for c in doc["comparisons"])
        assert seed["decided"] and not seed["beyond_noise"] and seed["more_steps"] > 0
        assert blow_up["beyond_noise"] and blow_up["high"] < 0 and blow_up["more_steps"] is None
        assert blow_up["a"]["key"] == blow_up["b"]["key"] == "reward"
        assert blow_up["first_step"] == 5 and blow_up["last_step"] == 200
        assert 0.97 < blow_up["confidence"] < 0.99

    def test_the_text_is_the_one_core_made(self, three: dict[str, object]) -> None:
        """One story: the sentence in the JSON is the Difference's own, made once."""
        a, b = (snapshot(load_run(Path(p))) for p in (VANILLA, SEED_43))
        names = ("trl-qwen7b-gsm8k-vanilla", "trl-qwen7b-gsm8k-vanilla-s43")
        (reading,) = compare_rewards(a, b, names, Rules())
        comparisons = three["comparisons"]
        assert isinstance(comparisons, list)
        assert comparisons[0]["readings"][0]["text"] == reading.describe()

    def test_settings_that_differ_are_beside_it(self, three: dict[str, object]) -> None:
        """The blown-up run is a console log alone: its files say no max_steps."""
        settings = {s["name"]: s["values"] for s in three["settings"]}  # type: ignore[attr-defined]
        assert settings["max_steps"] == ["200", "200", "—"]


class TestCommand:
    """The command line: text, --json, the exit code, bad input."""

    def test_text_names_the_difference_and_the_runs(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code = main(["check", VANILLA, SEED_43, "--compare"])
        out = capsys.readouterr().out
        assert code == EXIT_CAUTION  # the worst run's, as check on several runs
        flat = " ".join(out.split())
        assert flat.startswith(
            "2 runs compared, each against the first 1 ! trl-qwen7b-gsm8k-vanilla"
        )
        assert (
            "• task reward: trl-qwen7b-gsm8k-vanilla-s43 below trl-qwen7b-gsm8k-vanilla by "
            "0.1 ± 1.0 over steps 5–200: not beyond noise; about" in flat
        )
        assert "settings: none differ" in flat

    def test_verbose_says_how_it_was_read(self) -> None:
        out = io.StringIO()
        refs = [RunRef(Path(VANILLA)), RunRef(Path(BLOW_UP))]
        code = compare_command(
            refs, as_json=False, rules_file=None, out=out, width=200, verbose=True
        )
        assert code == EXIT_PROBLEM
        text = " ".join(out.getvalue().split())
        assert "beyond noise (about 40 steps at this noise tell it)" in text
        assert "a 98 % interval: Student's t" in text and "lag-1 autocorrelation" in text

    def test_json_on_the_command_line(self, capsys: pytest.CaptureFixture[str]) -> None:
        main(["check", VANILLA, BLOW_UP, "--compare", "--json"])
        doc = json.loads(capsys.readouterr().out)
        assert doc["comparisons"][0]["readings"][0]["beyond_noise"] is True

    def test_one_run_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["check", VANILLA, "--compare"]) == EXIT_USAGE
        assert "--compare takes two or more runs" in capsys.readouterr().err

    def test_a_path_that_cannot_be_read(self, tmp_path: Path) -> None:
        """Said, with the run that can be read still shown; check's exit code for it."""
        out = io.StringIO()
        refs = [RunRef(tmp_path / "missing"), RunRef(Path(VANILLA))]
        code = compare_command(refs, as_json=False, rules_file=None, out=out, width=200)
        assert code == EXIT_UNREADABLE
        text = " ".join(out.getvalue().split())
        assert "which does not exist yet" in text
        assert (
            "task reward: missing logs no reward to set beside trl-qwen7b-gsm8k-vanilla's" in text
        )

    def test_hostile_run_names_stay_inert(self, tmp_path: Path) -> None:
        """A folder named with an escape sequence: escaped in text and in JSON."""
        hostile = tmp_path / "run\x1b]0;owned\x07"
        shutil.copytree(VANILLA, hostile)
        for as_json in (False, True):
            out = io.StringIO()
            refs = [RunRef(Path(SEED_43)), RunRef(hostile)]
            compare_command(refs, as_json=as_json, rules_file=None, out=out, width=200)
            assert "\x1b" not in out.getvalue() and "\x07" not in out.getvalue()
        assert "owned" in out.getvalue()
