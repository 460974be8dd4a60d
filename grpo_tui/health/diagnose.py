"""The diagnosis: is this GRPO run learning? Scenarios, checklist, per-metric health, notes.

`diagnose_snapshot(snap, rules)` judges one moment of a run (a `RunSnapshot`): the
findings (health/findings.py, from the per-metric judges), the scenario rules
(health/scenarios.py), the checklist and the notes. A run with too little data is
"warming up": whatever the rules found is shown as early warnings, never as a problem.

`diagnose(run, rules)` judges a whole run the way the live panel does: the snapshot is
replayed at steps spread over the run and fed to the steady tracker (health/steady.py),
so a verdict enters once its evidence has held and the answer carries its history.
`check` prints this; the panel shows the same tracker fed live.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from grpo_tui.health.advice import Advice, pick
from grpo_tui.health.building import course as course_evidence
from grpo_tui.health.checklist import QUESTIONS, checklist
from grpo_tui.health.checkpoints import advise, resume_advice
from grpo_tui.health.findings import BANDED, Findings, find
from grpo_tui.health.learning import aux_only_rise, too_early_to_say
from grpo_tui.health.rewards import function_note
from grpo_tui.health.rules import Rules
from grpo_tui.health.scenarios import RULES, healthy, watch
from grpo_tui.health.series import RunSnapshot, snapshot
from grpo_tui.health.steady import VerdictTracker, replay_steps, staying_rules
from grpo_tui.health.verdict import (
    CheckItem,
    Diagnosis,
    Evidence,
    MetricHealth,
    Note,
    Scenario,
    Window,
    block_order,
    finite_or_none,
    says_nothing_new,
    status_of,
)
from grpo_tui.health.zones import zone_of_values
from grpo_tui.run.live import Run
from grpo_tui.vocabulary import (
    ENDED_TOO_SHORT,
    Answer,
    Direction,
    LearningState,
    ScenarioId,
    Severity,
    Status,
)

__all__ = [
    "Diagnosis",
    "Evidence",
    "LiveJudge",
    "MetricHealth",
    "diagnose",
    "diagnose_snapshot",
    "zone_of_values",
]


def diagnose(run: Run, rules: Rules) -> Diagnosis:
    """The whole run judged the way the live panel judges it (replayed, steady)."""
    return _with_checkpoints(run, _replay(VerdictTracker(rules), snapshot(run), rules))


def _with_checkpoints(run: Run, steady: Diagnosis) -> Diagnosis:
    """The steady diagnosis with the checkpoint answers it implies (health/checkpoints.py),
    and its "resume from a checkpoint" advice saying the checkpoint those answers name."""
    answer = advise(run, steady)
    scenarios = [
        replace(s, advice=[resume_advice(line, s, answer) for line in s.advice])
        for s in steady.scenarios
    ]
    return replace(steady, scenarios=scenarios, checkpoints=answer)


def _replay(tracker: VerdictTracker, snap: RunSnapshot, rules: Rules) -> Diagnosis:
    """The steady diagnosis once `tracker` has judged the moments of `snap` it had not."""
    return tracker.replay(
        snap,
        lambda moment, held, full: diagnose_snapshot(moment, rules, held, full=full),
        replay_steps(snap, rules),
        finish,
    )


class LiveJudge:
    """Judges a run that goes on, the way `diagnose` judges a whole one: the first call
    replays the history read so far (so a monitor opened on a long run starts steady),
    each later call judges the newest moment and feeds the same tracker."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.reset()

    def reset(self) -> None:
        """The run's history changed under it (a restarted log, re-logged steps): start over."""
        self._tracker = VerdictTracker(self.rules)
        self._started = False

    def judge(self, run: Run) -> Diagnosis:
        snap = snapshot(run)
        if not self._started:
            if not snap.train_steps.size:
                # nothing read yet (the app judges once the files are found): the replay
                # waits for the first data, or it would start from an empty history
                return diagnose_snapshot(snap, self.rules)
            self._started = True
        # the history at first, later the replay moments the new lines passed (one, or none,
        # for a line at a time; many when a buffered console dumps a burst)
        return _with_checkpoints(run, _replay(self._tracker, snap, self.rules))


def diagnose_snapshot(
    snap: RunSnapshot,
    rules: Rules,
    holding: frozenset[ScenarioId] = frozenset(),
    *,
    full: bool = True,
) -> Diagnosis:
    """One moment of a run judged on its own: every verdict whose evidence holds now (the
    states and the findings, raw), and the "too early to say" block the steady tracker
    shows while no state has held (health/steady.py picks one state and the findings).
    The verdicts in `holding` (those shown now) are judged with their staying thresholds.
    `full` False leaves out the checklist, metric table and notes (a replay's earlier
    moments need only the verdicts)."""
    if not snap.series:
        unanswered = [
            CheckItem(i + 1, q, Answer.UNKNOWN, "nothing readable yet")
            for i, q in enumerate(QUESTIONS)
        ]
        return Diagnosis(Status.UNKNOWN, [], unanswered, {}, step=None)
    f = find(snap, rules)
    staying = find(snap, staying_rules(rules)) if holding else f
    found = _raw(
        [
            scenario
            for scenario_id, rule in RULES
            if (scenario := rule(staying if scenario_id in holding else f)) is not None
        ]
    )
    if (watched := watch(f, found)) is not None:
        found.append(watched)  # in warm-up, an early warning like the others
    if f.warming_up:
        # the early warnings ride along: the steady tracker counts their streaks
        scenarios = [_warming_up(f, found), *found]
    else:
        scenarios = found
        # learning is judged with the run's own thresholds, held or not: the staying ones
        # ease what warns, which would end a held "learning" as easily as keep a warning
        well = healthy(
            f,
            found,
            holding=ScenarioId.HEALTHY in holding,
            after_top=ScenarioId.SATURATED in holding,
        )
        if well is not None:
            scenarios.append(well)
        scenarios.append(_too_early(f))
    scenarios.sort(key=block_order)
    span = _window_span(f)
    if not full:
        return Diagnosis(
            status_of(scenarios, []),
            scenarios,
            [],
            {},
            [],
            step=snap.step,
            ended=snap.ended,
            window_span=span,
        )
    f = _as_shown(f, staying, scenarios, holding)
    return Diagnosis(
        status_of(scenarios, []),
        scenarios,
        checklist(f),
        _metric_health(f),
        _notes(f),
        step=snap.step,
        ended=snap.ended,
        window_span=span,
        findings=f,
    )


def _window_span(f: Findings) -> float:
    """Steps the judging window spans now: the reward's, else the train rows' latest."""
    window = f.reward.window if f.reward is not None else None
    if window is not None and window.first_step is not None and window.last_step is not None:
        return window.last_step - window.first_step
    steps = f.snap.train_steps
    recent = steps[-f.rules.window_size(steps.size) :] if steps.size else steps
    return float(recent[-1] - recent[0]) if recent.size else 0.0


def finish(raw: Diagnosis, steady: Diagnosis) -> Diagnosis:
    """The steady diagnosis as every surface shows it: the state with what its mechanism
    also does now, findings that are its symptom folded into it, courses as the reading
    says them now, the state's word, the status of all of it."""
    f = raw.findings
    scenarios = _unwatched(
        _folded(_with_consequences(steady.scenarios, raw.scenarios), steady.lead)
    )
    if f is not None:
        scenarios = [_current_courses(s, f) for s in scenarios]
    notes = list(steady.notes)
    return replace(
        steady,
        scenarios=scenarios,
        notes=notes,
        status=status_of(scenarios, notes),
        state=state_of(scenarios, ended=steady.ended),
    )


#: states that are a consequence of another: when the other is the state shown, their
#: first evidence is shown inside it (these mechanisms also kill the learning signal)
_CONSEQUENCES = {ScenarioId.NOT_LEARNING: (ScenarioId.TOO_AGGRESSIVE, ScenarioId.REWARD_HACKING)}


def _with_consequences(shown: list[Scenario], raw: list[Scenario]) -> list[Scenario]:
    """The state shown with what its mechanism also does now: a "not learning" judged at
    this moment beside a blow-up or a gamed reward is said inside it ("and so no learning
    signal: …"), never as a second state."""
    state = next((s for s in shown if s.id.is_state), None)
    if state is None:
        return shown
    added: list[Evidence] = []
    for candidate in raw:
        if state.id in _CONSEQUENCES.get(candidate.id, ()):
            first = candidate.evidence[0]
            known = [e.text for e in (*state.evidence, *added)]
            if not says_nothing_new(first.text, known):
                added.append(replace(first, text=f"and so no learning signal: {first.text}"))
    if not added:
        return shown
    grown = replace(state, evidence=[*state.evidence, *added])
    return [grown if s is state else s for s in shown]


def _current_courses(scenario: Scenario, f: Findings) -> Scenario:
    """A block's course evidence as the reading says the course now: a verdict held from an
    earlier moment (or judged with its staying thresholds) quotes the metric's one course,
    the same two numbers and word as every other surface (a rule's own words for what the
    course shows stay before them)."""
    judged = {**f.judged(), **{fn.fn: fn.judgement for fn in f.functions}}
    evidence = []
    for e in scenario.evidence:
        judgement = judged.get(e.metric)
        if e.word and judgement is not None and judgement.shape is not None:
            now = course_evidence(e.metric, judgement)
            head = e.text.split(": ", 1)[0]
            if head != f"{e.metric} {e.word}":  # "shaped_reward (...) rose": the rule's words
                now = replace(now, text=f"{head}: {now.text.split(': ', 1)[1]}")
            e = now
        evidence.append(e)
    return replace(scenario, evidence=evidence)


def state_of(scenarios: list[Scenario], *, ended: bool) -> LearningState:
    """The run's state in a word, from the state block among `scenarios`."""
    block = next((s for s in scenarios if s.id.is_state), None)
    if block is None:
        return LearningState.TOO_SHORT if ended else LearningState.TOO_EARLY
    if block.id is ScenarioId.REWARD_HACKING:
        return (
            LearningState.REWARD_HACKING
            if block.severity is Severity.PROBLEM
            else LearningState.POSSIBLE_REWARD_HACKING
        )
    if block.id is ScenarioId.TOO_EARLY and block.evidence and block.evidence[0].metric == "":
        return LearningState.NO_REWARD
    if block.id in (ScenarioId.TOO_EARLY, ScenarioId.WARMING_UP):
        return LearningState.TOO_SHORT if ended else LearningState.TOO_EARLY
    return _STATES[block.id]


_STATES = {
    ScenarioId.TOO_AGGRESSIVE: LearningState.UNSTABLE,
    ScenarioId.NOT_LEARNING: LearningState.NOT_LEARNING,
    ScenarioId.SATURATED: LearningState.CONVERGED,
    ScenarioId.LEARNING: LearningState.LEARNING,
    ScenarioId.HEALTHY: LearningState.LEARNING,
}


def _too_early(f: Findings) -> Scenario:
    """The state while no other holds: what the reward's course shows so far, and, where
    there is no learning signal yet, what would decide "not learning". A run that ended is
    "too short to judge", never "too early"."""
    ended = f.snap.ended
    reward = f.reward
    if reward is None and f.snap.reading:
        # a claim about the log needs the log read: its history is still coming in
        text = "no reward read yet: the log's history is still being read"
        evidence = [Evidence("reward", Window(None, None, 0), {}, text)]
        return Scenario(ScenarioId.TOO_EARLY, "Reading", Severity.INFO, None, evidence, [])
    if reward is None:
        evidence = [
            Evidence(
                "",
                Window(None, None, 0),
                {},
                "no reward is logged, and the GRPO verdicts rest on it",
            )
        ]
        return Scenario(ScenarioId.TOO_EARLY, "No reward logged", Severity.INFO, None, evidence, [])
    evidence = [course_evidence("reward", reward)]
    title = ENDED_TOO_SHORT if ended else ScenarioId.TOO_EARLY.title
    severity = Severity.INFO
    early = too_early_to_say(f)
    if early is not None:
        # no learning signal now, and the course cannot yet rule a rise in or out: a
        # caution, not "nothing is wrong"
        evidence.insert(0, early)
        severity = Severity.CAUTION
        title = f"Not learning? {title.lower()}"
    advice = pick([(Advice.TRAIN_LONGER if ended else Advice.WAIT_COURSE, "")], f.snap.context)
    return Scenario(ScenarioId.TOO_EARLY, title, severity, None, evidence, advice, findings=1)


#: the Findings field that holds each banded metric's judgement
_FIELDS = {**BANDED, "grad_norm": "grad_norm"}


def _as_shown(
    f: Findings, staying: Findings, shown: list[Scenario], holding: frozenset[ScenarioId]
) -> Findings:
    """One judgement per metric on the screen: a metric a held verdict cites is judged as
    that verdict judges it (with its staying thresholds), so the grid, the checklist and
    the verdict's evidence never disagree about it."""
    if holding and staying is not f:
        cited = {
            e.metric for s in shown if s.id in holding and s.severity.warns for e in s.evidence
        }
        swap = {
            field: getattr(staying, field)
            for metric, field in _FIELDS.items()
            if metric in cited and getattr(staying, field) is not None
        }
        f = replace(f, **swap) if swap else f
        # ...and a metric judged among the others (off-policy drift's, health/offpolicy.py)
        others = {
            name: staying.others[name] for name in cited & f.others.keys() & staying.others.keys()
        }
        f = replace(f, others={**f.others, **others}) if others else f
    length, collapse = f.length, f.collapse
    if length is not None and collapse is not None and collapse.zone.badness > length.zone.badness:
        # a collapse to short outputs is not a normal length, whatever the cap says (the
        # rules judged the cap and the collapse apart; the screen shows one length)
        f = replace(f, length=replace(length, zone=collapse.zone, reason=collapse.text))
    return f


@dataclass(frozen=True, slots=True)
class _Fold:
    """A finding that is the consequence of the state shown: shown inside it, not beside
    it (one mechanism, one verdict; the symptom's advice would treat the symptom)."""

    symptom: ScenarioId
    causes: tuple[ScenarioId, ...]
    #: how the symptom's first evidence reads inside the cause
    words: str
    #: a symptom at PROBLEM stays a verdict of its own (what the user must see first)
    keep_problem: bool = False


_FOLDS = (
    # the gamed form is a template: the completions converge on it
    _Fold(
        ScenarioId.LOW_DIVERSITY, (ScenarioId.REWARD_HACKING,), "and the completions converge on it"
    ),
    # an unstable policy's outputs shorten, and a gamed reward's template is short: part of
    # the instability or the hack (docs/health.md, "One mechanism, one verdict"), not a second finding
    # ...unless they collapsed to a few tokens: that is the loudest fact of the run, named
    # beside its cause (a verl run gamed its shaped reward by answering in 9 tokens)
    _Fold(
        ScenarioId.LENGTH_COLLAPSE,
        (ScenarioId.TOO_AGGRESSIVE, ScenarioId.REWARD_HACKING),
        "and the completions shorten",
        keep_problem=True,
    ),
)


def _unwatched(shown: list[Scenario]) -> list[Scenario]:
    """ "Watch" is what nothing else says: beside another block that warns it goes (the
    status already says at least as much as the grid; a twin of a cited metric, such as
    eval_clipped_ratio beside truncation, is the same news)."""
    if any(s.severity.warns and s.id is not ScenarioId.WATCH for s in shown):
        return [s for s in shown if s.id is not ScenarioId.WATCH]
    return shown


def _raw(found: list[Scenario]) -> list[Scenario]:
    """The verdicts of one moment as the tracker takes them: no "saturated" while the run
    is unstable (a reward that stopped rising under a runaway policy has not learned what
    the data can teach, and harder data would not help)."""
    if any(s.id is ScenarioId.TOO_AGGRESSIVE for s in found):
        found = [s for s in found if s.id is not ScenarioId.SATURATED]
    return found


def _folded(shown: list[Scenario], lead: ScenarioId | None = None) -> list[Scenario]:
    """Findings that are a symptom of the state shown, folded into it (_FOLDS): the
    symptom's first evidence joins the state's. Only a symptom no worse than the state
    folds: the screen never shows a severity the history does not have."""
    state = next((s for s in shown if s.id.is_state), None)
    if state is None:
        return shown
    folded = state
    keep = []
    for scenario in shown:
        if scenario is state:
            continue
        fold = next((f for f in _FOLDS if f.symptom is scenario.id and state.id in f.causes), None)
        if (
            fold is None
            or scenario.severity.rank < state.severity.rank
            or (fold.keep_problem and scenario.severity is Severity.PROBLEM)
        ):
            keep.append(scenario)
            continue
        first = scenario.evidence[0]
        known = [e.text for e in folded.evidence]
        if not says_nothing_new(first.text, known):
            consequence = replace(first, text=f"{fold.words}: {first.text}")
            folded = replace(folded, evidence=[*folded.evidence, consequence])
    return sorted([folded, *keep], key=lambda s: block_order(s, lead))


def _warming_up(f: Findings, found: list[Scenario]) -> Scenario:
    """Too few points for a verdict: what the rules already see is an early warning."""
    reward = f.reward
    # the points `find` counted the warm-up on: the reward's finite ones, else the train rows
    points = (len(reward.view) if reward is not None else 0) or f.snap.train_steps.size
    window = reward.window if reward is not None else Window(None, None, f.snap.train_steps.size)
    counted = f"{points} train point{'s' if points != 1 else ''}"
    needed = f"a verdict needs {f.rules.window.warmup_points}"
    # an ended run gets no more points: waiting for them would be wrong advice
    ended = f.snap.ended
    evidence = [
        Evidence(
            "reward",
            window,
            {"points": float(points)},
            f"the run ended after {counted}; {needed}" if ended else f"{counted} so far; {needed}",
        )
    ]
    evidence.extend(
        replace(s.evidence[0], text=f"early warning ({s.title}): {s.evidence[0].text}", detail="")
        for s in _unwatched(found)  # a watch beside a warning is the same news
        if s.severity.warns
    )
    first_step = float(f.snap.train_steps[0]) if f.snap.train_steps.size else None
    # early warnings make it a caution, never a problem: the facts are there (the grid
    # shows them), a verdict waits for enough points
    early = any(s.severity.warns for s in found)
    return Scenario(
        ScenarioId.WARMING_UP,
        ENDED_TOO_SHORT if ended else ScenarioId.WARMING_UP.title,
        Severity.CAUTION if early else Severity.INFO,
        first_step,
        evidence,
        pick([(Advice.LOG_MORE if ended else Advice.WAIT, "")], f.snap.context),
    )


def _notes(f: Findings) -> list[Note]:
    """Facts that are not verdicts: dead reward functions, spikes, an inferred cap, a KL
    judged on its own scale, a gradient of 0 explained by tied groups."""
    notes: list[Note] = []
    for fn in f.functions:
        if fn.dead or (
            fn.at_floor
            and any(other.role is not fn.role or not other.at_floor for other in f.functions)
        ):
            short = f"{fn.fn} always 0" if fn.dead else f"{fn.fn} at its floor"
            notes.append(Note(Severity.CAUTION, fn.key, function_note(fn), short=short))
    if aux_only_rise(f, done=True) is None and (so_far := aux_only_rise(f, done=False)) is not None:
        text = (
            f"so far the {so_far.text}: a task reward usually follows the format; "
            "not learning the task if it stays flat once they are done"
        )
        notes.append(Note(Severity.INFO, "rewards", text))
    if f.kl_offset is not None:
        notes.append(Note(Severity.CAUTION, "kl", f.kl_offset))
    if f.cap is not None and f.cap.inferred:
        inferred = f"cap {f.cap.tokens:g} tokens inferred: {f.cap.source}"
        notes.append(Note(Severity.INFO, "completion_length", inferred))
    notes.extend(f.events())
    notes.sort(key=lambda n: n.severity.rank)
    return notes


def _metric_health(f: Findings) -> dict[str, MetricHealth]:
    """The reading of every metric: its zone and why, its level, its course."""

    return {
        name: MetricHealth(
            j.zone,
            j.last,
            j.direction,
            j.reason,
            j.window.points,
            finite_or_none(j.level),
            j.trend
            if j.trend is not None
            else (c.direction if (c := j.shape) else Direction.UNKNOWN),
            c.word if c is not None else "",
            c.describe() if c is not None else "",
            finite_or_none(c.start.value) if c is not None else None,
            finite_or_none(c.end.value) if c is not None else None,
            c.recent_window if c is not None else None,
        )
        for name, j in f.judged().items()
    }
