"""A folder of one file per step read as batches (sources/completion_batches.py) through the completions index: TRL ≥ 0.28's parquet files (the real files of two local runs)
and verl's rollout dumps (written here, as verl's `_write_generations` writes them)."""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import groups_of, restarts_of

from grpo_tui.run.completions import CompletionsIndex
from grpo_tui.sources.completion_batches import KEEP_BYTES, FolderBatches
from grpo_tui.sources.formats import trl_completions, verl_rollouts
from grpo_tui.sources.formats.layout import BatchFolder

TRL_FIXTURES = Path(__file__).parent / "fixtures" / "trl"
#: (fixture, its step, whether prompt/completion are chat messages)
TRL_FILES = [
    ("local-run-trl1.16.0-tf5.20.0_completions_00003.parquet", 3, True),
    ("local-run-trl0.29.1-tf4.57.1_completions_00001.parquet", 1, False),
]
REWARD_FNS = ("format_reward", "noisy_length_reward")
#: a fixed clock for the files written here (each write gets its own mtime)
_T0 = 1_700_000_000 * 10**9


def _dump_rows(fixture: str) -> list[dict[str, Any]]:
    """The rows of a fixture's `-dump.txt` (pyarrow's schema, the row count, a JSON row a line)."""
    text = (TRL_FIXTURES / f"{fixture}-dump.txt").read_text(encoding="utf-8")
    lines = text.split("\nrows: ", 1)[1].splitlines()
    rows = [json.loads(line) for line in lines[1:] if line.strip()]
    assert len(rows) == int(lines[0])
    return rows


def _rendered(value: object) -> str:
    """How the index shows a prompt or completion: a string as it is, messages as role: content."""
    if isinstance(value, str):
        return value
    assert isinstance(value, list)
    return "\n".join(f"{message['role']}: {message['content']}" for message in value)


def _stamp(path: Path, tick: int) -> None:
    """Give a written file its own modification time (a rewrite within one clock tick of
    the filesystem would otherwise keep its times)."""
    os.utime(path, ns=(_T0 + tick * 10**9, _T0 + tick * 10**9))


def _trl_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "output" / trl_completions.COMPLETIONS_DIR
    folder.mkdir(parents=True)
    return folder


def _trl_index(
    folder: Path, keep_bytes: int = KEEP_BYTES
) -> tuple[CompletionsIndex, FolderBatches]:
    """The index over a TRL completions folder (one parsed batch cached: pages are re-read)."""
    kind = BatchFolder(trl_completions.FILE_PATTERN, trl_completions.convert)
    source = FolderBatches(folder, kind, keep_bytes=keep_bytes)
    return CompletionsIndex(folder, source=source, cache_lines=1), source


def _write_trl(path: Path, step: int, prompts: list[str], gens: int, tick: int) -> list[str]:
    """A TRL 0.28-style file (string prompts): `gens` completions per prompt, two reward
    functions, then two log_extra columns (text, int) and the advantage. Returns the texts."""
    rows = [(prompt, g) for prompt in prompts for g in range(gens)]
    texts = [f"step {step} answer {g} to {prompt}" for prompt, g in rows]
    table = pa.table(
        {
            "step": pa.array([step] * len(rows), pa.int64()),
            "prompt": pa.array([prompt for prompt, _ in rows], pa.large_string()),
            "completion": pa.array(texts, pa.large_string()),
            "format_reward": pa.array([float(g % 2) for _, g in rows], pa.float64()),
            "noisy_length_reward": pa.array([0.5] * len(rows), pa.float64()),
            "pred": pa.array([str(g) for _, g in rows]),
            "num_tool_calls": pa.array([g for _, g in rows], pa.int64()),
            "advantage": pa.array([g - (gens - 1) / 2 for _, g in rows], pa.float64()),
        }
    )
    pq.write_table(table, path)
    _stamp(path, tick)
    return texts


# --------------------------------------------------------------------------- TRL, real files


@pytest.mark.parametrize(("fixture", "step", "messages"), TRL_FILES)
def test_real_trl_parquet_file_read_through_the_index(
    tmp_path: Path, fixture: str, step: int, messages: bool
) -> None:
    folder = _trl_dir(tmp_path)
    shutil.copyfile(TRL_FIXTURES / fixture, folder / f"completions_{step:05d}.parquet")
    index, source = _trl_index(folder)
    assert index.poll() == 1
    assert (index.state().lines, index.state().bad_line_count, len(index)) == (1, 0, 1)
    info = index.line_info(0)
    assert (info.step, info.rows, info.kind, info.groups) == (str(step), 4, "new", 1)
    assert info.shape == ("prompt_messages" if messages else "columns")
    assert tuple(groups_of(index, -1)[0].rewards) == REWARD_FNS

    rows = _dump_rows(fixture)
    (group,) = groups_of(index, 0)
    assert group.size == 4 and group.step == str(step)
    assert group.prompt == _rendered(rows[0]["prompt"])
    assert [sample.text for sample in group.completions] == [
        _rendered(r["completion"]) for r in rows
    ]
    if messages:
        assert group.completions[0].text.startswith("assistant: ")
    for sample, row in zip(group.completions, rows):
        assert sample.rewards == {name: row[name] for name in REWARD_FNS}
        assert sample.advantage == pytest.approx(row["advantage"])
        # TRL logs no total: the index sums the (unweighted) reward functions
        assert sample.total == pytest.approx(sum(row[name] for name in REWARD_FNS))
    totals = [sum(float(r[name]) for name in REWARD_FNS) for r in rows]
    assert group.spread == pytest.approx(float(np.std(totals)))
    assert not group.zero_spread

    summary = index.summary()
    assert summary.lines == 1
    (stats,) = summary.steps
    assert (stats.step, stats.groups, stats.completions) == (float(step), 1, 4)
    assert stats.zero_spread_fraction == 0.0
    assert source.progress[0] == source.progress[1] > 0 and not index.more


def test_both_real_files_in_one_folder_in_step_order(tmp_path: Path) -> None:
    folder = _trl_dir(tmp_path)
    for fixture, step, _ in TRL_FILES:
        shutil.copyfile(TRL_FIXTURES / fixture, folder / f"completions_{step:05d}.parquet")
    index, _ = _trl_index(folder)
    index.poll()
    assert [index.line_info(i).step for i in range(len(index))] == ["1", "3"]
    assert [s.step for s in index.summary().steps] == [1.0, 3.0]


def test_pyarrow_missing_is_a_bad_line_that_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _trl_dir(tmp_path)
    fixture = TRL_FILES[0][0]
    shutil.copyfile(TRL_FIXTURES / fixture, folder / "completions_00003.parquet")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    index, _ = _trl_index(folder)
    assert index.poll() == 1
    assert (index.state().lines, len(index), index.state().bad_line_count) == (0, 0, 1)
    (bad,) = index.bad_lines
    assert bad.reason == f"completions_00003.parquet: {trl_completions.PYARROW_MISSING}"
    assert "pip install 'grpo-tui[parquet]'" in bad.reason
    assert bad.excerpt == bad.reason  # no bytes to quote: the reason is what there is
    assert index.poll() == 0  # not tried again until the file changes


# --------------------------------------------------------------------------- TRL, rewrites


def test_eval_rewrite_of_a_step_is_a_line_of_its_own(tmp_path: Path) -> None:
    folder = _trl_dir(tmp_path)
    path = folder / "completions_00003.parquet"
    fixture = TRL_FILES[0][0]
    shutil.copyfile(TRL_FIXTURES / fixture, path)
    _stamp(path, 1)
    index, _ = _trl_index(folder)
    assert index.poll() == 1
    train_texts = [s.text for s in groups_of(index, 0)[0].completions]

    # TRL's eval log() at step 3 rewrites the file: other completions, equal rewards
    table = pq.read_table(path)
    evals = [[{"role": "assistant", "content": f"eval answer {i}"}] for i in range(4)]
    table = table.set_column(2, "completion", pa.array(evals, table.schema.field(2).type))
    table = table.set_column(4, "noisy_length_reward", pa.array([1.0] * 4, pa.float64()))
    pq.write_table(table, path)
    _stamp(path, 2)
    assert index.poll() == 1
    assert len(index) == 2
    first, second = index.line_info(0), index.line_info(1)
    assert (first.step, first.kind) == ("3", "new")
    assert (second.step, second.kind) == ("3", "eval_or_end")
    assert [s.text for s in groups_of(index, 1)[0].completions] == [
        f"assistant: eval answer {i}" for i in range(4)
    ]
    assert groups_of(index, 1)[0].zero_spread
    # the summary keeps the train rollouts read first; the eval line is left out of it
    (stats,) = index.summary().steps
    assert (stats.step, stats.groups, stats.zero_spread_fraction) == (3.0, 1, 0.0)
    # the train version is gone from disk but still in the window of recent lines
    page = index.page(0)
    assert page is not None
    assert [s.text for s in page.groups[0].completions] == train_texts

    # the same content written again (TRL's end-of-train log()): nothing new
    data = path.read_bytes()
    path.write_bytes(data)
    _stamp(path, 3)
    assert index.poll() == 0 and len(index) == 2
    page = index.page(1)
    assert page is not None and page.groups[0].zero_spread


def test_rewritten_version_is_gone_once_out_of_the_window(tmp_path: Path) -> None:
    folder = _trl_dir(tmp_path)
    path = folder / "completions_00002.parquet"
    _write_trl(path, 2, ["p"], 4, tick=1)
    index, _ = _trl_index(folder, keep_bytes=0)
    index.poll()
    assert index.page(0) is not None  # converted again from the file (nothing kept)
    _write_trl(path, 2, ["p", "q"], 4, tick=2)
    assert index.poll() == 1
    assert index.page(1) is not None and len(groups_of(index, 1)) == 2
    assert index.page(0) is None  # that version cannot be had any more: no page, no crash
    assert groups_of(index, 0) == []


def test_a_batch_read_again_from_its_file_keeps_its_extra_columns(tmp_path: Path) -> None:
    """Out of the window, a batch converted again is the batch first read: log_extra columns
    stay extras shown with each row, never reward functions."""
    folder = _trl_dir(tmp_path)
    _write_trl(folder / "completions_00001.parquet", 1, ["p"], 4, tick=1)
    _write_trl(folder / "completions_00002.parquet", 2, ["q"], 4, tick=2)
    index, _ = _trl_index(folder, keep_bytes=0)
    assert index.poll() == 2
    first = [(s.rewards, s.extras) for g in groups_of(index, 0) for s in g.completions]
    groups_of(index, 1)  # the one cached page is now step 2's: step 1 is read from its file
    again = [(s.rewards, s.extras) for g in groups_of(index, 0) for s in g.completions]
    assert again == first and len(again) == 4
    assert all(set(rewards) == {"format_reward", "noisy_length_reward"} for rewards, _ in again)
    assert dict(again[1][1]) == {"pred": "1", "num_tool_calls": "1"}


def test_a_started_over_folder_restarts_the_stream(tmp_path: Path) -> None:
    folder = _trl_dir(tmp_path)
    for step in (1, 2, 3):
        _write_trl(folder / f"completions_{step:05d}.parquet", step, ["old"], 2, tick=step)
    index, source = _trl_index(folder)
    restarts = restarts_of(source)
    index.poll()
    assert len(index) == 3
    # a new run in the same output_dir writes step 1 again (steps 2, 3 are the old run's)
    new = _write_trl(folder / "completions_00001.parquet", 1, ["new"], 2, tick=10)
    index.poll()
    assert (restarts, source.generation) == (["started over"], 1)
    assert [index.line_info(i).step for i in range(len(index))] == ["1"]
    assert [s.text for s in groups_of(index, 0)[0].completions] == new
    _write_trl(folder / "completions_00002.parquet", 2, ["new"], 2, tick=11)
    index.poll()
    assert [index.line_info(i).step for i in range(len(index))] == ["1", "2"]
    assert [index.line_info(i).kind for i in range(len(index))] == ["new", "new"]
    # every file deleted and a new run's first file written between two polls: the step
    # read newest (2) has gone, step 1 has other content: started over again
    for path in folder.iterdir():
        path.unlink()
    _write_trl(folder / "completions_00001.parquet", 1, ["third"], 2, tick=20)
    index.poll()
    assert (restarts, source.generation) == (["started over"] * 2, 2)
    assert len(index) == 1 and groups_of(index, 0)[0].prompt == "third"
    # every file gone at a poll: emptied; what comes next is a stream of its own
    (folder / "completions_00001.parquet").unlink()
    assert index.poll() == 0
    assert (restarts[2:], source.generation, len(index)) == (["emptied"], 3, 0)
    _write_trl(folder / "completions_00001.parquet", 1, ["fourth"], 2, tick=30)
    assert index.poll() == 1
    assert len(restarts) == 3 and groups_of(index, 0)[0].prompt == "fourth"
    assert source.generation == 3


# --------------------------------------------------------------------------- growing folder


def test_folder_growing_file_by_file_no_loss_no_duplicates(tmp_path: Path) -> None:
    folder = _trl_dir(tmp_path)
    index, source = _trl_index(folder)
    assert index.poll() == 0 and source.exists
    written: dict[int, list[str]] = {}
    tick = 0

    def write(step: int) -> None:
        nonlocal tick
        tick += 1
        prompts = [f"prompt {step}.{k}" for k in range(3)]
        written[step] = _write_trl(
            folder / f"completions_{step:05d}.parquet", step, prompts, 4, tick
        )

    # a half-written file (no footer yet) is left for later, not read, not bad
    path = folder / "completions_00001.parquet"
    write(1)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    _stamp(path, 0)
    assert index.poll() == 0 and index.state().bad_line_count == 0
    path.write_bytes(whole)
    _stamp(path, 1)
    assert index.poll() == 1
    write(2)
    write(3)
    # one file per poll (a budget of one byte): `more` until both are read
    assert index.poll(1) == 1 and index.more
    assert index.poll(1) == 1 and not index.more
    assert index.poll() == 0
    write(5)
    write(4)
    assert index.poll() == 2  # found together: read in step order
    write(7)
    assert index.poll() == 1
    write(6)  # a step below the newest read, turning up late: added at the end
    assert index.poll() == 1
    assert index.poll() == 0

    steps = [index.line_info(i).step for i in range(len(index))]
    assert steps == ["1", "2", "3", "4", "5", "7", "6"]
    assert (index.state().lines, index.state().bad_line_count) == (7, 0)
    assert [index.line_info(i).kind for i in range(7)] == ["new"] * 7
    for i, step in enumerate(steps):
        groups = groups_of(index, i)
        assert [g.size for g in groups] == [4, 4, 4]
        assert [s.text for g in groups for s in g.completions] == written[int(step)]
    # the log_extra columns (text, int) are not reward functions
    assert tuple(groups_of(index, -1)[0].rewards) == ("format_reward", "noisy_length_reward")
    summary = index.summary()
    assert sorted(s.step for s in summary.steps) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert all(s.groups == 3 and s.completions == 12 for s in summary.steps)
    assert source.progress[0] == source.progress[1]


def test_polled_while_another_thread_writes(tmp_path: Path) -> None:
    """Files written (pyarrow, in place) while the index polls: each step read once, whole."""
    folder = _trl_dir(tmp_path)
    index, _ = _trl_index(folder)
    steps = list(range(1, 41))
    done = threading.Event()

    def writer() -> None:
        for step in steps:
            _write_trl(folder / f"completions_{step:05d}.parquet", step, ["a", "b"], 4, step)
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    while not done.is_set():
        index.poll(1 << 10)
    thread.join()
    while index.poll():
        pass
    assert sorted(int(index.line_info(i).step) for i in range(len(index))) == steps
    assert index.state().bad_line_count == 0
    assert all(index.line_info(i).rows == 8 for i in range(len(index)))


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    folder = _trl_dir(tmp_path)
    os.mkfifo(folder / "completions_00001.parquet")  # would block a plain open forever
    (folder / "completions_00002.parquet.tmp").write_bytes(b"x")  # not a step file's name
    (folder / "completions_00003.parquet").mkdir()
    _write_trl(folder / "completions_00004.parquet", 4, ["p"], 2, tick=1)
    index, _ = _trl_index(folder)
    assert index.poll() == 1
    assert [index.line_info(i).step for i in range(len(index))] == ["4"]
    assert sorted(p.name for p in folder.iterdir()) == [
        "completions_00001.parquet",
        "completions_00002.parquet.tmp",
        "completions_00003.parquet",
        "completions_00004.parquet",
    ]


def test_missing_folder_is_waited_for(tmp_path: Path) -> None:
    folder = tmp_path / "output" / trl_completions.COMPLETIONS_DIR
    index, source = _trl_index(folder)
    assert index.poll() == 0 and not source.exists and source.problem is None
    assert not folder.exists()  # nothing is ever created
    folder.mkdir(parents=True)
    _write_trl(folder / "completions_00001.parquet", 1, ["p"], 2, tick=1)
    assert index.poll() == 1 and index.state().file_exists


# --------------------------------------------------------------------------- verl


def _verl_rows(step: int) -> list[dict[str, object]]:
    """4 prompts × 4 responses: two groups whose scores all agree (all right, all wrong),
    two mixed; shuffled as sequence balancing leaves them."""
    scores = {
        "What is 2+2?": [1.0, 1.0, 1.0, 1.0],
        "What is 3*3?": [0.0, 0.0, 0.0, 0.0],
        "What is 7-5?": [1.0, 0.0, 1.0, 0.0],
        "What is 9/3?": [1.0, 0.0, 0.0, 0.0],
    }
    rows: list[dict[str, object]] = []
    for prompt, group in scores.items():
        for g, score in enumerate(group):
            rows.append(
                {
                    "input": prompt,
                    "output": f"<think>working {g}</think><answer>{int(score)}</answer>",
                    "gts": "4",
                    "score": score,
                    "step": step,
                    "acc": score == 1.0,
                    "format_score": 0.1,
                    "pred": str(int(score)),
                }
            )
    random.Random(step).shuffle(rows)
    return rows


def _verl_lines(rows: list[dict[str, object]]) -> bytes:
    # verl: json.dumps(entry, ensure_ascii=False, default=str) + "\n" per response
    return b"".join(
        (json.dumps(row, ensure_ascii=False, default=str) + "\n").encode() for row in rows
    )


def _verl_index(folder: Path, settle_s: float = 0.0) -> CompletionsIndex:
    kind = BatchFolder(verl_rollouts.FILE_PATTERN, verl_rollouts.convert, settle_s=settle_s)
    source = FolderBatches(folder, kind)
    return CompletionsIndex(folder, source=source)


def test_verl_rollouts_grouped_by_input_with_reward_spread(tmp_path: Path) -> None:
    folder = tmp_path / "rollouts"
    folder.mkdir()
    index = _verl_index(folder)
    rows = _verl_rows(12)
    data = _verl_lines(rows)
    path = folder / "12.jsonl"
    path.write_bytes(data[: len(data) // 2 + 7])  # cut inside a line: still being written
    assert verl_rollouts.looks_like_rollouts(path)
    assert index.poll() == 0 and index.state().bad_line_count == 0
    path.write_bytes(data)
    assert index.poll() == 1

    info = index.line_info(0)
    assert (info.step, info.rows, info.groups) == ("12", 16, 4)
    groups = groups_of(index, 0)
    assert sum(group.zero_spread for group in groups) == 2
    assert [g.prompt for g in groups] == sorted({str(r["input"]) for r in rows})
    assert [g.size for g in groups] == [4, 4, 4, 4]
    by_prompt = {g.prompt: g for g in groups}
    assert by_prompt["What is 2+2?"].zero_spread and by_prompt["What is 2+2?"].all_pass
    assert by_prompt["What is 3*3?"].zero_spread and by_prompt["What is 3*3?"].all_fail
    assert by_prompt["What is 7-5?"].spread == pytest.approx(0.5)
    assert by_prompt["What is 9/3?"].spread == pytest.approx(float(np.std([1, 0, 0, 0])))
    assert not by_prompt["What is 9/3?"].zero_spread
    # the score is the logged total; the numeric extras are reward functions, `pred` is not
    assert tuple(groups_of(index, -1)[0].rewards) == ("acc", "format_score")
    for group in groups:
        for sample in group.completions:
            assert sample.solution == "4"
            assert sample.rewards["format_score"] == pytest.approx(0.1)
            assert sample.total == sample.rewards["acc"]  # score 1.0 ⇔ acc true
            assert sample.text.startswith("<think>working ")
    expected = {(str(r["input"]), str(r["output"]), r["score"]) for r in rows}
    got = {(g.prompt, s.text, s.total) for g in groups for s in g.completions}
    assert got == expected

    (stats,) = index.summary().steps
    assert (stats.step, stats.groups, stats.completions) == (12.0, 4, 16)
    assert stats.zero_spread_fraction == pytest.approx(0.5)
    assert stats.zero_spread_all_pass == pytest.approx(0.25)
    assert stats.zero_spread_all_fail == pytest.approx(0.25)
    assert stats.format_rate == pytest.approx(1.0)


def test_verl_steps_in_order_and_a_settle_time_for_line_by_line_writes(tmp_path: Path) -> None:
    folder = tmp_path / "rollouts"
    folder.mkdir()
    for step in (2, 1):
        (folder / f"{step}.jsonl").write_bytes(_verl_lines(_verl_rows(step)))
        _stamp(folder / f"{step}.jsonl", step)  # long unchanged: settled
    (folder / "notes.jsonl").write_text('{"input": "x", "output": "y"}\n', encoding="utf-8")
    index = _verl_index(folder, settle_s=verl_rollouts.SETTLE_S)
    assert index.poll() == 2
    assert [index.line_info(i).step for i in range(len(index))] == ["1", "2"]
    # a file just written, ending on a newline: maybe half way through, left one poll
    rows = _verl_rows(3)
    path = folder / "3.jsonl"
    path.write_bytes(_verl_lines(rows[:8]))
    assert index.poll() == 0
    with open(path, "ab") as handle:  # it was: more lines came
        handle.write(_verl_lines(rows[8:]))
    assert index.poll() == 0
    assert index.poll() == 1  # unchanged since the last poll: settled, read whole
    assert index.line_info(2).rows == 16 and index.line_info(2).groups == 4
    assert [s.zero_spread_fraction for s in index.summary().steps] == [0.5, 0.5, 0.5]


def test_verl_file_that_is_not_rollouts_is_a_bad_line(tmp_path: Path) -> None:
    folder = tmp_path / "rollouts"
    folder.mkdir()
    (folder / "1.jsonl").write_text('{"step": 1, "data": {"actor/pg_loss": 0.1}}\n', "utf-8")
    good = _verl_lines(_verl_rows(2)).split(b"\n")
    (folder / "2.jsonl").write_bytes(b"\n".join([*good[:3], b"{not json", *good[3:]]))
    assert not verl_rollouts.looks_like_rollouts(folder / "1.jsonl")
    source = FolderBatches(folder, BatchFolder(verl_rollouts.FILE_PATTERN, verl_rollouts.convert))
    index = CompletionsIndex(folder, source=source)
    # 1.jsonl is no rollout dump; 2.jsonl's bad line is counted, its other responses kept
    assert index.poll() == 3
    assert (index.state().lines, index.state().bad_line_count) == (1, 2)
    reasons = [bad.reason for bad in index.bad_lines]
    assert reasons[0] == (
        "1.jsonl: not a verl rollout dump: no 'input' and 'output' in its first line"
    )
    assert reasons[1].startswith("2.jsonl: line 4: invalid JSON")
    kept = index.line_info(0)
    assert (kept.step, kept.rows) == ("2", len(_verl_rows(2)))
    # rewritten without its bad line: the same responses, nothing new, and its batch
    # now read from this version
    (folder / "2.jsonl").write_bytes(_verl_lines(_verl_rows(2)))
    _stamp(folder / "2.jsonl", 5)
    assert index.poll() == 0
    assert (index.state().lines, source.generation) == (1, 0)  # not started over
    assert sum(group.size for group in groups_of(index, 0)) == len(_verl_rows(2))
