"""Diversity and format statistics over one group of completions (pure functions).

Completion text is untrusted model output: any characters, any length. Every function
here accepts any `str` and never raises on its content; the word statistics look only at
the first `STATS_CHAR_CAP` characters of each completion, so their cost is bounded per
completion however long the text is.

- Diversity: `distinct_n` (unique word n-grams / all word n-grams across the group) and
  `pairwise_overlap` (mean Jaccard overlap of word 3-gram sets over pairs of completions).
  A completion shorter than n words counts as one n-gram made of all its words, so short
  or empty completions still compare (two identical empty completions overlap fully).
- Repetition: the share of a completion's word 3-grams that repeat an earlier one of the
  same completion (0 = no 3-gram twice; a loop "the the the ..." tends to 1).
- Format: a completion follows the format when every known tag it uses (`<think>`,
  `<answer>`) is balanced and it closes at least one tag pair or a `\\boxed{...}`. An
  opened tag (or `\\boxed{`) never closed looks cut off (truncated). A group where no
  completion uses any known marker has an unknown format (None), not a 0 % rate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

#: characters of each completion the word statistics look at
STATS_CHAR_CAP = 4_000
#: characters of each completion the format check scans (head and tail halves beyond this)
FORMAT_SCAN_CAP = 262_144
#: a completion with at least this share of repeated word 3-grams is flagged repetitive
#: (a loop; ordinary prose and even terse math repeat well under a third of their 3-grams)
REPETITIVE_SHARE = 0.5
#: pairs compared exactly; larger groups compare an evenly spread subset of about this many
MAX_EXACT_PAIRS = 300

_TAG_NAMES = ("think", "answer")
_TAG_RE = re.compile(r"<(/?)(think|answer)>")
_BOXED = "\\boxed{"
_BRACE_RE = re.compile(r"[{}]")
#: characters after `\boxed{` searched for its closing brace
_BOXED_SCAN_CHARS = 2_000

Gram = tuple[str, ...]


def words(text: str) -> list[str]:
    """The whitespace-separated words of the analysed head of a completion."""
    return text[:STATS_CHAR_CAP].split()


def _grams(tokens: list[str], n: int) -> Iterable[Gram]:
    # a completion shorter than n words is one gram of all its words: still comparable
    if len(tokens) < n:
        return (tuple(tokens),)
    # zip over shifted slices runs in C (it stops at the shortest); n = 2 and 3 are hot
    if n == 2:
        return pairwise(tokens)
    if n == 3:
        return zip(tokens, tokens[1:], tokens[2:], strict=False)
    return zip(*(tokens[i:] for i in range(n)), strict=False)


def _check_n(n: int) -> None:
    if n < 1:
        raise ValueError(f"n-grams need n >= 1, not {n}")


def _distinct(token_lists: Sequence[list[str]], n: int) -> float:
    if not token_lists:
        return math.nan
    unique: set[Gram] = set()
    total = 0
    for tokens in token_lists:
        total += max(1, len(tokens) - n + 1)
        unique.update(_grams(tokens, n))
    return len(unique) / total


def distinct_n(texts: Sequence[str], n: int = 2) -> float:
    """Unique word n-grams / all word n-grams across the completions (NaN for no completions).

    1.0 when no n-gram repeats; 1/k for k identical completions without internal repeats.
    """
    _check_n(n)
    return _distinct([words(text) for text in texts], n)


def _repetition(tokens: list[str]) -> float:
    if len(tokens) < 4:
        return 0.0  # fewer than two 3-grams: nothing can repeat
    grams = list(_grams(tokens, 3))
    return 1.0 - len(set(grams)) / len(grams)


def repetition(text: str) -> float:
    """Share of the completion's word 3-grams that repeat an earlier one (0 ... <1)."""
    return _repetition(words(text))


def sampled_pairs(count: int) -> list[tuple[int, int]]:
    """Every pair for small groups; else each item with its next d neighbours (circularly).

    The subset is deterministic and compares every completion equally often, so the mean
    is an even estimate while the cost stays O(count), not O(count²).
    """
    if count * (count - 1) // 2 <= MAX_EXACT_PAIRS:
        return [(i, j) for i in range(count) for j in range(i + 1, count)]
    neighbours = max(1, min(MAX_EXACT_PAIRS // count, (count - 1) // 2))
    return [(i, (i + d) % count) for d in range(1, neighbours + 1) for i in range(count)]


def _overlap(token_lists: Sequence[list[str]], n: int) -> float:
    if len(token_lists) < 2:
        return math.nan
    # plain sets beat numpy here: groups are small and set intersection runs in C
    return _overlap_of_sets([set(_grams(tokens, n)) for tokens in token_lists])


def _overlap_of_sets(shingles: Sequence[set[Gram]]) -> float:
    if len(shingles) < 2:
        return math.nan
    total = 0.0
    pairs = sampled_pairs(len(shingles))
    for i, j in pairs:
        shared = len(shingles[i] & shingles[j])
        # never empty sets (a short completion is one gram), so the union is never 0
        total += shared / (len(shingles[i]) + len(shingles[j]) - shared)
    return total / len(pairs)


def pairwise_overlap(texts: Sequence[str], n: int = 3) -> float:
    """Mean Jaccard overlap of word n-gram sets over pairs of completions.

    1.0 when all completions are identical, 0.0 when no two share an n-gram; NaN with
    fewer than two completions (no pair to compare). Groups with more than
    `MAX_EXACT_PAIRS` pairs are judged on an evenly spread subset of pairs.
    """
    _check_n(n)
    return _overlap([words(text) for text in texts], n)


@dataclass(frozen=True, slots=True)
class FormatCheck:
    """What the tags of one completion say."""

    #: the completion contains a known tag or `\\boxed{`
    uses_markers: bool
    #: every known tag used is balanced and at least one pair (or a box) is closed
    follows: bool
    #: a tag (or a box) was opened and never closed: the text looks cut off
    cut_off: bool


_NO_MARKERS = FormatCheck(uses_markers=False, follows=False, cut_off=False)


def _format_window(text: str) -> str:
    if len(text) <= FORMAT_SCAN_CAP:
        return text
    # the start opens the tags, the end shows whether they were closed
    half = FORMAT_SCAN_CAP // 2
    return text[:half] + "\n" + text[-half:]


def _boxed_state(scan: str) -> tuple[bool, bool, bool]:
    """(present, closed, cut_off) for the last `\\boxed{` of the text (the final answer)."""
    start = scan.rfind(_BOXED)
    if start < 0:
        return False, False, False
    body = start + len(_BOXED)
    stop = min(len(scan), body + _BOXED_SCAN_CHARS)
    depth = 1
    for match in _BRACE_RE.finditer(scan, body, stop):
        depth += 1 if match.group() == "{" else -1
        if depth == 0:
            return True, True, False
    # the text ended inside the box: cut off; a box left open mid-text is just malformed
    return True, False, stop == len(scan)


def check_format(text: str) -> FormatCheck:
    """Tag balance of one completion (think/answer tags and `\\boxed{}`)."""
    scan = _format_window(text)
    has_tag = "<think>" in scan or "</think>" in scan or "<answer>" in scan or "</answer>" in scan
    boxed_present, boxed_closed, boxed_cut = _boxed_state(scan)
    if not has_tag and not boxed_present:
        return _NO_MARKERS
    depth = dict.fromkeys(_TAG_NAMES, 0)
    seen = dict.fromkeys(_TAG_NAMES, False)
    closed_pairs = 0
    stray_close = False
    if has_tag:
        for match in _TAG_RE.finditer(scan):
            name = match.group(2)
            if match.group(1):
                if depth[name] > 0:
                    depth[name] -= 1
                    closed_pairs += 1
                elif not seen[name]:
                    # a close before any open: R1-style templates end the prompt with <think>
                    closed_pairs += 1
                else:
                    stray_close = True
            else:
                depth[name] += 1
            seen[name] = True
    open_tags = any(level > 0 for level in depth.values())
    cut_off = open_tags or boxed_cut
    follows = not cut_off and not stray_close and (closed_pairs > 0 or boxed_closed)
    return FormatCheck(uses_markers=True, follows=follows, cut_off=cut_off)


def _rate(flags: Sequence[bool], known: bool) -> float | None:
    if not known or not flags:
        return None
    return sum(flags) / len(flags)


def format_rate(texts: Sequence[str]) -> float | None:
    """Fraction of completions that follow the tag format; None when no completion uses a marker."""
    checks = [check_format(text) for text in texts]
    return _rate([c.follows for c in checks], any(c.uses_markers for c in checks))


def truncated_rate(texts: Sequence[str]) -> float | None:
    """Fraction of completions that look cut off; None when no completion uses a marker."""
    checks = [check_format(text) for text in texts]
    return _rate([c.cut_off for c in checks], any(c.uses_markers for c in checks))


@dataclass(frozen=True, slots=True)
class GroupTextStats:
    """All text statistics of one group, computed in one pass over its completions."""

    distinct_2: float
    pairwise_overlap: float
    #: one check per completion, in order
    checks: tuple[FormatCheck, ...]
    #: one repetition share per completion, in order
    repetition: tuple[float, ...]
    format_rate: float | None
    truncated_rate: float | None

    @property
    def format_known(self) -> bool:
        return any(check.uses_markers for check in self.checks)


def group_text_stats(texts: Sequence[str]) -> GroupTextStats:
    """Diversity and format of one group; each completion is tokenised once."""
    token_lists = [words(text) for text in texts]
    checks = tuple(check_format(text) for text in texts)
    known = any(c.uses_markers for c in checks)
    # each completion's 3-gram set serves the overlap and its own repetition
    shingles = [set(_grams(tokens, 3)) for tokens in token_lists]
    repetition = tuple(
        1.0 - len(grams) / (len(tokens) - 2) if len(tokens) >= 4 else 0.0
        for tokens, grams in zip(token_lists, shingles, strict=True)
    )
    return GroupTextStats(
        distinct_2=_distinct(token_lists, 2),
        pairwise_overlap=_overlap_of_sets(shingles),
        checks=checks,
        repetition=repetition,
        format_rate=_rate([c.follows for c in checks], known),
        truncated_rate=_rate([c.cut_off for c in checks], known),
    )
