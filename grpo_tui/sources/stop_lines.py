"""Why a run stopped: the lines of its console logs that end runs, found as they are written.

A trainer that dies leaves the reason in the console text beside its metrics: a Python
traceback (its last line names the error), `CUDA out of memory`, an NCCL watchdog timeout,
a Ray actor that died, a signal, SkyRL's `Training failed at step N`; one that ends well
says so too (`Training completed`, HF's `train_runtime` line). `STOP_PATTERNS` is that
knowledge as data: a regex per line that ends runs, the words it is told with, its kind
(failed, killed, completed), how specific it is (`rank`: in the cascade of lines a crash
prints, the most specific wins: the out-of-memory error under the Ray actor that died of
it) and whether it ends the run at once (`decisive`) or only once the metrics stop too (a
bare traceback: a trainer may print one and go on).

Reading stays bounded on a multi-GB log: a chunk is searched for the patterns' keywords in
one pass of a compiled regex (about 7 ms per MB), and only the lines it hits are decoded
and classified; a traceback is walked from its header to its exception line (at most
`TRACEBACK_LINES` lines, carried over a chunk boundary). What is kept is the standing line
and a few lines of context before it (`StopTracker`), never the log.

Which line stands (`StopTracker`): the best line after the newest metric record. In the
log the metrics come from (a console log read for its printed dicts) that is by line
number; in another file (`output.log` beside a JSON-lines log) by time: a line is dated by
its file's mtime when it was read, if no more than `TAIL_BYTES` followed it then (else it
is older than any metric record, and one read already buries it), and a metric record
written later buries it.

Text from a log is untrusted: it is kept as read and made printable where it is shown
(grpo_tui/untrusted.py); it is never handed to a shell.
"""

from __future__ import annotations

import re
import signal
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path

from grpo_tui.sources.formats.layout import (
    entry_is_dir,
    entry_is_file,
    entry_mtime,
    scan,
    strip_terminal_codes,
)
from grpo_tui.sources.tail import TailReader
from grpo_tui.vocabulary import StopKind

#: lines before a stop line kept with it (a traceback's last frames)
CONTEXT_LINES = 4
#: characters of a line kept at most (a tqdm redraw line can be megabytes)
LINE_CHARS = 400
#: lines walked from a traceback's header to its exception line at most
TRACEBACK_LINES = 400
#: a stop line of a file other than the metrics log is dated by its file's mtime when at
#: most this many bytes followed it in the read that found it (a crash's teardown prints
#: less); else it is older than the metrics read
TAIL_BYTES = 256 << 10
#: the words a cause is cut to: the header quotes it before the file and line, on one line
#: of a terminal (the whole line is `text`)
CAUSE_CHARS = 48
#: lines hit by the keywords classified per chunk at most, the last ones (a log that
#: repeats a keyword on every line costs a bounded time per chunk, not one per line)
HITS_PER_CHUNK = 256


@dataclass(frozen=True, slots=True)
class StopPattern:
    """One kind of line that ends runs."""

    #: searched in one line (terminal codes and a Ray `(Actor pid=N)` prefix stripped)
    regex: re.Pattern[str]
    #: the words the run is told with: a template over the regex's named groups ("{line}"
    #: is the line itself, "{step}" a step it names)
    cause: str
    kind: StopKind
    #: how specific it is: within a crash's cascade of lines the highest rank stands
    rank: int
    #: the run is over once this line is written (else: once its metrics are late too)
    decisive: bool = True
    #: who writes it, for the reader of this table
    source: str = ""


def _p(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


#: a traceback's header; the exception line follows its frames
TRACEBACK = "Traceback (most recent call last)"
#: an exception line ("torch.OutOfMemoryError: CUDA out of …", "ray.exceptions.RayTaskError(
#: OutOfMemoryError): …", "KeyError: 'reward'")
EXCEPTION_LINE = _p(r"^(?P<error>[A-Za-z_][\w.]*(?:\([\w.]+\))?)(?::\s?(?P<message>.*))?$")

#: the lines that end runs, tried in this order (a line naming the step it failed at first:
#: it may name the error too); rank: completed 100 > one cause 50 > a step's failure 40 > a
#: kill 30 > a dead actor 20 > any exception 10
STOP_PATTERNS: tuple[StopPattern, ...] = (
    StopPattern(
        _p(r"(?i)\btraining completed\b"),
        "training completed",
        StopKind.COMPLETED,
        100,
        source="Tinker cookbook rl/train.py, SkyRL tinker_train.py: 'Training completed successfully'",
    ),
    StopPattern(
        _p(r"""['"]train_runtime['"]\s*:"""),
        "training completed (train_runtime logged)",
        StopKind.COMPLETED,
        100,
        source="HF Trainer / TRL / ms-swift: the end-of-train dict",
    ),
    StopPattern(
        _p(r"Training failed at step (?P<step>\d+) with (?P<error>[\w.]+(?:\([\w.]+\))?)"),
        "training failed: {error}",
        StopKind.FAILED,
        40,
        source="SkyRL skyrl/train/utils/tracking.py log_exception",
    ),
    StopPattern(
        _p(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory"),
        "CUDA out of memory",
        StopKind.FAILED,
        50,
        source="PyTorch's caching allocator",
    ),
    StopPattern(
        _p(r"Watchdog caught collective operation timeout"),
        "NCCL collective timed out (watchdog)",
        StopKind.FAILED,
        50,
        source="PyTorch ProcessGroupNCCL",
    ),
    StopPattern(
        _p(r"(?i)gloo\b.*(?:timed? ?out|timeout|connectFullMesh failed|connection closed)"),
        "Gloo collective failed or timed out",
        StopKind.FAILED,
        50,
        source="PyTorch ProcessGroupGloo",
    ),
    StopPattern(
        _p(r"Received (?P<signal>\d+) death signal, shutting down workers"),
        "killed by signal {signal}",
        StopKind.KILLED,
        30,
        source="torch.distributed.elastic agent",
    ),
    StopPattern(
        _p(r"Signal (?P<signal>\d+) \((?P<name>SIG[A-Z]+)\) received by PID"),
        "killed by {name}",
        StopKind.KILLED,
        30,
        source="torch.distributed.elastic error handler",
    ),
    StopPattern(
        _p(r"SignalException: Process \d+ got signal: (?P<signal>\d+)"),
        "killed by signal {signal}",
        StopKind.KILLED,
        30,
        source="torch.distributed.elastic",
    ),
    StopPattern(
        # alone on its line, or after a progress bar the shell's message ended
        _p(r"(?:^|\]|: line \d+:\s+\d+ )\s*Killed\s*$"),
        "killed by SIGKILL (the OOM killer, or kill -9)",
        StopKind.KILLED,
        30,
        source="the shell, for a child killed by SIGKILL",
    ),
    StopPattern(
        _p(r"\*\*\* (?:JOB|STEP) [\d.]+ ON \S+ CANCELLED AT \S+ ?(?P<why>[A-Z ]*?)\s*\*\*\*"),
        "cancelled by Slurm {why}",
        StopKind.KILLED,
        30,
        source="Slurm's slurmstepd",
    ),
    StopPattern(
        _p(r"ActorDiedError|RayActorError|The actor died unexpectedly|A worker died or was killed"),
        "a Ray actor died",
        StopKind.FAILED,
        20,
        source="Ray",
    ),
)

#: the last line of a traceback no pattern above names: the error itself, not decisive
EXCEPTION_PATTERN = StopPattern(
    EXCEPTION_LINE, "{line}", StopKind.FAILED, 10, decisive=False, source="Python"
)
#: … and Ray's wrapper of an error raised in an actor ("ray.exceptions.RayTaskError(
#: RuntimeError): ray::TaskRunner.run() …"), below the error it wraps, printed beside it
RAY_WRAPPER_PATTERN = StopPattern(
    EXCEPTION_LINE, "{line}", StopKind.FAILED, 5, decisive=False, source="Ray"
)

#: one pass over a chunk finds the lines worth classifying (literal parts of the patterns)
_KEYWORDS = re.compile(
    rb"Traceback \(most recent call last\)|raining completed|train_runtime|out of memory"
    rb"|OutOfMemoryError|Watchdog caught|connectFullMesh failed|gloo/transport|gloo::"
    rb"|Training failed at step|death signal"
    rb"|\) received by PID|got signal|Killed|CANCELLED AT|ActorDiedError"
    rb"|RayActorError|actor died unexpectedly|worker died or was killed"
)
#: the prefix a launcher puts on every line of a worker: Ray's "(TaskRunner pid=892962) ",
#: "(WorkerDict pid=81106, ip=10.0.0.1) ", torchrun's "[rank1]: "
_RAY_PREFIX = re.compile(r"^(?:\[rank\d+\]:\s?|\((?:[\w.<>:-]+ )?pid=\d+(?:, ip=[\w.:-]+)?\)\s?)")


@dataclass(frozen=True, slots=True)
class StopLine:
    """A line that ends runs, where it is and what it says."""

    kind: StopKind
    #: the words the run is told with ("CUDA out of memory"), from the log: untrusted
    cause: str
    #: the file it is in, and its 1-based line number there
    file: str
    line_no: int
    #: the line itself (cut to LINE_CHARS), untrusted
    text: str
    rank: int
    decisive: bool
    #: the step the line names (SkyRL's "Training failed at step 12"), else None
    step: int | None = None
    #: the lines before it (a traceback's last frames), untrusted
    context: tuple[str, ...] = ()
    #: when it was written at the latest (its file's mtime when read), for lines of a file
    #: other than the metrics log; None: unknown (older than any metric record read)
    time: float | None = None
    #: where the line starts in its file (bytes)
    offset: int = 0

    @property
    def name(self) -> str:
        """The file's name, as the header quotes it ("output.log")."""
        return Path(self.file).name


def _line_text(raw: bytes) -> str:
    """A line as it reads: decoded leniently, terminal codes, a carriage-return redraw's
    earlier frames and Ray's worker prefix dropped, cut to LINE_CHARS."""
    text = raw[-4 * LINE_CHARS :].decode("utf-8", "replace").rstrip("\r")
    text = strip_terminal_codes(text).rsplit("\r", 1)[-1]
    return _RAY_PREFIX.sub("", text)[:LINE_CHARS]


def classify(text: str) -> tuple[StopPattern, dict[str, str]] | None:
    """The pattern a line (as `_line_text` gives it) matches, with its groups, else None."""
    for pattern in STOP_PATTERNS:
        found = pattern.regex.search(text)
        if found is not None:
            return pattern, {k: v for k, v in found.groupdict().items() if v is not None}
    return None


def _signal_words(number: str) -> str:
    """A signal's number with its name where this system knows it: "1 (SIGHUP)"."""
    try:
        return f"{number} ({signal.Signals(int(number)).name})"
    except ValueError:
        return number


def _cause(pattern: StopPattern, groups: dict[str, str], text: str) -> str:
    if "signal" in groups:
        groups = {**groups, "signal": _signal_words(groups["signal"])}
    if "why" in groups:  # Slurm's "DUE TO TIME LIMIT"
        groups = {**groups, "why": f"({groups['why'].strip().lower()})" if groups["why"] else ""}
    try:
        words = pattern.cause.format(line=text.strip(), **groups)
    except (KeyError, IndexError, ValueError):
        words = pattern.cause
    words = " ".join(words.split())
    return words if len(words) <= CAUSE_CHARS else words[: CAUSE_CHARS - 1] + "…"


#: lines of a traceback at its left edge that are not its error: a chain's message, the
#: header of the traceback Ray prints for an actor
_CHAINED = re.compile(
    r"^(?:During handling of the above exception|The above exception was the direct cause"
    r"|ray::)"
)
#: an exception's name alone, with no message, ends like one
_BARE_ERROR = re.compile(r"(?:Error|Exception|Interrupt|Exit|Exited)(?:\([\w.]+\))?$")


def _exception(text: str) -> dict[str, str] | None:
    """A traceback's exception line's groups (error, message), else None."""
    found = EXCEPTION_LINE.match(text.strip())
    if found is None:
        return None
    groups = {k: v for k, v in found.groupdict().items() if v is not None}
    if "message" not in groups and _BARE_ERROR.search(groups["error"]) is None:
        return None
    return groups


def _is_frame(text: str) -> bool:
    """A line inside a traceback: indented (a frame, its code, its ^^^ marks) or blank."""
    return not text.strip() or text[0] in " \t"


class StopScanner:
    """Finds the lines that end runs in one file's chunks of complete lines, in order."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        #: the last lines of the previous chunk (context for a hit at a chunk's start)
        self._before: tuple[str, ...] = ()
        #: lines walked of a traceback still being read (its end has not come yet), else
        #: None; and whether its exception line came
        self._open_traceback: int | None = None
        self._raised = False

    def restart(self) -> None:
        """The file started over."""
        self._before = ()
        self._open_traceback = None
        self._raised = False

    def scan(self, data: bytes, first_line_no: int = 1, offset: int = 0) -> list[StopLine]:
        """The stop lines in `data` (complete lines, each ending in a newline, the first of
        them line `first_line_no` at byte `offset` of the file), in order."""
        hits: dict[int, tuple[StopPattern, dict[str, str], str]] = {}
        if self._open_traceback is not None:
            self._walk_traceback(data, 0, hits)
        for start, at in _hit_lines(data):
            if start in hits:
                continue
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end
            text = _line_text(data[start:end])
            if TRACEBACK in text:
                self._open_traceback = 0
                self._walk_traceback(data, end + 1, hits)
                continue
            matched = classify(text)
            if matched is not None:
                hits[start] = (*matched, text)
        lines = self._placed(data, first_line_no, offset, hits)
        self._before = _lines_before(data, len(data), CONTEXT_LINES, self._before)
        return lines

    def _walk_traceback(
        self, data: bytes, position: int, hits: dict[int, tuple[StopPattern, dict[str, str], str]]
    ) -> None:
        """From inside a traceback at `position`: its exception lines, hits (a chained or a
        Ray-wrapped error prints several: the last one stands among equals), up to the first
        line after them that is no part of it (the chunk may end first: the walk goes on in
        the next one)."""
        walked = self._open_traceback or 0
        while position < len(data) and walked < TRACEBACK_LINES:
            end = data.find(b"\n", position)
            end = len(data) if end < 0 else end
            text = _line_text(data[position:end])
            walked += 1
            position, at = end + 1, position
            if _is_frame(text) or TRACEBACK in text or _CHAINED.match(text):
                continue
            found = _exception(text)
            if found is not None:
                wrapper = found["error"].startswith("ray.exceptions.RayTaskError")
                plain = RAY_WRAPPER_PATTERN if wrapper else EXCEPTION_PATTERN
                hits[at] = (*(classify(text) or (plain, found)), text)
                self._raised = True
            elif self._raised:
                break  # the traceback is over (lines before its error may interleave)
        else:
            if walked < TRACEBACK_LINES:
                self._open_traceback = walked
                return
        self._open_traceback = None
        self._raised = False

    def _placed(
        self,
        data: bytes,
        first_line_no: int,
        offset: int,
        hits: dict[int, tuple[StopPattern, dict[str, str], str]],
    ) -> list[StopLine]:
        """The hits as StopLines, with their line numbers and context, in file order."""
        lines: list[StopLine] = []
        counted, line_no = 0, first_line_no
        for start in sorted(hits):
            pattern, groups, text = hits[start]
            line_no += data.count(b"\n", counted, start)
            counted = start
            step = groups.get("step")
            lines.append(
                StopLine(
                    kind=pattern.kind,
                    cause=_cause(pattern, groups, text),
                    file=self.origin,
                    line_no=line_no,
                    text=text,
                    rank=pattern.rank,
                    decisive=pattern.decisive,
                    step=int(step) if step is not None and step.isdigit() else None,
                    context=_lines_before(data, start, CONTEXT_LINES, self._before),
                    offset=offset + start,
                )
            )
        return lines


def _hit_lines(data: bytes) -> deque[tuple[int, int]]:
    """(line start, keyword offset) of the last HITS_PER_CHUNK lines a keyword hits."""
    lines: deque[tuple[int, int]] = deque(maxlen=HITS_PER_CHUNK)
    previous = -1
    for found in _KEYWORDS.finditer(data):
        start = data.rfind(b"\n", 0, found.start()) + 1
        if start != previous:
            lines.append((start, found.start()))
            previous = start
    return lines


def _lines_before(data: bytes, end: int, count: int, earlier: tuple[str, ...]) -> tuple[str, ...]:
    """The `count` non-blank lines before offset `end` (a line start), those of the chunk
    before when this one holds fewer."""
    found: list[str] = []
    stop = end - 1  # the newline ending the line before
    while len(found) < count and stop > 0:
        start = data.rfind(b"\n", 0, stop) + 1
        text = _line_text(data[start:stop])
        if text.strip():
            found.append(text)
        stop = start - 1
    found.reverse()
    if len(found) < count:
        found = [*earlier[len(earlier) - (count - len(found)) :], *found] if earlier else found
    return tuple(found)


def _older(line: StopLine, metrics_time: float | None) -> bool:
    """A line of another file than the metrics log is older than the newest metric record
    (undated: older than any)."""
    return metrics_time is not None and (line.time is None or line.time < metrics_time)


class StopTracker:
    """The stop line that stands: the best (highest rank, then newest) since the newest
    metric record (see the module doc)."""

    def __init__(self) -> None:
        self.current: StopLine | None = None
        #: the newest metric record's time (the metrics source's mtime when read)
        self._metrics_time: float | None = None
        #: the step a stop line since the newest metric record named (SkyRL's "Training
        #: failed at step 37", before the traceback whose error stands), and its file
        self._step: tuple[str, int] | None = None

    def forget(self, file: str) -> None:
        """`file` started over: a stop line it held is gone with it."""
        if self.current is not None and self.current.file == file:
            self.current = None
            self._step = None

    def offer(self, lines: list[StopLine], *, metrics_file: str | None) -> None:
        """Stop lines read, in file order. A line of another file than the metrics log
        older than the newest metric record is buried already."""
        newest = self._metrics_time
        for line in lines:
            if line.file != metrics_file and _older(line, newest):
                continue
            if line.step is not None:
                self._step = (line.file, line.step)
            if self.current is None or line.rank >= self.current.rank:
                self.current = line
            named = self._step
            if self.current.step is None and named is not None and named[0] == self.current.file:
                self.current = replace(self.current, step=named[1])

    def metrics_read(self, time: float | None, file: str, last_line: int | None) -> None:
        """Metric records were read from `file` (its mtime `time`; `last_line`: the line of
        the newest, when the file is a console log): the stop lines before them are buried."""
        if time is not None:
            self._metrics_time = max(time, self._metrics_time or time)
        current = self.current
        if current is None:
            return
        if current.file == file:
            if last_line is not None and current.line_no < last_line:
                self.current = self._step = None
        elif _older(current, time) or current.time is None:
            self.current = self._step = None


class StopLog:
    """One console file beside the metrics, followed for its stop lines (never for data)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._tail = TailReader(self.path)
        self._scanner = StopScanner(str(self.path))
        #: the file started over at the latest poll (what it said before is gone)
        self.restarted = False

    @property
    def mtime(self) -> float | None:
        return self._tail.mtime

    @property
    def line_no(self) -> int:
        return self._tail.line_no

    def poll(self, max_bytes: int) -> tuple[list[StopLine], bool, bool]:
        """(the stop lines read, more is ready, the file grew); a file that started over
        forgets what it said."""
        chunk = self._tail.poll(max_bytes)
        self.restarted = chunk.restarted is not None
        if self.restarted:
            self._scanner.restart()
        if not chunk.data:
            return [], chunk.more, False
        lines = self._scanner.scan(chunk.data, chunk.first_line_no, chunk.offset)
        # the read's end: a line this close to it is as old as the file's mtime
        end = chunk.offset + len(chunk.data)
        mtime = self._tail.mtime
        dated = [
            replace(line, time=mtime if end - line.offset <= TAIL_BYTES else None) for line in lines
        ]
        return dated, chunk.more, True


#: console files a run folder may hold beside its metrics, by name
CONSOLE_NAMES = ("nohup.out", "logs.log", "output.log")
#: … and by suffix
CONSOLE_SUFFIXES = (".log", ".out", ".err")
#: console files followed per run at most (the newest)
LOGS_FOLLOWED = 4


def console_logs(folders: list[Path], exclude: Path | None) -> list[Path]:
    """The console files beside a run's metrics, newest first: in each folder, files named
    like console text (`*.log`, `*.out`, `*.err`, `nohup.out`), and W&B's copy of the
    console (`files/output.log`) of the newest `wandb/run-*`, or of the W&B run folder
    itself; `exclude` (the metrics log itself, read already) left out. At most
    LOGS_FOLLOWED."""
    found: dict[Path, float] = {}
    for folder in dict.fromkeys(folders):
        entries, _ = scan(folder)
        for entry in entries:
            name = entry.name
            if (name in CONSOLE_NAMES or name.endswith(CONSOLE_SUFFIXES)) and entry_is_file(entry):
                found[Path(entry.path)] = entry_mtime(entry)
            elif name == "wandb" and entry_is_dir(entry):
                found.update(_wandb_console(Path(entry.path)))
            elif name == "files" and entry_is_dir(entry):
                # a W&B run folder itself (its `run-<id>.wandb` followed): its console
                found.update(_named(Path(entry.path) / "output.log"))
    if exclude is not None:
        found.pop(Path(exclude), None)
    return sorted(found, key=lambda path: -found[path])[:LOGS_FOLLOWED]


def _wandb_console(folder: Path) -> dict[Path, float]:
    """The newest W&B run's `files/output.log` under a `wandb/` folder."""
    entries, _ = scan(folder)
    runs = [e for e in entries if e.name.startswith(("run-", "offline-run-")) and entry_is_dir(e)]
    if not runs:
        return {}
    newest = max(runs, key=lambda entry: (entry_mtime(entry), entry.name))
    return _named(Path(newest.path) / "files" / "output.log")


def _named(log: Path) -> dict[Path, float]:
    """{log: its mtime} when it is a regular file, else {}."""
    entries, _ = scan(log.parent)
    found = next((e for e in entries if e.name == log.name and entry_is_file(e)), None)
    return {} if found is None else {log: entry_mtime(found)}
