"""The words grpo-tui judges and reports with, each an enum with its word and its glyph.

Zones, severities, checklist answers, statuses, trend directions, scenario ids, line kinds
and run states. Core judges in these types, and every view shows them the same way:
`word` is what JSON and `check` print (the strings they always printed), `glyph` what the
TUI and `check` draw so nothing depends on colour. Nothing here imports another module
of the package: every layer may use it.
"""

from __future__ import annotations

import enum


class Worded(enum.Enum):
    """An enum whose value is its word (what JSON and `check` print)."""

    @property
    def word(self) -> str:
        return str(self.value)


class Zone(enum.IntEnum):
    """A metric's health on a window, or of one value. The int is the code zone arrays hold
    (one per sparkline bucket)."""

    UNKNOWN = 0
    HEALTHY = 1
    CAUTION = 2
    BAD = 3
    #: not applicable: the metric has no bands, or the run's context makes them meaningless
    NA = 4

    @property
    def word(self) -> str:
        return _ZONE_FACES[self][0]

    @property
    def glyph(self) -> str:
        return _ZONE_FACES[self][1]

    @property
    def badness(self) -> int:
        """0 for zones that say nothing (unknown, n/a), then healthy 1, caution 2, bad 3."""
        return 0 if self in (Zone.UNKNOWN, Zone.NA) else int(self)

    @property
    def judged(self) -> bool:
        """Healthy, caution or bad: the metric's value said something."""
        return self in (Zone.HEALTHY, Zone.CAUTION, Zone.BAD)

    @property
    def warns(self) -> bool:
        """Caution or bad."""
        return self in (Zone.CAUTION, Zone.BAD)


#: each zone's (word, glyph)
_ZONE_FACES = {
    Zone.UNKNOWN: ("unknown", "?"),
    Zone.HEALTHY: ("healthy", "✓"),
    Zone.CAUTION: ("caution", "!"),
    Zone.BAD: ("bad", "✗"),
    Zone.NA: ("n/a", "·"),
}


class _Zoned(Worded):
    """A word drawn in a zone's colour, with that zone's glyph."""

    @property
    def zone(self) -> Zone:
        return _ZONES[self]

    @property
    def glyph(self) -> str:
        return self.zone.glyph


class Severity(_Zoned):
    """How much a scenario matters, worst first."""

    PROBLEM = "problem"
    CAUTION = "caution"
    INFO = "info"
    OK = "ok"

    @property
    def rank(self) -> int:
        """0 for the worst: sort by it to list the worst first."""
        return list(Severity).index(self)  # the members are listed worst first

    @property
    def warns(self) -> bool:
        return self in (Severity.PROBLEM, Severity.CAUTION)


class Answer(_Zoned):
    """A checklist answer."""

    YES = "yes"
    NO = "no"
    #: the metric is in its caution zone: the answer the grid's "!" gives it too
    CAUTION = "caution"
    UNKNOWN = "unknown"


class Status(_Zoned):
    """The whole run's verdict."""

    HEALTHY = "healthy"
    CAUTION = "caution"
    PROBLEM = "problem"
    #: too little to judge (nothing read, or no scenario holds)
    UNKNOWN = "unknown"

    @property
    def headline(self) -> str:
        """The status in capitals, as the panel and `check` show it."""
        return "NO VERDICT YET" if self is Status.UNKNOWN else self.value.upper()


#: the zone whose colour each severity, answer and status is drawn in
_ZONES: dict[_Zoned, Zone] = {
    Severity.PROBLEM: Zone.BAD,
    Severity.CAUTION: Zone.CAUTION,
    Severity.INFO: Zone.NA,
    Severity.OK: Zone.HEALTHY,
    Answer.YES: Zone.HEALTHY,
    Answer.NO: Zone.BAD,
    Answer.CAUTION: Zone.CAUTION,
    Answer.UNKNOWN: Zone.UNKNOWN,
    Status.HEALTHY: Zone.HEALTHY,
    Status.CAUTION: Zone.CAUTION,
    Status.PROBLEM: Zone.BAD,
    Status.UNKNOWN: Zone.UNKNOWN,
}


class Direction(Worded):
    """Where a metric is going over its trend window."""

    RISING = "rising"
    FLAT = "flat"
    FALLING = "falling"
    EXPLODING = "exploding"
    #: it moved, but not beyond its noise: no course to name yet
    UNCLEAR = "unclear"
    UNKNOWN = "unknown"

    @property
    def glyph(self) -> str:
        return _DIRECTION_GLYPHS[self]

    @property
    def up(self) -> bool:
        """Rising or exploding."""
        return self in (Direction.RISING, Direction.EXPLODING)

    @property
    def known(self) -> bool:
        return self is not Direction.UNKNOWN


_DIRECTION_GLYPHS = {
    Direction.RISING: "↗",
    Direction.FLAT: "→",
    Direction.FALLING: "↘",
    Direction.EXPLODING: "⇈",
    Direction.UNCLEAR: "~",
    Direction.UNKNOWN: " ",
}


class ScenarioId(Worded):
    """The situations the diagnosis names (docs/health.md, "The verdicts"; the value is the id in JSON)."""

    # in headline order among equal severities: a blow-up first (the worst), then the
    # causes, then "not learning", which most of them also produce (the symptom)
    TOO_AGGRESSIVE = "too_aggressive"
    LENGTH_COLLAPSE = "length_collapse"
    REWARD_HACKING = "reward_hacking"
    TRUNCATION = "truncation"
    LOW_DIVERSITY = "low_diversity"
    #: the sampler's policy and the trainer's apart (stale rollouts, a mismatched engine)
    OFF_POLICY = "off_policy"
    NOT_LEARNING = "not_learning"
    SATURATED = "saturated"
    #: a signal in its bad band (or KL in its caution band) that no verdict takes up
    WATCH = "watch"
    WARMING_UP = "warming_up"
    #: past warm-up, and no course clear enough for a state yet (what would decide it)
    TOO_EARLY = "too_early"
    #: learning, with a finding beside it that warns (else it is HEALTHY)
    LEARNING = "learning"
    HEALTHY = "healthy"

    @property
    def title(self) -> str:
        return _SCENARIO_TITLES[self]

    @property
    def rank(self) -> int:
        """Order among scenarios of equal severity (the order above)."""
        return list(ScenarioId).index(self)

    @property
    def is_state(self) -> bool:
        """One of the run's states (docs/health.md, "One run, one story"): exactly one holds at a
        time. The others (truncation, length collapse, low diversity, off-policy drift) are
        findings beside it."""
        return self not in _FINDINGS

    @property
    def is_verdict(self) -> bool:
        """Named in `check --json`'s scenarios (the blocks that say no verdict yet, or
        learning with a warning beside it, are the `state` alone)."""
        return self not in (ScenarioId.TOO_EARLY, ScenarioId.LEARNING)


_FINDINGS = frozenset(
    {
        ScenarioId.TRUNCATION,
        ScenarioId.LENGTH_COLLAPSE,
        ScenarioId.LOW_DIVERSITY,
        ScenarioId.OFF_POLICY,
        ScenarioId.WATCH,
    }
)


class LearningState(Worded):
    """Where the run is as a learner: exactly one at a time (docs/health.md, "One run, one story").
    The value is the word `check --json` gives as `state`."""

    TOO_EARLY = "too early"
    LEARNING = "learning"
    NOT_LEARNING = "not learning"
    UNSTABLE = "unstable"
    POSSIBLE_REWARD_HACKING = "possible reward hacking"
    REWARD_HACKING = "reward hacking"
    CONVERGED = "converged"
    TOO_SHORT = "too short to judge"
    NO_REWARD = "no reward logged"


#: the warming-up scenario's title once the run has ended with too few points for a verdict
ENDED_TOO_SHORT = "Too short to judge"

_SCENARIO_TITLES = {
    ScenarioId.NOT_LEARNING: "Not learning",
    ScenarioId.TOO_AGGRESSIVE: "Too aggressive / unstable",
    ScenarioId.REWARD_HACKING: "Reward hacking",
    ScenarioId.TRUNCATION: "Truncation",
    ScenarioId.LENGTH_COLLAPSE: "Length collapse",
    ScenarioId.LOW_DIVERSITY: "Low diversity",
    ScenarioId.OFF_POLICY: "Off-policy drift",
    ScenarioId.SATURATED: "Saturated (late stage)",
    ScenarioId.WATCH: "Watch",
    ScenarioId.WARMING_UP: "Warming up",
    ScenarioId.TOO_EARLY: "Too early to say",
    ScenarioId.LEARNING: "Learning",
    ScenarioId.HEALTHY: "Healthy",
}


class LineKind(enum.IntEnum):
    """What a log line is. The value is stored per row in the metric store."""

    TRAIN = 0
    EVAL = 1
    END = 2  # end-of-train line (`train_runtime`)
    SUMMARY = 3  # final summary (`log_history`): marks the run finished, not a metric row

    @property
    def word(self) -> str:
        return self.name.lower()


class RunState(Worded):
    """Is the run reading its history, live, stalled, finished, or not there yet?"""

    #: something is there but cannot be read (permission denied, a FIFO, ...)
    UNREADABLE = "unreadable"
    WAITING = "waiting"
    #: the log's history is still being read: the step shown is not the run's yet
    READING = "reading"
    LIVE = "live"
    STALLED = "stalled"
    #: its console log says it ended by a failure or a kill (an out-of-memory error, a
    #: traceback, a signal): the cause is said with it (run/state.py)
    STOPPED = "stopped"
    FINISHED = "finished"


class StopKind(Worded):
    """How a line of a run's console log says the run ended (sources/stop_lines.py)."""

    #: an error ended it: a traceback, out of memory, a collective timeout, a dead actor
    FAILED = "failed"
    #: something outside ended it: a signal, the kernel's OOM killer, a scheduler
    KILLED = "killed"
    #: it ran to its end ("Training completed", HF's train_runtime line)
    COMPLETED = "completed"
