"""The samples core: repetition (text_stats.py), reading a file's newest lines from the end
(tail.read_tail_lines), the completions index's paging / preview / navigation / search API
(run/completions/) and the samples' statistics as metric series (run/sample_series.py).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import groups_of, repetition, restarts_of
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import grpo_tui.sources.completion_batches as batches_module
from grpo_tui.files import UTF8_BOM
from grpo_tui.run.completion_stats import CompletionsSummary, StepColumns, StepSampleStats
from grpo_tui.run.completions import CompletionsIndex, Group, Page, Sample
from grpo_tui.run.follow import load_run
from grpo_tui.run.metrics import MetricStore
from grpo_tui.run.sample_series import (
    SAMPLE_METRICS,
    SAMPLE_SERIES,
    SamplePlacer,
    sample_values,
)
from grpo_tui.run.text_stats import (
    REPETITIVE_SHARE,
    SHINGLE_CHARS,
    STATS_CHAR_CAP,
    group_text_stats,
    measured_text,
)
from grpo_tui.sim import write_run
from grpo_tui.sources.records import Record
from grpo_tui.sources.tail import TailReader, read_tail_lines
from grpo_tui.vocabulary import LineKind

FIXTURES = Path(__file__).parent / "fixtures" / "ms-swift"
#: 7 lines: train steps 1, 2, 3, 4, 6, then the eval line of step 6, then a verbatim repeat
RUN1 = FIXTURES / "local-run-msswift-4.6.0_grpo-3rewards-eval_completions.jsonl"
#: num_iterations 2: lines 2, 4 and 5 repeat the line before them
RUN2 = FIXTURES / "local-run-msswift-4.6.0_grpo-numiter2-dapo-beta0_completions.jsonl"


# --------------------------------------------------------------------------- helpers


def _write(path: Path, records: list[dict[str, object]], mode: str = "w") -> None:
    with open(path, mode, encoding="utf-8") as handle:
        handle.writelines(json.dumps(record) + "\n" for record in records)


def _line(
    step: int,
    groups: list[tuple[str, list[str], list[float | None]]],
    *,
    advantages: bool = True,
) -> dict[str, object]:
    """One ms-swift 4.x column-oriented line: (prompt, completions, rewards) per group."""
    prompts: list[str] = []
    texts: list[str] = []
    rewards: list[float | None] = []
    for prompt, completions, values in groups:
        prompts += [prompt] * len(completions)
        texts += completions
        rewards += values
    record: dict[str, object] = {
        "step": [str(step)] * len(texts),
        "prompt": prompts,
        "completion": texts,
        "Acc": rewards,
    }
    if advantages:
        record["advantages"] = [float(i) for i in range(len(texts))]
    return record


def _ray_rows(step: int, count: int) -> list[dict[str, object]]:
    """Megatron-Ray rows: one completion per line, two prompts alternating."""
    return [
        {
            "gen_step": step,
            "prompt": f"prompt {i % 2}",
            "completion": f"answer {step}-{i} " * (i + 1),
            "reward": float(i % 3),
        }
        for i in range(count)
    ]


def _index(path: Path, **kwargs: object) -> CompletionsIndex:
    index = CompletionsIndex(path, **kwargs)  # type: ignore[arg-type]
    index.poll()
    return index


def _nan_none(values: np.ndarray) -> tuple[float | None, ...]:
    return tuple(None if math.isnan(v) else float(v) for v in values)


def _group_view(group: Group) -> tuple[object, ...]:
    """What the panel shows of a group, comparable across two parses."""
    return (
        group.prompt,
        group.step,
        tuple(sample.text for sample in group.completions),
        _nan_none(group.totals),
        tuple(sample.advantage for sample in group.completions),
        {name: _nan_none(values) for name, values in group.rewards.items()},
        group.zero_spread,
    )


def _page_view(page: Page) -> list[tuple[object, ...]]:
    return [_group_view(group) for group in page.groups]


# --------------------------------------------------------------------------- repetition


def _reference_repetition(text: str) -> float:
    """Share of character shingles that already occurred earlier in the measured text
    (plain Python): SHINGLE_CHARS long, a quarter of the text when it is shorter than
    four shingles, nothing under four characters."""
    measured = measured_text(text)
    if len(measured) < 4:
        return 0.0
    width = min(SHINGLE_CHARS, len(measured) // 4)
    grams = [measured[i : i + width] for i in range(len(measured) - width + 1)]
    seen: set[str] = set()
    repeats = 0
    for gram in grams:
        repeats += gram in seen
        seen.add(gram)
    return repeats / len(grams)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0.0),
        ("aaa", 0.0),  # three characters: nothing can repeat
        ("abcd", 0.0),  # four different characters
        ("aaaa", 0.75),  # one character four times: three of four repeat the first
        ("8>8>8>8>", 5 / 7),  # 2-character shingles: only "8>" and ">8" are new
        ("to be or not to be or not", 7 / 20),  # 6-character shingles: the second half
        ("assistant: aaaa", 0.75),  # the role prefix is no text
    ],
)
def test_repetition_known_answers(text: str, expected: float) -> None:
    """repetition() is the share of character shingles repeating an earlier one."""
    assert repetition(text) == pytest.approx(expected)
    assert repetition(text) == pytest.approx(_reference_repetition(text))


def test_repetition_of_a_loop_tends_to_one_and_flags_repetitive() -> None:
    """A loop repeats almost every shingle: far above REPETITIVE_SHARE, ordinary prose far below."""
    loop = "the cat sat " * 50  # 599 characters measured (the last space is not), 588
    assert repetition(loop) == pytest.approx(1 - 12 / 588)  # shingles, only 12 distinct
    assert repetition(loop) >= REPETITIVE_SHARE
    prose = "The quick brown fox jumps over the lazy dog while the cat sleeps."
    assert repetition(prose) == 0.0 < REPETITIVE_SHARE


def test_repetition_only_reads_the_analysed_head() -> None:
    """Like the other text statistics, only the first STATS_CHAR_CAP characters count."""
    head = " ".join(f"w{i}" for i in range(STATS_CHAR_CAP))[:STATS_CHAR_CAP]
    looping_tail = " la" * 100_000
    assert repetition(head + looping_tail) == pytest.approx(repetition(head)) == 0.0
    assert repetition(looping_tail) > 0.99


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "x y", "\n", "\t", "é", "哈"]), max_size=60))
def test_repetition_matches_reference(parts: list[str]) -> None:
    """repetition() agrees with a plain count of already-seen shingles and stays in [0, 1)."""
    text = " ".join(parts)
    value = repetition(text)
    assert value == pytest.approx(_reference_repetition(text))
    assert 0.0 <= value < 1.0


def test_group_text_stats_repetition_is_per_completion_in_order() -> None:
    """GroupTextStats.repetition holds one share per completion, in the group's order."""
    texts = ["a b c d e", "la la la la la la", "", "one two"]
    stats = group_text_stats(texts)
    assert stats.repetition == tuple(repetition(text) for text in texts)
    assert stats.repetition[0] == 0.0 and stats.repetition[1] > REPETITIVE_SHARE


def test_sample_repetitive_threshold() -> None:
    """Sample.repetitive is True exactly from REPETITIVE_SHARE on."""

    def sample(share: float) -> Sample:
        return Sample(text="", rewards={}, total=None, advantage=None, repetition=share)

    assert sample(REPETITIVE_SHARE).repetitive
    assert sample(1.0).repetitive
    assert not sample(math.nextafter(REPETITIVE_SHARE, 0.0)).repetitive
    assert not sample(0.0).repetitive


def test_index_samples_carry_their_repetition(tmp_path: Path) -> None:
    """The index gives each Sample the repetition of its own text (rows keep their order)."""
    texts = ["the cat sat on the mat", "la la la la la la la la", "a b"]
    path = tmp_path / "completions.jsonl"
    _write(path, [_line(1, [("p", texts, [1.0, 0.0, 0.5])])])
    page = _index(path).page(-1)
    assert page is not None
    samples = page.groups[0].completions
    assert [s.text for s in samples] == texts
    assert [s.repetition for s in samples] == [repetition(t) for t in texts]
    assert [s.repetitive for s in samples] == [False, True, False]


# --------------------------------------------------------------------------- read_tail_lines


def _lines_strategy() -> st.SearchStrategy[tuple[list[tuple[bytes, bytes]], bytes, bool]]:
    body = st.binary(max_size=24).map(lambda raw: raw.replace(b"\n", b""))
    ending = st.sampled_from([b"\n", b"\r\n"])
    return st.tuples(
        st.lists(st.tuples(body, ending), max_size=12),
        body,  # a trailing fragment without its newline (often empty)
        st.booleans(),  # a UTF-8 byte order mark first
    )


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(  # CI found it: a 2-byte first line read whole into a 1-byte window
    layout=([(b"\x00", b"\n")], b"", False), max_bytes=1, block=1
)
@given(
    layout=_lines_strategy(),
    max_bytes=st.integers(0, 160),
    block=st.integers(1, 17),
)
def test_read_tail_lines_are_the_last_lines_a_forward_reader_sees(
    tmp_path: Path,
    layout: tuple[list[tuple[bytes, bytes]], bytes, bool],
    max_bytes: int,
    block: int,
) -> None:
    """The lines read back from the end are the forward reader's last k lines (data and
    offset), for any block size; [] when the last complete line does not fit in max_bytes;
    and the newest line is found whenever it fits with the newline before it."""
    lines, fragment, bom = layout
    content = (UTF8_BOM if bom else b"") + b"".join(body + end for body, end in lines) + fragment
    path = tmp_path / "file.jsonl"
    path.write_bytes(content)

    forward = [(line.data, line.offset) for line in TailReader(path).poll().lines]
    got = read_tail_lines(path, max_bytes, block=block)
    pairs = [(line.data, line.offset) for line in got]
    assert all(line.line_no == 0 for line in got)
    assert pairs == forward[len(forward) - len(pairs) :]

    last_nl = content.rfind(b"\n")
    if last_nl < 0:
        assert got == []  # no complete line at all
        return
    prev_nl = content.rfind(b"\n", 0, last_nl)
    first_start = len(UTF8_BOM) if content.startswith(UTF8_BOM) else 0
    line_start = prev_nl + 1 if prev_nl >= 0 else first_start
    last_line = content[line_start : last_nl + 1]  # with its line ending
    if len(last_line) > max_bytes:
        assert got == []  # the newest complete line cannot fit in the window
    # what a window must hold to see the newest line whole: from the newline before it
    # (or the file start) to the end of the file, trailing fragment included
    needed = len(content) - prev_nl if prev_nl >= 0 else len(content)
    if needed <= max_bytes and last_line.strip():
        assert pairs and pairs[-1] == forward[-1]


def test_read_tail_lines_small_cases(tmp_path: Path) -> None:
    """Missing file, no newline, a BOM, CRLF and a trailing fragment read as documented."""
    path = tmp_path / "f.jsonl"
    assert read_tail_lines(path, 100) == []  # no such file
    path.write_bytes(b"no newline yet")
    assert read_tail_lines(path, 100) == []
    path.write_bytes(UTF8_BOM + b"first\r\nsecond\npartial")
    got = read_tail_lines(path, 100)  # one block holds the whole file
    assert [(line.data, line.offset) for line in got] == [(b"first", 3), (b"second", 10)]
    # small blocks stop reading back once the window holds one whole line
    got = read_tail_lines(path, 100, block=2)
    assert [(line.data, line.offset) for line in got][-1] == (b"second", 10)
    assert read_tail_lines(path, 0) == []


def test_read_tail_lines_reads_only_a_bounded_window(tmp_path: Path) -> None:
    """With many lines, only the lines inside max_bytes from the end come back."""
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"".join(b"line %04d\n" % i for i in range(1000)))  # 10 bytes a line
    got = read_tail_lines(path, 35)
    # 35 bytes hold the newline ending line 996 and lines 997-999 whole
    assert [line.data for line in got] == [b"line 0997", b"line 0998", b"line 0999"]
    assert got[0].offset == 9970


def test_read_tail_lines_line_exactly_filling_the_window(tmp_path: Path) -> None:
    """A last line of max_bytes - 1 bytes plus its newline is not longer than max_bytes."""
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\n" + b"x" * 9 + b"\n")
    got = read_tail_lines(path, 10)
    assert [(line.data, line.offset) for line in got] == [(b"x" * 9, 2)]


# --------------------------------------------------------------------------- paging


def test_page_matches_groups_and_carries_line_info() -> None:
    """page(line) holds the same groups as groups(line), with that entry's LineInfo."""
    index = _index(RUN1)
    for line in range(len(index)):
        page = index.page(line)
        assert page is not None and not page.preview
        assert page.info == index.line_info(line)
        assert page.info.index == line
        assert _page_view(page) == [_group_view(g) for g in groups_of(index, line)]
        assert page.info.groups == len(page.groups)
    assert index.page(-1).info.index == len(index) - 1  # type: ignore[union-attr]


def test_page_of_an_empty_index_and_out_of_range(tmp_path: Path) -> None:
    """No entries: page() and newest_page() are None; a line out of range raises."""
    index = _index(tmp_path / "missing.jsonl")
    assert index.page(-1) is None
    assert index.newest_page() is None
    assert index.state().newest_entry is None
    other = _index(RUN1)
    with pytest.raises(IndexError):
        other.page(7)


def test_line_info_counts_groups_and_zero_spread_groups(tmp_path: Path) -> None:
    """LineInfo.groups counts prompt groups; the page says which are tied."""
    path = tmp_path / "completions.jsonl"
    line = _line(
        1,
        [
            ("A", ["a1", "a2"], [1.0, 1.0]),  # tied
            ("B", ["b1", "b2"], [0.0, 1.0]),
            ("C", ["c1", "c2", "c3"], [0.0, 0.0, 0.0]),  # tied
            ("D", ["d1", "d2"], [None, 1.0]),  # one known total: no tie
        ],
    )
    _write(path, [line])
    index = _index(path)
    info = index.line_info(0)
    assert info.groups == 4
    page = index.page(0)
    assert page is not None
    assert [g.zero_spread for g in page.groups] == [True, False, True, False]


def test_megatron_ray_line_info_groups_unknown_until_tallied(tmp_path: Path) -> None:
    """A Megatron-Ray batch that may still grow is tallied when its page is asked for."""
    path = tmp_path / "completions.jsonl"
    _write(path, _ray_rows(1, 4) + _ray_rows(2, 6))
    index = _index(path)
    assert len(index) == 2
    assert index.line_info(0).groups == 2  # finished by the batch after it
    assert index.line_info(1).groups is None  # the newest batch can still grow
    page = index.page(1)
    assert page is not None
    assert page.info.groups == 2 and page.info.rows == 6
    assert index.line_info(1).groups == 2


def test_newest_page_of_a_small_file_is_the_indexed_last_entry() -> None:
    """Below PREVIEW_FROM_BYTES nothing is previewed: newest_page() is page(-1)."""
    index = CompletionsIndex(RUN1)
    assert not index.state().previewing
    index.poll(max_bytes=1)
    assert not index.state().previewing  # one line in, no preview of a small file
    index.poll()
    newest = index.newest_page()
    assert newest is not None and not newest.preview
    assert newest.info.index == len(index) - 1
    assert _page_view(newest) == _page_view(index.page(-1))  # type: ignore[arg-type]


def test_progress_reports_bytes_indexed_and_file_size() -> None:
    """progress is (bytes indexed, file size): growing per poll, equal at the end."""
    size = RUN1.stat().st_size
    index = CompletionsIndex(RUN1)
    seen: list[int] = []
    while True:
        index.poll(max_bytes=1)
        done, total = index.state().progress
        assert total == size
        seen.append(done)
        if not index.more:
            break
    assert seen == sorted(seen) and len(set(seen)) == len(seen) == 7
    assert index.state().progress == (size, size)


# --------------------------------------------------------------------------- preview


@pytest.fixture
def preview_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as big enough for a preview."""
    monkeypatch.setattr(batches_module, "PREVIEW_FROM_BYTES", 1)


@pytest.mark.usefixtures("preview_everything")
def test_preview_shows_the_newest_batch_until_the_index_reaches_it(tmp_path: Path) -> None:
    """A big file's first poll previews its last line; polls with a small max_bytes keep the
    preview until they read past it; the preview's groups are the indexed last entry's."""
    path = tmp_path / "completions.jsonl"
    shutil.copy(RUN1, path)
    size = path.stat().st_size
    index = CompletionsIndex(path)
    index.poll(max_bytes=1)
    assert index.state().previewing and len(index) == 1
    preview = index.newest_page()
    assert preview is not None and preview.preview
    assert preview.info.step == "6" and preview.info.rows == 8
    assert preview.info.groups == len(preview.groups) == 2
    polls = 1
    while index.more:
        assert index.state().previewing
        assert index.newest_page() is preview
        assert index.state().progress[0] < size
        index.poll(max_bytes=1)
        polls += 1
    assert polls == 7  # one line per poll: the preview lasted until the last line
    assert not index.state().previewing
    newest = index.newest_page()
    assert newest is not None and not newest.preview
    assert newest.info.index == 6
    assert _page_view(preview) == _page_view(newest)


@pytest.mark.usefixtures("preview_everything")
def test_preview_ends_in_a_poll_without_max_bytes(tmp_path: Path) -> None:
    """A poll that reads everything indexes the previewed batch too: no preview is left."""
    path = tmp_path / "completions.jsonl"
    shutil.copy(RUN2, path)
    index = _index(path)
    assert not index.state().previewing
    page = index.newest_page()
    assert page is not None and not page.preview


@pytest.mark.usefixtures("preview_everything")
def test_preview_ignores_a_trailing_fragment(tmp_path: Path) -> None:
    """The preview is the last complete line; the fragment being written is not a batch."""
    path = tmp_path / "completions.jsonl"
    shutil.copy(RUN2, path)
    with open(path, "ab") as handle:
        handle.write(b'{"step": ["9"], "prompt": ["half')
    index = CompletionsIndex(path)
    index.poll(max_bytes=1)
    preview = index.newest_page()
    assert preview is not None and preview.preview and preview.info.step == "4"
    index.poll()
    assert not index.state().previewing  # the index reached the previewed line's end
    assert _page_view(preview) == _page_view(index.page(-1))  # type: ignore[arg-type]


@pytest.mark.usefixtures("preview_everything")
def test_preview_of_megatron_ray_rows_is_the_whole_last_gen_step(tmp_path: Path) -> None:
    """Row-oriented Megatron-Ray lines: the preview holds every row of the last gen_step."""
    path = tmp_path / "completions.jsonl"
    _write(path, _ray_rows(1, 5) + _ray_rows(2, 3) + _ray_rows(3, 7))
    index = CompletionsIndex(path)
    index.poll(max_bytes=1)
    preview = index.newest_page()
    assert preview is not None and preview.preview
    assert preview.info.shape == "ray"
    assert preview.info.rows == 7 and preview.info.steps == ("3",)
    assert sum(group.size for group in preview.groups) == 7
    assert {group.prompt for group in preview.groups} == {"prompt 0", "prompt 1"}
    index.poll()
    assert not index.state().previewing
    assert len(index) == 3
    assert _page_view(preview) == _page_view(index.page(-1))  # type: ignore[arg-type]


@pytest.mark.usefixtures("preview_everything")
def test_neighbour_before_the_preview_is_the_newest_indexed_entry(tmp_path: Path) -> None:
    """`current` None stands for the preview: going back lands on the newest indexed entry,
    going forward finds nothing."""
    path = tmp_path / "completions.jsonl"
    shutil.copy(RUN1, path)
    index = CompletionsIndex(path)
    index.poll(max_bytes=1)
    index.poll(max_bytes=1)
    assert index.state().previewing and len(index) == 2
    assert index.neighbour(None, forward=False) == 1
    assert index.neighbour(None, forward=True) is None


# --------------------------------------------------------------------------- navigation


def test_newest_entry_skips_verbatim_repeats() -> None:
    """The newest entry worth showing is the last one that is not a repeat."""
    run1 = _index(RUN1)
    assert run1.line_info(6).kind == "repeat"
    assert run1.state().newest_entry == 5  # the eval line of step 6 is shown
    run2 = _index(RUN2)
    assert [run2.line_info(i).kind for i in range(5)] == [
        "new",
        "repeat",
        "new",
        "repeat",
        "repeat",
    ]
    assert run2.state().newest_entry == 2


def test_neighbour_skips_repeats_both_ways() -> None:
    """neighbour() steps over repeat entries forwards and backwards, None at the ends."""
    index = _index(RUN2)
    assert index.neighbour(0, forward=True) == 2
    assert index.neighbour(2, forward=True) is None
    assert index.neighbour(2, forward=False) == 0
    assert index.neighbour(0, forward=False) is None
    assert index.neighbour(None, forward=False) == 2
    run1 = _index(RUN1)
    order = [4]
    while (following := run1.neighbour(order[-1], forward=False)) is not None:
        order.append(following)
    assert order == [4, 3, 2, 1, 0]


def test_neighbour_zero_spread_only_finds_entries_with_a_tied_group(tmp_path: Path) -> None:
    """With zero_spread_only, only entries holding a group of equal totals are visited
    (and repeats still are not)."""
    tied = _line(4, [("T", ["t1", "t2"], [1.0, 1.0]), ("U", ["u1", "u2"], [0.0, 1.0])])
    records = [
        _line(1, [("A", ["a1", "a2"], [0.0, 0.0])]),
        _line(2, [("B", ["b1", "b2"], [0.0, 1.0])]),
        _line(3, [("C", ["c1", "c2"], [1.0, 0.5])]),
        tied,
        tied,  # the end-of-train repeat
        _line(5, [("E", ["e1", "e2"], [0.2, 0.3])]),
    ]
    path = tmp_path / "completions.jsonl"
    _write(path, records)
    index = _index(path)
    assert index.line_info(4).kind == "repeat"
    assert index.neighbour(None, forward=False, zero_spread_only=True) == 3
    assert index.neighbour(3, forward=False, zero_spread_only=True) == 0
    assert index.neighbour(0, forward=False, zero_spread_only=True) is None
    assert index.neighbour(0, forward=True, zero_spread_only=True) == 3
    assert index.neighbour(3, forward=True, zero_spread_only=True) is None
    assert index.neighbour(3, forward=True) == 5
    for entry in (0, 3):
        assert sum(group.zero_spread for group in groups_of(index, entry)) == 1


# --------------------------------------------------------------------------- search


def _search_file(tmp_path: Path) -> CompletionsIndex:
    path = tmp_path / "completions.jsonl"
    _write(
        path,
        [
            _line(
                1,
                [
                    ("Alpha question", ["the Needle is here", "nothing"], [1.0, 0.0]),
                    ("Beta question", ["plain", "plain too"], [0.0, 1.0]),
                ],
            ),
            _line(
                2,
                [
                    ("Gamma", ["foo", "bar"], [1.0, 0.0]),
                    ("Delta", ["NEEDLE again", "baz"], [0.0, 1.0]),
                ],
            ),
            _line(3, [("Epsilon", ["x", "y"], [1.0, 0.0]), ("Zeta", ["z", "w"], [0.0, 1.0])]),
        ],
    )
    return _index(path)


def test_search_is_case_insensitive_in_completions_and_prompts(tmp_path: Path) -> None:
    """search() finds text in completions and prompts whatever its case, newest first."""
    index = _search_file(tmp_path)
    hit = index.search("needle", 2)
    assert (hit.entry, hit.group) == (1, 1)
    assert hit.searched == 2 and not hit.exhausted
    hit = index.search("ALPHA", 2)
    assert (hit.entry, hit.group) == (0, 0)  # a prompt match
    hit = index.search("nEeDlE", 0, backwards=False)
    assert (hit.entry, hit.group) == (0, 0)


def test_search_direction_orders_groups_inside_an_entry(tmp_path: Path) -> None:
    """Backwards, the later of two matching groups comes first; forwards, the earlier."""
    index = _search_file(tmp_path)
    assert index.search("question", 0).group == 1
    assert index.search("question", 0, backwards=False).group == 0


def test_search_after_group_applies_to_the_start_entry_only(tmp_path: Path) -> None:
    """after_group skips the current group and those already passed in the start entry."""
    index = _search_file(tmp_path)
    # backwards from group 1 of entry 1: group 0 ("Gamma") has no needle, entry 0 has
    hit = index.search("needle", 1, after_group=1)
    assert (hit.entry, hit.group) == (0, 0)
    # the start entry's own match at group 1 is skipped when it is the current group
    hit = index.search("needle", 1, after_group=1, backwards=False)
    assert (hit.entry, hit.group) == (None, None) and hit.exhausted
    # forwards from group 0 of entry 0: group 1 has none, entry 1 group 1 has
    hit = index.search("needle", 0, after_group=0, backwards=False)
    assert (hit.entry, hit.group) == (1, 1)
    # in a later entry every group counts again (entry 0, group 1 for "question")
    hit = index.search("question", 1, after_group=0)
    assert (hit.entry, hit.group) == (0, 1)


def test_search_without_match_is_exhausted(tmp_path: Path) -> None:
    """Nothing found after every entry in the direction: exhausted, all entries counted."""
    index = _search_file(tmp_path)
    hit = index.search("absent", 2)
    assert (hit.entry, hit.group, hit.searched, hit.exhausted) == (None, None, 3, True)
    hit = index.search("absent", 1, backwards=False)
    assert (hit.entry, hit.searched, hit.exhausted) == (None, 2, True)


def test_search_stops_on_its_time_budget(tmp_path: Path) -> None:
    """A budget used up after one entry stops there and says the search is not exhausted."""
    index = _search_file(tmp_path)
    hit = index.search("absent", 2, time_budget=0.0)
    assert (hit.entry, hit.group, hit.searched, hit.exhausted) == (None, None, 1, False)
    # a match in the first entry searched is still reported
    hit = index.search("needle", 1, time_budget=0.0)
    assert (hit.entry, hit.group) == (1, 1)


def test_search_that_reached_the_oldest_entry_is_exhausted_even_out_of_time(
    tmp_path: Path,
) -> None:
    """Searching back from entry 0 covers every entry there is: exhausted, whatever the time."""
    index = _search_file(tmp_path)
    hit = index.search("absent", 0, time_budget=0.0)
    assert hit.searched == 1
    assert hit.exhausted


# --------------------------------------------------------------------------- summary revision


def test_summary_revision_changes_when_earlier_steps_are_rejudged(tmp_path: Path) -> None:
    """A new highest total turns an earlier tied group into all-fail: the revision changes;
    a line that re-judges nothing keeps it."""
    path = tmp_path / "completions.jsonl"
    _write(path, [_line(1, [("A", ["a", "b"], [0.5, 0.5])])])
    index = _index(path)
    first = index.summary()
    assert first.steps[0].zero_spread_all_fail == 0.0  # one value seen: no bottom yet
    _write(path, [_line(2, [("B", ["c", "d"], [0.5, 1.0])])], mode="a")
    index.poll()
    second = index.summary()
    assert second.revision != first.revision
    assert second.steps[0].zero_spread_all_fail == 1.0
    _write(path, [_line(3, [("C", ["e", "f"], [0.625, 0.875])])], mode="a")
    index.poll()
    third = index.summary()
    assert third.revision == second.revision
    assert [s.step for s in third.steps] == [1.0, 2.0, 3.0]


def test_summary_revision_changes_when_the_file_starts_over(tmp_path: Path) -> None:
    """A truncated and rewritten file makes every earlier summary stale."""
    path = tmp_path / "completions.jsonl"
    _write(path, [_line(1, [("A", ["a", "b"], [0.0, 1.0])]), _line(2, [("B", ["c"], [1.0])])])
    source = batches_module.JsonlBatches(path)
    restarts = restarts_of(source)
    index = _index(path, source=source)
    before = index.summary()
    _write(path, [_line(1, [("Z", ["z", "y"], [0.0, 1.0])])])
    index.poll()
    after = index.summary()
    assert len(restarts) == 1
    assert after.revision != before.revision
    assert len(after.steps) == 1


# --------------------------------------------------------------------------- sample series


def _stats(step: float, **overrides: float | None) -> StepSampleStats:
    values: dict[str, object] = {
        "step": step,
        "groups": 2,
        "completions": 8,
        "zero_spread_fraction": 0.5,
        "zero_spread_all_fail": 0.25,
        "zero_spread_all_pass": 0.25,
        "distinct_2": 0.8,
        "pairwise_overlap": 0.1,
        "format_rate": 0.75,
        "truncated_rate": 0.125,
        "repetition": 0.05,
    }
    values.update(overrides)
    return StepSampleStats(**values)  # type: ignore[arg-type]


def test_sample_series_names_and_sources() -> None:
    """Every series is a distinct `samples/` metric reading its own statistic."""
    assert tuple(SAMPLE_SERIES) == SAMPLE_METRICS
    assert len(set(SAMPLE_METRICS)) == len(SAMPLE_METRICS)
    assert all(name.startswith("samples/") for name in SAMPLE_METRICS)
    stats = _stats(
        3.0,
        format_rate=0.1,
        zero_spread_all_fail=0.2,
        zero_spread_all_pass=0.3,
        distinct_2=0.4,
        pairwise_overlap=0.5,
        repetition=0.6,
        truncated_rate=0.7,
        one_token=0.8,
    )
    assert sample_values(stats) == {
        "samples/format_ok": 0.1,
        "samples/all_fail": 0.2,
        "samples/all_pass": 0.3,
        "samples/distinct_2": 0.4,
        "samples/overlap_3gram": 0.5,
        "samples/repetition": 0.6,
        "samples/cut_off": 0.7,
        "samples/one_token": 0.8,
    }


def test_sample_values_leave_out_unknown_values() -> None:
    """None (no format known) and NaN (no pair to compare) are not values: left out."""
    stats = _stats(1.0, format_rate=None, truncated_rate=None, pairwise_overlap=math.nan)
    values = sample_values(stats)
    assert "samples/format_ok" not in values
    assert "samples/cut_off" not in values
    assert "samples/overlap_3gram" not in values
    assert values["samples/distinct_2"] == 0.8
    assert all(math.isfinite(v) for v in values.values())


def _store(*rows: tuple[LineKind, float]) -> MetricStore:
    store = MetricStore()
    for kind, step in rows:
        store.add(Record(kind, step, {"reward": 0.5}))
    return store


def _value_at(store: MetricStore, name: str, kind: LineKind, step: float) -> float:
    rows = np.flatnonzero((store.steps == step) & (store.kinds == kind))
    assert rows.size == 1
    return float(store.column(name)[rows[0]])


def _summary(*steps: StepSampleStats, revision: int = 1) -> CompletionsSummary:
    return CompletionsSummary(lines=len(steps), steps=steps, revision=revision)


def test_step_columns_build_steps_on_access() -> None:
    """A summary keeps its steps as columns; a step is built when looked at, the same
    whether the rows sit in one block or several."""
    stats = [
        _stats(float(i), distinct_2=i / 10, format_rate=None if i == 2 else 0.5) for i in range(5)
    ]
    summary = CompletionsSummary(lines=5, steps=tuple(stats))
    steps = summary.columns
    assert summary.steps is steps and len(steps) == 5
    assert list(steps) == stats and steps[-1] == stats[-1] and steps[2].format_rate is None
    assert steps == StepColumns.of(stats) and steps != StepColumns.of(stats[:4])
    assert list(steps[1:4]) == stats[1:4] and list(steps[::-2]) == stats[::-2]
    assert steps.column("distinct_2").tolist() == [0.0, 0.1, 0.2, 0.3, 0.4]
    assert np.isnan(steps.column("format_rate")[2])
    assert list(steps.upto(2.0)) == stats[:3] and len(steps.upto(-1.0)) == 0
    with pytest.raises(IndexError):
        steps[5]
    chosen = StepColumns(steps.matrix(), np.array([0, 2, 4]))  # rows of a shared matrix
    assert list(chosen) == stats[::2] and chosen[1] == stats[2] and chosen[-1] == stats[4]
    assert list(chosen[1:]) == stats[2::2] and list(chosen.upto(2.0)) == stats[:3:2]
    assert chosen.column("step").tolist() == [0.0, 2.0, 4.0]
    assert len(CompletionsSummary(lines=0, steps=()).steps) == 0


def test_placer_leaves_an_unchanged_step_with_unknown_values_alone() -> None:
    """A step built again from the columns, NaN where it has no value, is the same step:
    not written again."""
    store = _store((LineKind.TRAIN, 1.0))
    placer = SamplePlacer()
    assert placer.place(_summary(_stats(1.0, pairwise_overlap=float("nan"))), store)
    assert not placer.place(_summary(_stats(1.0, pairwise_overlap=float("nan"))), store)
    assert placer.place(_summary(_stats(1.0, pairwise_overlap=0.5)), store)


def test_placer_writes_each_step_into_the_train_row_covering_it() -> None:
    """A step goes into the first train row at or after it (a metrics line averages the
    steps since the previous one); eval rows get nothing."""
    store = _store(
        (LineKind.TRAIN, 2.0), (LineKind.TRAIN, 4.0), (LineKind.EVAL, 4.0), (LineKind.TRAIN, 6.0)
    )
    summary = _summary(
        _stats(1.0, distinct_2=0.1),
        _stats(2.0, distinct_2=0.2),
        _stats(3.0, distinct_2=0.3),
        _stats(5.0, distinct_2=0.5),
    )
    placer = SamplePlacer()
    assert placer.place(summary, store)
    assert placer.placed == 4
    name = "samples/distinct_2"
    # steps 1 and 2 share the row of step 2: the later step's value is what stays
    assert _value_at(store, name, LineKind.TRAIN, 2.0) == 0.2
    assert _value_at(store, name, LineKind.TRAIN, 4.0) == 0.3
    assert _value_at(store, name, LineKind.TRAIN, 6.0) == 0.5
    assert math.isnan(_value_at(store, name, LineKind.EVAL, 4.0))
    assert not placer.place(summary, store)  # nothing new: nothing written


def test_placer_waits_for_the_train_row_and_keeps_order() -> None:
    """A step beyond the last train row waits, and so do the steps after it."""
    store = _store((LineKind.TRAIN, 1.0), (LineKind.TRAIN, 5.0))
    summary = _summary(_stats(1.0), _stats(5.0), _stats(7.0), _stats(9.0, repetition=0.9))
    placer = SamplePlacer()
    assert placer.place(summary, store)
    assert placer.placed == 2
    store.add(Record(LineKind.TRAIN, 10.0, {"reward": 0.1}))
    assert placer.place(summary, store)
    assert placer.placed == 4
    # steps 7 and 9 both wait for, then go into, the row of step 10 (9 is the later)
    assert _value_at(store, "samples/repetition", LineKind.TRAIN, 10.0) == 0.9
    assert not placer.place(None, store)


def test_placer_replaces_everything_on_a_new_revision() -> None:
    """A new summary revision (earlier steps re-judged) rewrites the values already placed."""
    store = _store((LineKind.TRAIN, 1.0), (LineKind.TRAIN, 2.0))
    placer = SamplePlacer()
    placer.place(_summary(_stats(1.0), _stats(2.0), revision=1), store)
    rejudged = _summary(
        _stats(1.0, zero_spread_all_fail=1.0), _stats(2.0, zero_spread_all_fail=0.5), revision=2
    )
    assert placer.place(rejudged, store)
    assert _value_at(store, "samples/all_fail", LineKind.TRAIN, 1.0) == 1.0
    assert _value_at(store, "samples/all_fail", LineKind.TRAIN, 2.0) == 0.5
    # the same revision again: an earlier step is not rewritten (only a new revision
    # re-judges earlier steps; the newest placed one is rewritten when it grew)
    changed_silently = _summary(
        _stats(1.0, zero_spread_all_fail=0.0), _stats(2.0, zero_spread_all_fail=0.5), revision=2
    )
    assert not placer.place(changed_silently, store)
    assert _value_at(store, "samples/all_fail", LineKind.TRAIN, 1.0) == 1.0


def test_placer_replaces_everything_when_the_store_dropped_rows() -> None:
    """A resumed run re-logs steps: the store drops rows and the placer places again."""
    store = _store((LineKind.TRAIN, 1.0), (LineKind.TRAIN, 2.0), (LineKind.TRAIN, 3.0))
    summary = _summary(_stats(1.0), _stats(2.0, distinct_2=0.2), _stats(3.0, distinct_2=0.3))
    placer = SamplePlacer()
    placer.place(summary, store)
    assert placer.placed == 3
    store.add(Record(LineKind.TRAIN, 2.0, {"reward": 0.9}))  # the run resumed at step 2
    assert store.replaced_rows == 2
    assert math.isnan(_value_at(store, "samples/distinct_2", LineKind.TRAIN, 2.0))
    assert placer.place(summary, store)
    assert _value_at(store, "samples/distinct_2", LineKind.TRAIN, 2.0) == 0.2
    assert placer.placed == 2  # step 3 waits for its train row again


def test_annotate_finds_the_covering_train_row_among_out_of_order_rows() -> None:
    """The first train row at or after a step, even when a late eval row broke step order."""
    store = _store(
        (LineKind.TRAIN, 2.0), (LineKind.TRAIN, 4.0), (LineKind.EVAL, 3.0), (LineKind.TRAIN, 6.0)
    )
    assert list(store.steps) == [2.0, 4.0, 3.0, 6.0]  # the eval row came late
    assert store.annotate(4.0, {"samples/repetition": 0.4})
    assert _value_at(store, "samples/repetition", LineKind.TRAIN, 4.0) == 0.4
    assert math.isnan(_value_at(store, "samples/repetition", LineKind.TRAIN, 6.0))


def test_placed_values_follow_a_batch_that_grew_after_placement(tmp_path: Path) -> None:
    """The store's samples/ values of a step match the step's final statistics."""
    path = tmp_path / "completions.jsonl"
    rows = [
        {"gen_step": 1, "prompt": "p", "completion": text, "reward": reward}
        for text, reward in [
            ("a b c d", 0.0),
            ("e f g h", 1.0),
            ("x x x x x x x x", 0.0),
            ("x x x x x x x x", 1.0),
        ]
    ]
    _write(path, rows[:2])  # the reader caught the batch half written
    index = _index(path)
    store = _store((LineKind.TRAIN, 1.0))
    placer = SamplePlacer()
    assert placer.place(index.summary(), store)
    _write(path, rows[2:], mode="a")
    index.poll()
    final = index.summary()
    placer.place(final, store)
    assert final.steps[0].completions == 4
    for name, value in sample_values(final.steps[0]).items():
        assert _value_at(store, name, LineKind.TRAIN, 1.0) == pytest.approx(value), name


# --------------------------------------------------------------------------- end to end


def _samples_by_train_step(
    tmp_path: Path, scenario: str
) -> tuple[MetricStore, dict[float, dict[str, float]]]:
    write_run(tmp_path, scenario, max_steps=100)
    run = load_run(tmp_path)
    assert run.samples is not None and run.samples.steps
    expected = {stats.step: sample_values(stats) for stats in run.samples.steps}
    return run.store, expected


def test_simulated_run_places_sample_metrics_at_its_train_steps(tmp_path: Path) -> None:
    """load_run of a simulated run: every logged step's samples/ values sit in the train
    row of that step, eval rows hold none, and low diversity shows as high overlap."""
    store, expected = _samples_by_train_step(tmp_path / "low", "low_diversity")
    train = store.kinds == LineKind.TRAIN
    assert set(expected) <= set(store.steps[train].tolist())
    for name in ("samples/overlap_3gram", "samples/distinct_2", "samples/repetition"):
        assert name in store.names()
        column = store.column(name)
        assert not np.isfinite(column[~train]).any()
        for step, values in expected.items():
            assert _value_at(store, name, LineKind.TRAIN, step) == pytest.approx(values[name])
    _, healthy = _samples_by_train_step(tmp_path / "healthy", "healthy")
    # near-identical completions (the low-diversity scenario) overlap more than a healthy run's
    low_overlap = np.mean([v["samples/overlap_3gram"] for v in expected.values()])
    healthy_overlap = np.mean([v["samples/overlap_3gram"] for v in healthy.values()])
    assert low_overlap > healthy_overlap


def test_simulated_healthy_run_format_rate_is_a_fraction(tmp_path: Path) -> None:
    """samples/format_ok of a healthy simulated run is logged and lies within [0, 1]."""
    store, expected = _samples_by_train_step(tmp_path, "healthy")
    points = store.points("samples/format_ok")
    assert len(points) == len(expected) > 0
    assert np.all((points.values >= 0.0) & (points.values <= 1.0))
    for name in ("samples/all_fail", "samples/all_pass", "samples/cut_off"):
        values = store.points(name).values
        assert np.all((values >= 0.0) & (values <= 1.0)), name
