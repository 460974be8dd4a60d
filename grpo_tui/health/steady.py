"""Steady verdicts: hysteresis over successive diagnoses of a growing run, and its history.

A monitor whose headline changes with noise gets closed. The raw diagnosis of each moment
(diagnose_snapshot) is fed to a `VerdictTracker` with the step it judged:

- a verdict enters once the raw diagnosis has named it at `enter_points` logged steps in a
  row, and leaves once it has been absent at `leave_points` steps in a row; meanwhile it
  keeps its last evidence and severity (re-judging the same step counts once);
- its onset is the step its evidence began (from the data), else when its streak began;
- "warming up" passes straight through: too few points, no verdict;
- each verdict that entered is kept as a span (from, to) in the history.

`replay` feeds a whole run's history at up to `replay_points` steps (every logged step of a
shorter run): how `check` judges a run the way the live panel did, and how the panel starts
on a run whose history is already long.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from grpo_tui.health.rules import Rules
from grpo_tui.health.series import RunSnapshot
from grpo_tui.health.verdict import Diagnosis, Scenario, Span, status_of
from grpo_tui.vocabulary import ScenarioId


@dataclass
class _Track:
    """One verdict's state in the tracker."""

    present: int = 0
    absent: int = 0
    streak_start: float = math.nan
    absent_since: float = math.nan
    last: Scenario | None = None
    span: int | None = None  # index in the history while shown (None: not shown)


class VerdictTracker:
    """Raw diagnoses in, steady ones out (see the module doc)."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.history: list[Span] = []
        self._tracks: dict[ScenarioId, _Track] = {}
        self._last_step = -math.inf
        self._first_step = math.nan

    def feed(self, raw: Diagnosis, step: float | None) -> Diagnosis:
        """The steady diagnosis after this raw one (judged at `step`)."""
        at = -math.inf if step is None or not math.isfinite(step) else float(step)
        new_step = at > self._last_step
        if new_step:
            self._last_step = at
            if math.isnan(self._first_step) and math.isfinite(at):
                self._first_step = at
        if any(s.id is ScenarioId.WARMING_UP for s in raw.scenarios):
            return replace(raw, history=self.timeline)
        named = {s.id: s for s in raw.scenarios}
        # in a fixed order: verdicts that begin at the same step keep one order in the history
        for scenario_id in sorted(named.keys() | self._tracks.keys(), key=lambda s: s.rank):
            track = self._tracks.setdefault(scenario_id, _Track())
            scenario = named.get(scenario_id)
            if scenario is not None:
                self._seen(track, scenario, at, new_step)
            elif new_step:
                self._missed(track, scenario_id, at)
        # a verdict shown says since when it holds: the start of its span in the history
        scenarios = [
            replace(t.last, onset_step=self.history[t.span].start)
            for t in self._tracks.values()
            if t.span is not None and t.last is not None
        ]
        scenarios.sort(key=lambda s: (s.severity.rank, s.id.rank))
        return replace(
            raw,
            scenarios=scenarios,
            status=status_of(scenarios, raw.notes),
            history=self.timeline,
        )

    @property
    def timeline(self) -> list[Span]:
        """The history in the order the verdicts began (a verdict that entered late may
        have begun, in the data, before one that entered earlier)."""
        return sorted(self.history, key=lambda span: span.start)

    def _run_so_far(self, step: float) -> float:
        return step - self._first_step if math.isfinite(self._first_step) else 0.0

    def _seen(self, track: _Track, scenario: Scenario, step: float, new_step: bool) -> None:
        if new_step:
            if track.present == 0:
                track.streak_start = step
            track.present += 1
            track.absent = 0
        track.last = scenario
        rules = self.rules.steady
        lasted = step - track.streak_start >= rules.enter_fraction * self._run_so_far(step)
        if track.span is None and (
            scenario.immediate or (track.present >= rules.enter_points and lasted)
        ):
            onset = scenario.onset_step if scenario.onset_step is not None else track.streak_start
            # back again, with evidence that began before its last span ended: it never
            # really cleared, so that span goes on (the spans of one verdict never overlap)
            previous = max(
                (i for i, span in enumerate(self.history) if span.id is scenario.id),
                default=None,
            )
            last_end = self.history[previous].end if previous is not None else None
            if previous is not None and last_end is not None and onset <= last_end:
                track.span = previous
                self.history[previous] = replace(self.history[previous], end=None)
            else:
                track.span = len(self.history)
                self.history.append(Span(scenario.id, scenario.severity, onset, None))
        elif track.span is not None:
            held = self.history[track.span]
            if scenario.severity.rank < held.severity.rank:
                self.history[track.span] = replace(held, severity=scenario.severity)

    def _missed(self, track: _Track, scenario_id: ScenarioId, step: float) -> None:
        if track.absent == 0:
            track.absent_since = step
        track.present = 0
        track.absent += 1
        rules = self.rules.steady
        cleared = step - track.absent_since >= rules.leave_fraction * self._run_so_far(step)
        if track.span is not None and track.absent >= rules.leave_points and cleared:
            self.history[track.span] = replace(self.history[track.span], end=step)
            track.span = None

    @property
    def holding(self) -> frozenset[ScenarioId]:
        """The verdicts shown now (judged with their staying thresholds)."""
        return frozenset(key for key, track in self._tracks.items() if track.span is not None)

    def replay(
        self,
        snap: RunSnapshot,
        judge: Callable[[RunSnapshot, frozenset[ScenarioId], bool], Diagnosis],
        steps: list[float],
    ) -> Diagnosis:
        """Feed the run as it was at each of `steps` not judged yet (verdicts only), then
        as it is (in full); the last steady diagnosis. A tracker that judged part of the
        run already goes on from there: the moments a burst of lines brought at once are
        judged as a whole run's replay judges them."""
        for step in steps:
            if step > self._last_step:
                self.feed(judge(snap.upto(step), self.holding, False), step)
        return self.feed(judge(snap, self.holding, True), snap.step)


def replay_steps(snap: RunSnapshot, rules: Rules) -> list[float]:
    """The train steps a run is replayed at: every one of a short run, else
    `replay_points` evenly spread (the last step is judged on the whole snapshot)."""
    steps = np.unique(snap.train_steps)[:-1]
    limit = rules.steady.replay_points
    if steps.size > limit:
        steps = steps[np.linspace(0, steps.size - 1, limit).round().astype(int)]
    return [float(s) for s in np.unique(steps)]


def staying_rules(rules: Rules) -> Rules:
    """The thresholds a verdict that holds is judged with: the sustained share lowered,
    the positions eased (see SteadyRules)."""
    steady = rules.steady
    margin = steady.stay_margin
    return replace(
        rules,
        window=replace(rules.window, sustained=min(rules.window.sustained, steady.stay_sustained)),
        trend=replace(
            rules.trend,
            plateau_multiple=min(rules.trend.plateau_multiple, steady.stay_plateau_multiple),
        ),
        rewards=replace(
            rules.rewards,
            saturation_position=rules.rewards.saturation_position - margin,
            top_position=rules.rewards.top_position - margin,
            floor_position=rules.rewards.floor_position + margin,
        ),
        length=replace(
            rules.length,
            collapse_caution_drop=max(0.0, rules.length.collapse_caution_drop - margin),
            collapse_bad_drop=max(0.0, rules.length.collapse_bad_drop - margin),
        ),
        samples=replace(
            rules.samples,
            overlap_caution=rules.samples.overlap_caution - margin,
            overlap_bad=rules.samples.overlap_bad - margin,
            # the samples' changes since the early ones too (half the margin: they are
            # differences of two means, not positions)
            diversity_drop=max(0.0, rules.samples.diversity_drop - margin / 2),
            format_drop=max(0.0, rules.samples.format_drop - margin / 2),
        ),
    )
