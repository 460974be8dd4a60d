"""The verdict: the public result types of a diagnosis and how evidence numbers read.

`Diagnosis` is what `diagnose` returns (what `check` prints and the diagnosis panel shows):
the scenarios that hold (`Scenario`, each with its `Evidence` over a `Window`), the
checklist (`CheckItem`) and a `MetricHealth` per metric. The formatting helpers turn the
numbers behind a verdict into evidence text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from grpo_tui.numbers import format_step
from grpo_tui.vocabulary import Answer, Direction, LearningState, ScenarioId, Severity, Status, Zone

if TYPE_CHECKING:
    from grpo_tui.health.checkpoints import CheckpointAdvice

# -- public result types -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    """The points a verdict was judged on."""

    first_step: float | None
    last_step: float | None
    points: int

    @property
    def span(self) -> str:
        """The steps in words: steps a–b (or step a)."""
        if self.first_step is None or self.last_step is None:
            return "no steps"
        if self.first_step == self.last_step:
            return f"step {format_step(self.first_step)}"
        return f"steps {format_step(self.first_step)}–{format_step(self.last_step)}"

    def share(self, fraction: float) -> str:
        """A fraction of the window's points in words: k/n points (steps a–b)."""
        return f"{round(fraction * self.points)}/{self.points} points ({self.span})"

    def __str__(self) -> str:
        if self.points == 0 or self.first_step is None:
            return "no points"
        return f"{self.span}, {self.points} point{'s' if self.points != 1 else ''}"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One fact behind a verdict: which metric, over which window, the numbers, in words."""

    metric: str
    window: Window
    numbers: dict[str, float | None]
    text: str
    detail: str = ""
    """How the numbers were read (windows, medians, noise): `check --verbose` shows it,
    the headline text leaves it out."""
    word: str = ""
    """For a metric's course: its word ("rising", "rose, not yet beyond noise"), the one
    every surface quotes beside the course's two numbers."""


@dataclass(slots=True)
class Scenario:
    """A named situation (docs/health.md, "The verdicts") that holds for the run."""

    id: ScenarioId
    title: str
    severity: Severity
    onset_step: float | None
    """First step at which it held (the start of the latest stretch), None when unknown."""
    evidence: list[Evidence]
    advice: list[str]
    immediate: bool = False
    """Its evidence cannot be noise (a NaN loss): it is shown at once, not after holding."""
    findings: int | None = None
    """How many of the first `evidence` items are what it found (the rest support it:
    a course, a fact that explains); None: not said."""
    held_since: float | None = None
    """Shown, held, while its evidence no longer holds: the step from which it did not
    (the steady tracker keeps a verdict a judging window after its evidence is gone)."""

    @property
    def found(self) -> list[Evidence]:
        """The evidence it rests on, without the supporting facts."""
        return self.evidence if self.findings is None else self.evidence[: self.findings]


@dataclass(frozen=True, slots=True)
class CheckItem:
    """One checklist question with its answer (yes / no / unknown) and the evidence."""

    id: int
    question: str
    answer: Answer
    evidence: str


@dataclass(frozen=True, slots=True)
class MetricHealth:
    """What the reading says of one metric, for every surface that shows it: its zone on
    its recent window and why, its level there, its whole-run course (word, numbers, arrow)
    and its recent trend, with the windows named."""

    zone: Zone
    last: float | None
    #: the recent trend: the direction over the latest third of the points (`recent`)
    trend: Direction
    reason: str
    points: int = 0
    """How many latest points the zone was judged on."""
    level: float | None = None
    """The recent level the verdicts quote: the median of the latest quarter of the zone's
    window (the grid's number)."""
    #: the whole run's course: its arrow (the grid's), its word and its numbers
    course: Direction = Direction.UNKNOWN
    course_word: str = ""
    course_text: str = ""
    #: the course's two levels (the means of its first and last third), as `course_text` says them
    course_start: float | None = None
    course_end: float | None = None
    #: the window the recent trend was read on
    recent: Window | None = None


@dataclass(frozen=True, slots=True)
class Note:
    """A fact worth saying that is not a verdict on the run: a dead reward function, an
    isolated spike, a cap inferred from the lengths, an early warning."""

    severity: Severity
    metric: str
    text: str
    step: float | None = None
    #: the note in a few words, for the verdict line when the note is what makes the
    #: status a caution ("" : the text up to its first aside)
    short: str = ""


@dataclass(frozen=True, slots=True)
class Span:
    """A verdict that held from one step to another (`end` None: it still holds)."""

    id: ScenarioId
    severity: Severity
    start: float
    end: float | None


@dataclass(slots=True)
class Diagnosis:
    """Everything `diagnose` found: what `check` prints and the diagnosis panel shows."""

    status: Status
    scenarios: list[Scenario]
    """Worst first."""
    checklist: list[CheckItem]
    metrics: dict[str, MetricHealth]
    notes: list[Note] = field(default_factory=list)
    """Facts that are not verdicts (worst first)."""
    history: list[Span] = field(default_factory=list)
    """Which verdict held from which step to which, oldest first (steady verdicts only)."""
    step: float | None = None
    """The step the diagnosis judged the run at (its newest row)."""
    ended: bool = False
    """The run was over when judged: a warm-up then is "too short to judge", for good."""
    window_span: float = 0.0
    """Steps the judging window spanned at this moment (the reward's, else the train
    rows'): a verdict shown leaves once its evidence has been gone that long."""
    state: LearningState = LearningState.TOO_EARLY
    """The run's one state (the state block among `scenarios` in a word)."""
    findings: Any = field(default=None, compare=False, repr=False)
    """The moment's health.findings.Findings, for what is decided once the steady verdicts
    are known (None once finished, and for a moment judged for its verdicts only)."""
    lead: ScenarioId | None = field(default=None, compare=False)
    """The block the headline led with before: among blocks of the worst severity it keeps
    the lead (a finding escalating beside the state does not swap the headline)."""
    checkpoints: CheckpointAdvice | None = field(default=None, compare=False, repr=False)
    """Which checkpoint to go back to and which to keep (health/checkpoints.py), filled
    once the steady diagnosis of a whole run is known (None for a moment of a replay)."""

    def scenario(self, scenario_id: ScenarioId) -> Scenario | None:
        return next((s for s in self.scenarios if s.id is scenario_id), None)

    @property
    def state_block(self) -> Scenario | None:
        """The scenario that is the run's state (None before any data)."""
        return next((s for s in self.scenarios if s.id.is_state), None)

    @property
    def verdicts(self) -> list[Scenario]:
        """The scenarios that are verdicts (`check --json`'s scenarios): all but the state
        blocks that say "too early to say" or "learning, with a warning beside it"."""
        return [s for s in self.scenarios if s.id.is_verdict]

    @property
    def ids(self) -> list[str]:
        """The verdicts' ids as words (what JSON and the labels use), worst first."""
        return [s.id.word for s in self.verdicts]


# -- number formatting (evidence text) -----------------------------------------------


def num(value: float | None) -> str:
    """A number for evidence text: 3 significant digits, no exponent for common sizes."""
    if value is None or not math.isfinite(value):
        return "NaN" if value is not None and math.isnan(value) else str(value)
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1e5 or magnitude < 1e-3:
        return f"{value:.2e}"
    if magnitude >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


def pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def finite_or_none(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


#: the blocks that say no verdict yet: shown after any verdict
NO_VERDICT = frozenset({ScenarioId.WARMING_UP, ScenarioId.TOO_EARLY})


def block_order(
    scenario: Scenario, lead: ScenarioId | None = None
) -> tuple[bool, int, bool, bool, int]:
    """The order of the blocks on every surface (the headline leads with the first): any
    verdict before "too early to say"; worst first; among equal severities the block that
    led before (`lead`), then the state before its findings (the story, then what is seen
    beside it), then the mechanism first (ScenarioId's order)."""
    return (
        scenario.id in NO_VERDICT,
        scenario.severity.rank,
        scenario.id is not lead,
        not scenario.id.is_state,
        scenario.id.rank,
    )


def status_of(scenarios: list[Scenario], notes: list[Note]) -> Status:
    """Problem if any scenario is one; caution if any scenario or note warns; healthy when
    the run is healthy or in a calm late stage; no verdict otherwise."""
    severities = {s.severity for s in scenarios}
    if Severity.PROBLEM in severities:
        return Status.PROBLEM
    if Severity.CAUTION in severities or any(n.severity is Severity.CAUTION for n in notes):
        return Status.CAUTION
    if any(
        s.id in (ScenarioId.HEALTHY, ScenarioId.SATURATED, ScenarioId.LEARNING) for s in scenarios
    ):
        return Status.HEALTHY
    return Status.UNKNOWN


#: a fact's numbers as the evidence words quote them: "0.224 at steps 0–340"
_QUOTED = re.compile(r"-?[\d.]+(?:e[-+]?\d+)? at steps? [\d.]+(?:–[\d.]+)?")


def says_nothing_new(text: str, before: list[str]) -> bool:
    """Every level `text` quotes is already quoted in `before` (a course said twice in one
    verdict is noise on the screen): numbers once."""
    quoted = _QUOTED.findall(text)
    return bool(quoted) and all(any(q in earlier for earlier in before) for q in quoted)


def value_range(low: float, high: float) -> str:
    """A range of values in words: "0–1", but "-0.0606 to -0.01" (a dash between negative
    numbers reads as a minus sign)."""
    joint = " to " if low < 0 or high < 0 else "–"
    return f"{num(low)}{joint}{num(high)}"
