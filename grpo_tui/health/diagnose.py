"""The diagnosis: is this GRPO run learning? Scenarios, checklist and per-metric health.

`diagnose(run, rules)` reads the run's metric store (recent windows only, so it stays cheap
on a million rows), its context (args) and, when a completions file was read, the sample
statistics, and returns a `Diagnosis`: the scenarios of HEALTH.md that hold (worst first,
each with the evidence that fired and advice), the 8-question checklist, and a zone /
trend per metric. `zone_of_values` and `zone_bands` give the same zones to the UI.

Reading order, one module each: `verdict` (public types, number formatting), `zones`
(zones for the UI), `facts` (the per-metric facts, the reward functions, the samples),
`scenarios` (one builder per scenario), `checklist`, then `diagnose` here. This module
re-exports the public names, so `from grpo_tui.health.diagnose import ...` keeps working.
"""

from __future__ import annotations

from grpo_tui.health.checklist import QUESTIONS, checklist
from grpo_tui.health.facts import Facts, reward_role
from grpo_tui.health.rules import Rules
from grpo_tui.health.scenarios import (
    ADVICE_ALL_FAIL,
    ADVICE_HEALTHY,
    ADVICE_LENGTH_COLLAPSE,
    ADVICE_LOW_DIVERSITY,
    ADVICE_NOT_LEARNING,
    ADVICE_REWARD_HACKING,
    ADVICE_SATURATED,
    ADVICE_TOO_AGGRESSIVE,
    ADVICE_TRUNCATION,
    ADVICE_WARMING_UP,
    BUILDERS,
    ScenarioFacts,
    healthy,
)
from grpo_tui.health.verdict import (
    CheckItem,
    Diagnosis,
    Evidence,
    MetricHealth,
    Scenario,
    Window,
)
from grpo_tui.health.zones import zone_bands, zone_of_values
from grpo_tui.run.live import Run
from grpo_tui.vocabulary import Answer, ScenarioId, Severity, Status

__all__ = [
    "ADVICE_ALL_FAIL",
    "ADVICE_HEALTHY",
    "ADVICE_LENGTH_COLLAPSE",
    "ADVICE_LOW_DIVERSITY",
    "ADVICE_NOT_LEARNING",
    "ADVICE_REWARD_HACKING",
    "ADVICE_SATURATED",
    "ADVICE_TOO_AGGRESSIVE",
    "ADVICE_TRUNCATION",
    "ADVICE_WARMING_UP",
    "QUESTIONS",
    "CheckItem",
    "Diagnosis",
    "Evidence",
    "MetricHealth",
    "Scenario",
    "Window",
    "diagnose",
    "reward_role",
    "zone_bands",
    "zone_of_values",
]


# -- the diagnosis ---------------------------------------------------------------------


def _metric_health(facts: Facts) -> dict[str, MetricHealth]:
    metrics: dict[str, MetricHealth] = {}
    for name, series in facts.all_series().items():
        if series is None:
            continue
        last = series.last
        metrics[name] = MetricHealth(series.zone, last, series.trend.direction, series.reason)
    return metrics


def diagnose(run: Run, rules: Rules) -> Diagnosis:
    """Judge a run: scenarios (worst first), the checklist and per-metric health."""
    facts = ScenarioFacts(run, rules)
    if len(run.store) == 0:
        unanswered = [
            CheckItem(i + 1, q, Answer.UNKNOWN, "nothing readable yet")
            for i, q in enumerate(QUESTIONS)
        ]
        return Diagnosis(Status.UNKNOWN, [], unanswered, {})
    found = [builder(facts) for builder in BUILDERS]
    found.append(facts.saturated)
    scenarios = [s for s in found if s is not None]
    healthy_scenario = healthy(facts, scenarios)
    if healthy_scenario is not None:
        scenarios.append(healthy_scenario)
    scenarios.sort(key=lambda s: (s.severity.rank, s.id.rank))
    severities = {s.severity for s in scenarios}
    if Severity.PROBLEM in severities:
        status = Status.PROBLEM
    elif Severity.CAUTION in severities:
        status = Status.CAUTION
    elif any(s.id in (ScenarioId.HEALTHY, ScenarioId.SATURATED) for s in scenarios):
        status = Status.HEALTHY
    else:
        status = Status.UNKNOWN
    return Diagnosis(status, scenarios, checklist(facts), _metric_health(facts))
