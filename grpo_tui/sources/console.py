"""A console log → Batches: the trainer's printed dicts, read like log_history items.

The text work (tqdm redraws, wrapped dicts, the step from the progress bar) is the
adapter's parser's (sources/formats/console.py, verl.py, …); this feeds it the complete
lines a tail read hands out, their terminal codes stripped, and passes the dicts it finds
to the shared log reader. A dict whose end has not arrived yet waits in the parser for the
next read.
"""

from __future__ import annotations

from collections.abc import Iterator

from grpo_tui.sources.formats.base import FormatAdapter, TextDict, TextParser
from grpo_tui.sources.formats.console import CONSOLE
from grpo_tui.sources.formats.layout import strip_terminal_codes
from grpo_tui.sources.logreader import LogReader
from grpo_tui.sources.records import BadLine, Batch


def console_lines(data: bytes) -> Iterator[str]:
    """The chunk's lines, decoded one at a time (UTF-8 never holds 0x0A inside a
    character): a 50 MB line of tqdm redraws is decoded alone, not beside a decoded copy of
    the whole chunk and a list of every line."""
    view = memoryview(data)
    start, end = 0, len(data)
    while start < end:
        stop = data.find(b"\n", start)
        if stop < 0:
            stop = end
        yield str(view[start:stop], "utf-8", "replace")
        start = stop + 1


class ConsoleReader(LogReader):
    """Reads one console log (any name: train.log, nohup.out) as it grows, through its
    adapter's text parser (TRL's printed dicts by default)."""

    def __init__(self, origin: str, adapter: FormatAdapter = CONSOLE) -> None:
        super().__init__(adapter, origin)
        if adapter.parser is None:
            raise ValueError(f"{adapter.name} has no console parser")
        self._make_parser = adapter.parser
        self.parser: TextParser = self._make_parser()
        self._bad_seen = 0
        #: the line the newest record read started on (0: none yet): what a stop line
        #: before it is buried by (sources/stop_lines.py)
        self.last_record_line = 0

    def read_chunk(self, data: bytes, first_line_no: int = 1) -> Batch:
        found: list[TextDict] = []
        for line_no, line in enumerate(console_lines(data), first_line_no):
            found.extend(self.parser.feed(strip_terminal_codes(line), line_no))
        return self._read_found(found)

    def finish(self) -> Batch:
        """The end of a one-shot read: a record the file ends inside is read as far as
        it goes (and counted bad)."""
        return self._read_found(list(self.parser.flush()))

    def _read_found(self, found: list[TextDict]) -> Batch:
        batch = self.read_objects([item.values for item in found]) if found else Batch()
        if found:
            self.last_record_line = max(self.last_record_line, found[-1].line_no)
        for line_no, reason, excerpt in self.parser.bad[self._bad_seen :]:
            batch.bad_lines.append(BadLine(self.origin, line_no, reason, excerpt))
        self._bad_seen = len(self.parser.bad)
        return batch

    def restart(self) -> None:
        """The file started over: forget what was half read."""
        self.parser = self._make_parser()
        self._bad_seen = 0
        self.last_step = 0
        self.last_record_line = 0
