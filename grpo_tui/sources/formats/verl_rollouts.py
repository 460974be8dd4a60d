"""verl ≥ 0.4's rollout dumps: `<trainer.rollout_data_dir>/<global_step>.jsonl`.

verl writes a step's file once, after the update (frameworks.md §3.3): one JSON object per
response, `{"input": prompt text, "output": text, "gts": ground truth (≥ 0.6), "score":
total reward, "step": N, <reward_extra_info keys: "acc", "format_score", "pred", …>}`
(0.9 adds `request_id`). There is no group id and sequence balancing reorders the rows,
so the rows are sorted by their input text here: a prompt's responses become one
contiguous group (the index groups by prompt text in any case).

`convert` maps `input` → `prompt`, `output` → `completion`, `score` → `reward` (the
logged total: the index takes it as each row's total), every other key whose values are
all numbers or booleans (`acc`, `format_score`, …) → a reward-function column, `gts` →
`solution`; text keys (`pred`, `request_id`) are left out.

The file is written line by line (`json.dumps(...) + "\\n"`): a last line without its
newline is still being written (None: tried again when the file changes). A file can also
end on a newline half way through, so read it with `settle_s=SETTLE_S`
(sources/completion_batches.py), which leaves a file alone until it has stopped changing.
`looks_like_rollouts` tells such a file from other `<number>.jsonl` files.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import orjson

from grpo_tui.files import read_regular
from grpo_tui.sources.formats.layout import BatchFileError, Converted, read_head
from grpo_tui.sources.formats.msswift_completions import NON_REWARD_KEYS, decode_line

#: a file of the folder; the number is the global step
FILE_PATTERN = re.compile(r"(?P<step>\d+)\.jsonl")
#: seconds a rollout file must be left unchanged before it is read (see the docstring)
SETTLE_S = 2.0
#: what a rollout line always holds
REQUIRED_KEYS = ("input", "output")
#: bytes read to look at a file's first line
_FIRST_LINE_BYTES = 1 << 20
#: verl's keys and the columns they become (an extra key named as a column the index reads,
#: NON_REWARD_KEYS, is not taken for a reward)
_RENAMED = {"input": "prompt", "output": "completion", "score": "reward", "gts": "solution"}


def looks_like_rollouts(path: Path) -> bool:
    """The file's first line is a JSON object with `input` and `output` (a verl rollout
    dump, not some other `<number>.jsonl`)."""
    first = read_head(path, _FIRST_LINE_BYTES).split(b"\n", 1)[0]
    try:
        value, _ = decode_line(first)
    except ValueError:
        return False
    return isinstance(value, dict) and all(key in value for key in REQUIRED_KEYS)


def convert(path: Path) -> Converted | None:
    """One rollout file as columns, rows sorted by input; None while it is being written.
    A line that is no JSON object is skipped and said (the other responses are kept).
    Raises BatchFileError (no line readable, not a rollout file), OSError (not opened)."""
    data = read_regular(path)
    if not data.strip() or not data.endswith(b"\n"):
        return None  # empty (just created) or its last line not finished
    rows: list[dict[str, object]] = []
    skipped: list[str] = []
    for line_no, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            value, _ = decode_line(raw.removesuffix(b"\r"))
        except ValueError as error:
            skipped.append(f"line {line_no}: invalid JSON ({error})")
            continue
        if not isinstance(value, dict):
            skipped.append(f"line {line_no}: not a JSON object")
            continue
        rows.append(value)
    if not rows:
        raise BatchFileError(skipped[0] if skipped else "no response in it")
    if not all(key in rows[0] for key in REQUIRED_KEYS):
        raise BatchFileError("not a verl rollout dump: no 'input' and 'output' in its first line")
    rows.sort(key=lambda row: _text(row.get("input")))
    keys = list(dict.fromkeys(key for row in rows for key in row))
    columns: dict[str, list[object]] = {}
    for key in keys:
        values = [row.get(key) for row in rows]
        name = _RENAMED.get(key, key)
        if key == "gts":
            columns[name] = [_solution(value) for value in values]
        elif key in ("input", "output", "step"):
            columns[name] = values
        elif key == "score" or (key not in NON_REWARD_KEYS and all(map(_is_number, values))):
            columns[name] = [_number(value) for value in values]
    return Converted(columns, tuple(skipped))


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _solution(value: object) -> str | None:
    """A ground truth as text (a structured one as its JSON)."""
    if value is None or isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, default=str).decode()
    except (orjson.JSONEncodeError, TypeError):
        return str(value)


def _is_number(value: object) -> bool:
    return value is None or isinstance(value, (bool, int, float))


def _number(value: object) -> float | None:
    """A score as a float (booleans 1/0); None for a missing or non-numeric value."""
    if isinstance(value, (int, float)):  # bool is an int: float(True) is 1.0
        try:
            number = float(value)
        except OverflowError:
            return None
        return None if math.isnan(number) else number
    return None
