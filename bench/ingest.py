"""Backfill speed, side by side: our reader vs a baseline revision's, pyarrow.json, orjson, pandas.

Builds a 100 000-line ms-swift-like logging.jsonl from the real 4.6.0 line shapes (train
lines with varying numbers and progress strings, an eval line every 50 steps, a NaN line
now and then), then runs each variant in a fresh process, interleaved and repeated (the
machine's noise hits all alike), and prints best and median times and each one's time
over ours:
  ours       this tree's LogReader: load_run until the whole file is in the metric store
  @REV       the same at git revision REV (--baseline REV: before/after a change)
  pyarrow    pyarrow.json.read_json a block of lines at a time, our reader for a block it
             refuses (a lower bound: see install_pyarrow_reader)
  orjson     read the file, split lines, orjson.loads each (parsing only, no store)
  pandas     pandas.read_json(lines=True)
With --check each variant is `grpo-tui check FILE` timed whole, as a user waits for it
(orjson and pandas have no check).

    python bench/ingest.py [--lines 100000] [--repeat 5] [--check] [--baseline REV]

Measured 2026-12-04 on a 2-core box, `--check --repeat 9 --baseline 64e4dbe` (64e4dbe: the
line-shape fast path, sources/shapes.py), best of 9: ours 2.21 s, the fast path 1.94 s,
pyarrow 2.64 s; the read alone (no --check, --repeat 9) 0.76 s, 0.55 s, 1.24 s, a bare
orjson loop 0.33 s, pandas 6.82 s (sources/logreader.py says what was decided).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson
import pandas as pd

from grpo_tui.run.follow import load_run
from grpo_tui.sources.records import Batch, ColumnGroup, RowBlock

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests/fixtures/ms-swift/local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl"


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


# -- pyarrow.json with our reader as the fallback -------------------------------------------
#: lines per pyarrow block: a block with one line pyarrow refuses (NaN, a bad line, a
#: value changing type) is read by our reader instead. The fastest of 64, 256, 1024 and
#: 4096 on the built log (8.7, 2.7, 1.8, 2.1 s for the read alone)
ARROW_BLOCK_LINES = 1024


def install_pyarrow_reader() -> None:
    """Make LogReader.read_chunk try `pyarrow.json.read_json` on each block of lines and
    fall back to our reader for a block it refuses. A lower bound of what such a reader
    costs: kinds by eval keys, steps from global_step/max_steps, nulls as not logged,
    nothing of what a line's types or key set would change (which an exact one must add)."""
    import pyarrow as pa
    import pyarrow.json as pj

    from grpo_tui.sources.formats.values import fraction_column
    from grpo_tui.sources.logreader import LogReader
    from grpo_tui.vocabulary import LineKind

    plain = LogReader.read_chunk

    def arrow_block(reader: LogReader, data: bytes) -> RowBlock:
        table = pj.read_json(pa.py_buffer(data))
        adapter, n = reader.adapter, table.num_rows
        kinds = np.zeros(n, np.uint8)
        steps = np.full(n, np.nan)
        groups = []
        for key, column in zip(table.column_names, table.columns):
            valid = column.is_valid().to_numpy(zero_copy_only=False)
            if key.startswith(adapter.eval_prefix):
                kinds[valid] = LineKind.EVAL
            if key in adapter.fraction_step_keys:
                steps = fraction_column(column.to_pylist())[0]
                continue
            if key in adapter.string_parsers and pa.types.is_string(column.type):
                name, parser = adapter.string_parsers[key]
                values = parser(column.to_pylist())
            elif pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
                name = adapter.canonical(key)
                values = column.to_numpy(zero_copy_only=False).astype(np.float64)
            else:
                continue
            rows = np.flatnonzero(valid)
            groups.append(ColumnGroup(rows, (name,), {name: key}, values[rows][:, None]))
        return RowBlock(kinds, reader._fill_steps(kinds, steps), groups, reader.max_steps)

    def read_chunk(self: LogReader, data: bytes, first_line_no: int = 1) -> Batch:
        lines = data.splitlines(keepends=True)
        batch = Batch()
        for start in range(0, len(lines), ARROW_BLOCK_LINES):
            block = b"".join(lines[start : start + ARROW_BLOCK_LINES])
            try:
                batch.blocks.append(arrow_block(self, block))
            except (pa.ArrowInvalid, ValueError):
                batch.extend(plain(self, block, first_line_no + start))
        return batch

    LogReader.read_chunk = read_chunk  # type: ignore[method-assign]


# -- side by side, one fresh process per measurement -----------------------------------------
#: what each variant runs in its process; {path} is the log. The ingest snippets time the
#: read alone (imports excluded); the check ones are timed whole, as a user waits for them
_INGEST = """
import sys, time
from pathlib import Path
{prelude}
started = time.perf_counter()
rows = {call}(Path({path!r}))
took = time.perf_counter() - started
print(took, rows, {peak})
"""
_CHECK = """
import os, sys
{prelude}
from grpo_tui.cli import main
stdout = sys.stdout
sys.stdout = open(os.devnull, "w")
code = main(["check", {path!r}])
print(0, code, {peak}, file=stdout)
"""
#: peak RSS in MB (VmHWM: ru_maxrss would keep the parent's peak across fork and exec)
_PEAK = "int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) / 1024"
_BENCH_IMPORT = f"sys.path.insert(0, {str(Path(__file__).parent)!r}); import ingest"
_PYARROW = _BENCH_IMPORT + "; ingest.install_pyarrow_reader()"


@dataclass
class Variant:
    name: str
    #: the grpo_tui tree it runs (this worktree or an exported baseline)
    tree: Path
    prelude: str
    call: str  # the ingest snippet's function
    times: list[float] = field(default_factory=list)
    rows: object = None
    rss_mb: float = 0.0

    def measure(self, path: Path, check: bool) -> None:
        template = _CHECK if check else _INGEST
        code = template.format(prelude=self.prelude, call=self.call, path=str(path), peak=_PEAK)
        env = dict(os.environ, PYTHONPATH=str(self.tree))
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", code],
            check=False,
            env=env,
            cwd=self.tree,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{self.name} failed:\n{done.stderr}")
        took, rows, rss = done.stdout.split()[-3:]
        self.times.append(wall if check else float(took))
        self.rows, self.rss_mb = rows, float(rss)


@contextmanager
def baseline_tree(rev: str | None) -> Iterator[Path | None]:
    """grpo_tui as it is at `rev`, exported into a temporary directory (None: no baseline)."""
    if rev is None:
        yield None
        return
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "archive", rev, "grpo_tui"], cwd=ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        yield Path(tmp)


def bench_arguments() -> argparse.Namespace:
    """--lines and --repeat, the same for every backfill bench."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="time `check FILE` whole")
    parser.add_argument("--baseline", metavar="REV", help="also run grpo_tui as at REV")
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
    with built_log(args.lines) as path, baseline_tree(args.baseline) as base:
        size_mb = path.stat().st_size / 1e6
        variants = [Variant("ours", ROOT, _BENCH_IMPORT, "ingest.run_ours")]
        if base is not None:
            variants.append(Variant(f"@{args.baseline}", base, _BENCH_IMPORT, "ingest.run_ours"))
        variants.append(Variant("pyarrow", ROOT, _PYARROW, "ingest.run_ours"))
        if not args.check:
            variants.append(Variant("orjson", ROOT, _BENCH_IMPORT, "ingest.run_orjson"))
            variants.append(Variant("pandas", ROOT, _BENCH_IMPORT, "ingest.run_pandas"))
        for _ in range(args.repeat):
            for variant in variants:  # interleaved: the machine's noise hits all alike
                variant.measure(path, args.check)
    what = "`grpo-tui check FILE`, whole process" if args.check else "the read alone"
    print(f"file: {args.lines} lines, {size_mb:.1f} MB; {what}; {args.repeat} runs each")
    ours = variants[0]
    for variant in variants:
        best, median = min(variant.times), statistics.median(variant.times)
        print(
            f"  {variant.name:<10} best {best:6.2f} s  median {median:6.2f} s  "
            f"{best / min(ours.times):5.2f}x ours' time  "
            f"peak RSS {variant.rss_mb:4.0f} MB  ({variant.rows})"
        )


if __name__ == "__main__":
    main()
