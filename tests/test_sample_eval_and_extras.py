"""Completions core for issue 23: eval batches told from the metrics log's eval lines and
kept out of the per-step summary, the role prefix folded for display, and TRL's extra
logged columns carried to each completion. Real runs where the fixtures have them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from helpers import FIXTURE_LOG, RUN_DIR_NAME, groups_of, make_run

from grpo_tui.run.completions import CompletionsIndex
from grpo_tui.run.follow import load_run
from grpo_tui.run.text_stats import measured_text, role_prefix_end
from grpo_tui.sources.completion_batches import FolderBatches, JsonlBatches
from grpo_tui.sources.formats import trl_completions
from grpo_tui.sources.formats.msswift_completions import EXTRA_VALUE_CHARS, parse_record
from grpo_tui.sources.formats.trl import TRL_COMPLETIONS
from grpo_tui.ui.completions_cursor import CompletionsCursor, arrivals
from grpo_tui.vocabulary import LineKind

MS_SWIFT = Path(__file__).parent / "fixtures" / "ms-swift"
TRL = Path(__file__).parent / "fixtures" / "trl"
SWIFT_COMPLETIONS = MS_SWIFT / "local-run-msswift-4.6.0_grpo-3rewards-eval_completions.jsonl"
TRL_STATE = TRL / "local-run-trl1.16.0-tf5.20.0_trainer_state.json"
TRL_STEP3 = TRL / "local-run-trl1.16.0-tf5.20.0_completions_00003.parquet"
TRL_STEP1 = TRL / "local-run-trl0.29.1-tf4.57.1_completions_00001.parquet"


def _kinds(index: CompletionsIndex) -> list[tuple[str, str]]:
    return [(index.line_info(i).step, index.line_info(i).kind) for i in range(len(index))]


def _swift_run(tmp_path: Path) -> Path:
    output = make_run(tmp_path, FIXTURE_LOG.read_text(encoding="utf-8").splitlines(True))
    shutil.copy(SWIFT_COMPLETIONS, output / RUN_DIR_NAME / "completions.jsonl")
    return output


def _trl_run(tmp_path: Path, *files: tuple[Path, int]) -> Path:
    output = tmp_path / "trl-out"
    (output / "completions").mkdir(parents=True)
    shutil.copy(TRL_STATE, output / "trainer_state.json")
    for fixture, step in files:
        shutil.copy(fixture, output / "completions" / f"completions_{step:05d}.parquet")
    return output


class TestEvalBatchesFromTheMetricsLog:
    """A batch at a step whose metrics log has an eval line holds eval rollouts."""

    def test_real_msswift_run_labels_both_evals(self, tmp_path: Path) -> None:
        """ms-swift 4.6.0 evaluated at 3 (no train line there) and at 6 (after its train
        line): both eval batches are labelled eval, the summary has train steps only."""
        run = load_run(_swift_run(tmp_path))
        index = run.completions
        assert index is not None
        assert _kinds(index) == [
            ("1", "new"),
            ("2", "new"),
            ("3", "eval"),
            ("4", "new"),
            ("6", "new"),
            ("6", "eval"),
            ("6", "repeat"),
        ]
        assert run.samples is not None
        assert [s.step for s in run.samples.steps] == [1.0, 2.0, 4.0, 6.0]

    def test_without_the_metrics_log_step_3_cannot_be_told(self) -> None:
        """The completions file alone never says eval (no mode field): the first batch at
        step 3 counts as train, the later one at 6 is `eval_or_end`."""
        index = CompletionsIndex(SWIFT_COMPLETIONS)
        index.poll()
        assert [k for _, k in _kinds(index)][2] == "new"
        assert _kinds(index)[5] == ("6", "eval_or_end")
        assert 3.0 in [s.step for s in index.summary().steps]

    def test_an_eval_line_read_later_takes_the_step_out_of_the_summary(self) -> None:
        """Lines noted after the batches were summed: the step leaves the summary and the
        summary's revision changes (what was placed is placed again)."""
        index = CompletionsIndex(SWIFT_COMPLETIONS)
        index.poll()
        before = index.summary()
        kinds = np.array([LineKind.TRAIN, LineKind.EVAL, LineKind.TRAIN, LineKind.EVAL])
        assert index.note_log_lines(kinds, np.array([2.0, 3.0, 6.0, 6.0]))
        after = index.summary()
        assert after.revision != before.revision
        assert [s.step for s in after.steps] == [1.0, 2.0, 4.0, 6.0]
        assert _kinds(index)[2] == ("3", "eval") and _kinds(index)[5] == ("6", "eval")
        # step 6 keeps its train batch's statistics, not the eval's
        six = next(s for s in after.steps if s.step == 6.0)
        assert six.groups == index.line_info(4).groups
        # noting the same lines again changes nothing
        assert not index.note_log_lines(kinds, np.array([2.0, 3.0, 6.0, 6.0]))

    def test_a_train_step_of_an_appending_source_stays_train(self) -> None:
        """ms-swift appends: the one batch at a step with train and eval lines is the train
        one (the eval's is still to come)."""
        index = CompletionsIndex(SWIFT_COMPLETIONS, source=JsonlBatches(SWIFT_COMPLETIONS))
        index.note_log_lines(np.array([LineKind.TRAIN, LineKind.EVAL]), np.array([4.0, 4.0]))
        index.poll()
        assert _kinds(index)[3] == ("4", "new")
        assert 4.0 in [s.step for s in index.summary().steps]

    def test_real_trl_file_rewritten_by_the_eval(self, tmp_path: Path) -> None:
        """TRL 1.16 evaluated at step 3, which rewrote completions_00003.parquet: at rest it
        holds the eval's rollouts, so the run's summary has no step 3 (before: its
        statistics went into the train row of step 3)."""
        run = load_run(_trl_run(tmp_path, (TRL_STEP3, 3), (TRL_STEP1, 1)))
        index = run.completions
        assert index is not None
        assert sorted(_kinds(index)) == [("1", "new"), ("3", "eval")]
        assert run.samples is not None
        assert [s.step for s in run.samples.steps] == [1.0]

    def test_trl_train_version_seen_before_the_rewrite_stays_train(self, tmp_path: Path) -> None:
        """Live: the train version of step 3, then the eval's rewrite (a batch of its own):
        the first stays train, the rewrite is eval."""
        folder = tmp_path / "completions"
        folder.mkdir()
        target = folder / "completions_00003.parquet"
        table = pq.read_table(TRL_STEP3)
        pq.write_table(table, target)
        index = CompletionsIndex(folder, source=FolderBatches(folder, TRL_COMPLETIONS))
        index.poll()
        rewritten = table.set_column(
            table.column_names.index("advantage"),
            "advantage",
            pa.array([0.1, -0.1, 0.2, -0.2], pa.float64()),
        )
        pq.write_table(rewritten, target)
        stat = target.stat()
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        index.poll()
        index.note_log_lines(np.array([LineKind.TRAIN, LineKind.EVAL]), np.array([3.0, 3.0]))
        assert _kinds(index) == [("3", "new"), ("3", "eval")]
        assert [s.step for s in index.summary().steps] == [3.0]


class TestRolePrefixFolded:
    """The table shows what the model wrote, without the role prefix that opens it."""

    def test_prefixes(self) -> None:
        assert role_prefix_end("assistant: 42") == len("assistant: ")
        assert role_prefix_end("<|im_start|>assistant\nHello") == len("<|im_start|>assistant\n")
        assert role_prefix_end("Hello assistant: no") == 0
        assert role_prefix_end("") == 0

    def test_one_knowledge_with_the_statistics(self) -> None:
        """What the table shows starts where the measured text starts."""
        for text in ("assistant: x y", "<|im_start|>assistant\n  body<|im_end|>", "plain"):
            shown = text[role_prefix_end(text) :]
            assert shown.startswith(measured_text(text)[:3])

    def test_real_trl_messages(self, tmp_path: Path) -> None:
        """TRL 1.16 logs messages, rendered `assistant: …`: the sample shows without it."""
        run = load_run(_trl_run(tmp_path, (TRL_STEP3, 3)))
        assert run.completions is not None
        (group,) = groups_of(run.completions, 0)
        for sample in group.completions:
            assert sample.text.startswith("assistant: ")
            assert not sample.shown_text.startswith("assistant")
            assert sample.text.endswith(sample.shown_text)


def _trl_with_extras(path: Path) -> None:
    """A TRL ≥ 0.28 file with `log_extra` columns after the rewards (an extracted answer,
    the gold one, a number), as trl/trainer/grpo_trainer.py writes them before the advantage.
    No fixture run logged extras; the frame is the real step-1 file's columns."""
    real = pq.read_table(TRL_STEP1)
    columns = {name: real.column(name) for name in real.column_names if name != "advantage"}
    columns["extracted"] = pa.array(["13", None, "\x1b[2J12", "x" * (EXTRA_VALUE_CHARS + 50)])
    columns["gold"] = pa.array(["13"] * 4)
    columns["tool_calls"] = pa.array([0.0, 1.0, 2.0, 3.0], pa.float64())
    columns["advantage"] = real.column("advantage")
    pq.write_table(pa.table(columns), path)


class TestExtraColumns:
    """TRL's `log_extra` columns reach each completion as text, never as rewards."""

    def test_trl_extras_are_not_rewards(self, tmp_path: Path) -> None:
        path = tmp_path / "completions_00001.parquet"
        _trl_with_extras(path)
        converted = trl_completions.convert(path)
        assert converted is not None
        assert converted.extra_keys == ("extracted", "gold", "tool_calls")
        rows = parse_record(dict(converted.columns), extra_keys=converted.extra_keys)
        assert list(rows.rewards) == ["format_reward", "noisy_length_reward"]
        assert rows.extras is not None
        assert rows.extras["gold"] == ["13"] * 4
        assert rows.extras["tool_calls"] == ["0.0", "1.0", "2.0", "3.0"]
        assert rows.extras["extracted"][1] == ""  # none logged for that row
        assert len(rows.extras["extracted"][3]) == EXTRA_VALUE_CHARS

    def test_samples_carry_them(self, tmp_path: Path) -> None:
        folder = tmp_path / "completions"
        folder.mkdir()
        _trl_with_extras(folder / "completions_00001.parquet")
        index = CompletionsIndex(folder, source=FolderBatches(folder, TRL_COMPLETIONS))
        index.poll()
        (group,) = groups_of(index, 0)
        first, second = group.completions[:2]
        assert first.extras == (("extracted", "13"), ("gold", "13"), ("tool_calls", "0.0"))
        assert ("extracted", "") not in second.extras  # an empty value is left out

    def test_a_plugin_text_column_of_a_jsonl_line(self) -> None:
        """ms-swift writes whatever columns a plugin gathered: a text one is an extra."""
        line = json.loads(SWIFT_COMPLETIONS.read_text(encoding="utf-8").splitlines()[0])
        line["pred"] = [f"answer {i}" for i in range(len(line["completion"]))]
        rows = parse_record(line)
        assert rows.extras == {"pred": [f"answer {i}" for i in range(len(line["completion"]))]}
        assert "pred" not in rows.rewards
        # the real line as logged has none (its solution is shown as the solution)
        assert (
            parse_record(json.loads(SWIFT_COMPLETIONS.read_text().splitlines()[0])).extras is None
        )


class TestCountsInGroups:
    """What arrived while held is said in groups, the unit on screen."""

    def test_words(self) -> None:
        assert arrivals(12, 3) == "12 new groups in 3 steps"
        assert arrivals(1, 1) == "1 new group in 1 step"
        assert arrivals(0, 2) == "2 steps new"

    def test_cursor_counts_groups_only_while_held(self) -> None:
        cursor = CompletionsCursor()
        cursor.groups_arrived(4)
        assert cursor.new_groups == 0  # following: nothing to count
        cursor.hold()
        cursor.groups_arrived(4)
        cursor.groups_arrived(2)
        assert cursor.new_groups == 6
        cursor.follow()
        assert cursor.new_groups == 0

    def test_index_state_counts_the_groups_worth_showing(self) -> None:
        """The real file: 11 groups in the 6 entries worth showing (its repeat left out)."""
        index = CompletionsIndex(SWIFT_COMPLETIONS)
        index.poll()
        state = index.state()
        shown = [index.line_info(i) for i in range(len(index))]
        expected = sum(info.groups or 0 for info in shown if info.kind != "repeat")
        assert state.shown_groups == expected == 11
