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

from grpo_tui.numbers import format_step
from grpo_tui.vocabulary import Answer, Direction, ScenarioId, Severity, Status, Zone

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


@dataclass(slots=True)
class Scenario:
    """A named situation of HEALTH.md that holds for the run."""

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
    """A metric's zone on its recent window, latest value, trend and why."""

    zone: Zone
    last: float | None
    trend: Direction
    reason: str
    points: int = 0
    """How many latest points the zone and the trend were judged on (the trend is of
    this recent window, not of the whole run: the checklist reads the whole course)."""


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

    def scenario(self, scenario_id: ScenarioId) -> Scenario | None:
        return next((s for s in self.scenarios if s.id is scenario_id), None)

    @property
    def ids(self) -> list[str]:
        """The scenario ids as words (what JSON and the labels use), worst first."""
        return [s.id.word for s in self.scenarios]


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


def status_of(scenarios: list[Scenario], notes: list[Note]) -> Status:
    """Problem if any scenario is one; caution if any scenario or note warns; healthy when
    the run is healthy or in a calm late stage; no verdict otherwise."""
    severities = {s.severity for s in scenarios}
    if Severity.PROBLEM in severities:
        return Status.PROBLEM
    if Severity.CAUTION in severities or any(n.severity is Severity.CAUTION for n in notes):
        return Status.CAUTION
    if any(s.id in (ScenarioId.HEALTHY, ScenarioId.SATURATED) for s in scenarios):
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
