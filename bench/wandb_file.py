"""A W&B run file against the same rows as a verl JSONL log: `check` time, peak RSS, and
the cost of taking in rows appended live.

Builds N rows (default 100 000) of verl's keys (the 89 keys of a real verl 0.7 file-logger
row, tests/fixtures/verl/, each value moved by a seeded noise) and writes them twice: with
the real `wandb` library, offline (`wandb.init(config=…)` with verl's config shape,
`wandb.log(row, step=N)`, `finish()`), and as verl's file logger writes them
(`{"step": N, "data": {…}}` lines). Then:
  check   `grpo-tui check DIR` on each run folder, whole processes, interleaved and
          repeated; best and median wall time, peak RSS (VmHWM), W&B over JSONL
  live    each file followed by the feed (RunFeed, as the app reads) while rows arrive:
          all but the last 2 000 rows read, then those appended a row at a time (a line;
          a history record with the chunks before it), a read after each; CPU per row
          taken in, W&B over JSONL. (wandb-core itself writes whole 32 KiB blocks, a few
          rows at a time; a read per row is the reader's cost at a step's pace.)

    python bench/wandb_file.py [--rows 100000] [--repeat 3] [--appended 2000] [--keep DIR]

`--keep DIR` writes the two runs into DIR once (wandb takes about a minute per 100 000
rows) and reuses them on later runs. Needs `pip install wandb` (the `test` extra has it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import orjson

from grpo_tui.sources.feed import RunFeed
from grpo_tui.sources.wandb.framing import BLOCK, CHUNK_HEADER, FIRST, FULL, LAST
from grpo_tui.sources.wandb.schema import HISTORY, record_type

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests/fixtures/verl/verl_filelogger_intercode_rl-debug-run1.jsonl"
#: verl's config as it logs it to W&B (the parts grpo-tui reads)
CONFIG = {
    "actor_rollout_ref": {
        "rollout": {"n": 16, "response_length": 256},
        "actor": {"use_kl_loss": True, "kl_loss_coef": 0.001, "ppo_epochs": 1},
    },
    "algorithm": {"adv_estimator": "grpo"},
    "data": {"max_response_length": 256, "train_batch_size": 32},
    "trainer": {"total_training_steps": 100_000, "project_name": "bench"},
}
_CHECK = """
import os, sys
from grpo_tui.cli import main
stdout = sys.stdout
sys.stdout = open(os.devnull, "w")
code = main(["check", {path!r}])
peak = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) / 1024
print(code, peak, file=stdout)
"""


def rows(n: int, seed: int = 0) -> Iterator[dict[str, float | int]]:
    """`n` verl rows: the fixture's train row with every float moved by a seeded noise."""
    template = orjson.loads(FIXTURE.read_bytes().splitlines()[1])["data"]
    keys = [k for k, v in template.items() if isinstance(v, float)]
    rng = np.random.default_rng(seed)
    for noise in rng.uniform(0.99, 1.01, size=(n, len(keys))):
        row = dict(template)
        row.update(zip(keys, (float(template[k] * f) for k, f in zip(keys, noise))))
        yield row


def write_runs(where: Path, n: int) -> tuple[Path, Path, float]:
    """The W&B run folder and the verl one (made once), and seconds wandb took."""
    wandb_dir, verl_dir = where / "wandb-run", where / "verl-run"
    done = where / "done"
    if done.exists():
        return wandb_dir, verl_dir, float(done.read_text())
    wandb_dir.mkdir(parents=True, exist_ok=True)
    (verl_dir / "rl-log").mkdir(parents=True, exist_ok=True)
    os.environ.update(WANDB_MODE="offline", WANDB_DIR=str(wandb_dir), WANDB_SILENT="true")
    import wandb  # the bench's own dependency: only the writing needs it

    started = time.perf_counter()
    run = wandb.init(project="bench", config=CONFIG)
    with (verl_dir / "rl-log" / "bench.jsonl").open("wb") as log:
        for step, row in enumerate(rows(n), 1):
            run.log(row, step=step)
            log.write(orjson.dumps({"step": step, "data": row}) + b"\n")
    run.finish()
    took = time.perf_counter() - started
    done.write_text(str(took))
    return wandb_dir, verl_dir, took


def check(path: Path) -> tuple[float, float]:
    """`grpo-tui check PATH` in a fresh process: wall seconds and peak RSS in MB."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _CHECK.format(path=str(path))],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"check {path} failed:\n{done.stderr}")
    return wall, float(done.stdout.split()[-1])


def metrics_file(run_dir: Path) -> Path:
    found = [*run_dir.rglob("run-*.wandb"), *run_dir.rglob("*.jsonl")]
    return found[0]


def row_ends(source: Path) -> list[int]:
    """Where each row ends in the file: after its line (JSONL); after the last chunk of
    its history record (W&B: the framing walked, as framing.py reads it)."""
    data = source.read_bytes()
    if source.suffix == ".jsonl":
        return [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
    ends, pos, kind_of_record = [], CHUNK_HEADER, 0
    while pos + CHUNK_HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < CHUNK_HEADER:
            pos += left
            continue
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        if kind in (FULL, FIRST):
            payload = data[pos + CHUNK_HEADER : pos + CHUNK_HEADER + length]
            kind_of_record = record_type(payload)[0]
        pos += CHUNK_HEADER + length
        if kind in (FULL, LAST) and kind_of_record == HISTORY:
            ends.append(pos)
    return ends


def live_cost(source: Path, appended: int) -> tuple[float, int]:
    """CPU seconds per row taken in by a feed following a copy of `source`: all but its
    last `appended` rows read, then those appended one row at a time (a line; a history
    record), a read after each, as the live monitor reads a run at a step's pace."""
    data = source.read_bytes()
    ends = row_ends(source)
    start = ends[-appended - 1]
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / source.name
        copy.write_bytes(data[:start])
        feed = RunFeed(copy, rediscover_every=3600.0)
        while feed.read()[1]:
            pass
        taken = 0
        started = time.process_time()
        with copy.open("ab") as out:
            for begin, end in zip(ends[-appended - 1 : -1], ends[-appended:]):
                out.write(data[begin:end])
                out.flush()
                more = True
                while more:
                    batch, more = feed.read()
                    taken += batch.rows()
        return (time.process_time() - started) / max(taken, 1), taken


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--appended", type=int, default=2000, help="rows appended live")
    parser.add_argument("--keep", type=Path, help="write the runs here once, reuse them after")
    return parser.parse_args()


@contextmanager
def workdir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def main() -> None:
    args = arguments()
    with workdir(args.keep) as where:
        wandb_dir, verl_dir, took = write_runs(where, args.rows)
        wandb_file, verl_file = metrics_file(wandb_dir), metrics_file(verl_dir)
        print(
            f"{args.rows} rows × {len(next(rows(1)))} verl keys: W&B file "
            f"{wandb_file.stat().st_size / 1e6:.0f} MB (wandb wrote it in {took:.0f} s), "
            f"JSONL {verl_file.stat().st_size / 1e6:.0f} MB"
        )
        times: dict[str, list[float]] = {"wandb": [], "jsonl": []}
        peaks: dict[str, float] = {}
        for _ in range(args.repeat):  # interleaved: the machine's noise hits both alike
            for name, run_dir in (("wandb", wandb_dir), ("jsonl", verl_dir)):
                wall, peaks[name] = check(run_dir)
                times[name].append(wall)
        for name in times:
            print(
                f"  check {name:<6} best {min(times[name]):6.2f} s  "
                f"median {statistics.median(times[name]):6.2f} s  peak RSS {peaks[name]:5.0f} MB"
            )
        print(
            f"  W&B / JSONL: check {min(times['wandb']) / min(times['jsonl']):.2f}x (target ≤ 2), "
            f"peak RSS {peaks['wandb'] / peaks['jsonl']:.2f}x"
        )
        wandb_row, wandb_rows = live_cost(wandb_file, args.appended)
        jsonl_row, jsonl_rows = live_cost(verl_file, args.appended)
        print(
            f"  live, a read per appended row: {wandb_row * 1e6:.0f} µs CPU per row (W&B, "
            f"{wandb_rows} rows), {jsonl_row * 1e6:.0f} µs (JSONL, {jsonl_rows} rows): "
            f"{wandb_row / jsonl_row:.2f}x"
        )


if __name__ == "__main__":
    main()
