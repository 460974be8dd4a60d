"""Backfill throughput: our reader vs a plain reader, a bare orjson loop and pandas.

Builds a 100 000-line ms-swift-like logging.jsonl from the real 4.6.0 line shapes (train
lines with varying numbers and progress strings, an eval line every 50 steps, a NaN line
now and then), then times, side by side and interleaved (best of N, so machine noise hits
all alike):
  ours    RunFollower + Run.apply until the whole file is in the metric store
  plain   the straightforward reader ours replaces: orjson per line, a Python loop over
          each line's keys into column lists, one block into the same store
  orjson  read the file, split lines, orjson.loads each (parsing only, no store)
  pandas  pandas.read_json(lines=True)
Prints the ratios and the peak memory. The fast reader (sources/shapes.py) is kept while
it is clearly faster than the plain one; the old "0.8× a bare orjson loop" target is
retired (what users need is the first screen at once: bench/footprint.py).

    python bench/ingest.py [--lines 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import orjson
import pandas as pd

from grpo_tui.run.follow import load_run
from grpo_tui.run.metrics import MetricStore
from grpo_tui.sources.formats import MSSWIFT
from grpo_tui.sources.formats.values import parse_duration, parse_fraction, parse_percentage
from grpo_tui.sources.records import ColumnGroup, RowBlock

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "tests/fixtures/ms-swift/local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl"
)


def build_file(path: Path, n_lines: int, seed: int = 0) -> None:
    lines = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    train, evaluation = lines[0], lines[2]  # a train line and the eval line at step 3
    rng = np.random.default_rng(seed)
    max_steps = n_lines
    out = []
    step = 0
    while len(out) < n_lines:
        step += 1
        row = dict(train)
        for key, value in row.items():
            if isinstance(value, float):
                row[key] = round(value * float(rng.uniform(0.5, 1.5)), 8)
        row["global_step/max_steps"] = f"{step}/{max_steps}"
        row["elapsed_time"] = f"{step // 3600}h {step // 60 % 60}m {step % 60}s"
        row["remaining_time"] = f"{(max_steps - step) // 86400}d {step % 24}h 3m 4s"
        if step % 997 == 0:
            row["kl"] = float("nan")
        out.append(json.dumps(row))
        if step % 50 == 0:
            ev = dict(evaluation)
            ev["global_step/max_steps"] = f"{step}/{max_steps}"
            out.append(json.dumps(ev))
    path.write_text("\n".join(out[:n_lines]) + "\n")


def run_ours(path: Path) -> int:
    return len(load_run(path, time_budget=60.0).store)


#: ms-swift's progress strings and their one-value parsers (what a plain reader calls)
_PROGRESS = {
    "elapsed_time": ("elapsed", parse_duration),
    "remaining_time": ("remaining", parse_duration),
    "percentage": ("percentage", parse_percentage),
}


def run_plain(path: Path) -> int:
    """The plain reader: every line parsed and walked key by key in Python."""
    adapter = MSSWIFT
    kinds: list[int] = []
    steps: list[float] = []
    columns: dict[str, tuple[list[int], list[float]]] = {}
    last = 0
    for row, line in enumerate(path.read_bytes().splitlines()):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = json.loads(line)
        kinds.append(int(adapter.classify(obj)))
        step = None
        for key, value in obj.items():
            if isinstance(value, (int, float)):
                name, number = adapter.canonical(key), float(value)
            elif key == "global_step/max_steps":
                fraction = parse_fraction(value)
                step = fraction[0] if fraction else None
                continue
            elif key in _PROGRESS:
                name, parse = _PROGRESS[key]
                parsed = parse(value)
                if parsed is None:
                    continue
                number = parsed
            else:
                continue
            rows, values = columns.setdefault(name, ([], []))
            rows.append(row)
            values.append(number)
        last = step if step is not None else last
        steps.append(float(last))
    groups = [
        ColumnGroup(np.array(rows), (name,), {}, np.array(values)[:, None])
        for name, (rows, values) in columns.items()
    ]
    store = MetricStore()
    store.add_block(RowBlock(np.array(kinds, np.uint8), np.array(steps), groups))
    return len(store)


def run_orjson(path: Path) -> int:
    count = 0
    for line in path.read_bytes().splitlines():
        try:
            orjson.loads(line)
        except orjson.JSONDecodeError:
            json.loads(line)  # the NaN lines: the same fallback any reader needs
        count += 1
    return count


def run_pandas(path: Path) -> int:
    return len(pd.read_json(path, lines=True))


def bench_arguments() -> argparse.Namespace:
    """--lines and --repeat, the same for every backfill bench."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    return parser.parse_args()


@contextmanager
def built_log(n_lines: int) -> Iterator[Path]:
    """A fresh ms-swift-like logging.jsonl of `n_lines` in a temporary directory."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "logging.jsonl"
        build_file(path, n_lines)
        yield path


def main() -> None:
    args = bench_arguments()
    with built_log(args.lines) as path:
        size_mb = path.stat().st_size / 1e6
        # memory first, in a clean process state: what our backfill itself allocates
        tracemalloc.start()
        run_ours(path)
        _, ours_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss_after_ours = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        runs = (
            ("orjson", run_orjson),
            ("ours", run_ours),
            ("plain", run_plain),
            ("pandas", run_pandas),
        )
        best = {name: float("inf") for name, _ in runs}
        rows = {}
        for _ in range(args.repeat):
            for name, fn in runs:
                started = time.perf_counter()
                rows[name] = fn(path)
                best[name] = min(best[name], time.perf_counter() - started)
    print(f"file: {args.lines} lines, {size_mb:.1f} MB; best of {args.repeat}; one process")
    for name in ("ours", "plain", "orjson", "pandas"):
        print(
            f"  {name:<7} {best[name]:7.3f} s  {args.lines / best[name]:>10,.0f} lines/s  ({rows[name]} rows)"
        )
    print(
        f"ours / plain reader throughput: {best['plain'] / best['ours']:.2f}x (the fast reader's reason to exist)"
    )
    print(
        f"ours / bare orjson loop throughput: {best['orjson'] / best['ours']:.2f}x (parsing alone, no store)"
    )
    print(f"ours / pandas.read_json throughput: {best['pandas'] / best['ours']:.2f}x")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"our backfill: peak traced allocation {ours_peak / 1e6:.0f} MB; process peak RSS after it {rss_after_ours:.0f} MB"
    )
    print(f"peak RSS of the whole benchmark process (pandas included): {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
