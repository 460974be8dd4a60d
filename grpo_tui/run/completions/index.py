"""An index over a run's logged completions: a record per batch, texts read on demand.

The batches come from a `BatchSource` (sources/completion_batches.py: a completions.jsonl,
a folder of step files). Files of several GB are normal, so the index keeps, per batch,
only its reference to read it again, step, row count, a 64-bit content digest and a few
counts, in one structured numpy array (`entries.ENTRY`: about 60 bytes a batch, no Python object
per batch; a 2 GB file of small batches holds hundreds of thousands). The per-step
statistics are summed into their step's row when a batch is read (summary.py). Texts are
read again when a batch's groups are asked for; at most `cache_lines` parsed batches stay
in memory (LRU).

Which batches count for the per-step summary (ms-swift 4.x gives no mode field):
- A batch whose rollouts are identical to the previous batch's, hashed on (prompt,
  completion, advantage) per row, is a *repeat*: the end-of-train line repeats the last
  one verbatim, and with `num_iterations > 1` consecutive steps log the same rollouts.
  The first batch carries them (its step is when they were generated).
- A later batch carrying a step already seen is the eval (or end-of-train) batch of that
  step.
- The metrics log says which steps had an eval (`note_log_lines`: ms-swift and TRL write
  completions from the same `log()` call that writes the metrics line, eval's included,
  and neither marks the rollouts' mode). A batch at a step with an eval line is *eval*,
  kept out of the per-step summary, when it is the later batch at its step, or the only
  one at a step without a train line, or the only one at its step in a source whose eval
  rewrites the step's file in place (TRL: what is there at rest is the eval's rollouts).
  The summary and the metrics log are read in one go (the follower notes the lines after
  each read of the completions, before the summary), and a train row that would carry a
  step's statistics is logged after that step's eval line, so an eval batch's statistics
  never reach the train series; a batch relabelled after it was summed leaves its step.
- A batch that is `part_of_step` (ms-swift 3.1-3.2 logged while generating) is merged
  into its step, never taken for its eval batch.
- A batch that `extends` the one before (Megatron-Ray: a line per completion) grows that
  entry; it is tallied once the next batch shows it is complete.

Every batch stays reachable through `page(entry)`; `line_info(entry).kind` says which
role it was given.

The reader thread reads into the index while the completions panel asks it for pages
(from a worker thread): every public method and property holds the index's lock, and a
read takes it per chunk so a page is never kept waiting for a whole backlog.

Newest first: a file of many GB takes a while to index from the start, so the first read
of a big file also takes its newest batch from the end (`BatchSource.newest`), which
`newest_page` hands out until the index has caught up.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from grpo_tui.run.completion_stats import CompletionsSummary
from grpo_tui.run.completions.entries import (
    ENTRY,
    EVAL,
    EVAL_OR_END,
    KIND_CODE,
    KINDS,
    NEW,
    REPEAT,
    SHAPE_CODE,
    SHAPES,
    EntryKind,
    IndexState,
    LineInfo,
    Page,
    SearchHit,
    StepMap,
    decimal_label,
    step_key,
)
from grpo_tui.run.completions.groups import (
    TIE_TOLERANCE,
    Analysed,
    Group,
    analyse,
    build_group,
    group_contains,
    passing,
)
from grpo_tui.run.completions.ledger import Category, LedgerReport, PromptLedger, Span
from grpo_tui.run.completions.summary import StepTable, Tally, grown, tally, zero_spread_groups
from grpo_tui.sources.completion_batches import BatchSource, JsonlBatches
from grpo_tui.sources.records import BadLine, CompletionBatch, CompletionRows
from grpo_tui.vocabulary import LineKind

#: parsed batches kept in memory by default (one can hold thousands of long completions)
DEFAULT_CACHE_LINES = 4
#: bad lines kept with their reason (the count goes on); the most recent ones
BAD_LINES_KEPT = 100
#: distinct step labels remembered per entry
_STEP_LABELS_KEPT = 8
#: a search parses entries for about this long before it reports how far it got
SEARCH_BUDGET_S = 0.5
#: how long a read sleeps between chunks while another thread waits for the index
_GIVE_WAY_S = 0.002


# --------------------------------------------------------------------------- the index


class CompletionsIndex:
    """Follows one run's completions: `poll()` to read, `summary()` / `page()` to look."""

    def __init__(
        self,
        path: Path,
        *,
        cache_lines: int = DEFAULT_CACHE_LINES,
        group_size: int | None = None,
        source: BatchSource | None = None,
    ) -> None:
        """`group_size`: num_generations when known (args.json); see groups.partition.
        `source`: where the batches come from (default: the file at `path` as JSON lines);
        `path` names it in messages."""
        self.path = Path(path)
        self.cache_cap = max(1, cache_lines)
        self.group_size = group_size
        self._source = source if source is not None else JsonlBatches(path)
        #: unread complete data remained after the last read (its byte budget ran out)
        self.more = False
        #: reads so far
        self.polls = 0
        self._lock = threading.RLock()
        #: threads waiting for the lock (a read gives way to them between chunks)
        self._waiting = 0
        self._waiting_lock = threading.Lock()
        #: the newest batch read from the end of a big file, until the index has caught up
        self._preview: Page | None = None
        self._preview_tried = False
        self._steps = StepTable()
        #: steps (their numbers) the metrics log has a train line at, and an eval line at;
        #: kept when the completions source starts over (they describe the metrics log)
        self._train_steps: set[float] = set()
        self._eval_steps: set[float] = set()
        self._reset()

    def _reset(self) -> None:
        self._entries = np.zeros(0, dtype=ENTRY)
        self._count = 0
        #: step labels that are not the decimal of their number (entry → label)
        self._odd_labels: dict[int, str] = {}
        #: distinct step labels of an entry's rows, where they are not just its step label
        self._odd_steps: dict[int, tuple[str, ...]] = {}
        self._newest_shown: int | None = None
        self._shown_count = 0
        self._shown_groups = 0
        #: per summary slot, the entry whose rollouts count for it, and the entries merged
        #: into it after that (ms-swift 3.1's several batches per step)
        self._slot_entry = np.empty(0, dtype=np.int32)
        self._slot_more: dict[int, list[int]] = {}
        self._steps = StepTable(self._steps.revision + 1)
        self._step_map = StepMap()
        self._cache: OrderedDict[int, Analysed] = OrderedDict()
        #: entries whose tally is pending (a growing batch, or a failed re-read)
        self._untallied: set[int] = set()
        self._good_lines = 0
        self._cut_batches = 0
        self._bad_count = 0
        self._bad: deque[BadLine] = deque(maxlen=BAD_LINES_KEPT)
        self._total_min = math.inf
        self._total_max = -math.inf
        self._format_seen = False
        #: every train prompt followed from visit to visit (ledger.py), fed as batches
        #: are tallied
        self._ledger = PromptLedger()

    # ----------------------------------------------------------------- reading

    def poll(self, max_bytes: int | None = None) -> int:
        """Read newly logged batches; returns how many (bad ones included).

        With `max_bytes`, reads about that much (one batch is always finished) and sets
        `more` when data is left; without, reads everything available.
        """
        count = 0
        self.polls += 1
        if not self._preview_tried:
            self._preview_tried = True
            self._read_preview()
        while True:
            with self._lock:
                chunk = self._source.read(max_bytes)
                if chunk.restarted is not None:
                    self._preview = None
                    self._reset()
                for batch in chunk.batches:
                    self._ingest(batch)
                count += len(chunk.batches)
                self.more = chunk.more
                if not chunk.more:
                    self._preview = None  # caught up: the index has the newest batch itself
            if self._waiting:
                time.sleep(_GIVE_WAY_S)
            if max_bytes is not None or not chunk.more:
                break
        return count

    def _read_preview(self) -> None:
        """Parse the newest batch at the end of a big file, before indexing from the start."""
        batch = self._source.newest()
        if batch is None or batch.rows is None:
            return
        rows = batch.rows
        analysed = analyse(rows, self.group_size)
        known = rows.totals[np.isfinite(rows.totals)]
        span = (float(known.min()), float(known.max())) if known.size else None
        step = rows.steps[-1] if rows.steps else "?"
        info = LineInfo(
            index=-1,
            line_no=0,
            step=step,
            steps=tuple(dict.fromkeys(rows.steps))[:_STEP_LABELS_KEPT],
            rows=len(rows),
            shape=rows.shape,
            kind="new",
            malformed=rows.malformed,
            groups=len(analysed.groups),
        )
        groups = tuple(build_group(rows, group, span) for group in analysed.groups)
        with self._lock:
            self._preview = Page(info, groups, preview=True)

    def _ingest(self, batch: CompletionBatch) -> None:
        rows = batch.rows
        if rows is None:
            self._bad_count += 1
            reason = (batch.problem or "unreadable")[:200]
            self._bad.append(BadLine(self.path.name, batch.line_no, reason, batch.excerpt))
            return
        self._good_lines += 1
        self._cut_batches += rows.malformed
        known = rows.totals[np.isfinite(rows.totals)]
        if known.size:
            self._total_min = min(self._total_min, float(known.min()))
            self._total_max = max(self._total_max, float(known.max()))
        last = self._count - 1
        if batch.extends and last >= 0 and self._entries[last]["growing"]:
            self._extend(last, batch, rows)
            return
        if last >= 0:
            self._ensure_tally(last)  # a growing batch is complete once the next one comes
        step = rows.steps[-1] if rows.steps else "?"
        key = step_key(step)
        analysed = None if batch.growing else analyse(rows, self.group_size)
        kind: EntryKind
        if (
            analysed is not None
            and last >= 0
            and not self._entries[last]["growing"]
            and int(self._entries[last]["content_hash"]) == analysed.content_hash
        ):
            kind = "repeat"
        elif not batch.part_of_step and self._step_map.get(step, key) is not None:
            kind = "eval_or_end"
        else:
            kind = "new"
        if kind != "repeat" and self._is_eval(key[0], kind, batch.part_of_step):
            kind = "eval"
        index = self._add_entry(batch, rows, step, key, kind)
        if kind != "repeat":
            self._newest_shown = index
            self._shown_count += 1
        if kind == "new":
            self._assign_slot(index, step, key, merge=batch.part_of_step)
        elif self._step_map.get(step, key) is None:
            self._step_map.put(step, key, -1)
        if analysed is None:
            self._untallied.add(index)
            return
        self._entries[index]["content_hash"] = analysed.content_hash
        self._remember(index, analysed)
        self._tally(index, analysed)

    def _add_entry(
        self,
        batch: CompletionBatch,
        rows: CompletionRows,
        step: str,
        key: tuple[float, bool],
        kind: EntryKind,
    ) -> int:
        """A new entry for a batch, untallied."""
        index = self._count
        self._entries = grown(self._entries, index, index + 1)
        self._count = index + 1
        entry = self._entries[index]
        entry["ref"] = batch.ref
        entry["line_no"] = batch.line_no
        entry["rows"] = len(rows)
        entry["step"] = key[0]
        entry["kind"] = KIND_CODE[kind]
        entry["shape"] = SHAPE_CODE[rows.shape]
        entry["malformed"] = rows.malformed
        entry["growing"] = batch.growing
        entry["content_hash"] = 0
        entry["slot"] = -1
        entry["tallied"] = False
        entry["groups"] = entry["zero_spread_groups"] = 0
        if not key[1]:
            self._odd_labels[index] = step
        steps = tuple(dict.fromkeys(rows.steps))[:_STEP_LABELS_KEPT]
        if steps and steps != (step,):
            self._odd_steps[index] = steps
        return index

    def _extend(self, index: int, batch: CompletionBatch, rows: CompletionRows) -> None:
        """A growing batch took more rows: its entry covers them, its tally is pending."""
        entry = self._entries[index]
        entry["ref"] = batch.ref
        entry["rows"] += len(rows)
        entry["malformed"] |= rows.malformed
        entry["tallied"] = False
        self._untallied.add(index)
        self._cache.pop(index, None)

    def _label(self, index: int) -> str:
        """The step label of an entry's newest row, as logged."""
        odd = self._odd_labels.get(index)
        return odd if odd is not None else decimal_label(float(self._entries[index]["step"]))

    def _is_eval(self, step: float, kind: EntryKind, merged: bool) -> bool:
        """A batch of this kind at this step holds eval rollouts (module docstring)."""
        if step not in self._eval_steps:
            return False
        if kind == "eval_or_end":
            return True
        return not merged and (step not in self._train_steps or self._source.eval_rewrites_step)

    def note_log_lines(self, kinds: np.ndarray, steps: np.ndarray) -> bool:
        """The metrics log's lines read since the last call (their LineKind codes and
        steps): a batch at a step with an eval line is relabelled eval, out of the summary.
        True when a batch was relabelled (the summary changed)."""
        kinds = np.asarray(kinds)
        steps = np.asarray(steps, dtype=np.float64)
        with self._locked():
            self._train_steps.update(steps[(kinds == LineKind.TRAIN) & np.isfinite(steps)].tolist())
            found = steps[(kinds == LineKind.EVAL) & np.isfinite(steps)].tolist()
            new = sorted(set(found) - self._eval_steps)
            self._eval_steps.update(new)
            relabelled = False
            for step in new:
                relabelled |= self._relabel_eval(step)
            if relabelled:
                self._steps.revision += 1  # steps once summed are summed no more
            return relabelled

    def _relabel_eval(self, step: float) -> bool:
        """The batches at `step` that hold eval rollouts become eval; True when any did."""
        entries = self._entries[: self._count]
        at = np.flatnonzero(entries["step"] == step)
        if not at.size:
            return False
        kinds = entries["kind"][at]
        later = at[kinds == EVAL_OR_END]
        firsts = at[kinds == NEW]
        chosen = list(later.tolist())
        if (
            firsts.size == 1
            and not later.size
            and (step not in self._train_steps or self._source.eval_rewrites_step)
        ):
            chosen.append(int(firsts[0]))
        for index in chosen:
            entry = self._entries[index]
            entry["kind"] = EVAL
            slot = int(entry["slot"])
            entry["slot"] = -1
            if slot >= 0:
                self._fill(slot, {})
                if entry["tallied"]:
                    # its prompts' visits were train visits: the ledger takes them back
                    analysed = self._load(index)
                    self._ledger.drop(index, None if analysed is None else analysed.rows.prompts)
        return bool(chosen)

    def _tally(self, index: int, analysed: Analysed) -> None:
        """Count the entry's groups, and write its step's row again with them."""
        done = tally(analysed)
        entry = self._entries[index]
        if entry["kind"] != REPEAT:
            # groups counted before (a growing batch tallied again) are counted once
            self._shown_groups += done.groups - int(entry["groups"])
        entry["groups"] = done.groups
        entry["zero_spread_groups"] = zero_spread_groups(done)
        entry["tallied"] = True
        self._format_seen = self._format_seen or done.uses_markers > 0
        self._untallied.discard(index)
        slot = int(entry["slot"])
        if slot >= 0:
            self._fill(slot, {index: done})
            self._follow_prompts(index, analysed)

    def _assign_slot(self, index: int, step: str, key: tuple[float, bool], *, merge: bool) -> None:
        slot = self._step_map.get(step, key) if merge else None
        if slot is None or slot < 0:
            slot = self._steps.add(key[0])
            self._slot_entry = grown(self._slot_entry, slot, slot + 1)
            self._slot_entry[slot] = index
            self._step_map.put(step, key, slot)
        else:
            self._slot_more.setdefault(slot, []).append(index)
        self._entries[index]["slot"] = slot

    def _fill(self, slot: int, known: dict[int, Tally]) -> None:
        """Write a step's row from the tallies of its tallied entries, oldest first: from
        `known`, else from their parse (cached: a step's batches are consecutive)."""
        tallies = []
        for member in (int(self._slot_entry[slot]), *self._slot_more.get(slot, ())):
            if int(self._entries[member]["slot"]) != slot:
                continue  # relabelled eval since
            done = known.get(member)
            if done is None and self._entries[member]["tallied"]:
                analysed = self._load(member)
                done = None if analysed is None else tally(analysed)
            if done is not None:
                tallies.append(done)
        self._steps.fill(slot, tallies)

    def _follow_prompts(self, index: int, analysed: Analysed) -> None:
        """A train batch's groups into the prompt ledger, judged at the top seen so far."""
        top = self._total_max
        if not math.isfinite(top):
            return  # no known total yet: nothing passes or fails
        step = float(self._entries[index]["step"])
        tolerance = TIE_TOLERANCE * max(1.0, abs(self._total_min), abs(top))
        groups = passing(analysed, top, tolerance)
        self._ledger.add(index, step if math.isfinite(step) else float(index), groups, top)

    # ----------------------------------------------------------------- reading again

    def _remember(self, index: int, analysed: Analysed) -> None:
        self._cache[index] = analysed
        self._cache.move_to_end(index)
        while len(self._cache) > self.cache_cap:
            self._cache.popitem(last=False)

    def _load(self, index: int) -> Analysed | None:
        """The parsed entry, from the cache or its source; None if it changed since."""
        cached = self._cache.get(index)
        if cached is not None:
            self._cache.move_to_end(index)
            return cached
        entry = self._entries[index]
        start, end = entry["ref"].tolist()
        rows = self._source.reload((start, end))
        if rows is None or len(rows) != entry["rows"]:
            return None  # rewritten since it was indexed: the next read restarts
        analysed = analyse(rows, self.group_size)
        if not entry["growing"] and analysed.content_hash != int(entry["content_hash"]):
            return None
        self._remember(index, analysed)
        return analysed

    def _ensure_tally(self, index: int) -> bool:
        """Tally the entry if it is not; False when it could not be read again."""
        if self._entries[index]["tallied"]:
            return True
        slot = int(self._entries[index]["slot"])
        analysed = self._load(index)
        if analysed is None:
            if slot >= 0:
                self._fill(slot, {})  # its step counts it no more
            return False
        self._tally(index, analysed)
        return True

    # ----------------------------------------------------------------- looking

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The lock, asked for from another thread than the reader's: a read in a backlog
        gives way between chunks while someone waits (Python's locks are not fair)."""
        with self._waiting_lock:
            self._waiting += 1
        try:
            with self._lock:
                yield
        finally:
            with self._waiting_lock:
                self._waiting -= 1

    def __len__(self) -> int:
        """Index entries: one per batch (a Megatron-Ray batch of lines is one entry)."""
        with self._locked():
            return self._count

    def _resolve(self, line: int) -> int:
        index = line + self._count if line < 0 else line
        if not 0 <= index < self._count:
            raise IndexError(f"completions entry {line} out of range ({self._count} entries)")
        return index

    def line_info(self, line: int = -1) -> LineInfo:
        """What the index holds about one entry (negative = from the newest), unparsed."""
        with self._locked():
            return self._info(self._resolve(line))

    def _info(self, index: int) -> LineInfo:
        entry = self._entries[index]
        tallied = bool(entry["tallied"])
        step = self._label(index)
        return LineInfo(
            index=index,
            line_no=int(entry["line_no"]),
            step=step,
            steps=self._odd_steps.get(index, (step,)),
            rows=int(entry["rows"]),
            shape=SHAPES[entry["shape"]],
            kind=KINDS[entry["kind"]],
            malformed=bool(entry["malformed"]),
            groups=int(entry["groups"]) if tallied else None,
        )

    def _span(self) -> tuple[float, float] | None:
        return None if self._total_max < self._total_min else (self._total_min, self._total_max)

    def page(self, line: int = -1) -> Page | None:
        """One entry with its groups (negative counts from the newest); None when the index
        is empty or the batch changed under it (the next read restarts it). Parses the
        entry if it is not cached."""
        with self._locked():
            if not self._count:
                return None
            index = self._resolve(line)
            analysed = self._load(index)
            if analysed is None:
                return None
            self._ensure_tally(index)
            span = self._span()
            groups = tuple(build_group(analysed.rows, g, span) for g in analysed.groups)
            return Page(self._info(index), groups)

    def newest_page(self) -> Page | None:
        """The newest batch: from the index, or the preview read from the end of a big file
        while the index has not caught up yet."""
        with self._locked():
            if self._preview is not None:
                return self._preview
        return self.page(-1)

    def state(self) -> IndexState:
        """A copy of what the index holds now, for the screen (see IndexState)."""
        with self._locked():
            return IndexState(
                lines=self._good_lines,
                newest_entry=self._newest_shown,
                shown_entries=self._shown_count,
                previewing=self._preview is not None,
                progress=self._source.progress,
                file_exists=self._source.exists,
                bad_line_count=self._bad_count,
                problem=self._source.problem,
                shown_groups=self._shown_groups,
                cut_batches=self._cut_batches,
            )

    def neighbour(
        self, current: int | None, *, forward: bool, zero_spread_only: bool = False
    ) -> int | None:
        """The next (or, not `forward`, the previous) entry from `current` worth showing;
        with `zero_spread_only`, one holding a group whose completions all got the same
        reward. `current` None stands for the preview: every entry is before it."""
        with self._locked():
            count = self._count
            if current is None:
                if forward:
                    return None
                current = count
            span = range(max(0, current + 1), count) if forward else range(min(current, count))
            entries = self._entries[span.start : span.stop]
            wanted = entries["kind"] != REPEAT
            if zero_spread_only:
                # an untallied entry is tallied (read again) to tell
                wanted &= ~entries["tallied"] | (entries["zero_spread_groups"] > 0)
            found = np.flatnonzero(wanted) + span.start
            for index in (found if forward else found[::-1]).tolist():
                entry = self._entries[index]
                if not zero_spread_only or (
                    (entry["tallied"] or self._ensure_tally(index)) and entry["zero_spread_groups"]
                ):
                    return int(index)
            return None

    def search(
        self,
        text: str,
        start: int,
        *,
        backwards: bool = True,
        after_group: int | None = None,
        time_budget: float = SEARCH_BUDGET_S,
    ) -> SearchHit:
        """The first group, from entry `start` on (older entries when `backwards`), whose
        prompt or one of whose completions contains `text` (case-insensitive). In the
        start entry, groups after `after_group` (before it, backwards) are searched first.
        Stops after `time_budget` seconds and says how far it got."""
        needle = text.casefold()
        started = time.perf_counter()
        searched = 0
        count = len(self)
        index = start
        while 0 <= index < count:
            with self._locked():
                if index >= self._count:
                    break
                analysed = self._load(index)
            searched += 1
            if analysed is not None:
                order: Sequence[int] = range(len(analysed.groups))[:: -1 if backwards else 1]
                if index == start and after_group is not None:
                    order = [
                        g for g in order if (g < after_group if backwards else g > after_group)
                    ]
                for position in order:
                    if group_contains(analysed, analysed.groups[position], needle):
                        return SearchHit(index, position, searched, False)
            index += -1 if backwards else 1
            if 0 <= index < count and time.perf_counter() - started >= time_budget:
                return SearchHit(None, None, searched, False)
        return SearchHit(None, None, searched, True)

    def summary(self) -> CompletionsSummary:
        """Batches read and one StepSampleStats per logged step, oldest first.

        Repeats, eval/end and eval batches are left out (module docstring). All-fail / all-pass
        and the format rate are judged against the whole file so far (summary.py).
        """
        with self._locked():
            for index in sorted(self._untallied):
                if self._entries[index]["slot"] >= 0:
                    self._ensure_tally(index)
            return self._steps.summary(
                self._good_lines, self._total_min, self._total_max, self._format_seen
            )

    # ----------------------------------------------------------------- prompts

    def _ledger_span(self) -> Span:
        return Span(self._total_min, self._total_max)

    def prompt_ledger(self) -> LedgerReport:
        """Which prompts are learning, as of now (ledger.py): what every surface quotes."""
        with self._locked():
            for index in sorted(self._untallied):
                if self._entries[index]["slot"] >= 0:
                    self._ensure_tally(index)
            return self._ledger.report(self._ledger_span())

    def prompt_categories(self, groups: Sequence[Group]) -> list[Category | None]:
        """The ledger's category of each group's prompt now (None: seen once, or eval)."""
        with self._locked():
            return self._ledger.categories([g.prompt for g in groups], self._ledger_span())

    def category_neighbour(
        self, current: int | None, category: Category, *, forward: bool
    ) -> int | None:
        """The next (or previous) entry holding a train visit of a prompt in `category`;
        `current` None stands for the preview (every entry is before it)."""
        with self._locked():
            entries = self._ledger.entries(category, self._ledger_span())
            if current is None:
                return None if forward or not entries.size else int(entries[-1])
            if forward:
                later = entries[entries > current]
                return int(later[0]) if later.size else None
            earlier = entries[entries < current]
            return int(earlier[-1]) if earlier.size else None

    @property
    def ledger_prompts(self) -> int:
        """Prompt records the ledger holds (one per prompt: what bounds its memory)."""
        with self._locked():
            return len(self._ledger)

    # ----------------------------------------------------------------- bookkeeping

    @property
    def bad_lines(self) -> tuple[BadLine, ...]:
        """The most recent batches that could not be used (up to BAD_LINES_KEPT), with
        reasons."""
        with self._locked():
            return tuple(self._bad)

    @property
    def cached_lines(self) -> int:
        """Parsed entries held in memory right now (never more than `cache_cap`)."""
        with self._locked():
            return len(self._cache)
