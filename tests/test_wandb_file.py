"""W&B run files (`wandb/offline-run-*/run-<id>.wandb`) written by the real `wandb` library:
rows read exactly and mapped by the trainer the config names (or the keys), the config's
settings, the end of the run, a file read while wandb writes it, cut at any byte, damaged,
replaced; discovery of a run folder; protobuf missing.

wandb writes in a separate process, as a training script does (offline: `WANDB_MODE`,
`WANDB_DIR` and its config/cache dirs in a temporary folder, so nothing reaches the
network and nothing is written outside it), driven line by line over a pipe.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_tui.cli import main
from grpo_tui.run.follow import load_run
from grpo_tui.sources.discover import discover
from grpo_tui.sources.feed import RunFeed
from grpo_tui.sources.formats import wandb as conventions
from grpo_tui.sources.formats.layout import Probe, Reading
from grpo_tui.sources.wandb import schema
from grpo_tui.sources.wandb.framing import BLOCK, CHUNK_HEADER, FULL, RecordReader
from grpo_tui.sources.wandb.store import WandbRunStore, item_key, parse_value, plain_row

#: the files are written by the real library: without it (the `test` extra has it) these skip
pytestmark = pytest.mark.skipif(find_spec("wandb") is None, reason="needs the wandb package")

Record = dict[str, Any]

#: a training script's side: one JSON command a line, "ok" (or the run folder) back
_WRITER = r"""
import json, os, sys
import wandb
run = None
for line in sys.stdin:
    command = json.loads(line)
    kind = command["do"]
    if kind == "init":
        run = wandb.init(project="grpo", config=command.get("config"), name=command.get("name"))
        reply = run.dir
    elif kind == "config":
        run.config.update(command["config"], allow_val_change=True)
        reply = "ok"
    elif kind == "log":
        for row in command["rows"]:
            step = row.pop("__step", None)
            run.log(row, step=step)
        reply = "ok"
    elif kind == "summary":
        for key, value in command["summary"].items():
            run.summary[key] = value
        reply = "ok"
    elif kind == "log_media":
        run.log({"hist": wandb.Histogram([1, 2, 3]), "nested": {"a": 1.5}, "note": "text"},
                step=command["step"])
        reply = "ok"
    elif kind == "finish":
        run.finish(exit_code=command.get("code", 0))
        reply = "ok"
    print(reply, flush=True)
"""


class Writer:
    """wandb in its own process, writing offline runs under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        env = {
            **os.environ,
            "WANDB_MODE": "offline",
            "WANDB_DIR": str(root),
            "WANDB_SILENT": "true",
            "WANDB_CONFIG_DIR": str(root / ".config"),
            "WANDB_CACHE_DIR": str(root / ".cache"),
            "WANDB_DATA_DIR": str(root / ".data"),
            "WANDB_DISABLE_GIT": "true",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WRITER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=root,
        )

    def send(self, **command: Any) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        # wandb may print to the same stdout: the reply is the last line that came
        while True:
            line = self.process.stdout.readline()
            assert line, "the wandb writer died"
            if line.strip() == "ok" or line.strip().startswith(str(self.root)):
                return line.strip()

    def run(self, rows: list[Record], config: Record | None = None, **extra: Any) -> Path:
        """One whole run: init, the config update, rows, summary, finish; its .wandb file."""
        run_dir = Path(self.send(do="init", config=config)).parent
        if "later_config" in extra:
            self.send(do="config", config=extra["later_config"])
        self.send(do="log", rows=rows)
        if "summary" in extra:
            self.send(do="summary", summary=extra["summary"])
        self.send(do="finish", code=extra.get("code", 0))
        return written(run_file(run_dir))

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def run_file(run_dir: Path) -> Path:
    return next(run_dir.glob("run-*.wandb"))


def written(path: Path) -> Path:
    """Wait until wandb-core wrote the run's exit record (`finish()` may return before)."""

    def has_exit() -> bool:
        records = read_all(path)[0]
        return bool(records) and conventions.EXIT_KEY in records[-1]

    wait_for(has_exit, what=f"the exit record of {path.name}")
    return path


# -- rows as the trainers log them ---------------------------------------------------------
def verl_row(step: int) -> Record:
    """verl's keys (metric_utils.py), values that change with the step, a NaN now and then."""
    return {
        "__step": step,
        "critic/score/mean": 0.1 + step / 100,
        "critic/rewards/mean": 0.05 + step / 100,
        "actor/entropy": 0.7 - step / 1000,
        "actor/kl_loss": step * 1e-4,
        "actor/pg_clipfrac": 0.002 * (step % 7),
        "actor/ppo_kl": 1e-5 * step,
        "actor/grad_norm": float("nan") if step % 17 == 0 else 0.3 + step / 50,
        "response_length/mean": 200.0 + step,
        "response_length/max": 1024.0,
        "training/global_step": step,
    }


VERL_CONFIG = {
    "actor_rollout_ref": {
        "rollout": {"n": 8, "temperature": 1.0},
        "actor": {"use_kl_loss": True, "kl_loss_coef": 0.001, "optim": {"lr": 1e-6}},
        "model": {"path": "Qwen/Qwen2.5-0.5B"},
    },
    "algorithm": {"adv_estimator": "grpo"},
    "data": {"max_response_length": 1024, "train_batch_size": 32},
    "trainer": {"total_training_steps": 120, "project_name": "grpo"},
}


def trl_row(step: int) -> Record:
    """What transformers' WandbCallback logs for a TRL GRPO step: `train/` prefixed keys
    and `train/global_step`, no step argument (W&B counts its own `_step`)."""
    return {
        "train/reward": 0.2 + step / 50,
        "train/reward_std": 0.3,
        "train/kl": 0.001 * step,
        "train/completions/mean_length": 150.0 + step,
        "train/rewards/accuracy_reward/mean": step / 60,
        "train/loss": 0.01,
        "train/learning_rate": 1e-6,
        "train/global_step": step * 2,  # logging_steps 2: W&B's _step is not the step
        "train/epoch": step / 40,
    }


TRL_CONFIG = {
    "num_generations": 8,
    "beta": 0.04,
    "max_completion_length": 512,
    "max_steps": 80,
    "learning_rate": 1e-6,
    "model_name_or_path": "Qwen/Qwen2.5-0.5B",
}


@pytest.fixture(scope="module")
def writer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Writer]:
    process = Writer(tmp_path_factory.mktemp("wandb"))
    yield process
    process.close()


@pytest.fixture(scope="module")
def verl_file(writer: Writer) -> Path:
    return writer.run([verl_row(step) for step in range(1, 61)], VERL_CONFIG)


@pytest.fixture(scope="module")
def trl_file(writer: Writer) -> Path:
    rows = [trl_row(step) for step in range(1, 41)]
    eval_row = {"eval/reward": 0.5, "train/global_step": 80, "train/epoch": 1.0}
    return writer.run(
        [*rows, eval_row],
        later_config=TRL_CONFIG,  # transformers: config.update() in on_train_begin
        summary={"train/train_runtime": 1234.5, "train/train_loss": 0.01},
    )


def read_all(path: Path) -> tuple[list[Record], WandbRunStore, int]:
    """Every record a store hands out, polling until nothing more is ready; bad records."""
    store = WandbRunStore(path, max_records=25)  # small bites: the resumption is exercised
    records: list[Record] = []
    bad = 0
    while True:
        polled = store.poll()
        assert polled.problem is None, polled.problem
        records.extend(polled.records)
        bad += len(polled.bad)
        if not polled.more:
            return records, store, bad


def metric_rows(records: list[Record]) -> list[Record]:
    return [r for r in records if conventions.EXIT_KEY not in r and "train_runtime" not in r]


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


class TestWholeFile:
    """A finished verl run read whole: every row, its step and values exactly."""

    def test_rows_exact(self, verl_file: Path) -> None:
        """Each logged row comes back once, at its step, with the very values logged."""
        records, store, bad = read_all(verl_file)
        rows = metric_rows(records)
        assert bad == 0
        assert [row["step"] for row in rows] == list(range(1, 61))
        for row in rows:
            logged = verl_row(row["step"])
            del logged["__step"]
            assert set(row) == {*logged, "step"}
            assert all(same(row[key], value) for key, value in logged.items()), row
        assert store.adapter is not None and store.adapter.title == "verl (W&B run file)"

    def test_exit_ends_the_run(self, verl_file: Path) -> None:
        """The exit record is handed out last, at the last step: the run finished."""
        records, _, _ = read_all(verl_file)
        assert records[-1] == {"step": 60, conventions.EXIT_KEY: 0}
        run = load_run(verl_file)
        assert run.finished
        assert any("the W&B run finished" in event for event in run.events)

    def test_canonical_metrics(self, verl_file: Path) -> None:
        """verl's keys reach their canonical names through verl's own table."""
        run = load_run(verl_file)
        assert run.framework == "verl (W&B run file)"
        store = run.store
        assert store.source_key("reward") == "critic/score/mean"
        assert store.source_key("clip_ratio") == "actor/pg_clipfrac"
        assert store.last("entropy") == (60.0, 0.7 - 60 / 1000)
        assert "actor/ppo_kl" in store.names()  # drift, never taken for KL to the reference
        assert "_runtime" not in store.names() and "_timestamp" not in store.names()

    def test_fast_path_is_protobufs_reading(self, verl_file: Path) -> None:
        """Every history row cut out by plain_row reads as protobuf reads it."""
        loaded = schema.load_schema()
        assert not isinstance(loaded, str)
        reader = RecordReader()
        with verl_file.open("rb") as handle:
            raws = reader.read(handle, verl_file.stat().st_size, 10_000)
        rows = 0
        for raw in raws:
            kind, start, end = schema.record_type(raw)
            if kind != schema.HISTORY:
                continue
            fast = plain_row(raw[start:end])
            items = loaded.parse_record(raw).history.item
            slow = {item_key(item): parse_value(item.value_json) for item in items}
            assert fast is not None
            assert fast.keys() == slow.keys() and all(same(fast[k], slow[k]) for k in slow)
            rows += 1
        assert rows == 60


class TestSettings:
    """The config record gives the run's settings under args.json's names."""

    def test_verl_config(self, verl_file: Path) -> None:
        """verl's nested config, through verl's own settings table."""
        context = load_run(verl_file).context
        assert context.max_steps == 120
        assert context.num_generations == 8
        assert context.max_completion_length == 1024
        assert context.beta == 0.001
        assert context.learning_rate == 1e-6
        assert context.model == "Qwen/Qwen2.5-0.5B"

    def test_trl_config_written_after_init(self, trl_file: Path) -> None:
        """TRL's arguments, which transformers adds to the config after init."""
        context = load_run(trl_file).context
        assert (context.num_generations, context.beta) == (8, 0.04)
        assert (context.max_completion_length, context.max_steps) == (512, 80)


class TestTrainer:
    """The trainer comes from the config, else from the keys; its keys are undone from W&B's."""

    def test_trl_from_config(self, trl_file: Path) -> None:
        """TRL's config names it; `train/` is removed, `eval/` becomes `eval_`, and the
        step is transformers' `train/global_step`, not W&B's count of log calls."""
        run = load_run(trl_file)
        assert run.framework == "TRL (W&B run file)"
        store = run.store
        assert store.source_key("reward") == "reward"
        assert store.last("reward") == (80.0, 0.2 + 40 / 50)
        assert store.last("kl") == (80.0, 0.001 * 40)
        assert store.last("eval_reward") == (80.0, 0.5)
        assert "rewards/accuracy_reward/mean" in store.names()

    def test_trl_summary_ends_training(self, trl_file: Path) -> None:
        """transformers' `train/train_runtime` in the summary is TRL's end-of-train line."""
        records, _, _ = read_all(trl_file)
        assert {"step": 80, "train_runtime": 1234.5} in records
        assert load_run(trl_file).line_counts["end"] == 1

    def test_from_keys(self, writer: Writer) -> None:
        """With no config to say it, the adapter knowing the most keys reads the rows."""
        path = writer.run([verl_row(step) for step in range(1, 6)], config=None)
        records, store, _ = read_all(path)
        assert store.adapter is not None and store.adapter.title == "verl (W&B run file)"
        assert [r["step"] for r in metric_rows(records)] == [1, 2, 3, 4, 5]

    def test_unknown_keys(self, writer: Writer) -> None:
        """Keys no adapter knows are read under the common GRPO names, saying so."""
        path = writer.run([{"my/score": 1.0, "my/len": 3.0}], config=None)
        run = load_run(path)
        assert run.framework == "W&B run file (no framework recognised)"
        assert "my/score" in run.store.names()

    def test_failed_exit(self, writer: Writer) -> None:
        """A non-zero exit code is said: the run ended, failed."""
        path = writer.run([verl_row(1)], VERL_CONFIG, code=3)
        run = load_run(path)
        assert run.finished
        assert any("failed (exit code 3)" in event for event in run.events)

    def test_nested_media_and_strings(self, writer: Writer) -> None:
        """A nested dict's keys are joined with "."; media objects and strings are no metrics."""
        run_dir = Path(writer.send(do="init", config=VERL_CONFIG)).parent
        writer.send(do="log", rows=[verl_row(1)])
        writer.send(do="log_media", step=2)
        writer.send(do="finish")
        records, _, bad = read_all(written(run_file(run_dir)))
        assert bad == 0
        second = metric_rows(records)[1]
        assert second["step"] == 2 and second["nested.a"] == 1.5
        assert not any(key.startswith("hist") for key in second)


class TestLive:
    """A run file read while wandb writes it: no row lost, none twice."""

    def test_appended_while_read(self, writer: Writer) -> None:
        """Rows on disk while the run is open are read; the rest come after, each once."""
        run_dir = Path(writer.send(do="init", config=VERL_CONFIG)).parent
        path = run_file(run_dir)
        # wandb-core writes 32 KiB blocks as they fill: log until some are on disk
        writer.send(do="log", rows=[verl_row(step) for step in range(1, 201)])
        wait_for(lambda: path.stat().st_size > 4 * BLOCK, what="blocks on disk")
        feed = RunFeed(run_dir)
        first: list[float] = []
        while True:
            batch, more = feed.read()
            first.extend(s for block in batch.blocks for s in block.steps.tolist())
            if not more:
                break
        assert first and first == list(range(1, len(first) + 1))
        writer.send(do="log", rows=[verl_row(step) for step in range(201, 301)])
        writer.send(do="finish")
        rest: list[float] = []

        def read_to_the_end() -> bool:
            batch, _ = feed.read()
            rest.extend(s for block in batch.blocks for s in block.steps.tolist())
            return batch.finished

        wait_for(read_to_the_end, what="the exit record")
        steps = first + rest
        assert steps == list(range(1, 301))

    def test_truncated_then_rewritten(self, verl_file: Path, tmp_path: Path) -> None:
        """A file cut shorter than what was read is read again from its start."""
        copy = tmp_path / verl_file.name
        shutil.copy(verl_file, copy)
        store = WandbRunStore(copy)
        assert len(store.poll().records) == 61
        data = verl_file.read_bytes()
        copy.write_bytes(data[: len(data) // 2])
        polled = store.poll()
        assert polled.restarted
        assert metric_rows(polled.records)[0]["step"] == 1


def cut_rows(data: bytes, cut: int) -> tuple[list[Record], int]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run-cut.wandb"
        path.write_bytes(data[:cut])
        records, _, bad = read_all(path)
    return records, bad


class TestCut:
    """A file cut at any byte (a writer mid-record, a copy taken mid-write) reads a prefix."""

    @settings(max_examples=60, deadline=None)
    @given(st.data())
    def test_any_cut(self, verl_file: Path, data: st.DataObject) -> None:
        """No crash, no bad record: the rows are the first rows of the whole file's."""
        whole = verl_file.read_bytes()
        full = read_all(verl_file)[0]
        # the cut anywhere, or near the end where the last records are
        cut = data.draw(
            st.one_of(
                st.integers(0, len(whole)), st.integers(max(0, len(whole) - 3 * BLOCK), len(whole))
            )
        )
        records, bad = cut_rows(whole, cut)
        assert bad == 0
        assert records == full[: len(records)]

    def test_every_cut_of_the_last_record(self, verl_file: Path) -> None:
        """Each byte of the exit record's chunk: the rows before it, then all of them."""
        whole = verl_file.read_bytes()
        full = read_all(verl_file)[0]
        for cut in range(len(whole) - 60, len(whole) + 1):
            records, bad = cut_rows(whole, cut)
            assert bad == 0 and records == full[: len(records)]
        assert cut_rows(whole, len(whole))[0] == full


def chunks(data: bytes) -> list[tuple[int, int, int]]:
    """(position, length, chunk type) of every chunk, walking the framing."""
    found, pos = [], CHUNK_HEADER
    while pos + CHUNK_HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < CHUNK_HEADER:
            pos += left
            continue
        _, length, kind = struct.unpack_from("<IHB", data, pos)
        found.append((pos, length, kind))
        pos += CHUNK_HEADER + length
    return found


def history_chunk(data: bytes, near: float) -> tuple[int, int]:
    """A FULL chunk holding a history row, about `near` of the way into the file."""
    rows = [
        (pos, length)
        for pos, length, kind in chunks(data)
        if kind == FULL
        and schema.record_type(data[pos + CHUNK_HEADER : pos + CHUNK_HEADER + length])[0]
        == schema.HISTORY
    ]
    return rows[int(len(rows) * near)]


class TestDamage:
    """Damaged bytes: the record is skipped and counted, the rest read."""

    def damaged(self, source: Path, tmp_path: Path, at: int, value: bytes) -> Path:
        data = bytearray(source.read_bytes())
        data[at : at + len(value)] = value
        path = tmp_path / source.name
        path.write_bytes(bytes(data))
        return path

    def test_payload_flipped(self, verl_file: Path, tmp_path: Path) -> None:
        """A byte of a row's data changed: that row is a bad record, every other row read."""
        data = verl_file.read_bytes()
        pos, length = history_chunk(data, 0.5)
        at = pos + CHUNK_HEADER + length // 2
        path = self.damaged(verl_file, tmp_path, at, bytes([data[at] ^ 0xFF]))
        records, _, bad = read_all(path)
        full = metric_rows(read_all(verl_file)[0])
        assert bad == 1
        rows = metric_rows(records)
        assert len(rows) == len(full) - 1 and all(row in full for row in rows)

    def test_length_broken(self, verl_file: Path, tmp_path: Path) -> None:
        """A chunk header's length changed: the chunk is skipped, reading goes on at the
        next chunk (found by its checksum), one row lost and counted."""
        data = verl_file.read_bytes()
        pos, length = history_chunk(data, 0.3)
        path = self.damaged(verl_file, tmp_path, pos + 4, struct.pack("<H", length // 3))
        records, _, bad = read_all(path)
        assert bad == 1
        assert len(metric_rows(records)) == 59
        assert records[-1][conventions.EXIT_KEY] == 0

    def test_zeros_in_the_middle(self, verl_file: Path, tmp_path: Path) -> None:
        """A stretch of zeros (a hole a crash left) is one bad record; after it, rows."""
        data = verl_file.read_bytes()
        pos, length = history_chunk(data, 0.6)
        path = self.damaged(verl_file, tmp_path, pos, bytes(length + CHUNK_HEADER))
        records, _, bad = read_all(path)
        assert bad == 1 and len(metric_rows(records)) == 59

    def test_not_a_wandb_file(self, tmp_path: Path) -> None:
        """A `.wandb` file of other bytes is no W&B run file: not claimed; forced, said."""
        path = tmp_path / "run-x.wandb"
        path.write_bytes(b"PK\x03\x04 not W&B at all")
        assert conventions.claim(path, Probe()) is None
        problem = WandbRunStore(path).poll().problem
        assert problem is not None and "not a W&B run file" in problem


class TestDiscovery:
    """A run folder holding `wandb/…-run-*/`: the run file is found and chosen."""

    def test_run_folder(self, verl_file: Path) -> None:
        """From the folder wandb ran in: the .wandb file beats files/output.log."""
        root = verl_file.parent.parent.parent
        assert (verl_file.parent / "files" / "output.log").exists()
        layout = discover(root)
        assert layout.reading is Reading.WANDB
        assert layout.metrics_file is not None and layout.metrics_file.suffix == ".wandb"
        assert layout.metrics_file.name.startswith("run-")

    def test_check_and_inspect(self, verl_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """`check` and `inspect` on the run folder name the trainer and what was read."""
        main(["check", str(verl_file.parent)])
        out = capsys.readouterr().out
        assert "verl (W&B run file)" in out and "FINISHED" in out
        main(["inspect", str(verl_file.parent)])
        out = capsys.readouterr().out
        assert "W&B run file" in out and "critic/score/mean" in out
        assert "num_generations=8" in out


class TestProtobufMissing:
    """Without protobuf the file is not read, and the message says what to install."""

    def test_problem(self, verl_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """The poll says `pip install 'grpo-tui[wandb]'`, never raises."""
        monkeypatch.setattr(schema, "_LOADED", [])
        monkeypatch.setitem(sys.modules, "google.protobuf.message_factory", None)
        assert WandbRunStore(verl_file).poll().problem == schema.MISSING_PROTOBUF


def primerl_2025_row(step: int) -> Record:
    """A row as prime-rl's orchestrator logged it to W&B in 2025 (PrimeIntellect-ai/prime-rl
    at 60d17cf55, src/prime_rl/orchestrator/orchestrator.py 327-367 and scheduler.py
    228-257: no file monitor yet, W&B only). Values invented; key names the source's."""
    return {
        "progress/tokens": 140_000,
        "progress/samples": 256,
        "progress/problems": 32,
        "progress/ckpt_step": max(step - 1, 0),
        "seq_len/mean": 560.0 - step,
        "prompt_len/mean": 130.0,
        "completion_len/mean": 430.0 - step,
        "completion_len/max": 512.0,
        "completion_len/min": 270.0,
        "is_truncated/mean": 0.3,
        "perf/throughput": 12_000.0,
        "reward/mean": 0.1 + 0.01 * step,
        "batch/solve_none": 0.5 - 0.01 * step,
        "batch/solve_all": 0.01 * step,
        "batch/effective_batch_size": 0.5,
        "metrics/exact_match_reward": 0.05 * (step % 2),
        "metrics/length_penalty_reward": 0.1 + 0.01 * step,
        "time/step": 12.0,
        "batch/off_policy_level/mean": 1.0,
        "batch/off_policy_level/max": 1,
        "batch/off_policy_level/min": 1,
        "batch/async_level": 1,
        "step": step,
        # utils/monitor.py `WandbMonitor.log`: wandb.log(metrics, step=metrics["step"])
        "__step": step,
    }


class TestPrimeRl2025:
    """prime-rl before its file monitor logged to W&B only: its run file reads by its keys."""

    def test_the_keys_map_to_the_canonical_metrics(self, writer: Writer) -> None:
        """No config names it; the keys do: reward, lengths, truncation, solve rates, the
        rubric functions and the policy lag each land in their one column."""
        path = writer.run([primerl_2025_row(step) for step in range(1, 21)], config=None)
        run = load_run(path)
        assert run.framework == "prime-rl (W&B run file)"
        store = run.store
        assert store.last("reward") == pytest.approx((20.0, 0.3))
        assert store.last("completion_length") == (20.0, 410.0)
        assert store.last("clipped_ratio") == (20.0, 0.3)
        assert store.last("samples/all_fail") == pytest.approx((20.0, 0.3))
        assert store.last("samples/all_pass") == pytest.approx((20.0, 0.2))
        assert store.source_key("rewards/exact_match_reward/mean") == ("metrics/exact_match_reward")
        assert store.last("offpolicy/staleness_mean") == (20.0, 1.0)
        assert "kl" not in store.names()
