"""Console logs: the Python dicts HF Trainer prints (`python train.py 2>&1 | tee train.log`).

Most people keep a TRL / Unsloth / open-r1 run as its console output. The metrics are
there as dict reprs among everything else a console shows:

    51/400 [20:01<2:01:46, 20.94s/it]{'loss': '0.02196', 'grad_norm': '3.3e-06', ...}

- tqdm redraws the progress bar with `\\r`, so one `\\n` line can hold many states;
  terminal colour codes wrap some of it (the reader strips them before any parser sees a
  line: layout.strip_terminal_codes);
- values are numbers, or (transformers 5) `'%.4g'` strings; `nan`, `inf` and `None` occur;
- the dict has no step, and the progress bar does not say it plainly either: stdout (the
  dicts) is block-buffered when piped while stderr (tqdm) is not, so a run's dicts often
  come out in bursts long after the bars of their steps. HF prints each dict through
  `tqdm.write`, which redraws the bar at the same N: a bar repeating its N marks a logged
  step. A dict takes, in this order: the oldest mark not yet taken; the N of a bar glued
  to it in the same redraw (unbuffered output: the mark comes after the dict); the newest
  bar's N when it moved past the last step; else the reader counts on. Eval dicts (`eval_*` keys) belong to the step before;
- a terminal that wrapped the dict (a pasted tmux capture) breaks it over several lines;
- the file grows while it is read, and a dict can arrive in pieces.

The keys are TRL's vocabulary, so the adapter is TRL's with a step key for the progress
the parser adds. `looks_like_console` is the content fingerprint that picks this reader
for a file of any name.
"""

from __future__ import annotations

import ast
import itertools
import math
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grpo_tui.sources.formats.base import TextDict
from grpo_tui.sources.formats.layout import (
    CONSOLE_SUFFIXES,
    Found,
    Probe,
    Reading,
    Tier,
    console_files,
    found_file,
)
from grpo_tui.sources.formats.trl import TRL
from grpo_tui.sources.formats.values import NON_FINITE_WORDS

NAME = "trl-console"
#: the key the parser adds for the tqdm progress of a train dict ("N/M")
PROGRESS_KEY = "global_step/max_steps"

#: keys that make a printed dict a trainer's log line (user code prints other dicts)
_LOG_KEYS = ("loss", "reward", "train_runtime", "eval_loss", "learning_rate", "grad_norm")
_LOG_DICT_START = re.compile(r"\{\s*'(?:" + "|".join(_LOG_KEYS) + r")'\s*:")
#: a pasted dict whose opening brace the copy left out: it starts a line with a log key
_CUT_DICT_START = re.compile(r"^\s*'(?:" + "|".join(_LOG_KEYS) + r")'\s*:")
#: one `'key': value` pair of a dict repr (what a cut-off dict still shows whole)
_PAIR = re.compile(r"'([^'\\]+)'\s*:\s*('[^']*'|[^,{}]+?)\s*(?=,|\}|$)")
#: tqdm's "N/M [" (also inside a Ray or logging prefix)
_PROGRESS = re.compile(r"(\d+)/(\d+) \[")
#: bare tokens Python's repr writes that literal_eval does not read
_BARE = re.compile(r"(?<=[:\s\[,])(-?)(nan|inf|NaN|Infinity)(?=\s*[,}\]])")
_WRAPPED_NUMBER = re.compile(r"(?:np\.)?(?:float|int)\d*\(([^()]*)\)|tensor\(([^(),]*)[^()]*\)")
#: a dict still open after this many characters is not a log dict: give it up
MAX_DICT_CHARS = 200_000


def redraw_states(line: str) -> Iterator[str]:
    """The states of a line tqdm redrew with `\\r`, one at a time (a 50 MB line of redraws
    is a million of them: never all held at once)."""
    start = 0
    while True:
        stop = line.find("\r", start)
        if stop < 0:
            yield line[start:]
            return
        yield line[start:stop]
        start = stop + 1


def looks_like_console(text: str) -> bool:
    """The text (its terminal codes stripped: text_shows does that) holds a trainer's
    printed log dict (the content fingerprint)."""
    return _LOG_DICT_START.search(text) is not None


@dataclass
class ConsoleParser:
    """Finds trainer log dicts in console text fed line by line (state carries over)."""

    #: the newest tqdm progress seen (step, total)
    progress: tuple[int, int] | None = None
    #: the step the last train dict was given
    last_train_step: int = 0
    #: (line number, reason, excerpt) of dicts that could not be read
    bad: list[tuple[int, str, str]] = field(default_factory=list)
    #: HF Trainer prints no config dump (TRL's settings are in trainer_state.json's folder)
    settings: dict[str, Any] | None = None
    #: steps whose bar was redrawn at the same N (a dict was written there), not yet taken
    marks: deque[int] = field(default_factory=deque)
    _pending: list[str] = field(default_factory=list)
    _pending_line: int = 0
    _pending_chars: int = 0
    #: the N of a bar in the same redraw as the dict being read (None: not glued)
    _glued: int | None = None

    def feed(self, line: str, line_no: int) -> Iterator[TextDict]:
        """The log dicts completed by one console line (without its newline or terminal
        codes: the reader strips them)."""
        for segment in redraw_states(line):
            yield from self._segment(segment, line_no)

    def flush(self) -> Iterator[TextDict]:
        """The text ended (a one-shot read reached the end), or a new dict started: a dict
        still open was cut off; its whole `'key': value` pairs are read, the dict counted bad."""
        if not self._pending:
            return
        values = salvage_cut_dict(self._pending, self._pending_line, self.bad)
        self._pending = []
        if values:
            yield TextDict(self._pending_line, self._stamp(values))

    def _segment(self, segment: str, line_no: int) -> Iterator[TextDict]:
        if self._pending and _LOG_DICT_START.match(segment.strip()):
            # a new dict starts while one is open: that one was cut off (a paste)
            yield from self.flush()
        if self._pending:
            # a dict the terminal wrapped (or that arrives in pieces): lines join as they
            # are, without the padding a terminal capture adds at both ends
            self._pending.append(segment.strip())
            self._pending_chars += len(segment)
            yield from self._maybe_finish()
            return
        if _LOG_DICT_START.search(segment) is None and _CUT_DICT_START.match(segment):
            segment = "{" + segment.strip()  # a paste that lost the dict's opening brace
        start = _LOG_DICT_START.search(segment)
        before = segment if start is None else segment[: start.start()]
        glued: int | None = None
        for match in _PROGRESS.finditer(before):
            step, total = int(match.group(1)), int(match.group(2))
            if self.progress is not None and total != self.progress[1]:
                self.marks.clear()  # another bar (loading shards, eval): its marks are not steps
            elif (
                (step, total) == self.progress
                and step > self.last_train_step
                and (not self.marks or self.marks[-1] != step)
            ):
                self.marks.append(step)
            self.progress = (step, total)
            glued = step
        if start is None:
            return
        self._glued = glued
        self._pending = [segment[start.start() :].strip()]
        self._pending_line = line_no
        self._pending_chars = len(self._pending[0])
        yield from self._maybe_finish()

    def _maybe_finish(self) -> Iterator[TextDict]:
        text = "".join(self._pending)
        depth = text.count("{") - text.count("}")
        if depth > 0:
            if self._pending_chars > MAX_DICT_CHARS:
                self.bad.append((self._pending_line, "a dict that never closes", text[:80]))
                self._pending = []
            return
        end = _closing(text)
        body = text[: end + 1]
        self._pending = []
        try:
            values = read_dict_repr(body)
        except ValueError as error:
            self.bad.append((self._pending_line, str(error), body[:80]))
        else:
            if values:
                yield TextDict(self._pending_line, self._stamp(values))
        rest = text[end + 1 :]
        if rest.strip():
            yield from self._segment(rest, self._pending_line)

    def _stamp(self, values: dict[str, Any]) -> dict[str, Any]:
        """Give a train dict its step from the progress bars (module docstring)."""
        glued, self._glued = self._glued, None
        if any(key.startswith("eval_") for key in values) or "train_runtime" in values:
            return values  # eval and end lines take the step of the line before
        if PROGRESS_KEY in values:
            return values  # the dict says its step itself (ms-swift prints it)
        while self.marks and self.marks[0] <= self.last_train_step:
            self.marks.popleft()
        step: int | None = None
        if self.marks:
            step = self.marks.popleft()
        elif glued is not None and glued > self.last_train_step:
            step = glued
        elif self.progress is not None and self.progress[0] > self.last_train_step:
            step = self.progress[0]
        if step is None or self.progress is None:
            # no bar, or it did not move: the reader counts on from the step before
            self.last_train_step += 1
            return values
        values[PROGRESS_KEY] = f"{step}/{self.progress[1]}"
        self.last_train_step = step
        return values


def read_dict_repr(body: str) -> dict[str, Any]:
    """The numbers of a printed Python dict (`str(dict)`): numbers, '%.4g' strings,
    nan/inf, np.float64(…) and tensor(…) read; other values left out. A dict a paste
    abridged (`…, ...}`) keeps what it shows. Raises ValueError saying why it cannot be read."""
    source = _WRAPPED_NUMBER.sub(lambda m: m.group(1) or m.group(2) or "", body)
    source = _BARE.sub(lambda m: f"'{m.group(1)}{m.group(2)}'", source)
    source = _ABRIDGED.sub("}", source)
    try:
        value = ast.literal_eval(source)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as error:
        raise ValueError(f"not a readable dict ({type(error).__name__})") from error
    if not isinstance(value, dict):
        raise ValueError("not a dict")
    values: dict[str, Any] = {}
    for key, raw in value.items():
        if not isinstance(key, str):
            continue
        number = _number(raw)
        if number is not None:
            values[key] = number
        elif isinstance(raw, str):
            values[key] = raw  # "5/3766", "1d 2h": an adapter's string parsers read them
    return values


#: `, ...}`: an author shortened a pasted dict
_ABRIDGED = re.compile(r",\s*\.\.\.\s*\}")


def salvage_cut_dict(
    pending: list[str], line_no: int, bad: list[tuple[int, str, str]]
) -> dict[str, Any]:
    """The whole `'key': value` pairs of a dict repr cut off before its end (its lines
    `pending`, from `line_no`), as numbers (strings and values cut in the middle left out);
    the dict is counted in `bad`."""
    text = " ".join(pending)
    values: dict[str, Any] = {}
    pairs = list(_PAIR.finditer(text))
    if pairs and pairs[-1].end() >= len(text.rstrip()):
        pairs.pop()  # the last pair runs to the cut: its value may be cut too
    for match in pairs:
        raw = match.group(2).strip()
        if raw.startswith("'"):
            number = _number(raw.strip("'"))
            values[match.group(1)] = raw.strip("'") if number is None else number
            continue
        number = _number(_WRAPPED_NUMBER.sub(lambda m: m.group(1) or m.group(2) or "", raw))
        if number is None:
            try:
                number = float(raw)
            except ValueError:
                continue
        values[match.group(1)] = number
    bad.append((line_no, f"a dict cut off: {len(values)} whole values read", text[:80]))
    return values


def _closing(text: str) -> int:
    """Index of the brace closing the dict that starts `text`."""
    depths = itertools.accumulate((char == "{") - (char == "}") for char in text)
    return next((index for index, depth in enumerate(depths) if depth == 0), len(text) - 1)


def _number(raw: object) -> float | None:
    """A logged value as a float: numbers, '%.4g' strings, 'nan'/'inf'; None otherwise."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        return None
    try:
        number = float(raw)
    except (OverflowError, ValueError):  # an int too big for a float; a word
        return None
    if isinstance(raw, str) and not math.isfinite(number):
        return number if raw.strip().lower() in NON_FINITE_WORDS else None
    return number


_claim, find = console_files(NAME, looks_like_console, "HF Trainer log dicts ({'loss': …})")


def claim(path: Path, seen: Probe) -> Found | None:
    found = _claim(path, seen)
    if found is None and path.name.endswith(CONSOLE_SUFFIXES):
        # named like a console log, no log dict in it yet: read it as one meanwhile (a
        # record another console format shows later makes discovery choose again)
        why = "named like a console log (no log record in it yet)"
        return found_file(path, NAME, Reading.CONSOLE, Tier.GUESS, why, args_names=("args.json",))
    return found


#: TRL's vocabulary and version hints, with the progress the parser adds as the step
CONSOLE = replace(
    TRL,
    name=NAME,
    title="TRL console log",
    fraction_step_keys=(PROGRESS_KEY,),
    reading=Reading.CONSOLE,
    parser=ConsoleParser,
    claim=claim,
    find=find,
)
