"""Where the completions panel is: which entry (a logged batch) and which group in it.

Pure state, no Textual: the panel turns keys into these moves and renders the result.
Two modes:
- *following*: the place is the newest batch; the panel's timer steps through its groups
  (`cycle`) and moves to a newer batch when one arrived;
- *held*: the user moved (any navigation key) or paused (`space`); the place never moves
  on its own, and batches arriving meanwhile are counted ("N new").

Entries are index positions in the completions index; the panel only visits the ones that
are not verbatim repeats of the previous line (`kinds`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from grpo_tui.run.completions import Group
from grpo_tui.run.completions.ledger import LINKED, Category


@dataclass(frozen=True, slots=True)
class Place:
    """An entry of the index (None = the preview of the newest batch) and a group in it."""

    entry: int | None
    group: int


def arrivals(groups: int, steps: int) -> str:
    """What arrived while held, in groups (the unit on screen) and the steps they came in:
    `12 new groups in 3 steps`; steps alone while their groups are not counted yet."""
    step_words = f"{steps} step{'s' if steps != 1 else ''}"
    if groups <= 0:
        return f"{step_words} new"
    return f"{groups} new group{'s' if groups != 1 else ''} in {step_words}"


def group_order(groups: Sequence[Group], *, zero_spread_only: bool) -> list[int]:
    """Positions of the groups the panel visits, in logged order."""
    return [i for i, group in enumerate(groups) if group.zero_spread or not zero_spread_only]


def next_category(
    current: Category | None, counts: Mapping[Category, int] | None = None
) -> Category | None:
    """`c`: the next prompt-ledger category whose groups the panel shows, then all again;
    with the ledger's `counts`, a category no prompt is in is passed over."""
    order: tuple[Category | None, ...] = (None, *LINKED)
    at = order.index(current)
    for step in range(1, len(order)):
        category = order[(at + step) % len(order)]
        if category is None or counts is None or counts.get(category, 0) > 0:
            return category
    return None


def category_order(
    visible: Sequence[int], categories: Sequence[Category | None], category: Category | None
) -> list[int]:
    """Of the visible groups, those whose prompt is in `category` (all when None)."""
    if category is None:
        return list(visible)
    return [i for i in visible if i < len(categories) and categories[i] is category]


def _rank_key(group: Group) -> tuple[float, float]:
    mean = group.mean_total
    spread = group.spread
    return (
        -math.inf if math.isnan(mean) else mean,
        0.0 if math.isnan(spread) else spread,
    )


def ranked_group(groups: Sequence[Group], visible: Sequence[int], *, best: bool) -> int | None:
    """The visible group with the lowest mean total reward (ties: the smallest spread), or
    the highest with `best` (ties: the largest spread); a known mean beats an unknown one."""
    known = [i for i in visible if not math.isnan(groups[i].mean_total)]
    ranked = sorted(known or visible, key=lambda i: _rank_key(groups[i]))
    return (ranked[-1] if best else ranked[0]) if ranked else None


class CompletionsCursor:
    """The panel's place and mode; moves return the entry to load when it changes."""

    def __init__(self) -> None:
        self.place = Place(None, 0)
        self.following = True
        #: only groups whose completions all got the same reward (no advantage signal)
        self.zero_spread_only = False
        #: only groups of prompts in this prompt-ledger category (`c`; None: every group)
        self.category: Category | None = None
        #: batches that arrived since the place was held, and the groups in them
        self.new_entries = 0
        self.new_groups = 0
        #: the newest entry the cursor was told of (the limit while the screen is paused)
        self.newest_seen: int | None = None

    # -- arrivals ---------------------------------------------------------------------
    def arrived(self, newest: int | None, count: int | None = None) -> bool:
        """The index's newest visitable entry is now `newest`; `count` says how many
        visitable entries came since the last one seen (default: the index difference).
        True when a following cursor should load it (the caller loads, then `show`
        places the cursor)."""
        if newest is None or newest == self.newest_seen:
            return False
        previous, self.newest_seen = self.newest_seen, newest
        if self.following:
            return True
        if previous is not None and newest > previous:
            self.new_entries += newest - previous if count is None else count
        return False

    def groups_arrived(self, count: int) -> None:
        """`count` more groups are in the index's entries worth showing (counted while held;
        a batch's groups are known once it is tallied, which may be after it arrived)."""
        if not self.following and count > 0:
            self.new_groups += count

    # -- modes ------------------------------------------------------------------------
    def hold(self) -> None:
        # nothing is counted while following: the counts start from 0
        self.following = False

    def follow(self) -> None:
        self.following = True
        self.new_entries = 0
        self.new_groups = 0

    # -- moves inside the shown entry --------------------------------------------------
    def cycle(self, visible: Sequence[int]) -> bool:
        """The timer's step: the next visible group, wrapping. True when it wrapped (the
        caller then moves to a newer entry if there is one)."""
        if not visible:
            return True
        if self.place.group not in visible:
            self.place = Place(self.place.entry, visible[0])
            return False
        at = visible.index(self.place.group) + 1
        wrapped = at == len(visible)
        self.place = Place(self.place.entry, visible[0 if wrapped else at])
        return wrapped

    def step_group(self, visible: Sequence[int], forward: bool) -> bool:
        """`n` / `N`: the next or previous visible group. False at either end (the caller
        then moves to the neighbouring entry)."""
        self.hold()
        group = self.place.group
        beyond = [i for i in visible if i > group] if forward else [i for i in visible if i < group]
        if not beyond:
            return False
        self.place = Place(self.place.entry, beyond[0] if forward else beyond[-1])
        return True

    def jump(self, group: int | None) -> None:
        """`w` / `b` / a search hit: that group of the shown entry."""
        self.hold()
        if group is not None:
            self.place = Place(self.place.entry, group)

    def show(
        self,
        entry: int | None,
        visible: Sequence[int],
        *,
        group: int | None = None,
        at_end: bool = False,
    ) -> None:
        """A new entry is shown: at `group` when given and visible, else the same group
        when it is visible there, else the first (the last, `at_end`: moving backwards)."""
        if group is None or group not in visible:
            group = self.place.group
            if entry != self.place.entry or group not in visible:
                group = (visible[-1] if at_end else visible[0]) if visible else 0
        self.place = Place(entry, group)
