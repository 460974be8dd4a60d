"""Every judgement one diagnosis rests on, taken once from a snapshot: what the scenario
rules and the checklist read. Built by `find`; frozen afterwards."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from grpo_tui.health import judges as jd
from grpo_tui.health import trends as tr
from grpo_tui.health.course import Improvement, Phase
from grpo_tui.health.judges import Cap, Collapse, Judgement
from grpo_tui.health.rewards import (
    RewardFunction,
    RewardRange,
    Role,
    SpreadKind,
    eval_counterpart,
    reward_functions,
    total_range,
    zero_spread_kind,
)
from grpo_tui.health.rules import Rules, ZoneBounds
from grpo_tui.health.samples import Samples
from grpo_tui.health.series import RunSnapshot, SeriesView
from grpo_tui.health.verdict import Note, Window, num, pct, value_range
from grpo_tui.vocabulary import Zone

#: the importance-sampling ratio between the trainer's policy and the sampler's (TRL's
#: `sampling/importance_sampling_ratio/*`, verl's `rollout_corr/rollout_is_*`: the adapters
#: map them). Its mean stays near 1 while many tokens sit far outside the band, so the
#: per-batch minimum is judged where it is logged (TRL caps the ratio from above, so `/max`
#: cannot run off)
IS_RATIO_MEAN = "offpolicy/is_ratio_mean"
IS_RATIO_MIN = "offpolicy/is_ratio_min"

#: the Findings field that holds each banded metric's judgement, in display order
BANDED = {
    "reward_std": "reward_std",
    "frac_reward_zero_std": "frac_zero_std",
    "clip_ratio": "clip",
    "kl": "kl",
    "entropy": "entropy",
    "completion_length": "length",
    "clipped_ratio": "clipped",
}


@dataclass(frozen=True, slots=True)
class BlowUp:
    """A policy collapse: what it was, where the reward began to fall, and whether enough
    signals ran off with it (entropy, the sampling ratio, lengths to the cap) to be certain."""

    text: str
    step: float | None
    #: the reward's level before the fall (a stretch median) and now (the recent median)
    high: float
    now: float
    #: the reward at its floor while two signals ran off with it cannot be noise
    certain: bool


#: the amount that matters for a series with one value on every point: any rise at all
ONE_VALUE = "any rise: one value throughout"


@dataclass(frozen=True, slots=True)
class RiseBound:
    """How far one reward series rose since its start, against the rise that would matter."""

    #: the metric's key ("reward", "rewards/accuracy/mean")
    key: str
    #: its name in words ("reward", "accuracy")
    name: str
    improvement: Improvement
    #: the rise that matters for this series
    amount: float
    #: what `amount` is, in words ("5 % of its range 0–1")
    amount_why: str

    @property
    def ruled_out(self) -> bool:
        return self.improvement.rules_out(self.amount)

    @property
    def rising(self) -> bool:
        """The data show a rise of at least the amount that matters."""
        return self.improvement.low > 0 and self.improvement.change >= self.amount

    def describe(self) -> str:
        if self.amount_why == ONE_VALUE:
            # no noise to bound a rise with: the series never moved, which says it all
            early, recent = self.improvement.early, self.improvement.recent
            span = Window(early.first_step, recent.last_step, early.points).span
            return f"{self.name} never moved: {num(recent.value)} on every point ({span})"
        verb = "rose by less than" if self.ruled_out else "may still have risen by"
        return (
            f"{self.name} {verb} {num(self.amount)} ({self.amount_why}): "
            f"{self.improvement.describe()}"
        )


@dataclass(frozen=True)
class Findings:
    """What each metric says, the reward functions, the samples; one diagnosis's facts."""

    snap: RunSnapshot
    rules: Rules
    warming_up: bool
    reward: Judgement | None
    reward_range: RewardRange | None
    reward_std: Judgement | None
    frac_zero_std: Judgement | None
    clip: Judgement | None
    kl: Judgement | None
    #: why a KL in its caution band is an offset from the start, not drift (None: it is not)
    kl_offset: str | None
    entropy: Judgement | None
    clipped: Judgement | None
    length: Judgement | None
    cap: Cap | None
    collapse: Collapse | None
    loss: Judgement | None
    grad_norm: Judgement | None
    #: share of the recent grad_norm points at ~0 (no update reached the weights)
    grad_zero_share: float
    eval_reward: Judgement | None
    is_ratio: Judgement | None
    is_ratio_min: Judgement | None
    functions: tuple[RewardFunction, ...]
    spread_kind: SpreadKind
    spread_why: str
    samples: Samples | None
    #: every other metric with bands (or none), for the metric table and the checklist
    others: dict[str, Judgement]

    @property
    def tasks(self) -> list[RewardFunction]:
        return [f for f in self.functions if f.role is Role.TASK]

    @property
    def auxiliaries(self) -> list[RewardFunction]:
        return [f for f in self.functions if f.role is Role.AUX]

    @property
    def task_rising(self) -> bool:
        return any(t.shape is not None and t.shape.phase is Phase.RISING for t in self.tasks)

    @cached_property
    def rise_bounds(self) -> list[RiseBound]:
        """The rise of every task reward (else of the reward) bounded by its confidence
        interval: what "not learning" rests on (empty: too few points for a bound)."""
        rules = self.rules.learning
        series: list[tuple[str, Judgement | None, RewardRange | None]] = [
            (t.fn, t.judgement, t.range) for t in self.tasks
        ] or [("reward", self.reward, self.reward_range)]
        bounds = []
        for name, judgement, rng in series:
            course = judgement.shape if judgement is not None else None
            # the course's own two levels, bounded: the numbers every surface quotes
            if (
                judgement is None
                or course is None
                or course.phase is Phase.WARMUP
                or course.start.last_step >= course.end.first_step
            ):
                continue
            amount, why = self._meaningful(judgement.name, judgement.view, rng)
            bounds.append(RiseBound(judgement.name, name, course.bound(rules.z), amount, why))
        return bounds

    def _meaningful(self, key: str, view: SeriesView, rng: RewardRange | None) -> tuple[float, str]:
        rules = self.rules.learning
        if rng is not None and rng.known and rng.span > 0:
            return rules.meaningful_fraction * rng.span, (
                f"{pct(rules.meaningful_fraction)} of its range {value_range(rng.low, rng.high)}"
            )
        std_key = "reward_std" if key == "reward" else key.removesuffix("/mean") + "/std"
        std = self.snap.get(std_key)
        if std is not None and not std.empty and (typical := float(np.median(std.values))) > 0:
            return rules.meaningful_std_fraction * typical, (
                f"{pct(rules.meaningful_std_fraction)} of its typical spread within a batch, {num(typical)}"
            )
        span = float(np.ptp(view.values))
        if span <= 0:
            # one value on every point: any rise at all would show (never an amount of 0,
            # which nothing is below)
            return 1e-9 * max(1.0, abs(float(view.values[-1]))), ONE_VALUE
        return rules.meaningful_std_fraction * span, (
            f"{pct(rules.meaningful_std_fraction)} of its observed range {num(span)}"
        )

    @cached_property
    def entropy_exploded(self) -> bool:
        """Entropy in its bad zone because it grew far above its early level (not near 0)."""
        entropy = self.entropy
        return (
            entropy is not None
            and entropy.zone is Zone.BAD
            and entropy.level >= self.rules.entropy.explode_floor
        )

    @cached_property
    def is_ratio_collapsed(self) -> bool:
        """The importance-sampling ratio's mean fell far below 1 after sitting near it, or
        its per-batch minimum fell tenfold from where it sat (a healthy run's minimum sits
        well below 1 and stays there: 0.35-0.55 in the corpus's vanilla TRL run, going to
        0 in its lr 1e-4 collapse while the mean still read 0.8 for a while)."""
        limit = self.rules.blow_up.is_ratio_collapse
        ratio, lowest = self.is_ratio, self.is_ratio_min
        if (
            ratio is not None
            and ratio.shape is not None
            and ratio.level < limit
            and ratio.shape.start.value > 0.5
        ):
            return True
        if lowest is not None and lowest.shape is not None:
            start = lowest.shape.start.value
            return start >= limit and lowest.level < limit * start
        return False

    @cached_property
    def lengths_ran_to_cap(self) -> bool:
        """clipped_ratio climbed above its blow-up level from well below it."""
        clipped = self.clipped
        if clipped is None or clipped.shape is None:
            return False
        limit = self.rules.blow_up.clipped_run_to_cap
        return (
            clipped.level > limit and clipped.shape.start.value < limit / 2 and clipped.shape.rose
        )

    @cached_property
    def blow_up(self) -> BlowUp | None:
        """Policy collapse: the reward fell to its floor from clearly higher while the
        policy ran off (entropy exploded, the sampling ratio collapsed, lengths ran to the
        cap). The text quotes stretch medians; the step is where the fall began."""
        reward, rng = self.reward, self.reward_range
        if reward is None or reward.shape is None or rng is None:
            return None
        shape = reward.shape
        # the recent level, not the shape's end (the last quarter of the run): a collapse
        # is news the moment the latest points sit at the floor, from clearly higher
        high = shape.peak if shape.peak.value >= shape.start.value else shape.start
        now = reward.level
        end = rng.position(now)
        if end is None or end > self.rules.blow_up.reward_floor_position:
            return self._drift()
        if not high.value - now > shape.apart(high, shape.end):
            return None
        companions = []
        if self.entropy_exploded and self.entropy is not None:
            companions.append(f"entropy {self.entropy.reason}")
        elif (ran_off := self._entropy_ran_off()) is not None:
            companions.append(ran_off)
        if self.is_ratio_collapsed:
            # one signal, said with both of its statistics where both are logged
            companions.append(
                ", ".join(
                    f"{ratio.name} {num(ratio.shape.start.value)} → {num(ratio.level)}"
                    for ratio in (self.is_ratio, self.is_ratio_min)
                    if ratio is not None and ratio.shape is not None
                )
            )
        if self.lengths_ran_to_cap and self.clipped is not None:
            start = self.clipped.shape.start.value if self.clipped.shape else math.nan
            companions.append(
                f"clipped_ratio {num(start)} → {num(self.clipped.level)} (lengths run to the cap)"
            )
        if not companions:
            return self._drift()
        text = (
            f"policy collapse: reward {num(high.value)} at {high.window.span} (stretch median) → "
            f"{num(now)} at {reward.recent_span} (median) while " + "; ".join(companions)
        )
        view = reward.view
        after = (view.steps > high.last_step) & (view.values < (high.value + now) / 2)
        step = float(view.steps[np.flatnonzero(after)[0]]) if after.any() else None
        return BlowUp(text, step, high.value, now, certain=len(companions) >= 2)

    def _drift(self) -> BlowUp | None:
        """The slow form of a collapse: the reward fell beyond its noise, by a share of its
        range that matters, while two signals of a runaway policy moved with it (entropy
        ×blow_up.drift_factor over its early level, the lengths ×drift_factor with the cut
        share above its caution band). Two signals, never one: a falling reward alone is
        not "too aggressive"."""
        rules = self.rules.blow_up
        reward, rng = self.reward, self.reward_range
        if reward is None or reward.shape is None or rng is None or not reward.shape.fell:
            return None
        course = reward.shape
        if course.start.value - course.end.value < rules.drift_drop * rng.span:
            return None
        companions = []
        entropy = self.entropy
        if entropy is not None and len(entropy.view) >= 4:
            early = tr.median_of(jd.early_head(entropy.view, highest=False).values)
            if (
                entropy.level >= rules.drift_factor * max(early, 1e-12)
                and entropy.level >= rules.entropy_floor
            ):
                companions.append(f"entropy {num(early)} → {num(entropy.level)} (medians)")
        length, clipped = self.length, self.clipped
        cut = (self.rules.zone_bounds("clipped_ratio") or ZoneBounds()).caution_above or 0.0
        if (
            length is not None
            and length.shape is not None
            and clipped is not None
            and length.shape.end.value >= rules.drift_factor * max(length.shape.start.value, 1e-12)
            and clipped.level > cut
        ):
            companions.append(
                f"completion_length {num(length.shape.start.value)} → {num(length.shape.end.value)} "
                f"with clipped_ratio {num(clipped.level)} (lengths run toward the cap)"
            )
        if len(companions) < 2:
            return None
        text = f"policy drift: reward falling ({course.describe()}) while " + "; ".join(companions)
        view = reward.view
        below = view.values < (course.start.value + course.end.value) / 2
        after = below & (view.steps > course.start.last_step)
        step = float(view.steps[np.flatnonzero(after)[0]]) if after.any() else None
        return BlowUp(text, step, course.start.value, course.end.value, certain=False)

    def _entropy_ran_off(self) -> str | None:
        """Entropy ×blow_up.entropy_factor over its early level (the lowest of its first
        points), in words; None when it did not run off."""
        rules = self.rules.blow_up
        if self.entropy is None or len(self.entropy.view) < 4:
            return None
        early = tr.median_of(jd.early_head(self.entropy.view, highest=False).values)
        level = self.entropy.level
        if not (level >= rules.entropy_factor * max(early, 1e-12) and level >= rules.entropy_floor):
            return None
        return f"entropy {num(early)} → {num(level)} (×{level / max(early, 1e-12):.0f}, medians)"

    @cached_property
    def learned(self) -> bool:
        """The run learned something it still holds: a task reward improved (or still
        rises), or, with no task reward recognised, the reward rose and did not fall back
        to its floor. A run that rose only through auxiliary rewards did not learn the task."""
        tasks = self.tasks
        if tasks:
            return any(t.improved for t in tasks) or self.task_rising
        reward, rng = self.reward, self.reward_range
        if reward is None or reward.shape is None or not reward.shape.rose:
            return False
        position = rng.position(reward.shape.end.value) if rng is not None and rng.known else None
        return not (
            position is not None
            and position <= self.rules.rewards.floor_position
            and reward.shape.declined
        )

    def events(self) -> list[Note]:
        """What the metrics did that is worth a note: the KL scale decided, the largest
        isolated KL and grad_norm spikes (read only when notes are wanted)."""
        found = [note for judgement in self.judged().values() for note in judgement.events]
        if self.kl is not None and self.kl.zone is not Zone.NA:
            caution = (self.rules.zone_bounds("kl") or ZoneBounds()).caution_above
            found.extend(jd.spikes(self.kl.view, self.rules, "kl", above=caution or 0.0))
        if self.grad_norm is not None:
            found.extend(jd.spikes(self.grad_norm.view, self.rules, "grad_norm"))
        return found

    def judged(self) -> dict[str, Judgement]:
        """Every judgement by metric name, in display order for the metric table."""
        named: dict[str, Judgement | None] = {
            "reward": self.reward,
            **{metric: getattr(self, field) for metric, field in BANDED.items()},
            **{fn.key: fn.judgement for fn in self.functions},
            "loss": self.loss,
            "grad_norm": self.grad_norm,
            **self.others,
        }
        if self.eval_reward is not None:
            # by the series it is (eval_reward, or the held-out measure of the task reward)
            named[self.eval_reward.name] = self.eval_reward
        return {name: j for name, j in named.items() if j is not None}


def find(snap: RunSnapshot, rules: Rules) -> Findings:
    """All judgements of a snapshot."""
    context = snap.context
    view = snap.get
    reward_view = view("reward")
    reward = jd.no_bands(reward_view, rules) if reward_view is not None else None
    functions = tuple(reward_functions(snap, rules))
    # reward_std is the spread within groups, not across the batch: every group tied says
    # nothing about all completions scoring the top, so it is no evidence of the range
    rng = total_range(reward_view, list(functions), rules) if reward_view is not None else None
    logged = len(reward_view) if reward_view is not None else 0
    warming_up = (logged or snap.train_steps.size) < rules.window.warmup_points
    clipped = _maybe(view("clipped_ratio"), lambda v: jd.banded(v, rules, context))
    length_view = view("completion_length")
    cap = jd.cap_of(
        context, length_view, view("completion_length_max"), rules, view("clipped_ratio")
    )
    length = jd.judge_length(length_view, clipped, cap, rules) if length_view is not None else None
    collapse = jd.length_collapse(length_view, cap, rules) if length_view is not None else None

    grad = _maybe(view("grad_norm"), lambda v: jd.judge_grad_norm(v, rules))
    kind, why = zero_spread_kind(snap, reward, rng, list(functions), rules)
    kl = _maybe(view("kl"), lambda v: jd.judge_kl(v, rules, context))
    offset = jd.kl_offset(kl, view("learning_rate"), rules) if kl is not None else None
    if kl is not None and offset is not None:
        # one judgement of the metric: the grid, the checklist and the verdicts read it
        kl = replace(kl, zone=Zone.CAUTION, reason=f"{kl.reason}; {offset}")
    eval_reward = _maybe(_eval_view(snap, functions), lambda v: jd.no_bands(v, _eval_rules(rules)))
    if (
        collapse is not None
        and not collapse.short
        and not _task_falls(reward, functions, eval_reward, rules.learning.meaningful_fraction)
    ):
        # concision, not collapse: answers shorten while the task holds or rises (docs/health.md,
        # "Length collapse")
        collapse = None
    covered = {"reward", *BANDED, "eval_reward", "loss", "grad_norm", IS_RATIO_MEAN, IS_RATIO_MIN}
    covered |= {f.key for f in functions}
    others = {
        name: jd.banded(other, rules, context)
        for name, other in snap.series.items()
        if name not in covered
    }
    return Findings(
        snap=snap,
        rules=rules,
        warming_up=warming_up,
        reward=reward,
        reward_range=rng,
        reward_std=_maybe(view("reward_std"), lambda v: _reward_std(v, rng, rules)),
        frac_zero_std=_maybe(view("frac_reward_zero_std"), lambda v: jd.banded(v, rules, context)),
        clip=_clip(snap, rules),
        kl=kl,
        kl_offset=offset,
        entropy=_maybe(view("entropy"), lambda v: _entropy(v, view("entropy_coef"), rules)),
        clipped=clipped,
        length=length,
        cap=cap,
        collapse=collapse,
        loss=_maybe(view("loss"), lambda v: jd.judge_finite(v, rules)),
        grad_norm=grad,
        grad_zero_share=jd.zero_share(grad, rules) if grad is not None else math.nan,
        eval_reward=eval_reward,
        is_ratio=_maybe(view(IS_RATIO_MEAN), lambda v: jd.no_bands(v, rules)),
        is_ratio_min=_maybe(view(IS_RATIO_MIN), lambda v: jd.no_bands(v, rules)),
        functions=functions,
        spread_kind=kind,
        spread_why=why,
        samples=Samples.of(snap.samples, rules),
        others=others,
    )


#: the phases of a course that fell
_FALLEN = (Phase.FALLING, Phase.DECLINING)


def _task_falls(
    reward: Judgement | None,
    functions: tuple[RewardFunction, ...],
    eval_reward: Judgement | None,
    fraction: float,
) -> bool:
    """The task reward (each task function, else the reward) or the eval fell, beyond its
    noise and by more than `fraction` of its scale (its observed range, or its size): what
    makes shorter answers a collapse rather than concision."""
    tasks: list[Judgement | None] = [fn.judgement for fn in functions if fn.role is Role.TASK]
    tasks = tasks or [reward]
    for judgement in (*tasks, eval_reward):
        course = judgement.shape if judgement is not None else None
        if course is None or not (course.phase in _FALLEN or course.fell):
            continue
        assert judgement is not None
        top = max(course.start.value, course.peak.value)
        scale = max(float(np.ptp(judgement.view.values)), abs(top))
        if top - course.end.value > fraction * scale:
            return True
    return False


def _eval_view(snap: RunSnapshot, functions: tuple[RewardFunction, ...]) -> SeriesView | None:
    """The eval reward, or with none logged the held-out measure of the task reward (a
    trainer of its own logs `eval_ndcg@10`, not `eval_reward`)."""
    logged = snap.get("eval_reward")
    if logged is not None:
        return logged
    for fn in functions:
        if fn.role is Role.TASK and (name := eval_counterpart(fn.fn, snap.series)) is not None:
            return snap.get(name)
    return None


def _entropy(view: SeriesView, coef: SeriesView | None, rules: Rules) -> Judgement:
    """The entropy's judgement; one held in its band by adaptive entropy control (a logged
    entropy_coef that moves) is controlled, not healthy by itself."""
    judgement = jd.judge_entropy(view, rules)
    if judgement.zone is not Zone.HEALTHY or coef is None or coef.empty:
        return judgement
    low, high = float(np.min(coef.values)), float(np.max(coef.values))
    if not high > low:
        return judgement
    return replace(
        judgement,
        zone=Zone.NA,
        reason=f"{judgement.reason}; held there by adaptive entropy control (entropy_coef "
        f"{value_range(low, high)}): controlled, not healthy by itself",
    )


def _maybe(view: SeriesView | None, judge: Callable[[SeriesView], Judgement]) -> Judgement | None:
    return judge(view) if view is not None else None


def _eval_rules(rules: Rules) -> Rules:
    """eval_ metrics are logged rarely and average many samples: fewer points make a trend."""
    trend = replace(
        rules.trend, min_points=min(rules.trend.min_points, rules.trend.eval_min_points)
    )
    return replace(rules, trend=trend)


def _reward_std(view: SeriesView, rng: RewardRange | None, rules: Rules) -> Judgement:
    """≈0 is bad; small against the reward's real range (5%) is caution."""
    bounds = rules.zone_bounds("reward_std") or ZoneBounds()
    small = None
    if rng is not None and rng.span > 0:
        span = max(rng.high, 0.0) - min(rng.low, 0.0)
        small = rules.rewards.small_std_fraction * span
        if bounds.caution_below is None or small > bounds.caution_below:
            bounds = replace(bounds, caution_below=small)
    zone, reason = jd.band_zone(view, bounds, rules)
    judgement = jd.base_judgement(view, rules, zone, reason)
    if zone is Zone.BAD:
        # the share and its k/n are over the one window judged (not a window of it)
        zero = bounds.bad_below if bounds.bad_below is not None else 0.0
        share = float(np.mean(judgement.values < zero))
        reason = f"≈0 (< {num(zero)}) on {judgement.window.share(share)}"
    elif zone is Zone.CAUTION and small is not None:
        reason = f"small: < {num(small)} ({pct(rules.rewards.small_std_fraction)} of the reward range) — {reason}"
    return replace(judgement, reason=reason)


def _clip(snap: RunSnapshot, rules: Rules) -> Judgement | None:
    """clip_ratio under the context rule: n/a on-policy (0 by construction), unknown when
    the context does not say and every value is 0, judged on the re-use steps (the lines
    without reward keys) when off-policy; non-zero values prove some updates off-policy."""
    view = snap.get("clip_ratio")
    if view is None:
        return None
    if view.empty:
        return jd.base_judgement(
            view, rules, Zone.UNKNOWN, f"only NaN/Inf logged ({view.nonfinite_steps.size} values)"
        )
    off_policy = snap.context.off_policy
    nonzero = any(
        (other := snap.get(name)) is not None and bool(np.any(other.values != 0))
        for name in ("clip_ratio", "clip_ratio_low", "clip_ratio_high")
    )
    all_zero = {
        False: (Zone.NA, "on-policy (num_iterations 1): 0 by construction"),
        None: (Zone.UNKNOWN, "all 0: expected on-policy, but num_iterations is not known"),
    }
    if not nonzero and off_policy in all_zero:
        return jd.base_judgement(view, rules, *all_zero[off_policy])
    reward = snap.get("reward")
    judged = view
    if reward is not None and not reward.empty:
        without_reward = ~np.isin(view.steps, reward.steps)
        reused = np.count_nonzero(without_reward)
        # num_iterations k makes (k-1)/k of the lines re-use lines: a few lines without a
        # reward (validation steps cut short, a paste) are not that
        if reused >= rules.window.points // 2 and reused * 3 >= view.steps.size:
            judged = replace(
                view, steps=view.steps[without_reward], values=view.values[without_reward]
            )
    judgement = jd.band_judgement(judged, rules.zone_bounds("clip_ratio") or ZoneBounds(), rules)
    suffix = " (re-use steps only)" if judged is not view else ""
    if nonzero and off_policy is not True:
        suffix += "; non-zero values prove some updates are off-policy"
    return replace(judgement, reason=judgement.reason + suffix)
