"""One metrics log → Batches: the reading order and the state lines need from each other.

The per-line work (parse, classify, map keys, stack rows) is in shapes.py; what depends on
earlier lines is settled here, in line order: a line that names no step takes the step of
the line before (eval and end lines) or the next one (a train line of a log that counts no
steps), and max_steps and the version hints carry over from chunk to chunk.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.records import Batch, RowBlock
from grpo_tui.sources.shapes import Part, ShapeStacker, read_part
from grpo_tui.vocabulary import LineKind


class LogReader:
    """Reads one metrics log (a JSONL file, or a list of log_history items).

    Keeps the little state lines need from each other: the last step (eval lines and
    lines without a step key take it from the line before), max_steps, and the version
    hints the key sets gave away.
    """

    def __init__(self, adapter: FormatAdapter, origin: str) -> None:
        self.adapter = adapter
        self.origin = origin
        self.last_step: int = 0
        self.max_steps: int | None = None
        self.version_hints: list[str] = []
        #: the framework's own keys seen so far, and what they say of the tool on top
        #: of it ("Unsloth (TRL)"; None when nothing more than the adapter)
        self.keys_seen: set[str] = set()
        self.flavour: str | None = None
        #: a train line named no step, so the reader counted (generic logs)
        self.counted_steps = False

    def restart(self) -> None:
        """The file started over: steps count from the start again."""
        self.last_step = 0

    def read_chunk(self, data: bytes, first_line_no: int = 1) -> Batch:
        """Complete lines (bytes, each line ending in a newline) → a Batch. Bad lines are
        counted with their line number and a reason, never fatal."""
        return self._settle([read_part(self.adapter, self.origin, data, first_line_no)])

    def finish(self) -> Batch:
        """The end of a one-shot read: nothing waits in a line reader."""
        return Batch()

    def read_objects(self, objs: Sequence[Mapping[str, Any]]) -> Batch:
        """Already parsed log dicts (log_history items, a store's records) → a Batch."""
        stacker = ShapeStacker(self.adapter, self.origin)
        # already in memory: no slicing needed (slices only keep parsed lines short-lived)
        stacker.add(objs)
        return self._settle([stacker.finish()])

    def _settle(self, parts: list[Part]) -> Batch:
        batch = Batch()
        for part in parts:
            steps = self._fill_steps(part.kinds, part.steps)
            if part.max_steps:
                self.max_steps = part.max_steps
            for hint in part.version_hints:
                if hint not in self.version_hints:
                    self.version_hints.append(hint)
            self._note_keys(part)
            if len(steps):
                batch.blocks.append(RowBlock(part.kinds, steps, part.groups, self.max_steps))
            batch.bad_lines.extend(part.bad_lines)
            batch.finished = batch.finished or part.finished
        return batch

    def _note_keys(self, part: Part) -> None:
        before = len(self.keys_seen)
        self.keys_seen.update(part.keys)
        if self.adapter.flavour is not None and len(self.keys_seen) != before:
            self.flavour = self.adapter.flavour(self.keys_seen)

    def carry_over(self, previous: LogReader) -> None:
        """Go on from another reader of the same run (a resumed run's new file)."""
        self.last_step = previous.last_step
        self.max_steps = previous.max_steps
        self.version_hints = previous.version_hints
        self.keys_seen = previous.keys_seen
        self.flavour = previous.flavour

    def _fill_steps(self, kinds: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Steps for the lines that named none, in order; updates `last_step`."""
        if not len(steps):
            return steps
        if np.isnan(steps).any():
            filled = steps.tolist()
            last = self.last_step
            for i, (kind, step) in enumerate(zip(kinds.tolist(), filled)):
                if math.isnan(step):  # no step key: an eval/end line belongs to the step
                    # before it; a train line without one (generic logs) is counted
                    if kind == LineKind.TRAIN:
                        self.counted_steps = True
                    step = last + 1 if kind == LineKind.TRAIN else last
                    filled[i] = step
                last = int(step)
            steps = np.array(filled, dtype=np.float64)
        self.last_step = int(steps[-1])
        return steps
