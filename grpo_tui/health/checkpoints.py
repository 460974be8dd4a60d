"""Which checkpoint to keep, and which to go back to: computed once per diagnosis
(docs/health.md, "Which checkpoint to keep or go back to").

Two answers from the steady diagnosis and the run's checkpoint listing (plain data the
sources found, sources/checkpoints.py):

- **Go back to**: the last checkpoint at or before the onset of the worst warning verdict
  a checkpoint precedes (a problem before a caution, then the earliest), never one after
  it. A warning held since before the first checkpoint is named, not gone back for. None
  when nothing warns (a run learning with no warning needs no going back).
- **Keep**: the checkpoint whose reward level is highest, by the eval reward where one is
  logged (never by `eval_loss`, which says nothing of an RL policy), else by the task
  reward the diagnosis judges (one task function, else the reward). A checkpoint's level is
  the median of the points around its step, as many as one of the course's stretches holds,
  with its standard error from the course's noise (health/course.py): the peak of the
  smoothed level, never the newest checkpoint because it is newest, so a falling eval does
  not make the last one "best"; among levels the noise cannot tell apart, the later. Never
  one after a problem that spoils what came after it (SPOILS).

Each answer says its step, its level there, the series' peak and its level now (the numbers
the diagnosis quotes), and whether the folder is on disk: a checkpoint the trainer's schedule
saved (`save_steps`) that is gone (its `save_total_limit` deleted it) is "not on disk", and
the nearest one that is comes beside it. Where the run keeps none, it is said once with
where it was looked for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grpo_tui.health.course import Course, Level
from grpo_tui.health.judges import Judgement
from grpo_tui.health.rewards import Role
from grpo_tui.health.verdict import num
from grpo_tui.numbers import format_step
from grpo_tui.run.live import Run
from grpo_tui.sources.checkpoints import CheckpointListing
from grpo_tui.vocabulary import LearningState, ScenarioId, Severity

if TYPE_CHECKING:
    from grpo_tui.health.verdict import Diagnosis, Scenario

#: steps the schedule is expanded to at most (a save every step of a million-step run is
#: not a list worth making): beyond it only the folders on disk are candidates
MAX_SCHEDULED = 10_000
#: eval points needed before the eval reward, not the task reward, picks the best
MIN_EVAL_POINTS = 3
#: warnings that are no harm done by training: a converged run, a metric to watch, a
#: reward that does not move (later weights are no worse for it: nothing to go back for)
NOT_HARM = frozenset({ScenarioId.SATURATED, ScenarioId.WATCH, ScenarioId.NOT_LEARNING})
#: problems that make what training did after their onset worse than before it (a reward
#: gamed, a policy broken, its answers collapsed): no checkpoint after one is kept. A
#: truncation cap, a stalled reward or an off-policy drift leaves later weights no worse.
SPOILS = frozenset(
    {
        ScenarioId.REWARD_HACKING,
        ScenarioId.TOO_AGGRESSIVE,
        ScenarioId.LENGTH_COLLAPSE,
        ScenarioId.LOW_DIVERSITY,
    }
)


@dataclass(frozen=True, slots=True)
class CheckpointPick:
    """One checkpoint an answer names: its step, whether it is on disk, its level."""

    step: int
    on_disk: bool
    #: the folder, when on disk
    path: str | None
    #: the series' smoothed level around the step (None: no points near it), with its
    #: standard error and the points it is the median of
    level: float | None
    error: float | None
    points: int

    def words(self) -> str:
        """ "step 200 (0.71 ± 0.04), on disk" in words."""
        level = "" if self.level is None else f" ({num(self.level)} ± {num(self.error or 0.0)})"
        where = "on disk" if self.on_disk else "not on disk"
        return f"step {self.step}{level}, {where}"

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "on_disk": self.on_disk,
            "path": self.path,
            "level": self.level,
            "error": self.error,
            "points": self.points,
        }


@dataclass(frozen=True, slots=True)
class CheckpointAdvice:
    """The checkpoint answers of one diagnosis, quoted by every surface."""

    #: grpo-tui knows where this format keeps checkpoints
    known: bool
    #: the folders looked in, and the folder names looked for
    looked_in: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    #: steps whose folders are on disk; steps the schedule saved that are gone
    on_disk: tuple[int, ...] = ()
    gone: tuple[int, ...] = ()
    save_steps: int | None = None
    save_total_limit: int | None = None
    said_by: tuple[str, ...] = ()
    #: the series the levels are read on (its metric name) and what it is ("eval reward",
    #: "task reward"); "" when there is none
    series: str = ""
    chosen_by: str = ""
    #: the series' peak (the highest stretch median, with its steps) and its level now
    peak: float | None = None
    peak_steps: str = ""
    #: the first step of the peak's stretch (whether it came after a spoiling problem)
    peak_from: float | None = None
    now: float | None = None
    now_steps: str = ""
    #: go back: the worst warning's title and onset, the checkpoint, and the nearest one on
    #: disk when that one is gone
    finding: str = ""
    onset: float | None = None
    #: warnings that began before the first checkpoint ("Truncation since step 10"): no
    #: checkpoint is from before them, so they are said, not gone back for
    before_any: tuple[str, ...] = ()
    #: the problem whose onset ends what may be kept ("Reward hacking since step 230"),
    #: when one spoils what came after it (SPOILS)
    spoiled: str = ""
    spoiled_at: float | None = None
    #: judged not learning, its series never clearly above its start: nothing to keep
    never_rose: bool = False
    go_back: CheckpointPick | None = None
    go_back_on_disk: CheckpointPick | None = None
    #: keep: the best checkpoint saved, and the best on disk when that one is gone
    keep: CheckpointPick | None = None
    keep_on_disk: CheckpointPick | None = None
    #: the step the trainer itself called best (its metric_for_best_model) and that value
    trainer_best: int | None = None
    trainer_best_metric: float | None = None
    problem: str = ""
    #: the one-line answer (under the state block) and the detail lines
    headline: str = ""
    lines: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        """`check --json`'s `checkpoints` field (README, "JSON output")."""

        def pick(p: CheckpointPick | None) -> dict[str, Any] | None:
            return None if p is None else p.to_json()

        return {
            "known": self.known,
            "looked_in": list(self.looked_in),
            "names": list(self.names),
            "on_disk": list(self.on_disk),
            "gone": list(self.gone),
            "save_steps": self.save_steps,
            "save_total_limit": self.save_total_limit,
            "said_by": list(self.said_by),
            "series": self.series or None,
            "chosen_by": self.chosen_by or None,
            "peak": self.peak,
            "peak_steps": self.peak_steps or None,
            "now": self.now,
            "now_steps": self.now_steps or None,
            "go_back": {
                "finding": self.finding or None,
                "onset": self.onset,
                "before_any_checkpoint": list(self.before_any),
                "checkpoint": pick(self.go_back),
                "nearest_on_disk": pick(self.go_back_on_disk),
            },
            "keep": {
                "never_rose": self.never_rose,
                "only_before": self.spoiled or None,
                "checkpoint": pick(self.keep),
                "best_on_disk": pick(self.keep_on_disk),
            },
            "trainer_best": self.trainer_best,
            "trainer_best_metric": self.trainer_best_metric,
            "problem": self.problem or None,
            "headline": self.headline,
            "lines": list(self.lines),
        }


def advise(run: Run, diagnosis: Diagnosis) -> CheckpointAdvice:
    """The checkpoint answers for `run` as `diagnosis` (the steady one) judges it."""
    listing = run.checkpoints
    if listing is None:
        framework = run.framework or "this format"
        return CheckpointAdvice(
            known=False,
            headline=f"where {framework} keeps checkpoints is not known to grpo-tui",
        )
    last = run.store.last_train_step()
    saved, gone = _saved(listing, last, run)
    on_disk = {c.step: c.path for c in listing.kept}
    series, chosen_by = _series(diagnosis)
    course = series.shape if series is not None else None
    # an eval scores each checkpoint's weights on one fixed set, usually at the save steps:
    # its own point there is the checkpoint's number (a stretch median of a few evals would
    # smooth the one good eval away), and its peak the highest point
    points = _eval_points(series) if chosen_by == "eval reward" and series is not None else {}
    peak_point = max(points.items(), key=lambda item: (item[1], -item[0])) if points else None

    def pick(step: int) -> CheckpointPick:
        if step in points and course is not None:
            sigma = course.noise.sigma
            level: Level | None = Level(points[step], step, step, 1, sigma)
        else:
            level = _level_at(series, course, step) if series is not None else None
        return CheckpointPick(
            step,
            step in on_disk,
            on_disk.get(step),
            level.value if level is not None else None,
            level.error if level is not None else None,
            level.points if level is not None else 0,
        )

    base = CheckpointAdvice(
        known=True,
        looked_in=listing.looked_in,
        names=listing.names,
        on_disk=tuple(sorted(on_disk)),
        gone=tuple(gone),
        save_steps=listing.save_steps,
        save_total_limit=listing.save_total_limit,
        said_by=listing.said_by,
        series=series.name if series is not None else "",
        chosen_by=chosen_by,
        peak=(peak_point[1] if peak_point else course.peak.value) if course is not None else None,
        peak_steps=(
            (f"step {format_step(peak_point[0])}" if peak_point else course.peak.window.span)
            if course is not None
            else ""
        ),
        peak_from=(peak_point[0] if peak_point else course.peak.first_step)
        if course is not None
        else None,
        now=course.stretches[-1].value if course is not None else None,
        now_steps=course.stretches[-1].window.span if course is not None else "",
        trainer_best=listing.best_step,
        trainer_best_metric=listing.best_metric,
        problem=listing.problem,
    )
    if not saved:
        where = " or ".join(_near(run, folder) for folder in listing.looked_in)
        names = " or ".join(listing.names)
        text = f"this run keeps no checkpoints: no {names} folder in {where}"
        return _with_words(base, text, [])
    finding, onset, before_any = _go_back_finding(diagnosis, saved)
    spoiled = _spoiled_from(diagnosis)
    go_back = go_back_on_disk = None
    if onset is not None:
        before = [step for step in saved if step <= onset]
        go_back = pick(before[-1]) if before else None
        if go_back is not None and not go_back.on_disk:
            kept_before = [step for step in on_disk if step <= onset]
            go_back_on_disk = pick(max(kept_before)) if kept_before else None
    # a problem that began at `onset` makes what came after it no checkpoint to keep (a
    # reward hacked or a policy broken since): the best is looked for before it
    keepable = saved if spoiled is None else [s for s in saved if s <= spoiled[1]]
    keep = keep_on_disk = None
    # a run judged not learning whose series never rose clearly above its start kept
    # nothing worth keeping (a run already good at its start, converged, still has)
    never_rose = (
        course is not None
        and diagnosis.state is LearningState.NOT_LEARNING
        and not course.above(course.peak, course.start)
    )
    if course is not None and not never_rose:
        picks = [p for p in (pick(step) for step in keepable) if p.level is not None]
        if picks:
            keep = _best(picks)
            if not keep.on_disk:
                kept = [p for p in picks if p.on_disk]
                keep_on_disk = _best(kept) if kept else None
    advice = replace(
        base,
        finding=finding,
        onset=onset,
        before_any=before_any,
        spoiled="" if spoiled is None else f"{spoiled[0]} since step {format_step(spoiled[1])}",
        spoiled_at=None if spoiled is None else spoiled[1],
        never_rose=never_rose,
        go_back=go_back,
        go_back_on_disk=go_back_on_disk,
        keep=keep,
        keep_on_disk=keep_on_disk,
    )
    return _with_words(advice, _headline(advice), _detail(advice))


#: how the "resume from a checkpoint" advice begins (health/advice.py, RESUME_EARLIER)
RESUME = "Resume from a checkpoint before the collapse"


def resume_advice(line: str, scenario: Scenario, answer: CheckpointAdvice) -> str:
    """An advice line of `scenario`, the "resume from a checkpoint" one saying the checkpoint
    the answer names (one story: the advice and the Checkpoints line quote one step)."""
    if not line.startswith(RESUME) or not answer.known or scenario.onset_step is None:
        return line
    onset = format_step(scenario.onset_step)
    if answer.finding == scenario.title and answer.go_back is not None:
        pick = answer.go_back
        where = f"checkpoint {pick.step}" if pick.on_disk else f"step {pick.step} (not on disk)"
        if not pick.on_disk and answer.go_back_on_disk is not None:
            where += f", or {answer.go_back_on_disk.step} on disk"
        return f"Resume from {where}, the last before step {onset}, with a lower learning rate."
    if any(text.startswith(f"{scenario.title} since") for text in answer.before_any):
        return f"No checkpoint is from before step {onset}: restart with a lower learning rate."
    return line


def _spoiled_from(diagnosis: Diagnosis) -> tuple[str, float] | None:
    """The first problem that spoils what came after it (SPOILS), and its onset."""
    spoils = [
        (s.onset_step, s.title)
        for s in diagnosis.verdicts
        if s.id in SPOILS and s.severity is Severity.PROBLEM and s.onset_step is not None
    ]
    if not spoils:
        return None
    onset, title = min(spoils)
    return title, onset


def _go_back_finding(
    diagnosis: Diagnosis, saved: list[int]
) -> tuple[str, float | None, tuple[str, ...]]:
    """The warning to go back before: the worst (a problem before a caution), the earliest
    of those, that a saved checkpoint precedes. One held since before the first checkpoint
    (truncation from the first steps: the setup's, not the training's) no checkpoint
    escapes; it is named, and the next is looked at. Returns its title, its onset and
    those named."""
    warnings = sorted(
        (s for s in diagnosis.verdicts if s.severity.warns and s.id not in NOT_HARM),
        key=lambda s: (s.severity.rank, math.inf if s.onset_step is None else s.onset_step),
    )
    before_any: list[str] = []
    for s in warnings:
        if s.onset_step is None:
            continue
        if saved and saved[0] <= s.onset_step:
            return s.title, s.onset_step, tuple(before_any)
        before_any.append(f"{s.title} since step {format_step(s.onset_step)}")
    if warnings and not before_any:  # warnings whose onsets are not known
        return warnings[0].title, None, ()
    return "", None, tuple(before_any)


def _near(run: Run, folder: str) -> str:
    """A folder looked in, named from the run's PATH (`output/v0-…`) as the header names
    runs, so the words do not carry where the PATH itself sits."""
    base = run.path if run.path.name else Path(".")
    try:
        inside = Path(folder).relative_to(base)
    except ValueError:
        return folder
    return str(Path(base.name, inside)) if base.name else str(inside)


def _best(picks: list[CheckpointPick]) -> CheckpointPick:
    """The highest level; among the checkpoints within its standard error of it (levels
    the noise cannot tell apart), the latest: more training, no worse by the numbers."""
    top = max(picks, key=_best_order)
    if top.level is None or top.error is None or not math.isfinite(top.error):
        return top
    close = [p for p in picks if p.level is not None and p.level >= top.level - top.error]
    return max(close, key=lambda p: p.step)


def _best_order(pick: CheckpointPick) -> tuple[float, int]:
    """Highest level first; among equal levels the later step (more training, no worse)."""
    return (pick.level if pick.level is not None else -math.inf, pick.step)


def _saved(listing: CheckpointListing, last: float | None, run: Run) -> tuple[list[int], list[int]]:
    """Every checkpoint saved (on disk, or saved by the schedule the trainer states and gone
    since), and those gone. The schedule is trusted only where the folders on disk agree
    with it (each a multiple of save_steps, or the run's last step)."""
    kept = sorted(listing.steps)
    every = listing.save_steps
    if every is None or not listing.by_steps or last is None or not kept:
        # no folder on disk to check the schedule against (saves not made yet, or written
        # elsewhere): only what is there is known
        return kept, []
    # the newest folder may be the save at the end of training (HF's trainer_callback.py:603
    # saves at max_steps whatever save_steps is)
    end = max(int(last), kept[-1])
    if end / every > MAX_SCHEDULED or not all(step % every == 0 for step in kept[:-1]):
        return kept, []
    scheduled = set(range(every, end + 1, every))
    saved = sorted(scheduled | set(kept))
    return saved, [step for step in saved if step not in set(kept)]


def _series(diagnosis: Diagnosis) -> tuple[Judgement | None, str]:
    """The series the best checkpoint is chosen by: the eval reward (the diagnosis's, or
    the held-out measure of the task reward) with enough points, else the task reward (one
    task function; several or none: the reward)."""
    f = diagnosis.findings
    if f is None:
        return None, ""
    evaluated = f.eval_reward
    if evaluated is not None and len(evaluated.view) >= MIN_EVAL_POINTS:
        return evaluated, "eval reward"
    tasks = [fn for fn in f.functions if fn.role is Role.TASK]
    if len(tasks) == 1:
        return tasks[0].judgement, "task reward"
    if f.reward is not None:
        return f.reward, "reward (no single task reward is named)" if tasks else "task reward"
    return None, ""


def _eval_points(series: Judgement) -> dict[float, float]:
    """An eval's finite points by step."""
    view = series.view
    return {
        float(step): float(value)
        for step, value in zip(view.steps, view.values)
        if math.isfinite(float(value))
    }


def _level_at(series: Judgement, course: Course | None, step: int) -> Level | None:
    """The series' level at a checkpoint: the median of the course's stretch whose steps
    hold it (the nearer of two it falls between), with its error from the course's noise
    (health/course.py): the numbers the course quotes. None beyond a stretch's span past
    the first or last point."""
    if course is None or not course.stretches or not math.isfinite(course.noise.sigma):
        return None
    nearest = min(course.stretches, key=lambda s: _distance(s, step))
    span = max(nearest.last_step - nearest.first_step, 1.0)
    return nearest if _distance(nearest, step) <= span else None


def _distance(level: Level, step: float) -> float:
    return max(level.first_step - step, step - level.last_step, 0.0)


def _headline(a: CheckpointAdvice) -> str:
    """The one-line answer: where to go back to (when something warns), what to keep."""
    parts = []
    if a.before_any and not a.finding:
        if a.keep is None and a.spoiled == a.before_any[0]:
            return f"no checkpoint before {a.spoiled}: none to go back to or keep"
        parts.append(f"no checkpoint before {a.before_any[0]}")
    if a.finding:
        if a.onset is None:
            parts.append(f"{a.finding}: its onset is not known, no checkpoint to go back to")
        elif a.go_back is None:
            parts.append(
                f"no checkpoint before step {format_step(a.onset)}, when {a.finding} began"
            )
        else:
            disk = "" if a.go_back.on_disk else " (not on disk)"
            parts.append(f"go back to step {a.go_back.step}{disk}, before {a.finding}")
    if a.keep is not None:
        disk = "" if a.keep.on_disk else "; not on disk"
        level = f"{num(a.keep.level)}, peak {num(a.peak)}" if a.keep.level is not None else ""
        by = a.chosen_by.split(" (")[0]
        parts.append(f"keep step {a.keep.step} ({level}{disk}), best by {by}")
    elif a.never_rose:
        parts.append(f"nothing learned to keep ({a.chosen_by.split(' (')[0]} never rose)")
    elif a.spoiled:
        parts.append(f"nothing to keep: no checkpoint before {a.spoiled}")
    elif not a.finding:
        parts.append("no reward near any checkpoint to choose by")
    return "; ".join(parts)


def _detail(a: CheckpointAdvice) -> list[str]:
    lines = []
    if a.finding and a.onset is not None:
        since = f"{a.finding} since step {format_step(a.onset)}"
        if a.go_back is None:
            lines.append(f"go back: none saved at or before it ({since})")
        else:
            lines.append(f"go back: {a.go_back.words()} ({since})")
        if a.go_back_on_disk is not None:
            lines.append(f"nearest on disk before it: {a.go_back_on_disk.words()}")
    elif not a.finding and not a.before_any:
        lines.append("go back: nothing a checkpoint undoes")
    if a.before_any:
        lines.append(f"before any checkpoint: {', '.join(a.before_any)} (no checkpoint escapes it)")
    if a.keep is not None:
        lines.append(f"keep: {a.keep.words()}, best by the {a.chosen_by} ({a.series})")
        if a.keep_on_disk is not None:
            lines.append(f"best on disk instead: {a.keep_on_disk.words()}")
        if a.spoiled:
            lines.append(f"kept only from before {a.spoiled}: what came after it is no better")
        level, error = a.keep.level, a.keep.error
        peak = a.peak
        if level is not None and error is not None and peak is not None and level + error < peak:
            at, start = a.spoiled_at, a.peak_from
            if at is not None and start is not None and start >= at:
                lines.append(f"the peak ({num(peak)} at {a.peak_steps}) came after it")
            else:
                lines.append(f"no checkpoint near the peak ({num(peak)} at {a.peak_steps})")
    if a.never_rose and a.series:
        lines.append(f"keep: none, {a.series} never rose beyond its noise")
    if a.peak is not None:
        now = f", now {num(a.now)} at {a.now_steps}" if a.now_steps != a.peak_steps else " (now)"
        lines.append(f"{a.series}: peak {num(a.peak)} at {a.peak_steps}{now}")
    if a.trainer_best is not None:
        metric = "" if a.trainer_best_metric is None else f" ({num(a.trainer_best_metric)})"
        lines.append(f"the trainer's own best: step {a.trainer_best}{metric}")
    lines.append(_disk_words(a))
    return lines


def _disk_words(a: CheckpointAdvice) -> str:
    """What is on disk, and what the schedule saved that is gone."""
    on_disk = ", ".join(str(s) for s in a.on_disk) or "none"
    text = f"on disk: {on_disk}"
    if a.save_steps is not None:
        text += f"; saved every {a.save_steps} steps"
        if a.save_total_limit is not None:
            text += f", at most {a.save_total_limit} kept"
        if a.gone:
            text += f"; {len(a.gone)} saved and gone ({_steps(a.gone)})"
        if a.said_by:
            text += f" (said by {', '.join(a.said_by)})"
    return text


def _steps(steps: tuple[int, ...]) -> str:
    """A list of steps, the middle left out when long."""
    if len(steps) <= 6:
        return ", ".join(str(s) for s in steps)
    return f"{steps[0]}, {steps[1]}, … {steps[-2]}, {steps[-1]}"


def _with_words(advice: CheckpointAdvice, headline: str, lines: list[str]) -> CheckpointAdvice:
    return replace(advice, headline=headline, lines=tuple(lines))
