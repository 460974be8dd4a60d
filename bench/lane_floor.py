"""The cheapest a vectorised (numpy) JSON lane could be, against the bare orjson loop.

Issue #2 asks our backfill for ≥ 0.8× the throughput of a bare `orjson.loads` loop. One
process cannot get there with orjson (every value must also be taken out of its dict), so
the other route is to skip orjson for lines of a known skeleton and cut the numbers out of
the bytes in numpy. This script times only the passes such a lane cannot do without, on
the same file `bench/ingest.py` builds, and none of the work after them (no JSON number
grammar check, no float conversion, no string columns, no store):

  scan      newline and quote positions
  lines     per-line quote counts and the lines holding a byte that needs orjson
            (backslash, control or non-ASCII)
  skeleton  24 bytes at every quote pair of every line compared with its shape's first
            line, as 8-byte words (less than a full key check: long keys have more)
  numbers   the number tokens gathered as three 8-byte words each, one pass telling
            digits from the rest

If these passes alone take longer than the orjson loop, no numpy lane reaches the target.

    python bench/lane_floor.py [--lines 100000] [--repeat 3]
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

# bench/ingest.py: this script's folder is on sys.path when it is run as a script
from ingest import bench_arguments, built_log, run_orjson

_QUOTE, _NEWLINE, _BACKSLASH = 34, 10, 92
_PAD = 32  # room for word gathers that reach before the first line
_BLOCK_BYTES = 4 << 20


def _lane_passes(block: bytes, spent: dict[str, float]) -> None:
    started = time.perf_counter()
    padded = b"\0" * _PAD + block
    buf = np.frombuffer(padded, np.uint8)
    ends = np.flatnonzero(buf == _NEWLINE)
    starts = np.empty_like(ends)
    starts[0], starts[1:] = _PAD, ends[:-1] + 1
    quotes = np.flatnonzero(buf == _QUOTE)
    now = time.perf_counter()
    spent["scan"] += now - started
    started = now

    odd = buf == _BACKSLASH
    odd |= (buf - 32) >= 95  # below space or above "~" (uint8 wraps)
    odd[ends] = False
    odd[:_PAD] = False
    odd_line = np.zeros(ends.shape[0], dtype=bool)
    odd_line[np.searchsorted(ends, np.flatnonzero(odd))] = True
    first_quote = np.searchsorted(quotes, starts)
    quote_count = np.searchsorted(quotes, ends) - first_quote
    now = time.perf_counter()
    spent["lines"] += now - started
    started = now

    shape_quotes = int(quote_count[0])
    alike = np.flatnonzero((quote_count == shape_quotes) & ~odd_line)
    at = quotes[first_quote[alike][:, None] + np.arange(shape_quotes)]
    # an unaligned uint64 view: element i is the 8 bytes starting at byte i
    words = np.ndarray((buf.shape[0] - 7,), "<u8", buffer=padded, strides=(1,))
    key_open = at[:, 0::2]
    gathered = words[(key_open - 2)[:, :, None] + np.array([0, 8, 16])]
    same = (gathered == gathered[0]).all(axis=(1, 2))
    now = time.perf_counter()
    spent["skeleton"] += now - started
    started = now

    token_end = key_open[:, 1:] - 2
    tokens = words[token_end[:, :, None] + np.array([-24, -16, -8])].reshape(-1, 3)
    as_bytes = tokens.view(np.uint8).reshape(-1, 24)
    np.flatnonzero((as_bytes - 48) > 9)
    spent["numbers"] += time.perf_counter() - started
    del same


def run_lane(path: Path) -> dict[str, float]:
    data = path.read_bytes()
    spent = dict.fromkeys(("scan", "lines", "skeleton", "numbers"), 0.0)
    pos = 0
    while pos < len(data):
        end = data.rfind(b"\n", pos, pos + _BLOCK_BYTES) + 1
        if end <= pos:
            end = len(data)
        _lane_passes(data[pos:end], spent)
        pos = end
    return spent


def main() -> None:
    args = bench_arguments()
    with built_log(args.lines) as path:
        best_loop = best_lane = float("inf")
        best_parts: dict[str, float] = {}
        for _ in range(args.repeat):
            started = time.perf_counter()
            run_orjson(path)
            best_loop = min(best_loop, time.perf_counter() - started)
            started = time.perf_counter()
            parts = run_lane(path)
            took = time.perf_counter() - started
            if took < best_lane:
                best_lane, best_parts = took, parts
    print(f"file: {args.lines} lines; best of {args.repeat}")
    print(f"  orjson loop          {best_loop:7.3f} s")
    print(f"  numpy lane, passes   {best_lane:7.3f} s  (read and cut into blocks included)")
    for name, seconds in best_parts.items():
        print(f"    {name:<9} {seconds:7.3f} s")
    print(f"lane floor / orjson loop throughput: {best_loop / best_lane:.2f}x "
          "(the lane's other work would only lower it; the target for the whole backfill is 0.8x)")


if __name__ == "__main__":
    main()
