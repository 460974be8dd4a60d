"""completions.jsonl index (grpo_tui/run/completions/) and text statistics (text_stats.py)."""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from helpers import diversity_of, groups_of, restarts_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_tui import load_run
from grpo_tui.commands.inspect import inspect_data, render_text
from grpo_tui.run.completions import CompletionsIndex
from grpo_tui.run.text_stats import (
    MAX_EXACT_PAIRS,
    SHINGLE_CHARS,
    STATS_CHAR_CAP,
    check_format,
    group_text_stats,
    measured_text,
    sampled_pairs,
)
from grpo_tui.sources.completion_batches import JsonlBatches
from grpo_tui.sources.formats.msswift_completions import (
    NON_REWARD_KEYS,
    NotCompletionsError,
    decode_line,
    parse_record,
)

FIXTURES = Path(__file__).parent / "fixtures" / "ms-swift"
RUN1 = FIXTURES / "local-run-msswift-4.6.0_grpo-3rewards-eval_completions.jsonl"
RUN2 = FIXTURES / "local-run-msswift-4.6.0_grpo-numiter2-dapo-beta0_completions.jsonl"


def _index(path: Path, **kwargs: object) -> CompletionsIndex:
    index = CompletionsIndex(path, **kwargs)  # type: ignore[arg-type]
    index.poll()
    return index


def _write_lines(path: Path, records: Sequence[object], mode: str = "w") -> None:
    with open(path, mode, encoding="utf-8") as handle:
        handle.writelines(
            (record if isinstance(record, str) else json.dumps(record)) + "\n" for record in records
        )


def _columns(
    step: str,
    prompts: list[str],
    completions: list[str],
    rewards: Mapping[str, Sequence[float | None]],
    advantages: list[float] | None = None,
) -> dict[str, object]:
    record: dict[str, object] = {
        "step": [step] * len(completions),
        "prompt": prompts,
        "completion": completions,
    }
    record.update(rewards)
    if advantages is not None:
        record["advantages"] = advantages
    return record


# --------------------------------------------------------------------------- real fixtures


def test_run1_lines_rows_steps_and_rewards() -> None:
    index = _index(RUN1)
    assert len(index) == 7
    assert index.state().lines == 7
    assert index.state().bad_line_count == 0
    assert [index.line_info(i).step for i in range(7)] == ["1", "2", "3", "4", "6", "6", "6"]
    assert all(index.line_info(i).rows == 8 for i in range(7))
    assert tuple(groups_of(index, -1)[0].rewards) == ("Format", "LengthBonus", "CoinFlip")
    for group in groups_of(index, -1):
        assert set(group.rewards) == {"Format", "LengthBonus", "CoinFlip"}
        for sample in group.completions:
            assert sample.advantage is not None
            assert sample.entropy is not None
            assert sample.solution is not None
            # ms-swift logs raw unweighted values: the total is their plain sum
            assert sample.total == pytest.approx(
                sum(v for v in sample.rewards.values() if v is not None)
            )


def test_run1_grouping_by_full_prompt() -> None:
    index = _index(RUN1)
    raw = [json.loads(line) for line in RUN1.read_text(encoding="utf-8").splitlines()]
    for i, record in enumerate(raw):
        groups = groups_of(index, i)
        distinct_prompts = list(dict.fromkeys(record["prompt"]))
        assert [g.prompt for g in groups] == distinct_prompts
        assert sum(g.size for g in groups) == 8
    # step 1 drew the same prompt for both micro-batches: one prompt group of 8 rows ...
    assert [g.size for g in groups_of(index, 0)] == [8]
    # ... every later line holds 2 prompts x 4 generations
    for i in range(1, 7):
        assert [g.size for g in groups_of(index, i)] == [4, 4]
    # the advantages of step 1 sum to ~0 per 4 rows: two GRPO groups, split when the
    # group size (num_generations) is known
    split = _index(RUN1, group_size=4)
    groups = groups_of(split, 0)
    assert [g.size for g in groups] == [4, 4]
    for group in groups:
        assert sum(s.advantage or 0.0 for s in group.completions) == pytest.approx(0.0, abs=1e-5)


def test_run1_end_repeat_and_eval_line_excluded_from_summary() -> None:
    index = _index(RUN1)
    kinds = [index.line_info(i).kind for i in range(7)]
    # line 5 is the eval line of step 6, line 6 the end-of-train repeat of it
    assert kinds == ["new", "new", "new", "new", "new", "eval_or_end", "repeat"]
    summary = index.summary()
    assert summary.lines == 7
    assert [s.step for s in summary.steps] == [1.0, 2.0, 3.0, 4.0, 6.0]
    assert summary.steps[0].groups == 1
    latest = summary.steps[-1]
    assert latest.completions == 8 and latest.groups == 2
    # random-byte completions: no tags, so format and truncation are unknown
    assert latest.format_rate is None and latest.truncated_rate is None
    assert latest.distinct_2 == pytest.approx(1.0)
    assert latest.pairwise_overlap == pytest.approx(0.0)
    assert [i for i in range(len(index)) if index.line_info(i).kind == "new"] == [0, 1, 2, 3, 4]


def test_run2_num_iterations_repeats_collapsed() -> None:
    index = _index(RUN2)
    assert len(index) == 5
    assert [index.line_info(i).step for i in range(5)] == ["1", "2", "3", "4", "4"]
    assert [index.line_info(i).kind for i in range(5)] == [
        "new",
        "repeat",
        "new",
        "repeat",
        "repeat",
    ]
    assert tuple(groups_of(index, -1)[0].rewards) == ("Format", "CoinFlip")
    summary = index.summary()
    assert summary.lines == 5
    # rollouts generated at steps 1 and 3 (each reused by the next step, then the end line)
    assert [s.step for s in summary.steps] == [1.0, 3.0]
    assert all(s.groups == 2 and s.completions == 8 for s in summary.steps)
    for group in groups_of(index, -1):
        assert all(sample.entropy is None for sample in group.completions)  # no --log_entropy
        assert all(sample.advantage is not None for sample in group.completions)


def test_fixture_completions_with_control_chars_survive() -> None:
    index = _index(RUN1)
    texts = [s.text for i in range(len(index)) for g in groups_of(index, i) for s in g.completions]
    assert any("\ufffd" in t for t in texts)
    assert any(any(ord(ch) < 32 and ch != "\n" for ch in t) for t in texts)


# --------------------------------------------------------------------------- older shapes


def test_v31_messages_and_reward_total(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "1+1?"}]
    first = {
        "step": ["2"] * 2,
        "messages": [messages, messages],
        "completion": ["2", "3"],
        "reward": [1.0, 0.0],
    }
    second = {
        "step": ["2"] * 2,
        "messages": [messages, messages],
        "completion": ["two", "2"],
        "reward": [0.5, 1.0],
    }
    _write_lines(path, [first, second])
    index = _index(path)
    assert tuple(groups_of(index, -1)[0].rewards) == ()
    groups = groups_of(index, 0)
    assert len(groups) == 1
    assert groups[0].prompt == "system: Be brief.\nuser: 1+1?"
    assert [s.total for s in groups[0].completions] == [1.0, 0.0]
    assert all(s.advantage is None and s.rewards == {} for s in groups[0].completions)
    assert index.line_info(0).shape == "messages"
    # 3.1-3.2 logged during generation: several lines of one step are all train rollouts
    assert [index.line_info(i).kind for i in range(2)] == ["new", "new"]
    summary = index.summary()
    assert [(s.step, s.completions, s.groups) for s in summary.steps] == [(2.0, 4, 2)]


def test_v33_prompt_as_message_list(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    prompt = [
        {"role": "user", "content": [{"type": "text", "text": "Name a colour."}, {"type": "image"}]}
    ]
    record = {
        "step": ["5"] * 3,
        "prompt": [prompt] * 3,
        "completion": ["red", "blue", "red"],
        "acc": [1.0, 1.0, 1.0],
    }
    _write_lines(path, [record])
    index = _index(path)
    assert index.line_info(0).shape == "prompt_messages"
    (group,) = groups_of(index)
    assert group.prompt == "user: Name a colour.\n[image]"
    assert group.zero_spread and group.spread == 0.0
    assert [s.advantage for s in group.completions] == [None, None, None]


def test_v37_advantage_singular_and_trajectory_infos(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    record = {
        "step": ["7"] * 2,
        "prompt": ["p", "p"],
        "completion": ["a", "b"],
        "accuracy": [1.0, 0.0],
        "advantage": [0.7, -0.7],
        "entropy": [1.5, 1.25],
        "trajectory_infos": [{"turns": 2}, {"turns": 3}],
    }
    _write_lines(path, [record])
    index = _index(path)
    assert tuple(groups_of(index, -1)[0].rewards) == ("accuracy",)
    (group,) = groups_of(index)
    assert [s.advantage for s in group.completions] == [0.7, -0.7]
    assert [s.entropy for s in group.completions] == [1.5, 1.25]
    assert index.line_info(0).shape == "advantage_singular"


def test_megatron_gen_step_int_lists(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    lines = [
        {
            "gen_step": [3] * 4,
            "prompt": ["a", "a", "b", "b"],
            "completion": ["x", "y", "z", "w"],
            "acc": [1, 0, 0, 0],
            "advantages": [1, -1, 0, 0],
        },
        {
            "gen_step": [4] * 2,
            "prompt": ["c", "c"],
            "completion": ["q", "r"],
            "acc": [1, 1],
            "advantages": [0, 0],
        },
    ]
    _write_lines(path, lines)
    index = _index(path)
    assert index.line_info(0).shape == "megatron"
    assert [index.line_info(i).step for i in range(2)] == ["3", "4"]
    assert [(g.prompt, g.size) for g in groups_of(index, 0)] == [("a", 2), ("b", 2)]
    assert [s.step for s in index.summary().steps] == [3.0, 4.0]


def test_megatron_ray_rows_form_one_batch_per_gen_step(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    rows = [
        {"gen_step": 1, "prompt": p, "completion": c, "reward": r}
        for p, c, r in [("a", "x", 1.0), ("a", "y", 0.0), ("b", "z", 1.0), ("b", "w", 1.0)]
    ]
    _write_lines(path, rows)
    index = CompletionsIndex(path)
    assert index.poll() == 4
    assert len(index) == 1
    info = index.line_info(0)
    assert (info.shape, info.rows, info.step) == ("ray", 4, "1")
    groups = groups_of(index, 0)
    assert [(g.prompt, g.size, g.zero_spread) for g in groups] == [("a", 2, False), ("b", 2, True)]
    # more rows of the same generation step arrive later: the open batch grows
    _write_lines(path, [{"gen_step": 1, "prompt": "b", "completion": "v", "reward": 0.0}], mode="a")
    assert index.poll() == 1
    assert len(index) == 1 and index.line_info(0).rows == 5
    assert [g.size for g in groups_of(index, 0)] == [2, 3]
    assert index.summary().steps[-1].completions == 5
    _write_lines(path, [{"gen_step": 2, "prompt": "c", "completion": "u", "reward": 0.5}], mode="a")
    index.poll()
    assert len(index) == 2
    summary = index.summary()
    assert [(s.step, s.completions) for s in summary.steps] == [(1.0, 5), (2.0, 1)]
    assert summary.lines == 6


def test_nan_tokens_null_rewards_and_unknown_text_columns(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    text = (
        '{"step": ["1","1","1"], "prompt": ["p","p","p"], "completion": ["a","b","c"], '
        '"fmt": [NaN, 1.0, null], "acc": [1.0, Infinity, null], "tool_log": ["x","y","z"], '
        '"num_turns": [1,1,1]}'
    )
    _write_lines(path, [text])
    index = _index(path)
    assert index.state().bad_line_count == 0
    assert tuple(groups_of(index, -1)[0].rewards) == (
        "fmt",
        "acc",
    )  # tool_log holds text: not a reward
    (group,) = groups_of(index)
    totals = [s.total for s in group.completions]
    assert totals[0] == 1.0 and totals[1] == math.inf and totals[2] is None
    assert group.completions[0].rewards == {"fmt": None, "acc": 1.0}


def test_invalid_utf8_and_lone_surrogates(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    good = (
        b'{"step": ["1","1"], "prompt": ["p","p"], '
        b'"completion": ["ok \xff\xfe bytes", "\\ud800 alone"], "r": [0, 1]}'
    )
    path.write_bytes(good + b"\n")
    index = _index(path)
    (group,) = groups_of(index)
    texts = [s.text for s in group.completions]
    assert "\ufffd" in texts[0]
    for t in texts:
        t.encode("utf-8")  # drawable: no lone surrogates left


def test_unequal_lengths_use_shortest_and_count_malformed(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    record = {
        "step": ["1"] * 4,
        "prompt": ["p"] * 4,
        "completion": ["a", "b", "c"],
        "r": [1, 0, 1, 0],
        "advantages": [1, -1],
    }
    _write_lines(path, [record])
    index = _index(path)
    assert index.state().cut_batches == 1
    # as a run shows it: an ms-swift run folder with its metrics log beside
    (tmp_path / "logging.jsonl").write_text('{"global_step/max_steps": "1/2", "reward": 0.5}\n')
    data = inspect_data(load_run(tmp_path))
    assert data["completions"]["cut"] == 1
    shown = io.StringIO()
    render_text(data, shown)
    assert "1 batch with lists of unequal length, cut to the shortest" in shown.getvalue()
    assert index.line_info(0).malformed
    assert index.line_info(0).rows == 2
    assert [s.text for s in groups_of(index)[0].completions] == ["a", "b"]


def test_parse_record_rejects_objects_without_completions() -> None:
    with pytest.raises(NotCompletionsError):
        parse_record({"loss": 0.1, "step": 3})


def test_decode_line_fallback() -> None:
    assert decode_line(b'{"a": 1}') == ({"a": 1}, False)
    value, lenient = decode_line(b'{"a": NaN}')
    assert lenient and math.isnan(value["a"])  # type: ignore[index]
    with pytest.raises(ValueError):
        decode_line(b'{"a": ')


# --------------------------------------------------------------------------- live reading


def test_bad_line_in_the_middle_keeps_neighbours(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    before = _columns("1", ["p", "p"], ["a", "b"], {"r": [1.0, 0.0]})
    after = _columns("2", ["q", "q"], ["c", "d"], {"r": [0.0, 1.0]})
    _write_lines(path, [before, '{"step": ["1"], "prompt": ', "[1, 2, 3]", '{"loss": 0.5}', after])
    index = _index(path)
    assert len(index) == 2 and index.state().lines == 2
    assert index.state().bad_line_count == 3
    assert [b.line_no for b in index.bad_lines] == [2, 3, 4]
    assert "invalid JSON" in index.bad_lines[0].reason
    assert "not a JSON object" in index.bad_lines[1].reason
    assert "completion" in index.bad_lines[2].reason
    assert [s.step for s in index.summary().steps] == [1.0, 2.0]
    assert groups_of(index, 0)[0].prompt == "p" and groups_of(index, 1)[0].prompt == "q"


def test_file_appended_in_pieces(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    path.write_bytes(b"")
    index = CompletionsIndex(path)
    first = json.dumps(_columns("1", ["p", "p"], ["a", "b"], {"r": [1.0, 0.0]})).encode() + b"\n"
    second = (
        json.dumps(
            _columns("2", ["p", "p"], ["ä", "ö"], {"r": [1.0, 1.0]}), ensure_ascii=False
        ).encode()
        + b"\n"
    )
    data = first + second
    cut_points = [10, len(first) - 1, len(first), len(first) + 5, len(data) - 3, len(data)]
    written = 0
    counts = []
    for cut in cut_points:
        with open(path, "ab") as handle:
            handle.write(data[written:cut])
        written = cut
        counts.append(index.poll())
    assert counts == [0, 0, 1, 0, 0, 1]
    assert len(index) == 2 and index.state().bad_line_count == 0
    assert [s.text for s in groups_of(index, -1)[0].completions] == ["ä", "ö"]


def test_truncation_restarts_the_index(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    lines = [
        _columns(str(step), ["p", "p"], ["a", "b"], {"r": [float(step), 0.0]}) for step in (1, 2, 3)
    ]
    _write_lines(path, [*lines, "garbage"])
    source = JsonlBatches(path)
    restarts = restarts_of(source)
    index = _index(path, source=source)
    assert len(index) == 3 and index.state().bad_line_count == 1
    _write_lines(path, [_columns("1", ["new prompt"] * 2, ["x", "y"], {"r": [3.0, 3.0]})])
    index.poll()
    assert len(restarts) == 1
    assert len(index) == 1 and index.state().lines == 1 and index.state().bad_line_count == 0
    assert groups_of(index)[0].prompt == "new prompt"
    # the old file's totals (0 to 3) are forgotten: the new one's only tie is at no bottom
    # or top (remembered, 3 would be the top)
    (group,) = groups_of(index)
    assert group.zero_spread and not group.all_fail and not group.all_pass
    assert [s.step for s in index.summary().steps] == [1.0]


def test_poll_is_time_boxed_by_max_bytes(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    lines = [
        _columns(str(step), ["p"] * 2, ["a " * 50, "b " * 50], {"r": [1.0, 0.0]})
        for step in range(20)
    ]
    _write_lines(path, lines)
    index = CompletionsIndex(path)
    line_bytes = path.stat().st_size // 20
    first = index.poll(max_bytes=line_bytes * 3)
    assert 1 <= first < 20 and index.more
    total = first
    while index.more:
        total += index.poll(max_bytes=line_bytes * 3)
    assert total == 20 and len(index) == 20


def test_rewritten_file_under_the_cache_yields_no_groups(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    _write_lines(
        path,
        [
            _columns("1", ["p"] * 2, ["aaa", "bbb"], {"r": [1, 0]}),
            _columns("2", ["p"] * 2, ["ccc", "ddd"], {"r": [1, 0]}),
        ],
    )
    index = _index(path, cache_lines=1)
    assert index.cached_lines == 1
    # same size, different content, before any poll notices: never show the wrong texts
    path.write_bytes(path.read_bytes().replace(b"aaa", b"zzz"))
    assert groups_of(index, 0) == []
    assert [s.text for s in groups_of(index, 1)[0].completions] == ["ccc", "ddd"]


def test_memory_stays_bounded(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for step in range(2000):
            prompts = [f"prompt {step} {g}" for g in range(8) for _ in range(8)]
            completions = [f"answer {step} {row} the end" for row in range(64)]
            rewards = {"acc": [float((step + row) % 2) for row in range(64)]}
            handle.write(json.dumps(_columns(str(step), prompts, completions, rewards)) + "\n")
    index = CompletionsIndex(path, cache_lines=5)
    assert index.poll() == 2000
    assert len(index) == 2000
    assert index.cached_lines <= 5
    for line in (0, 500, 1999, -7, 3, 1000, 1500):
        groups = groups_of(index, line)
        assert len(groups) == 8 and all(g.size == 8 for g in groups)
        assert index.cached_lines <= 5
    assert groups[0].prompt == "prompt 1500 0"
    summary = index.summary()
    assert len(summary.steps) == 2000 and summary.lines == 2000


def test_step_labels_are_kept_as_logged_and_told_apart(tmp_path: Path) -> None:
    """A label that is not the decimal of its number keeps its text, and each label is its
    own step ("06" is not "6"); a label seen before, in any order, is an eval line."""
    path = tmp_path / "completions.jsonl"
    labels = ["06", "6", "12/500", "?", "6", "3", "3", "06", "-0", "0"]
    records: list[object] = [
        _columns(label, ["p"], [f"text {i}"], {"r": [float(i)]}) for i, label in enumerate(labels)
    ]
    mixed = _columns("9", ["p", "q"], ["x", "y"], {"r": [1.0, 0.0]})
    mixed["step"] = ["8", "9"]
    _write_lines(path, [*records, mixed])
    index = _index(path)
    infos = [index.line_info(i) for i in range(len(index))]
    assert [info.step for info in infos] == [*labels, "9"]
    new, again = "new", "eval_or_end"
    assert [info.kind for info in infos] == [new] * 4 + [again, new, again, again] + [new] * 3
    assert infos[0].steps == ("06",) and infos[-1].steps == ("8", "9")
    # a label with no leading number counts at its place among the steps (the 4th)
    assert [s.step for s in index.summary().steps] == [6.0, 6.0, 12.0, 3.0, 3.0, 0.0, 0.0, 9.0]


def test_a_summary_handed_out_never_changes(tmp_path: Path) -> None:
    """Only the steps that changed are computed again, into copies: a summary another
    thread holds keeps its values while the newest step grows or every step is re-judged
    (over more than one block of steps)."""
    path = tmp_path / "completions.jsonl"
    lines: list[object] = [
        _columns(str(step), ["p"] * 2, [f"a {step}", f"b {step}"], {"acc": [0.5, 0.5]})
        for step in range(1, 1101)
    ]
    _write_lines(path, lines)
    index = _index(path)
    first = index.summary()
    seen = [(s.step, s.completions, s.zero_spread_all_fail) for s in first.steps]
    assert len(seen) == 1100 and seen[-1] == (1100.0, 2, 0.0)  # every total 0.5: not judged
    # a higher total: every earlier tie is now at the bottom
    _write_lines(path, [_columns("1101", ["q"] * 2, ["c", "d"], {"acc": [1.0, 0.5]})], mode="a")
    index.poll()
    second = index.summary()
    assert second.revision != first.revision
    assert second.steps[0].zero_spread_all_fail == 1.0 and len(second.steps) == 1101
    assert [(s.step, s.completions, s.zero_spread_all_fail) for s in first.steps] == seen
    # ms-swift 3.1 logs a step in several lines: the newest step grows in place
    growing = tmp_path / "messages.jsonl"
    message = {"step": 1, "messages": [[{"role": "user", "content": "m"}]] * 2, "reward": [1, 0]}
    _write_lines(growing, [{**message, "completion": ["e", "f"]}])
    index = _index(growing)
    before = index.summary()
    assert [s.completions for s in before.steps] == [2]
    _write_lines(growing, [{**message, "completion": ["g", "h"]}], mode="a")
    index.poll()
    assert [s.completions for s in index.summary().steps] == [4]
    assert [s.completions for s in before.steps] == [2]


def test_index_missing_file_then_created(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    index = CompletionsIndex(path)
    assert index.poll() == 0 and len(index) == 0
    assert groups_of(index) == [] and len(index.summary().steps) == 0
    _write_lines(path, [_columns("1", ["p"], ["a"], {"r": [1.0]})])
    assert index.poll() == 1
    with pytest.raises(IndexError):
        groups_of(index, 5)


# --------------------------------------------------------------------------- group verdicts


def test_all_fail_all_pass_against_observed_range(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    prompts = ["fail"] * 3 + ["pass"] * 3 + ["mixed"] * 3
    rewards: dict[str, list[float | None]] = {
        "acc": [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0],
        "fmt": [None] * 9,
    }
    _write_lines(path, [_columns("1", prompts, ["a", "b", "c"] * 3, rewards)])
    index = _index(path)
    by_prompt = {g.prompt: g for g in groups_of(index)}
    assert (
        by_prompt["fail"].zero_spread
        and by_prompt["fail"].all_fail
        and not by_prompt["fail"].all_pass
    )
    assert (
        by_prompt["pass"].zero_spread
        and by_prompt["pass"].all_pass
        and not by_prompt["pass"].all_fail
    )
    assert not by_prompt["mixed"].zero_spread
    assert by_prompt["mixed"].spread == pytest.approx(np.std([0.0, 1.0, 1.0]))
    step = index.summary().steps[-1]
    assert step.zero_spread_fraction == pytest.approx(2 / 3)
    assert step.zero_spread_all_fail == pytest.approx(1 / 3)
    assert step.zero_spread_all_pass == pytest.approx(1 / 3)


def test_tie_position_is_rejudged_as_the_range_grows(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    _write_lines(path, [_columns("1", ["p"] * 2, ["a", "b"], {"acc": [0.5, 0.5]})])
    index = _index(path)
    # every total seen is 0.5: bottom or top cannot be told yet (a tie at 0 would be all-fail
    # already: every completion scored 0)
    (group,) = groups_of(index)
    assert group.zero_spread and not group.all_fail and not group.all_pass
    assert index.summary().steps[0].zero_spread_all_fail == 0.0
    _write_lines(path, [_columns("2", ["q"] * 2, ["c", "d"], {"acc": [1.0, 0.5]})], mode="a")
    index.poll()
    assert groups_of(index, 0)[0].all_fail
    assert index.summary().steps[0].zero_spread_all_fail == 1.0


def test_format_rate_known_once_the_run_uses_tags(tmp_path: Path) -> None:
    path = tmp_path / "completions.jsonl"
    tagged = ["<think>a</think><answer>1</answer>", "<think>b</think><answer>2"]
    _write_lines(
        path,
        [
            _columns("1", ["p"] * 2, ["plain one", "plain two"], {"r": [0.0, 1.0]}),
            _columns("2", ["p"] * 2, tagged, {"r": [1.0, 0.0]}),
        ],
    )
    index = _index(path)
    first, second = index.summary().steps
    assert second.format_rate == 0.5 and second.truncated_rate == 0.5
    # the run uses tags, so the untagged step followed the format 0 % (not "unknown")
    assert first.format_rate == 0.0 and first.truncated_rate is None
    # per group, a group with no marker stays unknown
    assert all(sample.follows_format is None for sample in groups_of(index, 0)[0].completions)
    samples = groups_of(index, 1)[0].completions
    assert [(s.follows_format, s.truncated) for s in samples] == [(True, False), (False, True)]


# --------------------------------------------------------------------------- text statistics


def test_identical_completions() -> None:
    texts = ["the cat sat on the mat"] * 4
    assert diversity_of(texts).overlap == 1.0
    # 11 distinct 12-character shingles out of 4 x 11
    assert diversity_of(texts).distinct == pytest.approx(0.25)


def test_disjoint_completions() -> None:
    texts = ["a b c d", "e f g h", "i j k l"]
    assert diversity_of(texts).overlap == 0.0
    assert diversity_of(texts, 2).distinct == 1.0


def test_partial_overlap_known_answer() -> None:
    # character 3-gram sets {abc, bcd} and {abc, bce}: 1 shared of 3
    assert diversity_of(["abcd", "abce"], 3).overlap == pytest.approx(1 / 3)
    # character bigrams ab bc cd | ab bc ce: 4 unique of 6
    assert diversity_of(["abcd", "abce"], 2).distinct == pytest.approx(4 / 6)


def test_short_and_degenerate_completions() -> None:
    assert diversity_of(["yes", "yes"]).overlap == 1.0
    assert diversity_of(["yes", "no"]).overlap == 0.0
    assert diversity_of(["", ""]).overlap == 1.0
    assert diversity_of(["yes it is", "yes"]).overlap == 0.0
    assert math.isnan(diversity_of(["only one"]).overlap)
    assert math.isnan(diversity_of([]).distinct)
    assert diversity_of(["", "", "", ""]).distinct == pytest.approx(0.25)


def test_large_groups_compare_a_bounded_even_subset_of_pairs() -> None:
    assert len(sampled_pairs(10)) == 45  # every pair of a usual group
    pairs = sampled_pairs(100)
    assert len(pairs) <= MAX_EXACT_PAIRS and len(set(pairs)) == len(pairs)
    assert all(i != j for i, j in pairs)
    counts = np.bincount(np.array(pairs).ravel(), minlength=100)
    assert counts.min() == counts.max()  # every completion compared equally often
    assert len(sampled_pairs(1000)) == 1000
    assert diversity_of(["same words here"] * 100).overlap == 1.0
    assert diversity_of([f"w{i} x{i} y{i}" for i in range(100)]).overlap == 0.0


def _reference_grams(text: str, n: int) -> list[str]:
    """Character n-grams of the measured text, a short text one gram (plain Python)."""
    measured = measured_text(text)
    if len(measured) < n:
        return [measured]
    return [measured[i : i + n] for i in range(len(measured) - n + 1)]


_small_texts = st.lists(
    st.lists(st.sampled_from(["a", "b", "c", "d", "é", "\x00", "<answer>"]), max_size=7).map(
        " ".join
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(texts=_small_texts)
def test_diversity_matches_a_plain_python_reference(texts: list[str]) -> None:
    grams = [_reference_grams(t, 2) for t in texts]
    unique = {g for gs in grams for g in gs}
    assert diversity_of(texts, 2).distinct == pytest.approx(
        len(unique) / sum(len(gs) for gs in grams)
    )
    pairs = [(i, j) for i in range(len(texts)) for j in range(i + 1, len(texts))]
    for n in (3, SHINGLE_CHARS):
        if not pairs:
            assert math.isnan(diversity_of(texts, n).overlap)
            continue
        sets = [set(_reference_grams(t, n)) for t in texts]
        expected = np.mean([len(sets[i] & sets[j]) / len(sets[i] | sets[j]) for i, j in pairs])
        assert diversity_of(texts, n).overlap == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "uses", "follows", "cut"),
    [
        ("<think>x</think><answer>4</answer>", True, True, False),
        ("<think>x</think>\n<answer>4", True, False, True),
        ("<think>still thinking", True, False, True),
        ("reasoning</think><answer>4</answer>", True, True, False),  # <think> was in the prompt
        ("<answer>1</answer></answer>", True, False, False),
        ("The answer is \\boxed{\\frac{1}{2}}.", True, True, False),
        ("so \\boxed{\\frac{1}{2", True, False, True),
        ("no markers at all", False, False, False),
        ("</<think", False, False, False),
    ],
)
def test_check_format(text: str, uses: bool, follows: bool, cut: bool) -> None:
    check = check_format(text)
    assert (check.uses_markers, check.follows, check.cut_off) == (uses, follows, cut)


def test_format_and_truncation_rates() -> None:
    # a group using no marker has no format to follow (unknown, not 0 %)
    assert not group_text_stats(["plain", "text"]).format_known
    stats = group_text_stats(["<answer>1</answer>", "plain"])
    assert stats.format_known and [check.follows for check in stats.checks] == [True, False]
    stats = group_text_stats(["<answer>1", "<answer>1</answer>", "x", "y"])
    assert [check.cut_off for check in stats.checks] == [True, False, False, False]
    stats = group_text_stats(["<answer>1</answer>", "<answer>1</answer>"])
    assert all(check.follows and not check.cut_off for check in stats.checks)
    assert stats.pairwise_overlap == 1.0


def test_hostile_text_is_bounded_and_safe() -> None:
    huge = "word " * 2_000_000 + "<answer>"
    controls = "".join(chr(c) for c in range(32)) + "\ufffd\u202e\x7f"
    texts = [huge, controls, "\ud800 lone", ""]
    stats = group_text_stats(texts)
    assert 0.0 <= stats.distinct_2 <= 1.0
    assert 0.0 <= stats.pairwise_overlap <= 1.0
    assert stats.checks[0].cut_off  # the end of a huge text is still scanned
    assert len(huge[:STATS_CHAR_CAP].split()) <= STATS_CHAR_CAP


# --------------------------------------------------------------------------- robustness

_json_leaf = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=10)
)
_json_cell = (
    _json_leaf
    | st.lists(_json_leaf, max_size=3)
    | st.dictionaries(st.sampled_from(["role", "content", "text", "type"]), _json_leaf, max_size=3)
)
# what completions columns hold: scalars, per-row lists, lists of messages
_json_values = _json_cell | st.lists(_json_cell, max_size=5)
_known_keys = st.sampled_from([*sorted(NON_REWARD_KEYS - {"trajectory_infos"}), "acc", "Format"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    record=st.dictionaries(_known_keys | st.text(max_size=4), _json_values, max_size=8),
    completion=_json_values,
)
def test_parse_record_never_crashes(record: dict[str, object], completion: object) -> None:
    record["completion"] = completion
    rows = parse_record(record)
    count = len(rows)
    assert len(rows.prompts) == len(rows.steps) == count == rows.totals.shape[0]
    for column in rows.rewards.values():
        assert column.shape == (count,)
    group_text_stats(rows.completions)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    lines=st.lists(
        st.binary(max_size=60) | _json_values.map(lambda v: json.dumps(v).encode()), max_size=8
    )
)
def test_index_never_crashes_on_arbitrary_lines(tmp_path: Path, lines: list[bytes]) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n")
    index = CompletionsIndex(path)
    index.poll()
    index.summary()
    for line in range(len(index)):
        groups_of(index, line)
    os.remove(path)


_tag_soup = st.lists(
    st.sampled_from(
        ["<think>", "</think>", "<answer>", "</answer>", "\\boxed{", "{", "}", "x", " "]
    ),
    max_size=30,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(_tag_soup | st.text(max_size=30), max_size=6))
def test_text_stats_never_crash_and_stay_in_range(texts: list[str]) -> None:
    stats = group_text_stats(texts)
    for value in (stats.distinct_2, stats.pairwise_overlap):
        assert math.isnan(value) or 0.0 <= value <= 1.0
    assert stats.format_known == any(check.uses_markers for check in stats.checks)
    for check in stats.checks:
        assert not (check.follows and check.cut_off)
        assert check.uses_markers or not (check.follows or check.cut_off)
