"""Diversity and format statistics over one group of completions (pure functions).

Completion text is untrusted model output: any characters, any length, any script. Every
function here accepts any `str` and never raises on its content; the diversity statistics
look only at the first `STATS_CHAR_CAP` characters of each completion, so their cost is
bounded per completion however long the text is.

What is measured is the text the model wrote (`measured_text`): role prefixes and chat-
template markers around it (`assistant: `, `<|im_start|>assistant`, a closing
`<|im_end|>`) are not text and are left out, as is the whitespace around it. An empty
completion stays empty.

The diversity statistics cut text into character n-grams (shingles of `SHINGLE_CHARS`
characters), not words: no tokenizer is needed, a loop without spaces (`8>8>8>8…`) is seen,
and text without spaces (Chinese, Japanese) is measured like any other.

- Diversity (`shingle_diversity`): `distinct` (unique shingles / all shingles across the
  group) and `overlap` (mean Jaccard overlap of shingle sets over pairs of completions). A
  completion shorter than a shingle counts as one shingle of all its characters, so short
  or empty completions still compare (two identical empty completions overlap fully).
- Repetition: the share of a completion's shingles that repeat an earlier one of the same
  completion (0 = no shingle twice; a loop `8>8>8…` or `哈哈哈…` tends to 1). A completion
  shorter than four shingles is cut into shingles of a quarter of its length instead, so a
  short loop is seen too.
- Very short: a completion that is at most one token after its markers are left out
  (`one_token`).
- Format: a completion follows the format when every known tag it uses (`<think>`,
  `<answer>`) is balanced and it closes at least one tag pair or a `\\boxed{...}`. An
  opened tag (or `\\boxed{`) never closed looks cut off (truncated). A group where no
  completion uses any known marker has an unknown format (None), not a 0 % rate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: characters of each completion the diversity statistics look at
STATS_CHAR_CAP = 4_000
#: characters of each completion the format check scans (head and tail halves beyond this)
FORMAT_SCAN_CAP = 262_144
#: characters per shingle. Why 12: the zones (overlap 0.5 / 0.8, repetition 0.3 / 0.5) were
#: set on word 3-grams, and 12 characters are about two to three English words (a word and
#: its space average 5-6 characters). Measured on the simulator's nine scenarios (mean per
#: step), 12-character shingles keep overlap within 0.03 of the word 3-gram values (healthy
#: 0.16-0.19 both ways, the reward-hacking template 0.72-0.75 both ways) and repetition
#: within 0.04; 4-character shingles are shared by unrelated English ("the ", "ing ") and
#: took the truncation scenario's overlap from 0.25 to 0.58, over the caution line. For
#: text without spaces a shingle spans more words, so near-identical Chinese completions
#: still overlap highly while merely similar ones score lower: erring towards no alarm.
SHINGLE_CHARS = 12
#: a completion with at least this share of repeated shingles is flagged repetitive
#: (a loop; ordinary prose and even terse math repeat well under a third of their shingles)
REPETITIVE_SHARE = 0.5
#: a completion of at most this many characters without whitespace, once its markers are
#: left out, is one token (an English BPE token is about 4 characters, a CJK character
#: about one token): no answer in a reasoning task
ONE_TOKEN_CHARS = 4
#: pairs compared exactly; larger groups compare an evenly spread subset of about this many
MAX_EXACT_PAIRS = 300
#: groups whose completions x distinct shingles stay under this are compared with one
#: matrix product (a dense 0/1 matrix of float32); larger ones with sets, in bounded memory
_DENSE_CELLS = 1 << 22

_TAG_NAMES = ("think", "answer")
_TAG_RE = re.compile(r"<(/?)(think|answer)>")
_BOXED = "\\boxed{"
_BRACE_RE = re.compile(r"[{}]")
#: characters after `\boxed{` searched for its closing brace
_BOXED_SCAN_CHARS = 2_000

#: what opens a completion but is no text of the model's: chat-template turn markers
#: (ChatML, Llama 3, Gemma, Phi's <|assistant|>), begin-of-text tokens, and role labels
#: ("assistant: " as sources write a list of messages, "Assistant:" / "### Assistant:"
#: transcripts). Each repetition starts with its own whitespace and no marker ends with
#: any, so a long run of spaces cannot make the match backtrack.
_ROLE_PREFIX = re.compile(
    r"\A(?:\s*(?:"
    r"<\|im_start\|>\w*"
    r"|<\|start_header_id\|>\w*<\|end_header_id\|>"
    r"|<start_of_turn>\w*"
    r"|<\|(?:assistant|user|system|model|bot)\|>"
    r"|<\|begin_of_text\|>|<\|startoftext\|>|<bos>|<s>"
    r"|(?:#{1,4}[ \t]*)?(?:assistant|user|system|model|human|gpt|bot|tool)[ \t]*:"
    r"))+",
    re.IGNORECASE,
)
#: the role label of each later message of a completion written as a list of messages
_MESSAGE_LINE = re.compile(r"^(?:system|user|assistant|tool): ", re.MULTILINE)
#: end-of-turn tokens that close a completion
_TURN_ENDS = (
    "<|im_end|>",
    "<|eot_id|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end|>",
    "</s>",
    "<eos>",
)
#: characters looked at beyond the cap for the markers around the text
_MARKER_SLACK = 256

#: polynomial hashing of shingles modulo 2**64 (an odd multiplier: the 64-bit FNV prime)
_BASE = 0x100000001B3
_MASK = (1 << 64) - 1
#: a value no character has: it starts the hash of a text shorter than a shingle
_SHORT_SEED = 0x110000


def role_prefix_end(text: str) -> int:
    """Where the model's own text begins: the length of the role prefixes and template
    markers that open `text` (`assistant: `, `<|im_start|>assistant`) and the whitespace
    after them; 0 when it opens with none. Only the head is looked at (bounded cost)."""
    head = text[:_MARKER_SLACK]
    prefix = _ROLE_PREFIX.match(head)
    if prefix is None:
        return 0
    end = prefix.end()
    return end + len(head[end:]) - len(head[end:].lstrip())


def measured_text(text: str) -> str:
    """The part of a completion the statistics measure: its first `STATS_CHAR_CAP`
    characters once role prefixes, template markers and surrounding whitespace are left
    out ("" when nothing else is there)."""
    head = text[: STATS_CHAR_CAP + _MARKER_SLACK]
    prefix = _ROLE_PREFIX.match(head)
    if prefix is not None:
        rendered = _MESSAGE_LINE.match(head) is not None
        head = head[prefix.end() :]
        if rendered:
            # a list of messages: each later message starts with its role label too
            head = _MESSAGE_LINE.sub("", head)
    head = head.strip()
    if len(text) <= STATS_CHAR_CAP + _MARKER_SLACK:
        while head.endswith(_TURN_ENDS):
            head = head[: head.rindex("<")].rstrip()
    return head[:STATS_CHAR_CAP]


def one_token(measured: str) -> bool:
    """A measured text that is empty or one short run without whitespace (one token)."""
    return len(measured) <= ONE_TOKEN_CHARS and (not measured or len(measured.split()) == 1)


def _short_hash(text: str) -> int:
    """The hash of a text shorter than a shingle (one shingle of all its characters)."""
    value = _SHORT_SEED + len(text)
    for char in text:
        value = (value * _BASE + ord(char)) & _MASK
    return value


def _shingles(texts: Sequence[str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(hash of every n-character shingle of each text, the text it belongs to), texts in
    order; a text shorter than n is one shingle of all its characters.

    All texts are hashed at once: one UTF-32 encoding, then n vector passes of a
    polynomial hash over every window (windows across two texts are dropped).
    """
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    grams = np.where(lengths >= n, lengths - n + 1, 1)
    owner = np.repeat(np.arange(len(texts), dtype=np.int64), grams)
    hashes = np.empty(owner.size, dtype=np.uint64)
    full = lengths >= n
    if full.any():
        # lone surrogates pass through: model output may hold them
        joined = "".join(texts).encode("utf-32-le", "surrogatepass")
        codes = np.frombuffer(joined, dtype=np.uint32).astype(np.uint64)
        windows = codes.size - n + 1
        rolling = codes[:windows].copy()
        base = np.uint64(_BASE)
        for k in range(1, n):
            rolling *= base  # wraps modulo 2**64, as intended
            rolling += codes[k : k + windows]
        first_gram = np.cumsum(grams) - grams
        offsets = np.arange(owner.size, dtype=np.int64) - first_gram[owner]
        starts = np.cumsum(lengths) - lengths
        taken = full[owner]
        hashes[taken] = rolling[starts[owner[taken]] + offsets[taken]]
    for row in np.flatnonzero(~full).tolist():
        hashes[np.searchsorted(owner, row)] = _short_hash(texts[row])
    return hashes, owner


@dataclass(frozen=True, slots=True)
class Diversity:
    """The shingle statistics of one group of measured texts."""

    #: distinct shingles / all shingles across the group (NaN for no texts)
    distinct: float
    #: mean Jaccard overlap of the texts' shingle sets over (sampled) pairs; NaN under two
    overlap: float
    #: per text: its distinct shingles, and all its shingles
    own_distinct: np.ndarray
    own_total: np.ndarray


def shingle_diversity(texts: Sequence[str], n: int = SHINGLE_CHARS) -> Diversity:
    """The character n-gram statistics of a group's measured texts (`measured_text`).

    `distinct`: unique n-grams / all n-grams across the completions (NaN for no
    completions); 1.0 when no n-gram repeats; 1/k for k identical completions without
    internal repeats.

    `overlap`: mean Jaccard overlap of their n-gram sets over pairs of completions; 1.0
    when all completions are identical, 0.0 when no two share an n-gram; NaN with fewer
    than two completions (no pair to compare). Groups with more than `MAX_EXACT_PAIRS`
    pairs are judged on an evenly spread subset of pairs.
    """
    if n < 1:
        raise ValueError(f"n-grams need n >= 1, not {n}")
    if not texts:
        return Diversity(math.nan, math.nan, np.empty(0), np.empty(0))
    hashes, owner = _shingles(texts, n)
    # shingle ids in one sort (as int64: the same bits, a faster sort than uint64)
    distinct_hashes, ids = np.unique(hashes.view(np.int64), return_inverse=True)
    ids = ids.reshape(-1)
    width = int(distinct_hashes.size)
    count = len(texts)
    totals = np.bincount(owner, minlength=count).astype(np.float64)
    distinct = width / hashes.size
    pairs = sampled_pairs(count)
    first, second = np.array(pairs, dtype=np.int64).reshape(-1, 2).T
    if count * (count - 1) // 2 <= MAX_EXACT_PAIRS and count * width <= _DENSE_CELLS:
        # each text's distinct shingles as a 0/1 row (a repeated shingle sets its cell
        # again), every pair's shared shingles in one matrix product
        dense = np.zeros((count, width), dtype=np.float32)
        dense[owner, ids] = 1.0
        sizes = dense.sum(axis=1, dtype=np.float64)
        shared = (dense @ dense.T)[first, second].astype(np.float64)
    else:
        # bounded memory for huge groups: plain sets, intersections run in C
        bounds = np.searchsorted(owner, np.arange(count + 1)).tolist()
        listed = ids.tolist()
        sets = [set(listed[bounds[i] : bounds[i + 1]]) for i in range(count)]
        sizes = np.array([len(s) for s in sets], dtype=np.float64)
        shared = np.array([len(sets[i] & sets[j]) for i, j in pairs], dtype=np.float64)
    if count < 2:
        return Diversity(distinct, math.nan, sizes, totals)
    # never empty sets (a short text is one shingle), so the union is never 0
    union = sizes[first] + sizes[second] - shared
    return Diversity(distinct, float(np.mean(shared / union)), sizes, totals)


def _repetitions(texts: Sequence[str], diversity: Diversity) -> tuple[float, ...]:
    """Per measured text: the share of its shingles that repeat an earlier one, from the
    group's `diversity` (its shingles are `SHINGLE_CHARS` long). A text shorter than four
    shingles uses shingles of a quarter of its length instead (at least one character;
    under four characters nothing counts as repeating)."""
    shares = [0.0] * len(texts)
    long = [i for i, text in enumerate(texts) if len(text) >= 4 * SHINGLE_CHARS]
    if long:
        own = (1.0 - diversity.own_distinct / diversity.own_total).tolist()
        for i in long:
            shares[i] = own[i]
    for i, text in enumerate(texts):
        size = len(text)
        if 4 <= size < 4 * SHINGLE_CHARS:
            width = size // 4
            grams = size - width + 1
            shares[i] = 1.0 - len({text[p : p + width] for p in range(grams)}) / grams
    return tuple(shares)


def sampled_pairs(count: int) -> list[tuple[int, int]]:
    """Every pair for small groups; else each item with its next d neighbours (circularly).

    The subset is deterministic and compares every completion equally often, so the mean
    is an even estimate while the cost stays O(count), not O(count²).
    """
    if count * (count - 1) // 2 <= MAX_EXACT_PAIRS:
        return [(i, j) for i in range(count) for j in range(i + 1, count)]
    neighbours = max(1, min(MAX_EXACT_PAIRS // count, (count - 1) // 2))
    return [(i, (i + d) % count) for d in range(1, neighbours + 1) for i in range(count)]


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
    boxed_present, boxed_closed, boxed_cut = _boxed_state(scan)
    if not boxed_present and _TAG_RE.search(scan) is None:
        return _NO_MARKERS
    depth = dict.fromkeys(_TAG_NAMES, 0)
    seen = dict.fromkeys(_TAG_NAMES, False)
    closed_pairs = 0
    stray_close = False
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


@dataclass(frozen=True, slots=True)
class GroupTextStats:
    """All text statistics of one group, computed in one pass over its completions."""

    #: distinct shingles / all shingles across the group (see `shingle_diversity`)
    distinct_2: float
    #: mean pairwise Jaccard overlap of the completions' shingle sets (1 = identical)
    pairwise_overlap: float
    #: one check per completion, in order
    checks: tuple[FormatCheck, ...]
    #: one repetition share per completion, in order
    repetition: tuple[float, ...]
    #: per completion, in order: at most one token once its markers are left out
    one_token: tuple[bool, ...] = ()

    @property
    def format_known(self) -> bool:
        return any(check.uses_markers for check in self.checks)


def group_text_stats(texts: Sequence[str]) -> GroupTextStats:
    """Diversity and format of one group; each completion is measured once."""
    measured = [measured_text(text) for text in texts]
    checks = tuple(check_format(text) for text in texts)
    diversity = shingle_diversity(measured)
    return GroupTextStats(
        distinct_2=diversity.distinct,
        pairwise_overlap=diversity.overlap,
        checks=checks,
        repetition=_repetitions(measured, diversity),
        one_token=tuple(one_token(text) for text in measured),
    )
