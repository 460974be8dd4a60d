"""A JSON document rewritten whole (a trainer_state.json) as a record store.

It is re-read whenever its identity, mtime or size changes, and only its log records new
since the last read are handed out: a newer checkpoint's document repeats the older
history, so a store that follows another (`after`) goes on from the last record it took.
A document that does not parse is probably being written: it is tried again at the next
poll, and said once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from grpo_tui.files import describe_os_error, stat_path
from grpo_tui.sources.context import read_json_document
from grpo_tui.sources.polled import PolledRecords

#: a document's log records (trainer_state.json's `log_history`), None when it holds none
Records = Callable[[Any], list[Any] | None]


class DocumentStore:
    """One JSON document's log records, polled (see the module docstring)."""

    def __init__(
        self, path: Path, records: Records | None, *, after: DocumentStore | None = None
    ) -> None:
        self.path = path
        self._records = records
        self._signature: tuple[int, int, float, int] | None = None
        #: the last log record handed out, to skip what was already read
        self._last: dict[str, Any] | None = None if after is None else after._last
        self._unparsed = False  # the document did not parse at the last read (said once)

    def poll(self) -> PolledRecords:
        """The log records new since the last read (none while the document is unchanged)."""
        polled = PolledRecords()
        try:
            info = stat_path(self.path)
        except FileNotFoundError:
            return polled  # replaced right now, or a checkpoint deleted: discovery finds the newest
        except OSError as error:
            polled.problem = describe_os_error(error, self.path)
            return polled
        signature = (info.st_dev, info.st_ino, info.st_mtime, info.st_size)
        if signature == self._signature:
            return polled
        try:
            document, _ = read_json_document(self.path)
        except OSError as error:
            polled.problem = describe_os_error(error, self.path)
            return polled
        except ValueError as error:
            if not self._unparsed:
                polled.events.append(f"{self.path.name} unreadable for now: {error}")
            self._unparsed = True
            return polled
        self._signature, self._unparsed = signature, False
        polled.data_time = info.st_mtime
        polled.settings = {}
        history = None if self._records is None else self._records(document)
        if history is None:
            polled.events.append(f"{self.path.name} holds no log records")
            return polled
        if isinstance(document, dict):
            polled.settings = document
        items = [item for item in history if isinstance(item, dict)]
        # after the newest copy of the last record taken (None: none taken, all are new)
        start = next((i + 1 for i in range(len(items) - 1, -1, -1) if items[i] == self._last), 0)
        polled.records = items[start:]
        if polled.records:
            self._last = polled.records[-1]
        return polled
