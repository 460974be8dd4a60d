"""`grpo-tui samples`: the completions pane's groups with no screen (views/sample_groups.py,
commands/samples.py), on real runs: the ms-swift 4.6.0 runs and the TRL 1.16.0 parquet file
of tests/fixtures, the simulator's runs where groups tie or are cut off, and a corpus run
that logs no completions."""

from __future__ import annotations

import io
import json
import math
import shutil
from pathlib import Path

import pytest
from helpers import (
    CORPUS,
    HOSTILE,
    THREE_REWARDS,
    THREE_REWARDS_ARGS,
    TRL,
    SshServer,
    hostile_run,
    leaks,
    msswift_run_dir,
    simulated_run,
)

from grpo_tui.cli import main
from grpo_tui.commands.headless import read_run
from grpo_tui.commands.output import EXIT_NOTHING, EXIT_UNREADABLE, EXIT_USAGE
from grpo_tui.commands.samples import samples_command, samples_document
from grpo_tui.run.completions.entries import step_key
from grpo_tui.run.live import Run
from grpo_tui.sources.remote import run_path
from grpo_tui.ui.completions_cursor import ranked_group
from grpo_tui.views.sample_groups import (
    DEFAULT_LIMIT,
    SampleQuery,
    select_groups,
)

NUMITER2 = "local-run-msswift-4.6.0_grpo-numiter2-dapo-beta0"
TRL_RUN = "local-run-trl1.16.0-tf5.20.0"
#: a corpus run whose trainer logged no completions
NO_COMPLETIONS = CORPUS / "trl-qwen7b-gsm8k-lr1e-4-collapse"


@pytest.fixture
def three_rewards(tmp_path: Path) -> Path:
    return msswift_run_dir(tmp_path, THREE_REWARDS, THREE_REWARDS_ARGS, completions=True)


@pytest.fixture
def three_rewards_run(three_rewards: Path) -> Run:
    return read_run(three_rewards)


def _pages(run: Run) -> list[tuple[int, str, list[float]]]:
    """Every batch the pane visits (no repeats): its entry, role and its groups' steps."""
    index = run.completions
    assert index is not None
    found: list[tuple[int, str, list[float]]] = []
    for entry in range(len(index)):
        page = index.page(entry)
        assert page is not None
        if page.info.kind != "repeat":
            steps = [step_key(group.step)[0] for group in page.groups]
            found.append((entry, page.info.kind, steps))
    return found


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


class TestWhichSteps:
    """--step, --since and the default (the newest step) pick the pane's batches."""

    def test_the_default_is_the_newest_step_train_and_eval(self, three_rewards_run: Run) -> None:
        """Step 6's train batch and its eval batch; the end-of-train repeat is skipped."""
        answer = select_groups(three_rewards_run, SampleQuery(groups="all"))
        assert answer.steps == ["6"]
        assert {(p.entry, p.role) for p in answer.groups} == {(4, "train"), (5, "eval")}
        assert answer.matched == len(answer.groups) == 4
        assert answer.logged == ("1", "6")

    def test_one_step(self, three_rewards_run: Run) -> None:
        """--step 2: the groups of step 2, and only them."""
        answer = select_groups(three_rewards_run, SampleQuery(step=2, groups="all", limit=0))
        assert answer.steps == ["2"]
        assert {p.group.step for p in answer.groups} == {"2"}
        assert answer.matched == 2

    def test_every_step_after_one(self, three_rewards_run: Run) -> None:
        """--since 3: every group of a visited batch after step 3, none at or before it."""
        answer = select_groups(three_rewards_run, SampleQuery(since=3, groups="all", limit=0))
        expected = sum(1 for _, _, steps in _pages(three_rewards_run) for step in steps if step > 3)
        assert answer.matched == len(answer.groups) == expected == 6
        assert all(step_key(p.group.step)[0] > 3 for p in answer.groups)
        assert answer.steps == ["6", "4"]

    def test_since_before_the_first_step_is_every_group(self, three_rewards_run: Run) -> None:
        """Every visited batch's groups, newest batch first."""
        answer = select_groups(three_rewards_run, SampleQuery(since=-1, groups="all", limit=0))
        pages = _pages(three_rewards_run)
        assert answer.matched == sum(len(steps) for _, _, steps in pages)
        entries = [p.entry for p in answer.groups]
        assert entries == sorted(entries, reverse=True)

    def test_a_step_not_logged_is_said(self, three_rewards_run: Run) -> None:
        """Step 5 had no completions: the answer names the steps that did."""
        answer = select_groups(three_rewards_run, SampleQuery(step=5))
        assert answer.groups == []
        assert answer.problem == "no completions at step 5 (logged: steps 1–6)"

    def test_num_iterations_repeats_are_skipped(self, tmp_path: Path) -> None:
        """num_iterations 2 logs each batch twice: each group is handed out once."""
        path = msswift_run_dir(tmp_path, NUMITER2, THREE_REWARDS_ARGS, completions=True)
        run = read_run(path)
        answer = select_groups(run, SampleQuery(since=-1, groups="all", limit=0))
        prompts = [(p.group.step, p.group.prompt) for p in answer.groups]
        assert len(prompts) == len(set(prompts)) == answer.matched


class TestWhichGroups:
    """worst, tied, truncated, all; --limit."""

    def test_worst_is_lowest_mean_first(self, three_rewards_run: Run) -> None:
        """Means rise down the list, ties by the smaller spread."""
        answer = select_groups(three_rewards_run, SampleQuery(since=-1, limit=0))
        keys = [(p.group.mean_total, p.group.spread) for p in answer.groups]
        assert keys == sorted(keys)
        assert answer.groups[0].group.mean_total == pytest.approx(0.85)

    def test_worst_of_one_batch_is_the_pane_s_w(self, three_rewards_run: Run) -> None:
        """In each batch alone, the first `worst` group is the one the pane's `w` jumps to."""
        index = three_rewards_run.completions
        assert index is not None
        for entry, _, steps in _pages(three_rewards_run):
            page = index.page(entry)
            assert page is not None
            answer = select_groups(three_rewards_run, SampleQuery(step=steps[0], limit=0))
            in_batch = [p for p in answer.groups if p.entry == entry]
            visible = list(range(len(page.groups)))
            assert in_batch[0].position == ranked_group(page.groups, visible, best=False)

    def test_limit_keeps_the_first_and_counts_the_rest(self, three_rewards_run: Run) -> None:
        whole = select_groups(three_rewards_run, SampleQuery(since=-1, limit=0))
        first = select_groups(three_rewards_run, SampleQuery(since=-1, limit=3))
        assert (first.matched, len(first.groups)) == (whole.matched, 3)
        where = [(p.entry, p.position) for p in first.groups]
        assert where == [(p.entry, p.position) for p in whole.groups[:3]]
        assert SampleQuery().limit == DEFAULT_LIMIT == 8

    def test_tied_groups_have_no_spread(self) -> None:
        """The simulator's not-learning run: every group tied, each one says so."""
        run = read_run(simulated_run("not_learning", 0, 60))
        answer = select_groups(run, SampleQuery(since=-1, groups="tied", limit=0))
        every = select_groups(run, SampleQuery(since=-1, groups="all", limit=0))
        assert answer.matched == sum(p.group.zero_spread for p in every.groups) > 0
        assert all(p.group.zero_spread for p in answer.groups)
        for picked in answer.groups:
            totals = [t for t in picked.group.totals.tolist() if not math.isnan(t)]
            assert max(totals) - min(totals) == pytest.approx(0.0)

    def test_truncated_groups_hold_a_cut_completion(self) -> None:
        """The simulator's truncation run: each group has a completion cut off, the most
        cut first."""
        run = read_run(simulated_run("truncation", 0, 60))
        answer = select_groups(run, SampleQuery(since=-1, groups="truncated", limit=0))
        assert answer.matched > 0
        shares = [
            sum(bool(s.truncated) for s in p.group.completions) / p.group.size
            for p in answer.groups
        ]
        assert all(share > 0 for share in shares)
        assert shares == sorted(shares, reverse=True)

    def test_no_tied_group_is_an_answer_not_an_error(
        self, three_rewards: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The 3-rewards run never ties: exit 0, the JSON says none matched."""
        code, out, _ = _run(["samples", str(three_rewards), "--groups", "tied", "--json"], capsys)
        document = json.loads(out)
        assert (code, document["matched"], document["groups"], document["problem"]) == (
            0,
            0,
            [],
            None,
        )


class TestJson:
    """What `samples --json` carries for each group."""

    def test_a_group_carries_what_the_pane_shows(self, three_rewards: Path) -> None:
        document, code = samples_document(three_rewards, SampleQuery(step=4, limit=1))
        assert code == 0
        group = document["groups"][0]
        assert (group["step"], group["role"], group["size"]) == (4, "train", 4)
        assert group["reward_functions"] == ["Format", "LengthBonus", "CoinFlip"]
        for sample in group["completions"]:
            # a raw reward per function; the total is their sum (ms-swift logs them raw)
            assert set(sample["rewards"]) == {"Format", "LengthBonus", "CoinFlip"}
            assert sample["total"] == pytest.approx(sum(sample["rewards"].values()))
            assert isinstance(sample["advantage"], float)
            assert set(sample["flags"]) <= {"format_broken", "cut_off", "repeating"}
        totals = [s["total"] for s in group["completions"]]
        assert group["mean_total"] == pytest.approx(sum(totals) / len(totals))

    def test_max_chars_cuts_and_says_the_length(self, three_rewards: Path) -> None:
        document, _ = samples_document(three_rewards, SampleQuery(max_chars=10))
        prompt_run = document["groups"][0]
        assert len(prompt_run["prompt"]) == 10 < prompt_run["prompt_chars"]
        assert prompt_run["prompt_cut"] is True
        whole, _ = samples_document(three_rewards, SampleQuery(max_chars=0))
        sample = whole["groups"][0]["completions"][0]
        assert (len(sample["text"]), sample["text_cut"]) == (sample["text_chars"], False)

    def test_trl_parquet_completions(self, tmp_path: Path) -> None:
        """TRL 1.16.0's own files: trainer_state.json and completions/*.parquet. Step 3's
        file was rewritten by its eval (its .source.txt): the group is eval's."""
        out = tmp_path / "out"
        (out / "completions").mkdir(parents=True)
        shutil.copy(TRL / f"{TRL_RUN}_trainer_state.json", out / "trainer_state.json")
        shutil.copy(
            TRL / f"{TRL_RUN}_completions_00003.parquet",
            out / "completions" / "completions_00003.parquet",
        )
        document, code = samples_document(out, SampleQuery(groups="all"))
        assert code == 0
        assert document["steps"] == ["3"]
        group = document["groups"][0]
        assert (group["role"], group["size"], group["prompt"]) == ("eval", 4, "user: What is 7+7?")
        assert group["reward_functions"] == ["format_reward", "noisy_length_reward"]


class TestNoCompletions:
    """A run with no completions: which file was looked for, exit 3."""

    def test_a_corpus_run_that_logs_none(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, out, err = _run(["samples", str(NO_COMPLETIONS)], capsys)
        assert code == EXIT_NOTHING
        assert "no completions logged: this TRL run has no completions file" in out
        assert "GRPOConfig(log_completions=True)" in out
        assert err == ""

    def test_the_file_looked_for_is_named(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """ms-swift without --log_completions: completions.jsonl beside the log, not there."""
        path = msswift_run_dir(tmp_path, THREE_REWARDS, THREE_REWARDS_ARGS, completions=False)
        code, out, err = _run(["samples", str(path), "--json"], capsys)
        document = json.loads(out)
        expected = path / "v0-20261202-132949" / "completions.jsonl"
        assert code == EXIT_NOTHING
        assert (
            document["problem"] == f"no completions logged yet: looked for {expected} (not there)"
        )
        assert document["completions"]["exists"] is False
        assert document["problem"] in err

    def test_a_path_that_does_not_exist(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        missing = tmp_path / "nowhere"
        code, out, _ = _run(["samples", str(missing)], capsys)
        assert code == EXIT_UNREADABLE
        # the text form wraps at the terminal's width, a long tmp path included
        assert f"{missing} does not exist" in " ".join(out.split())

    def test_step_and_since_together_is_a_usage_error(
        self, three_rewards: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        with pytest.raises(SystemExit) as stopped:
            main(["samples", str(three_rewards), "--step", "2", "--since", "1"])
        assert stopped.value.code == EXIT_USAGE
        assert "not allowed with argument --step" in capsys.readouterr().err


class TestHostileText:
    """Escape sequences in prompts, completions, reward names and step labels stay inert."""

    def test_text_is_inert(self, tmp_path: Path) -> None:
        path = hostile_run(tmp_path)
        out = io.StringIO()
        code = samples_command(
            path, SampleQuery(since=-1, groups="all", limit=0), as_json=False, width=100, out=out
        )
        assert code == 0
        assert leaks(out.getvalue()) == []
        assert "␛]2;HACKED␇" in out.getvalue()

    def test_json_is_inert_and_whole(self, tmp_path: Path) -> None:
        """Every hostile completion comes back whole (the last row's step label is hostile
        too, no number: the newest batch, the default, holds it; --since never does)."""
        path = hostile_run(tmp_path)
        completions: set[str] = set()
        names: set[str] = set()
        for query in (
            SampleQuery(since=-1, groups="all", limit=0, max_chars=0),
            SampleQuery(groups="all", limit=0, max_chars=0),
        ):
            out = io.StringIO()
            assert samples_command(path, query, as_json=True, out=out) == 0
            text = out.getvalue()
            assert leaks(text) == []
            document = json.loads(text)
            completions |= {s["text"] for g in document["groups"] for s in g["completions"]}
            names |= {name for g in document["groups"] for name in g["reward_functions"]}
        for hostile in HOSTILE.values():
            assert f"<think>{hostile}</think><answer>{hostile}</answer>" in completions
        assert set(list(HOSTILE.values())[:4]) <= names


class TestOverSsh:
    """A run on another machine is read as `check` reads it (a real sshd on 127.0.0.1)."""

    def test_remote_samples_are_local_samples(
        self, sshd: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("GRPO_TUI_SSH", sshd.ssh_command)
        output = msswift_run_dir(tmp_path, THREE_REWARDS, THREE_REWARDS_ARGS, completions=True)
        query = SampleQuery(since=-1, groups="all", limit=0, max_chars=0)
        near, near_code = samples_document(output, query)
        there, there_code = samples_document(run_path(f"samples-host:{output}"), query)
        assert there_code == near_code == 0
        assert there["completions"]["file"] == f"samples-host:{near['completions']['file']}"
        for document in (near, there):
            del document["path"], document["name"], document["completions"]["file"]
        assert there == near
