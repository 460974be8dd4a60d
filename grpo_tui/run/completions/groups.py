"""One batch of completions split into its GRPO groups, and what each group says.

Groups are keyed on the full prompt text. A prompt drawn twice in one batch then forms one
group of 2 x num_generations rows unless `group_size` (num_generations, from args.json)
is given, which splits it into its real GRPO groups. A row's total reward is what the
batch's rows say (`CompletionRows.totals`: the logged total, else the unweighted sum of
the reward functions).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from grpo_tui.run.text_stats import (
    REPETITIVE_SHARE,
    GroupTextStats,
    group_text_stats,
    measured_text,
    role_prefix_end,
)
from grpo_tui.sources.records import CompletionRows

#: a group's totals closer than this (relative to their size) count as tied
TIE_TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True)
class Sample:
    """One completion with what was logged about it."""

    text: str
    #: raw (unweighted) value per reward function; None = not logged / NaN
    rewards: dict[str, float | None]
    #: sum of the logged reward values (or the logged total in old shapes); None = unknown
    total: float | None
    advantage: float | None
    entropy: float | None = None
    solution: str | None = None
    #: follows the tag format; None when its group uses no known marker
    follows_format: bool | None = None
    #: an opened tag never closed; None when its group uses no known marker
    truncated: bool | None = None
    #: share of its character shingles that repeat an earlier one (0 = none; text_stats.py)
    repetition: float = 0.0
    #: further columns the framework logged for it (TRL's `log_extra`: an extracted answer,
    #: the gold one), (name, value as logged, made a string); untrusted text
    extras: tuple[tuple[str, str], ...] = ()

    @property
    def repetitive(self) -> bool:
        return self.repetition >= REPETITIVE_SHARE

    @property
    def shown_text(self) -> str:
        """The text without the role prefix or template markers that open it (`assistant:
        `, `<|im_start|>assistant`): what the model wrote, as the table shows it."""
        return self.text[role_prefix_end(self.text) :]

    @property
    def empty(self) -> bool:
        """Nothing but a role prefix or template markers (or nothing at all): an empty answer."""
        return not measured_text(self.text)


@dataclass(frozen=True, slots=True, eq=False)
class Group:
    """The completions of one prompt within one logged batch (a GRPO group)."""

    prompt: str
    step: str
    completions: tuple[Sample, ...]
    #: per reward function, one value per completion (NaN = not logged)
    rewards: dict[str, np.ndarray]
    #: total reward per completion (NaN = unknown)
    totals: np.ndarray
    #: population std of the known totals (NaN when none is known)
    spread: float
    #: at least two known totals and all equal: no advantage signal
    zero_spread: bool
    #: zero spread with every completion scoring 0 on every reward function, or at the
    #: bottom of the totals observed in the file so far
    all_fail: bool
    #: zero spread at the top of the totals observed in the file so far
    all_pass: bool
    distinct_2: float
    pairwise_overlap: float

    @property
    def size(self) -> int:
        return len(self.completions)

    @property
    def mean_total(self) -> float:
        finite = self.totals[np.isfinite(self.totals)]
        return float(finite.mean()) if finite.size else math.nan


@dataclass(frozen=True, slots=True)
class GroupStats:
    """What one group's rows say, computed once per parse."""

    rows: list[int]
    spread: float
    zero_spread: bool
    #: the shared total of a zero-spread group (NaN otherwise)
    tied_total: float
    text: GroupTextStats
    #: zero spread with every completion scoring 0 on every reward function it has a
    #: value for: all fail, whatever range the totals took (a file of nothing but failures
    #: never shows a range to be at the bottom of)
    all_zero: bool = False


@dataclass(frozen=True, slots=True)
class Analysed:
    """A parsed batch with its groups: what the index's cache holds."""

    rows: CompletionRows
    groups: list[GroupStats]
    #: 64-bit digest of the rollouts (see `content_hash`)
    content_hash: int


def partition(prompts: list[str], group_size: int | None) -> list[list[int]]:
    """Row indices per prompt (keyed on the full prompt text), in order of first appearance.

    With a known group size (num_generations), a prompt drawn twice in one batch is split
    into consecutive chunks: each chunk is its own GRPO group.
    """
    by_prompt: dict[str, list[int]] = {}
    for row, prompt in enumerate(prompts):
        by_prompt.setdefault(prompt, []).append(row)
    if not group_size or group_size < 1:
        return list(by_prompt.values())
    return [
        rows[start : start + group_size]
        for rows in by_prompt.values()
        for start in range(0, len(rows), group_size)
    ]


def content_hash(rows: CompletionRows) -> int:
    """A 64-bit digest of (prompt, completion, advantage) per row: enough to tell a repeat
    of the batch before, and a batch rewritten under a lazy re-read."""
    digest = hashlib.blake2b(digest_size=8)
    for prompt, completion in zip(rows.prompts, rows.completions, strict=True):
        digest.update(prompt.encode("utf-8", errors="surrogatepass"))
        digest.update(b"\x00")
        digest.update(completion.encode("utf-8", errors="surrogatepass"))
        digest.update(b"\x01")
    if rows.advantages is not None:
        digest.update(rows.advantages.tobytes())
    return int.from_bytes(digest.digest(), "little", signed=True)


def _spread(values: list[float]) -> tuple[float, bool, float]:
    """(population std, tied, shared value if tied) of a group's known totals.

    Plain Python: groups hold a handful of values, where numpy's per-call cost dominates.
    """
    if not values:
        return math.nan, False, math.nan
    # plain sums and products: huge logged values give inf, never an OverflowError
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) * (v - mean) for v in values) / len(values))
    low, high = min(values), max(values)
    tied = len(values) >= 2 and high - low <= TIE_TOLERANCE * max(1.0, abs(low), abs(high))
    return spread, tied, mean if tied else math.nan


def _scored_zero(rows: CompletionRows) -> list[bool]:
    """Per row: at least one reward function has a value for it and every one that has is 0
    (the logged total stands for the functions when none is logged)."""
    scores = np.vstack(list(rows.rewards.values()) or [rows.totals])
    known = np.isfinite(scores)
    zero: list[bool] = (known.any(axis=0) & ~(known & (scores != 0)).any(axis=0)).tolist()
    return zero


def analyse(rows: CompletionRows, group_size: int | None) -> Analysed:
    """The batch split into its groups, each with its statistics."""
    totals = rows.totals.tolist()
    zero = _scored_zero(rows)
    groups: list[GroupStats] = []
    for indices in partition(rows.prompts, group_size):
        spread, tied, tied_total = _spread([totals[i] for i in indices if math.isfinite(totals[i])])
        groups.append(
            GroupStats(
                rows=indices,
                spread=spread,
                zero_spread=tied,
                tied_total=tied_total,
                text=group_text_stats([rows.completions[i] for i in indices]),
                all_zero=tied and all(zero[i] for i in indices),
            )
        )
    return Analysed(rows=rows, groups=groups, content_hash=content_hash(rows))


def passing(analysed: Analysed, top: float, tolerance: float) -> list[tuple[str, int, int]]:
    """Per group: (its prompt, completions that pass, completions with a known total). A
    completion passes as an ALL PASS group's do: its total at `top` (the highest seen so
    far, within `tolerance`) and not 0 on every reward function (ledger.py follows them)."""
    rows = analysed.rows
    totals = rows.totals.tolist()
    zero = _scored_zero(rows)
    out = []
    for group in analysed.groups:
        known = [i for i in group.rows if math.isfinite(totals[i])]
        passed = sum(1 for i in known if abs(totals[i] - top) <= tolerance and not zero[i])
        out.append((rows.prompts[group.rows[0]], passed, len(known)))
    return out


def tie_position(value: float, span: tuple[float, float] | None) -> tuple[bool, bool]:
    """(at bottom, at top) of `span`, the totals observed so far; neither while they are
    all equal or unknown."""
    if span is None or math.isnan(value):
        return False, False
    low, high = span
    if not high > low:
        return False, False
    tolerance = TIE_TOLERANCE * max(1.0, abs(low), abs(high))
    return abs(value - low) <= tolerance, abs(value - high) <= tolerance


def _optional_float(value: float | np.floating) -> float | None:
    number = float(value)
    return None if math.isnan(number) else number


def _row_extras(rows: CompletionRows, row: int) -> tuple[tuple[str, str], ...]:
    """The extra columns logged for one row that hold a value there."""
    extras = rows.extras or {}
    return tuple((name, values[row]) for name, values in extras.items() if values[row])


def build_group(rows: CompletionRows, stats: GroupStats, span: tuple[float, float] | None) -> Group:
    """One group as the panel shows it; all-fail / all-pass judged against `span`."""
    indices = stats.rows
    rewards = {name: column[indices] for name, column in rows.rewards.items()}
    totals = rows.totals[indices]
    known_format = stats.text.format_known
    samples = tuple(
        Sample(
            text=rows.completions[row],
            rewards={name: _optional_float(column[pos]) for name, column in rewards.items()},
            total=_optional_float(totals[pos]),
            advantage=None if rows.advantages is None else _optional_float(rows.advantages[row]),
            entropy=None if rows.entropy is None else _optional_float(rows.entropy[row]),
            solution=None if rows.solutions is None else rows.solutions[row],
            follows_format=check.follows if known_format else None,
            truncated=check.cut_off if known_format else None,
            repetition=repeated,
            extras=_row_extras(rows, row),
        )
        for pos, (row, check, repeated) in enumerate(
            zip(indices, stats.text.checks, stats.text.repetition, strict=True)
        )
    )
    all_fail, all_pass = (
        tie_position(stats.tied_total, span) if stats.zero_spread else (False, False)
    )
    if stats.all_zero:
        all_fail, all_pass = True, False
    return Group(
        prompt=rows.prompts[indices[0]],
        step=rows.steps[indices[-1]],
        completions=samples,
        rewards=rewards,
        totals=totals,
        spread=stats.spread,
        zero_spread=stats.zero_spread,
        all_fail=all_fail,
        all_pass=all_pass,
        distinct_2=stats.text.distinct_2,
        pairwise_overlap=stats.text.pairwise_overlap,
    )


def group_contains(analysed: Analysed, group: GroupStats, needle: str) -> bool:
    """The group's prompt or one of its completions contains `needle` (casefolded)."""
    rows = analysed.rows
    if needle in rows.prompts[group.rows[0]].casefold():
        return True
    return any(needle in rows.completions[row].casefold() for row in group.rows)
