"""OpenPipe ART's trajectories: `<model_dir>/trajectories/<split>/{step:04d}.parquet`.

Read from the openpipe-art 0.5.18 wheel: `Model.log` writes one file per logged step
(art/model.py:906–910) with `write_trajectory_groups_parquet` (art/utils/
trajectory_logging.py:59–140): one row per trajectory, columns `group_index`, `reward`,
`messages` (a list of `{role, content, tool_calls, tool_call_id, trainable}`; the model's
own choices are `trainable`), `metrics`, `metadata`, `logs` and the group's JSON fields.

`convert` makes a row's prompt the messages before its first trainable one (the
conversation the model was given) and its completion the trainable messages' text; the
reward column is ART's single `reward`. Rows of one group share their prompt, so the
index groups them as ART did. A file without its parquet footer is still being written:
None, read again once it changes. pyarrow is optional (the `parquet` extra).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from grpo_tui.files import fstat, open_regular, read_regular
from grpo_tui.sources.formats.layout import BatchFileError, Converted
from grpo_tui.sources.formats.trl_completions import PYARROW_MISSING

#: a step file: `0007.parquet` (`{step:04d}`, more digits past 9999)
FILE_PATTERN = re.compile(r"(?P<step>\d{4,})\.parquet")
#: the folder of the train split's files in a model folder
TRAIN_DIR = ("trajectories", "train")
_MAGIC = b"PAR1"
#: bytes of a file's end looked at for its schema (the footer names every column)
_FOOTER_BYTES = 1 << 16


def looks_like_trajectories(path: Path) -> bool:
    """A parquet file whose footer names ART's columns (a `0001.parquet` of another tool
    is not taken for one); one still being written (no footer yet) goes by its name."""
    try:
        with open_regular(path) as handle:
            if handle.read(len(_MAGIC)) != _MAGIC:
                return False
            size = fstat(handle).st_size
            handle.seek(max(len(_MAGIC), size - _FOOTER_BYTES))
            tail = handle.read(_FOOTER_BYTES)
    except OSError:
        return False
    if not tail.endswith(_MAGIC):
        return True
    return b"group_index" in tail and b"messages" in tail


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    calls = message.get("tool_calls")
    return f"{text}\n{calls}" if isinstance(calls, str) and calls else text


def _split(messages: object) -> tuple[list[dict[str, str]], str]:
    """A trajectory's messages as (the prompt's messages, the completion's text)."""
    if not isinstance(messages, list):
        return [], ""
    parts = [m for m in messages if isinstance(m, dict)]
    first = next((i for i, m in enumerate(parts) if m.get("trainable")), len(parts))
    prompt = [{"role": str(m.get("role") or ""), "content": _text(m)} for m in parts[:first]]
    completion = "\n".join(_text(m) for m in parts[first:] if m.get("trainable"))
    return prompt, completion


def convert(path: Path) -> Converted | None:
    """One trajectories file as columns: `prompt`, `completion`, `reward`. Raises
    BatchFileError (no pyarrow, unreadable, not ART's), OSError (not opened)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as error:
        raise BatchFileError(PYARROW_MISSING) from error
    data = read_regular(path)
    if len(data) < 2 * len(_MAGIC) or not data.endswith(_MAGIC):
        return None  # the footer comes last: still being written
    try:
        table = pq.read_table(pa.BufferReader(data), columns=["group_index", "reward", "messages"])
        rows = table.to_pylist()
    except (pa.ArrowException, OSError, ValueError, KeyError) as error:
        raise BatchFileError(
            f"not ART trajectories ({str(error).splitlines()[0][:160]})"
        ) from error
    prompts: list[Any] = []
    completions: list[Any] = []
    rewards: list[Any] = []
    for row in rows:
        prompt, completion = _split(row.get("messages"))
        prompts.append(prompt)
        completions.append(completion)
        reward = row.get("reward")
        rewards.append(float(reward) if isinstance(reward, (int, float)) else float("nan"))
    return Converted({"prompt": prompts, "completion": completions, "reward": rewards})
