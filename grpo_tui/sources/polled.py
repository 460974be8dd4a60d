"""Metrics stores read record by record instead of as a growing text: the contract.

A JSONL or console log is tailed byte by byte (sources/tail.py). Some stores are not text
that grows at its end: a `trainer_state.json` is rewritten whole (document.py), TensorBoard
event files are framed binary records (tensorboard.py), trackio keeps a SQLite database
(trackio.py). Their readers answer one
question, `poll()`: which log dicts are new since the last call. The feed maps those dicts
through the framework's adapter exactly like lines of a log, so every store reaches the
same canonical metrics, rules and screens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from grpo_tui.sources.records import BadLine


@dataclass(slots=True)
class PolledRecords:
    """What one poll of a record store found."""

    #: new log dicts in the order they were logged, each with an int "step" key and the
    #: framework's own key names (a store's own prefixes such as TensorBoard's `train/` are
    #: removed; eval values carry the framework's eval prefix, e.g. `eval_`)
    records: list[dict[str, Any]] = field(default_factory=list)
    #: the store started over (replaced, truncated, a new run): what was read before is
    #: not part of what follows
    restarted: bool = False
    #: why the store cannot be read right now, in one line a user can act on
    #: ("permission denied: PATH", "TensorBoard files need: pip install 'grpo-tui[tensorboard]'")
    problem: str | None = None
    #: modification time of the newest data read (for "last data 3 s ago")
    data_time: float | None = None
    #: more is ready to read right away (a large backlog read in bounded bites)
    more: bool = False
    #: what the user should hear about the store, once each ("… holds no log records")
    events: list[str] = field(default_factory=list)
    #: the store's own settings, once it was read ({} when it has none): a
    #: trainer_state.json's max_steps and logging_steps fill what the run context lacks
    settings: dict[str, Any] | None = None
    #: which of the store's runs the records are of, when it holds several (trackio)
    run: str | None = None
    #: records found and not usable (a row whose metrics are no JSON object, one without
    #: a step): counted and shown like bad lines, the records around them kept
    bad: list[BadLine] = field(default_factory=list)


class RecordStore(Protocol):
    """A metrics store read by polling."""

    #: the file (or database) being read, for messages and `inspect`
    path: Path

    def poll(self) -> PolledRecords:
        """New records since the last call. Never raises for a file problem: a problem is
        said in `PolledRecords.problem` and the next poll tries again."""
        ...
