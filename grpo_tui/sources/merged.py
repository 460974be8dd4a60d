"""A JSON-lines log several processes append to, one step in several lines, as a record store.

prime-rl's trainer and orchestrator both append to `<run_dir>/metrics.jsonl`, each
`{"step": N, "time": …, **metrics}` (prime_rl/monitors/file.py): the orchestrator one line
per step (it runs ahead: it ships batch N before the trainer trains on it), the trainer a
burst of lines per step (performance, optimizer, tensor statistics, timing, disk). Read as
plain lines, every line of a step after its first would re-log the step (the run's rule
for a resumed run: the newer line wins, the older one goes), and the orchestrator's lead
would look like a run going back. So the lines of one step are merged into one record, and
a step is handed out once it is complete:

- once every writer seen so far logged a later step (a writer is told by its keys: the
  adapter's `writers`, key prefixes per process), or, with no writer told apart, once a
  later step came;
- or once nothing new came for SETTLE_S, up to the newest step of the slowest writer (a
  run's last step, a writer that stopped);
- or when a one-shot read reached the end (`finish`).

A line of a step already handed out is merged into it when the step has no line of its
shape (its set of keys) yet: a line late past the settling time. That step and the later
ones are handed out again (the run re-logs them). A line of a shape the step has already is
a resumed run starting that step again: the steps from it on start over. (Shapes, not keys:
prime-rl's trainer and orchestrator both log a `time/step`; where two lines of a step share
a key, the later line's value is kept.) Eval lines (every key but the
step and time under the eval prefix: prime-rl logs evals when they end, steps later) are
handed out as they come, records of their own. A row with `"step": null` (prime-rl's
`log_metrics(…, step=None)` since #3444: inference metrics sampled on wall time) is
time-keyed: no step to put it at, so it is counted and said, never a bad line.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_tui.sources.logreader import BadJson, parse_object
from grpo_tui.sources.polled import PolledRecords
from grpo_tui.sources.records import BadLine
from grpo_tui.sources.tail import TailReader

#: seconds without a new line after which the slowest writer's newest step is complete
SETTLE_S = 5.0
#: steps handed out kept merged, so a late line can be added to its step
KEPT_STEPS = 256
#: keys that are not metrics of a step (`producer`: which process wrote the row, prime-rl
#: since #3444)
_BOOKKEEPING = frozenset({"step", "time", "producer"})
_EXCERPT_CHARS = 80


@dataclass(slots=True)
class _Step:
    """One step's lines, merged."""

    record: dict[str, Any]
    """The step's values, the later line's on a key two lines share."""
    shapes: set[frozenset[str]] = field(default_factory=set)
    """The key sets of its lines (a second line of one shape re-logs the step)."""


class MergedStepsStore:
    """A JSON-lines log whose steps come in several lines (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        writers: tuple[tuple[str, ...], ...] = (),
        eval_prefix: str = "eval/",
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`writers`: per process, key prefixes only its lines carry."""
        self.path = Path(path)
        self._tail = TailReader(self.path)
        self.writers = writers
        self.eval_prefix = eval_prefix
        self._clock = clock
        self._reset()

    def _reset(self) -> None:
        #: step → its merged record, not handed out yet
        self._pending: dict[int, _Step] = {}
        #: step → its merged record, handed out (the latest KEPT_STEPS, oldest first)
        self._handed: dict[int, _Step] = {}
        #: the highest step handed out
        self._last_handed = -math.inf
        #: writer → the highest step it logged
        self._seen: dict[int, int] = {}
        self._last_new = self._clock()
        #: rows logged at a time, not a step (`"step": null`), and the count said next
        self.time_keyed_rows = 0
        self._next_said = 1

    # -- polling ------------------------------------------------------------------------
    def poll(self) -> PolledRecords:
        chunk = self._tail.poll()
        out = PolledRecords(problem=self._tail.problem, more=chunk.more)
        if chunk.restarted is not None:
            self._reset()
            out.restarted = True
        if chunk.data:
            out.data_time = self._tail.mtime
            self._last_new = self._clock()
            for line in chunk.lines:
                self._take(line.data, line.line_no, out)
        idle = not chunk.more and self._clock() - self._last_new >= SETTLE_S
        self._hand_out(out, idle=idle)
        return out

    def finish(self) -> PolledRecords:
        """A one-shot read reached the end: every step still held is complete."""
        out = PolledRecords()
        self._hand_out(out, everything=True)
        return out

    def _take(self, line: bytes, line_no: int, out: PolledRecords) -> None:
        try:
            obj, reason = parse_object(line), "no integer step"
        except BadJson as error:
            obj, reason = {}, str(error)
        step = obj.get("step")
        if step is None and "step" in obj:
            self._time_keyed(obj, out)
            return
        if isinstance(step, bool) or not isinstance(step, int):
            excerpt = line[:_EXCERPT_CHARS].decode("utf-8", errors="replace")
            out.bad.append(BadLine(str(self.path), line_no, reason, excerpt))
            return
        named = [key for key in obj if key not in _BOOKKEEPING]
        if named and all(key.startswith(self.eval_prefix) for key in named):
            out.records.append(obj)  # an eval: a record of its own, whenever it ends
            return
        writer = self._writer_of(named)
        if writer is not None:
            self._seen[writer] = max(self._seen.get(writer, step), step)
        self._merge(step, obj, named, writer)

    def _time_keyed(self, obj: dict[str, Any], out: PolledRecords) -> None:
        """A row logged at a time, not a step (`"step": null`: prime-rl's inference
        metrics, sampled on wall time): no bad line and no step; counted, and said when
        the count reaches 1, 10, 100, … (a live run logs them every few seconds)."""
        self.time_keyed_rows += 1
        if self.time_keyed_rows == self._next_said:
            self._next_said *= 10
            producer = obj.get("producer")
            by = f", the latest from {producer}" if isinstance(producer, str) else ""
            plural = "" if self.time_keyed_rows == 1 else "s"
            out.events.append(
                f"{self.path.name}: {self.time_keyed_rows} time-keyed row{plural} so far "
                f'("step": null{by}): logged on wall time, not at a step, so left out of '
                "the charts"
            )

    def _writer_of(self, keys: list[str]) -> int | None:
        for index, prefixes in enumerate(self.writers):
            if any(key.startswith(prefixes) for key in keys):
                return index
        return None

    def _merge(self, step: int, obj: dict[str, Any], named: list[str], writer: int | None) -> None:
        shape = frozenset(named)
        held = self._pending.get(step)
        if held is None and step in self._handed and shape not in self._handed[step].shapes:
            # late: added to its step, which is handed out again with the ones after it
            for again in [s for s in self._handed if s >= step]:
                self._pending[again] = self._handed.pop(again)
            self._last_handed = max(self._handed, default=-math.inf)
            held = self._pending[step]
        if held is not None and shape not in held.shapes:
            held.record.update(obj)
            held.shapes.add(shape)
            return
        if held is not None or step <= self._last_handed:
            self._start_over(step, writer)
        self._pending[step] = _Step(dict(obj), {shape})

    def _start_over(self, step: int, writer: int | None) -> None:
        """A resumed run logs `step` again: what was held from it on is the abandoned run's."""
        self._pending = {s: r for s, r in self._pending.items() if s < step}
        self._handed = {s: r for s, r in self._handed.items() if s < step}
        self._last_handed = min(self._last_handed, step - 1)
        # every writer starts again from there (the one that wrote this line is at `step`)
        self._seen = {w: min(seen, step - 1) for w, seen in self._seen.items()}
        if writer is not None:
            self._seen[writer] = step

    def _hand_out(
        self, out: PolledRecords, *, idle: bool = False, everything: bool = False
    ) -> None:
        if not self._pending:
            return
        # complete: below the slowest writer (one writer: once a later step came); idle, up
        # to that step
        last = min(self._seen.values()) if self._seen else max(self._pending)
        ready = math.inf if everything else last + 1 if idle else last
        for step in sorted(s for s in self._pending if s < ready):
            held = self._pending.pop(step)
            out.records.append(dict(held.record))
            self._handed[step] = held
            self._last_handed = max(self._last_handed, step)
        while len(self._handed) > KEPT_STEPS:
            del self._handed[next(iter(self._handed))]
