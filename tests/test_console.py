"""Console logs (`python train.py 2>&1 | tee train.log`): real TRL / Unsloth / open-r1 output.

The fixtures are real console output pasted in public issues and kept by real runs (each
with its .source.txt); the corpus console logs are whole real runs whose expert labels the
diagnosis must meet from the console alone.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from helpers import block_records
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.sources.console import ConsoleReader, console_lines
from grpo_tui.sources.discover import discover
from grpo_tui.sources.feed import RunFeed
from grpo_tui.sources.formats.console import ConsoleParser, looks_like_console, redraw_states

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
from diagnosis import label_problems, labelled_runs  # type: ignore[import-not-found]

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = Path(__file__).parent / "corpus"
TF5 = FIXTURES / "trl" / "trl_transformers5_console_steps1-8.log"
WRAPPED = FIXTURES / "unsloth" / "unsloth_tf5_mode_collapse_terminal_wrapped.log"
OPENR1 = FIXTURES / "open-r1" / "openr1_issue255_trl0.14.log"
LOCAL_TRL = FIXTURES / "trl" / "local-run-trl1.16.0-tf5.20.0_console.log"
LEGACY = FIXTURES / "trl" / "trl_issue3452_legacy_0.14-0.16.log"
VANILLA = CORPUS / "trl-qwen7b-gsm8k-vanilla-s43" / "console.log"


def read(path: Path) -> tuple[list[float], dict[str, list[float]]]:
    """Train steps and every metric of a console log, read whole."""
    run = load_run(path)
    store = run.store
    return list(store.points("reward").steps), {
        name: list(store.points(name).values) for name in store.names()
    }


# -- what is read -------------------------------------------------------------------------


def test_transformers5_string_values_are_numbers() -> None:
    """transformers 5 prints '%.4g' strings: they are the values, with their steps."""
    steps, metrics = read(TF5)
    assert steps == [1, 2, 3, 4, 5, 6, 7, 8]
    assert metrics["loss"][0] == pytest.approx(0.06166)
    assert metrics["completion_length"][0] == pytest.approx(57.62)  # completions/mean_length
    assert metrics["clipped_ratio"][:2] == pytest.approx([0.875, 1.0])
    assert metrics["frac_reward_zero_std"][0] == 0


def test_terminal_wrapped_dicts_glued_to_the_progress_bar() -> None:
    """A tmux capture wrapped each dict over many lines, glued to tqdm's `51/400 [...]`;
    the paste holds step 51, then steps 18-19 of a relaunched run (the bar went back:
    those count on)."""
    run = load_run(WRAPPED)
    assert run.framework == "Unsloth (TRL console log)"  # completion_length beside completions/*
    points = run.store.points("frac_reward_zero_std")
    assert points.steps[0] == 51 and points.values[0] == 1
    assert run.store.points("kl").values[0] == pytest.approx(1.098)
    assert run.max_steps == 400
    assert run.bad_line_count == 0


def test_trl_014_floats_and_rewards_per_function() -> None:
    """Line 3 is cut off at the right edge (the paste): its whole values are read, and
    the line is counted bad."""
    steps, metrics = read(OPENR1)
    assert steps == [1, 2, 3]
    assert metrics["rewards/accuracy_reward/mean"][2] == pytest.approx(0.06428571762517095)
    run = load_run(OPENR1)
    assert run.framework == "open-r1 (TRL console log)"
    assert run.bad_line_count == 1 and "cut off" in run.bad_lines[0].reason
    assert metrics["rewards/accuracy_reward/mean"][0] == pytest.approx(0.15982143627479672)
    assert metrics["completion_length"][0] == pytest.approx(387.50359020233157)


def test_progress_bar_gives_steps_and_the_end_line_finishes() -> None:
    """A real TRL 1.16 run (num_iterations=2: rollout metrics only on generation steps),
    with a nested eval bar and cursor-up escapes: the steps its trainer_state.json says."""
    run = load_run(LOCAL_TRL)
    assert list(run.store.points("loss").steps) == [1, 2, 3, 4, 5, 6]
    assert list(run.store.points("reward").steps) == [1, 3, 5]
    assert list(run.store.points("eval_loss").steps) == [3, 6]
    assert run.max_steps == 6
    assert run.finished  # the train_runtime dict


def test_buffered_stdout_takes_the_steps_the_bars_marked() -> None:
    """Piped stdout is block-buffered: a run's dicts come out in bursts after many bars.
    The bar HF redraws at the same N when it writes a dict marks the logged steps (every
    5th here), whatever the bar says when the burst comes."""
    run = load_run(VANILLA)
    steps = list(run.store.points("reward").steps)
    assert steps == [float(s) for s in range(5, 201, 5)]
    assert run.max_steps == 200


def test_legacy_dicts_without_progress_are_counted() -> None:
    steps, metrics = read(LEGACY)
    assert steps == [1, 2, 3, 4]
    assert metrics["reward"][0] == pytest.approx(1.7171093285083772)


@pytest.mark.parametrize(
    ("name", "label"),
    [(n, label) for n, label in labelled_runs(CORPUS) if (CORPUS / n / "console.log").exists()],
)
def test_corpus_console_logs_meet_their_labels(name: str, label: dict[str, object]) -> None:
    """The expert's reading of each real run holds when only its console log is read."""
    run = load_run(CORPUS / name / "console.log")
    assert len(run.store) > 20
    assert label_problems(diagnose(run, Rules()), label) == []


# -- the parser ---------------------------------------------------------------------------


def test_nan_inf_none_and_wrapped_numbers() -> None:
    parser = ConsoleParser()
    line = (
        "{'loss': nan, 'grad_norm': inf, 'reward': np.float64(0.5), 'kl': -inf, "
        "'learning_rate': None, 'entropy': 'nan', 'clip_ratio': '+inf', 'big': '1e999'}"
    )
    (found,) = list(parser.feed(line, 1))
    values = found.values
    assert math.isnan(values["loss"]) and values["grad_norm"] == math.inf
    assert values["reward"] == 0.5 and values["kl"] == -math.inf
    assert "learning_rate" not in values  # None: not logged
    assert math.isnan(values["entropy"])
    # spelt as the JSON lines reader reads it (values.wrapped_number); a number too big
    # for a float is not infinity, and stays the text it was
    assert values["clip_ratio"] == math.inf and values["big"] == "1e999"


def test_ansi_colours_and_other_dicts_are_ignored() -> None:
    lines = [
        "\x1b[32mINFO\x1b[0m {'model': 'Qwen', 'lr': 1e-5}",  # a config dict, not a log line
        "\x1b[1m{'loss': 0.5, 'reward': 1.0}\x1b[0m",
    ]
    # the reader strips the terminal codes before its parser sees a line
    batch = ConsoleReader("train.log").read_chunk("\n".join([*lines, ""]).encode())
    records = [record for block in batch.blocks for record in block_records(block)]
    assert [record.values["reward"] for record in records] == [1.0]
    assert looks_like_console(lines[1]) and not looks_like_console(lines[0])


def test_a_broken_dict_is_counted_not_fatal() -> None:
    reader = ConsoleReader("train.log")
    batch = reader.read_chunk(b"{'loss': 0.1, 'reward': )}\n{'loss': 0.2, 'reward': 1.0}\n")
    assert batch.rows() == 1
    assert len(batch.bad_lines) == 1 and batch.bad_lines[0].line_no == 1


CONSOLE_TEXT = (
    b"Loading checkpoint shards: 100%|##########| 4/4 [00:03<00:00]\r\n"
    b"  0%|          | 0/8 [00:00<?, ?it/s]\r 12%|#2        | 1/8 [00:03<00:21, 3.1s/it]"
    b"\r                                    \r{'loss': '0.06166', 'reward': '0.6042', "
    b"'reward_std': '1.077', 'frac_reward_zero_std': '0'}\n"
    b"\r 12%|#2        | 1/8 [00:03<00:21, 3.1s/it]\r 25%|##5       | 2/8 [00:06<00:18]"
    b"{'loss': '-2.98e-08',\n  'reward': '0.25', 'reward_std':\n  '0.5', "
    b"'frac_reward_zero_std': '0.5'}\n"
    b"{'eval_loss': 0.1, 'eval_reward': 0.3}\n"
    b"{'train_runtime': 20.5, 'train_loss': 0.01, 'epoch': 1.0}\n"
)


def _rows(chunks: list[bytes], tmp_path: Path) -> list[tuple[int, float, float]]:
    """(kind, step, reward) of every row, the file written in `chunks` and tailed live."""
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    feed = RunFeed(log)
    rows: list[tuple[int, float, float]] = []
    for chunk in [*chunks, b""]:
        with open(log, "ab") as handle:
            handle.write(chunk)
        feed.wake()
        while True:
            batch, more = feed.read()
            for block in batch.blocks:
                for i in range(len(block)):
                    record = block.record(i)
                    value = record.values.get("reward", record.values.get("eval_reward"))
                    rows.append(
                        (int(record.kind), record.step, math.nan if value is None else value)
                    )
            if not more:
                break
    return rows


def test_a_console_log_tailed_live(tmp_path: Path) -> None:
    rows = _rows([CONSOLE_TEXT], tmp_path)
    assert [(step, reward) for _, step, reward in rows if not math.isnan(reward)] == [
        (1.0, 0.6042),
        (2.0, 0.25),
        (2.0, 0.3),
    ]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(CONSOLE_TEXT) - 1), max_size=12))
def test_pieces_arriving_at_any_byte_read_the_same(
    tmp_path_factory: pytest.TempPathFactory, cuts: list[int]
) -> None:
    """tqdm redraws and dicts arrive in pieces while the file grows: wherever the writes
    are cut, the rows are those of the whole file."""
    points = sorted(set(cuts))
    chunks = [
        CONSOLE_TEXT[a:b] for a, b in zip([0, *points], [*points, len(CONSOLE_TEXT)], strict=True)
    ]
    whole = _rows([CONSOLE_TEXT], tmp_path_factory.mktemp("whole"))
    assert _rows(chunks, tmp_path_factory.mktemp("pieces")) == whole


# -- discovery ----------------------------------------------------------------------------


def test_a_console_log_of_any_name_is_found_by_its_content(tmp_path: Path) -> None:
    nohup = tmp_path / "nohup.out"
    nohup.write_bytes(CONSOLE_TEXT)
    assert discover(nohup).reading == "console"
    odd = tmp_path / "run-output"
    odd.write_bytes(b"warming up\n" * 10 + CONSOLE_TEXT)
    assert discover(odd).reading == "console"
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "train.log").write_bytes(CONSOLE_TEXT)
    layout = discover(folder)
    assert (layout.reading, layout.metrics_file) == ("console", folder / "train.log")
    # a file of another name and content is not taken for one
    plain = tmp_path / "metrics"
    plain.write_bytes(b'{"loss": 0.1, "step": 1}\n')
    assert discover(plain).reading == "jsonl"


def test_rediscovery_does_not_read_a_known_console_log_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PATH is re-resolved every few seconds: a file found to be a console log is not read
    again while it grows, and one that is not is looked at again only when it changed."""
    import grpo_tui.sources.formats.layout as layout

    reads: list[Path] = []
    sniff = layout._head_and_tail

    def counted(path: Path) -> tuple[bytes, ...]:
        reads.append(path)
        return sniff(path)

    # one read serves every console adapter's test of the same file and size
    monkeypatch.setattr(layout, "_head_and_tail", counted)
    log = tmp_path / "run-output"
    log.write_bytes(b"loading...\n")
    assert discover(log).reading == "jsonl" and discover(log).reading == "jsonl"
    assert len(reads) == 1  # unchanged: not read again
    with open(log, "ab") as handle:
        handle.write(CONSOLE_TEXT)
    assert discover(log).reading == "console"
    with open(log, "ab") as handle:
        handle.write(b"{'loss': 0.1, 'reward': 0.2}\n")
    assert discover(log).reading == "console"
    assert len(reads) == 2


@given(st.binary(max_size=400).map(lambda b: b.replace(b"\x00", b"\n")))
def test_lines_are_decoded_one_at_a_time_as_a_whole_decode_would(data: bytes) -> None:
    """The reader decodes a chunk line by line (a 50 MB line of redraws is never held
    twice over): the same lines as decoding the chunk whole, any bytes at all."""
    whole = data.decode("utf-8", errors="replace").split("\n")
    if whole and whole[-1] == "":
        whole.pop()
    assert list(console_lines(data)) == whole


@given(st.text(alphabet="ab\r\n{}", max_size=60))
def test_redrawn_states_come_one_at_a_time_as_a_split_would(line: str) -> None:
    assert list(redraw_states(line)) == line.split("\r")
