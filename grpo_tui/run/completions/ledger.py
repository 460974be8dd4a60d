"""Which prompts are learning: each training prompt followed from visit to visit.

A *visit* is a prompt's train groups at one step (one logged batch: a prompt drawn twice
in a batch counts once, its completions together). Its score is its pass share: a
completion passes as the completions pane's ALL PASS group's do (groups.passing: its
total at the highest total seen so far, and not 0 on every reward function). A visit is
*solved* when at least one completion passes (the group has something to learn from
upwards), *all-pass* when every one does.

Each prompt with two visits or more falls in one category (`Category`), from its visits in
step order: always solved (all-pass on every visit: too easy, spent compute), never
solved (no completion passed on any visit: no signal however long it trains), regressed
(solved before, unsolved on its latest visit), first solved (unsolved on its first visit,
solved on its latest) and kept solved (solved on its first and latest visits, not always
all-pass: still giving signal).

Incremental, bounded by prompts: the index hands each train batch over once when it is
tallied (`add`) and takes back a batch later relabelled eval (`drop`); nothing is read
again. A prompt is keyed on a 64-bit hash of its text with its whitespace collapsed, never
the text, and keeps at most VISITS_KEPT visits as (step, entry, passes, size, top) in
(step, entry) order: a visit read out of order (a folder of step files, a back-fill) takes
its place among them. Beyond VISITS_KEPT the oldest visit between the first and the latest
is folded into three counts (visits, solved, all-pass): the categories need no more.

Passing is judged when a batch is read, against the top so far, and the top is kept with
the visit. No total is ever above the top it was judged at, so once a higher total is seen,
a visit judged at a lower top had no completion at the top: it counts 0 passes. The
judgement is then the same whatever order the batches came in (`report` takes the span the
index saw by then).
"""

from __future__ import annotations

import hashlib
import math
import statistics
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from grpo_tui.run.completions.groups import TIE_TOLERANCE

#: visits a prompt keeps (its first, its latest and those between, up to this many)
VISITS_KEPT = 32
#: a visit number counts in the all-pass trend when at least this many groups reached it,
#: and this share of the first visits' (a partly done epoch says little)
MIN_VISIT_GROUPS = 5
MIN_VISIT_SHARE = 0.25

#: (step, entry, completions that passed, completions with a known total, top judged at)
Visit = tuple[float, int, int, int, float]


class Category(StrEnum):
    """Where a prompt seen at least twice stands (module docstring)."""

    NEVER_SOLVED = "never_solved"
    REGRESSED = "regressed"
    FIRST_SOLVED = "first_solved"
    ALWAYS_SOLVED = "always_solved"
    KEPT_SOLVED = "kept_solved"


#: every category, in the order the surfaces list them
CATEGORIES: tuple[Category, ...] = tuple(Category)
#: the categories the completions pane cycles through (kept solved is the rest)
LINKED: tuple[Category, ...] = (
    Category.NEVER_SOLVED,
    Category.REGRESSED,
    Category.FIRST_SOLVED,
    Category.ALWAYS_SOLVED,
)


def prompt_key(prompt: str) -> int:
    """A prompt's 64-bit key: its text with runs of whitespace made one space, hashed."""
    normal = " ".join(prompt.split()).encode("utf-8", errors="surrogatepass")
    return int.from_bytes(hashlib.blake2b(normal, digest_size=8).digest(), "little", signed=True)


def _tolerance(*values: float) -> float:
    finite = [abs(v) for v in values if math.isfinite(v)]
    return TIE_TOLERANCE * max(1.0, *finite)


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= _tolerance(a, b)


@dataclass(frozen=True, slots=True)
class Span:
    """The totals the index has seen: what a visit's passes are judged against now."""

    low: float
    high: float

    @property
    def scores(self) -> bool:
        """A pass means something: totals took a range, or all are one positive value."""
        return math.isfinite(self.high) and (self.high > self.low or self.high > 0)

    def passes(self, passes: int, top: float) -> int:
        """A visit's passes now: as judged when its top is still the top, else none."""
        if not self.scores or not abs(top - self.high) <= _tolerance(self.low, self.high):
            return 0
        return passes


@dataclass(slots=True)
class Folded:
    """Visits folded out of a record (beyond VISITS_KEPT): how many, and of them solved
    and all-pass as judged at `top` (0 once a visit with a higher top came in)."""

    count: int = 0
    solved: int = 0
    all_pass: int = 0
    top: float = math.nan

    def add(self, passes: int, size: int, top: float) -> None:
        if self.count and not _same(top, self.top):
            if top < self.top:
                passes = 0  # judged below the top these were: no completion at it
            else:
                self.solved = self.all_pass = 0  # these were judged below the new top
                self.top = top
        elif not self.count:
            self.top = top
        self.count += 1
        self.solved += passes > 0
        self.all_pass += passes == size


@dataclass(slots=True)
class PromptRecord:
    """One prompt: its visits in (step, entry) order, and those folded out."""

    visits: list[Visit] = field(default_factory=list)
    folded: Folded | None = None

    @property
    def count(self) -> int:
        return len(self.visits) + (self.folded.count if self.folded is not None else 0)


def _order(visit: Visit) -> tuple[float, int]:
    return visit[0], visit[1]


def category_of(record: PromptRecord, span: Span) -> Category | None:
    """The prompt's category now (None: seen once)."""
    if record.count < 2:
        return None
    scores = [(span.passes(passes, top), size) for _, _, passes, size, top in record.visits]
    folded = record.folded
    folded_solved = folded_all = 0
    if folded is not None and span.passes(1, folded.top):
        folded_solved, folded_all = folded.solved, folded.all_pass
    if all(p == s for p, s in scores) and (folded is None or folded_all == folded.count):
        return Category.ALWAYS_SOLVED
    if not folded_solved and not any(p > 0 for p, _ in scores):
        return Category.NEVER_SOLVED
    if scores[-1][0] == 0:
        return Category.REGRESSED
    if scores[0][0] == 0:
        return Category.FIRST_SOLVED
    return Category.KEPT_SOLVED


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True, slots=True)
class VisitShare:
    """The groups of every prompt's n-th visit: how many, how many all-pass."""

    visit: int
    groups: int
    all_pass: int
    #: the median step those visits were at
    step: float

    @property
    def share(self) -> float:
        return self.all_pass / self.groups if self.groups else math.nan


@dataclass(frozen=True, slots=True)
class Forecast:
    """When every group would be all-pass at the current rate: a straight line through
    the all-pass share per visit number (weighted by groups), met with 1."""

    #: the share's change per visit (the line's slope)
    per_visit: float
    #: the line's visit number at share 1, and the step it maps to (the visits' median
    #: steps on their own line); None when the share does not rise
    visit: float | None
    step: float | None

    @property
    def rising(self) -> bool:
        return self.visit is not None


@dataclass(frozen=True, slots=True)
class LedgerReport:
    """The ledger at one moment: what every surface quotes (views/prompts.py words it)."""

    #: distinct prompts seen in train groups, and their visits
    prompts: int
    visits: int
    #: prompts seen once only (no category yet)
    seen_once: int
    #: prompts seen at least twice, per category, and their visits (groups trained)
    counts: Mapping[Category, int]
    groups: Mapping[Category, int]
    #: the all-pass share of the n-th visits, n = 1, 2, … while enough groups reached it
    by_visit: tuple[VisitShare, ...]
    forecast: Forecast | None
    #: the steps the visits span (NaN when none)
    first_step: float
    last_step: float

    @property
    def repeated(self) -> int:
        """Prompts seen at least twice (each has a category)."""
        return self.prompts - self.seen_once

    def share(self, category: Category) -> float:
        """Of the prompts seen at least twice, the share in `category`."""
        return self.counts.get(category, 0) / self.repeated if self.repeated else math.nan

    def group_share(self, category: Category) -> float:
        """Of every visit (train group), the share belonging to prompts in `category`."""
        return self.groups.get(category, 0) / self.visits if self.visits else math.nan


def _forecast(by_visit: Sequence[VisitShare]) -> Forecast | None:
    if len(by_visit) < 2:
        return None
    x = np.array([v.visit for v in by_visit], dtype=np.float64)
    y = np.array([v.share for v in by_visit])
    weights = np.sqrt([v.groups for v in by_visit])
    slope, intercept = np.polyfit(x, y, 1, w=weights)
    if not slope > 0 or not y[-1] > y[0]:
        return Forecast(float(slope), None, None)
    visit = float((1.0 - intercept) / slope)
    steps = np.array([v.step for v in by_visit])
    step = None
    if np.isfinite(steps).all():
        per, start = np.polyfit(x, steps, 1)
        step = float(start + per * max(visit, float(x[-1])))
    return Forecast(float(slope), max(visit, float(x[-1])), step)


# --------------------------------------------------------------------------- the ledger


class PromptLedger:
    """Every train prompt's visits, fed batch by batch (`add`, `drop`); not thread-safe
    (the index holds its lock around every call)."""

    def __init__(self) -> None:
        self._records: dict[int, PromptRecord] = {}

    def __len__(self) -> int:
        """Prompts recorded: the ledger holds one record per prompt, nothing per completion."""
        return len(self._records)

    def add(
        self, entry: int, step: float, groups: Iterable[tuple[str, int, int]], top: float
    ) -> None:
        """One train batch (`entry` of the index, at `step`): per group its prompt, passes
        and known completions (groups.passing), judged at `top`. A batch handed over again
        (one that grew) replaces its visits."""
        merged: dict[int, list[int]] = {}
        for prompt, passes, size in groups:
            if size > 0:
                held = merged.setdefault(prompt_key(prompt), [0, 0])
                held[0] += passes
                held[1] += size
        for key, (passes, size) in merged.items():
            record = self._records.get(key)
            if record is None:
                record = self._records[key] = PromptRecord()
            self._place(record, (step, entry, passes, size, top))

    @staticmethod
    def _place(record: PromptRecord, visit: Visit) -> None:
        visits = record.visits
        at = bisect_left(visits, _order(visit), key=_order)
        if at < len(visits) and _order(visits[at]) == _order(visit):
            visits[at] = visit
            return
        visits.insert(at, visit)
        if len(visits) > VISITS_KEPT:
            if record.folded is None:
                record.folded = Folded()
            _, _, passes, size, top = visits.pop(1)
            record.folded.add(passes, size, top)

    def drop(self, entry: int, prompts: Iterable[str] | None = None) -> None:
        """Take back the visits of batch `entry` (relabelled eval): of these prompts, or of
        every prompt when the batch cannot be read again."""
        keys = (
            list(self._records)
            if prompts is None
            else list(dict.fromkeys(prompt_key(p) for p in prompts))
        )
        for key in keys:
            record = self._records.get(key)
            if record is None:
                continue
            record.visits = [v for v in record.visits if v[1] != entry]
            if not record.visits:
                del self._records[key]

    def categories(self, prompts: Sequence[str], span: Span) -> list[Category | None]:
        """Each prompt's category now (None: seen once, or not a train prompt)."""
        found = []
        for prompt in prompts:
            record = self._records.get(prompt_key(prompt))
            found.append(None if record is None else category_of(record, span))
        return found

    def entries(self, category: Category, span: Span) -> np.ndarray:
        """The index entries holding a visit of a prompt in `category`, sorted."""
        held = {
            visit[1]
            for record in self._records.values()
            if category_of(record, span) is category
            for visit in record.visits
        }
        return np.array(sorted(held), dtype=np.int64)

    def report(self, span: Span) -> LedgerReport:
        """The categories, the all-pass share per visit number and its forecast."""
        counts = dict.fromkeys(CATEGORIES, 0)
        groups = dict.fromkeys(CATEGORIES, 0)
        seen_once = visits = 0
        # per visit number: groups, all-pass groups, steps
        tallies: list[list[int]] = []
        steps: list[list[float]] = []
        first, last = math.inf, -math.inf
        for record in self._records.values():
            count = record.count
            visits += count
            category = category_of(record, span)
            if category is None:
                seen_once += 1
            else:
                counts[category] += 1
                groups[category] += count
            skipped = record.folded.count if record.folded is not None else 0
            for position, (step, _, passes, size, top) in enumerate(record.visits):
                number = position + (skipped if position else 0)
                while len(tallies) <= number:
                    tallies.append([0, 0])
                    steps.append([])
                tallies[number][0] += 1
                tallies[number][1] += span.passes(passes, top) == size
                steps[number].append(step)
            if record.visits:
                first = min(first, record.visits[0][0])
                last = max(last, record.visits[-1][0])
        floor = max(MIN_VISIT_GROUPS, MIN_VISIT_SHARE * tallies[0][0]) if tallies else 0
        by_visit: list[VisitShare] = []
        for number, (count, passed) in enumerate(tallies):
            if count < floor:
                break
            step = statistics.median_low(steps[number])  # a step the visits were at
            by_visit.append(VisitShare(number + 1, count, passed, step))
        return LedgerReport(
            prompts=len(self._records),
            visits=visits,
            seen_once=seen_once,
            counts=counts,
            groups=groups,
            by_visit=tuple(by_visit),
            forecast=_forecast(by_visit) if seen_once < len(self._records) else None,
            first_step=first if math.isfinite(first) else math.nan,
            last_step=last if math.isfinite(last) else math.nan,
        )
