"""The rewards: their real range, their roles, what each reward function does.

"Reward at 73% of its logged range" means nothing when the whole run sat near the top.
The range is read from what the values say:

- a highest batch mean the reward sits at exactly on a good share of the points (or with a
  batch std of 0 there: every completion of the batch scored it) is the real top;
  likewise the bottom;
- batch means that all lie in [0, 1] are a 0–1 reward (an accuracy whose means sit at 0.93
  is near its top even if the run never left 0.85–0.95);
- otherwise the observed minimum and maximum.

Reward functions have a role from their name (task: correctness; auxiliary: format,
length, json...; patterns in the rules table). A function at 0 on every completion for the
whole run is a dead reward: a caution about that function, not a verdict on the run.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from grpo_tui.context import RunContext
from grpo_tui.health.course import Course, Phase
from grpo_tui.health.judges import Judgement, no_bands, window_of
from grpo_tui.health.rules import Rules
from grpo_tui.health.series import RunSnapshot, SeriesView
from grpo_tui.health.verdict import num, pct, value_range

#: per-function reward means (adapters map legacy `rewards/<fn>` onto this)
REWARD_FN = re.compile(r"^rewards/(?P<fn>[^/]+)/mean$")


class Role(enum.Enum):
    TASK = "task"
    AUX = "aux"
    OTHER = "other"


def _words(name: str) -> list[str]:
    """Lower-case words of a name: split at _ - / . and camelCase humps."""
    return [w.lower() for w in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", name)]


def eval_counterpart(fn: str, names: Iterable[str]) -> str | None:
    """The eval series that measures reward function `fn` on held-out data: an `eval_…`
    name whose words begin with the function's (`eval_ndcg@10` for `ndcg`)."""
    words = _words(fn)
    for name in names:
        if not name.startswith("eval_") or name == "eval_reward":
            continue
        measured = _words(name.removeprefix("eval_"))
        # (eval_rewards/<fn>/mean is not one: ms-swift mirrors every function on eval, so
        # its presence says nothing about which function is the task)
        # eval_ndcg@10 for ndcg, and eval_accuracy for accuracy_reward
        shorter = min(len(words), len(measured))
        if shorter and measured[:shorter] == words[:shorter] and measured[0] != "reward":
            return name
    return None


def reward_role(name: str, rules: Rules, *, evaluated: bool = False) -> Role:
    """The role of a reward function from its name and the rules' patterns (a word of the
    name starts with a pattern; "reasoning_steps"-style patterns match across words; task
    patterns win). A function the run also evaluates on held-out data (`evaluated`) is
    the task when its name does not say otherwise: a run evaluates what it is for."""
    joined = "_".join(_words(name))

    def matches(patterns: Iterable[str]) -> bool:
        spelled = ("_".join(_words(pattern)) for pattern in patterns)
        return any(words and re.search(r"(?:^|_)" + re.escape(words), joined) for words in spelled)

    if matches(rules.rewards.task_patterns):
        return Role.TASK
    if matches(rules.rewards.aux_patterns):
        return Role.AUX
    return Role.TASK if evaluated else Role.OTHER


@dataclass(frozen=True, slots=True)
class RewardRange:
    """Where a reward's values can lie, and how that was read."""

    low: float
    high: float
    #: in words: "a 0–1 reward", "top 2: every completion of a batch scored it", "observed range"
    how: str
    #: the top is known (pinned, or a 0–1 reward), not just the highest value seen so far: a
    #: rising reward always sits at the top of what it has seen
    known: bool = False

    @property
    def span(self) -> float:
        return self.high - self.low

    def position(self, value: float) -> float | None:
        """0 at the bottom, 1 at the top (None for a range of no width)."""
        if not self.span > 1e-12 or not math.isfinite(value):
            return None
        return (value - self.low) / self.span

    def reaches(self, value: float, share: float) -> bool:
        """`value` sits at `share` of the range or above it, and the top is known."""
        position = self.position(value)
        return self.known and position is not None and position >= share

    @property
    def text(self) -> str:
        return f"{value_range(self.low, self.high)} ({self.how})"


def _at(
    values: np.ndarray, target: float, std: SeriesView | None, steps: np.ndarray
) -> tuple[int, bool]:
    """How many points sit exactly at `target`, and whether at one of them the batch std
    was 0 (every completion scored exactly that)."""
    at = np.abs(values - target) <= 1e-9 * max(1.0, abs(target))
    count = int(at.sum())
    tied = False
    if count and std is not None and not std.empty:
        tied = bool(np.isin(steps[at], std.steps[std.values <= 1e-12]).any())
    return count, tied


def reward_range(
    view: SeriesView, std: SeriesView | None, rules: Rules, *, may_be_unit: bool = True
) -> RewardRange | None:
    """The real range of a reward (see the module doc). `may_be_unit` False: values in
    [0, 1] so far do not make it a 0–1 reward (a sum of several functions)."""
    if view.empty:
        return None
    values = view.values
    lo, hi = float(values.min()), float(values.max())
    repeats = max(2, math.ceil(rules.rewards.pinned_share * values.size))
    top_count, top_tied = _at(values, hi, std, view.steps)
    bottom_count, bottom_tied = _at(values, lo, std, view.steps)
    # means of a discrete reward over a batch are multiples of 1/batch: a few repeats of
    # the highest are no proof of a top there; sitting there on a good share of the points
    # is, and so is a batch that all scored it (std 0)
    unit = may_be_unit and lo >= 0.0 and hi <= 1.0 and hi > 0.0
    top_pinned = top_tied or (top_count >= repeats and not unit)
    bottom_pinned = bottom_tied or (bottom_count >= repeats and not unit)
    low = 0.0 if unit else lo
    high = 1.0 if unit else hi

    def pinned(end: str, value: float, tied: bool, count: int) -> str:
        return f"{end} {num(value)}: {'every completion of a batch scored it' if tied else f'logged {count} times'}"

    hows = []
    if top_pinned:
        high = hi
        hows.append(pinned("top", hi, top_tied, top_count))
    elif unit:
        hows.append("a 0–1 reward")
    if bottom_pinned and not unit:
        hows.append(pinned("bottom", lo, bottom_tied, bottom_count))
    return RewardRange(
        low, high, "; ".join(hows) if hows else "observed range", known=top_pinned or unit
    )


@dataclass(frozen=True)
class RewardFunction:
    """One reward function's course over the run."""

    fn: str
    key: str
    role: Role
    judgement: Judgement
    range: RewardRange | None
    #: 0 (or its one constant value) on every point of the whole run
    dead: bool
    #: recent level at the top of its range, with little spread
    at_top: bool
    #: recent level at the bottom of its range, with no spread
    at_floor: bool
    #: it rose clearly at some point and kept part of it (learned, at least partly)
    improved: bool
    #: it climbed to the top during the run (an earlier stretch clearly lower)
    rose_to_top: bool
    #: its weight in the trainer's total (the run's reward_weights), None when not known
    weight: float | None = None

    @property
    def shape(self) -> Course | None:
        return self.judgement.shape

    @property
    def level(self) -> float:
        return self.judgement.level

    @property
    def stalled(self) -> bool:
        """At its floor, or, with enough points, no clear improvement: never clearly improved
        and its late level within two standard errors of its early one. A rise not yet clear
        in the noise is not "stalled": absence of evidence is not evidence of absence."""
        return self._within(2.0)

    @property
    def flat(self) -> bool:
        """At its floor, or flat in its course's own words: within one standard error (a move
        of more than that, not beyond noise, is "not yet beyond noise", not flat)."""
        return self._within(1.0, enough=0)

    def _within(self, errors: float, *, enough: int | None = None) -> bool:
        if self.at_floor:
            return True
        course = self.shape
        if enough is None:
            enough = 2 * self.judgement.rules.trend.min_points  # points to tell if it improved
        if course is None or course.points < enough or self.improved:
            return False
        if course.phase is Phase.WARMUP or course.end.first_step <= course.start.last_step:
            return False  # too few points for two levels: no course to read
        # within two standard errors: a flat reward drifts past one often enough by chance
        # that a verdict resting on "stalled" would come and go with it
        return course.change <= errors * course.error


#: a logged total is a weighted sum of the function means when the median gap between the
#: two is within this share of its size: logs round to 4–8 digits, and means over the same
#: completions add up exactly (a mean of a sum is the sum of the means)
_SUM_FITS = 1e-3


def _weights_of(functions: list[RewardFunction]) -> list[float] | None:
    """The functions' weights when every one is known and some weight is not 1."""
    weights = [fn.weight for fn in functions]
    if not functions or any(w is None for w in weights) or all(w == 1.0 for w in weights):
        return None
    return [w for w in weights if w is not None]


def _values_at(view: SeriesView, steps: np.ndarray) -> np.ndarray:
    """A series' value at each of `steps` (all of which it logged; the last of a step
    logged twice, as a resumed run does)."""
    order = np.argsort(view.steps, kind="stable")
    sorted_steps = view.steps[order]
    return view.values[order][np.searchsorted(sorted_steps, steps, side="right") - 1]


def _fits(total: SeriesView, functions: list[RewardFunction], weights: list[float]) -> bool | None:
    """Whether the logged total is this weighted sum of the function means on the steps all
    of them logged; None when there is no such step (the values cannot say). TRL logged the
    plain sum before 1.0 (PR #5353) while its advantages used the weights: the values tell
    which sum a log holds, and catch weights matched to the wrong functions."""
    steps = total.steps
    for fn in functions:
        steps = np.intersect1d(steps, fn.judgement.view.steps)
    if steps.size == 0:
        return None
    predicted = sum(w * _values_at(fn.judgement.view, steps) for w, fn in zip(weights, functions))
    actual = _values_at(total, steps)
    gap = float(np.median(np.abs(actual - predicted)))
    return gap <= _SUM_FITS * max(1.0, float(np.median(np.abs(actual))))


def _sum_of(ranges: list[RewardRange], weights: list[float]) -> tuple[float, float]:
    """The range of a weighted sum: a negative weight turns a function's top into the
    bottom of its share."""
    low = sum(min(w * r.low, w * r.high) for w, r in zip(weights, ranges))
    high = sum(max(w * r.low, w * r.high) for w, r in zip(weights, ranges))
    return low, high


def total_range(
    view: SeriesView, functions: list[RewardFunction], rules: Rules
) -> RewardRange | None:
    """The range of the total reward. It is the sum of the functions' ranges, weighted by
    the run's reward weights when they are known: when every function's range is known,
    the logged total is that sum of the function means (where the values can tell) and it
    stays inside the summed range, that is the range; otherwise it is read from the total
    alone, and values that have stayed in [0, 1] so far make neither a sum of two rewards
    nor a weighted reward a 0–1 reward."""
    weights = _weights_of(functions)
    several = len(functions) >= 2
    own = reward_range(view, None, rules, may_be_unit=not several and weights is None)
    if own is None or own.known or not (several or weights is not None):
        return own
    known = [fn.range for fn in functions if fn.range is not None and fn.range.known]
    if len(known) != len(functions):
        return own
    values = view.values
    # the weighted sum first, then the plain sum (TRL < 1.0 logs it): with weights, a sum
    # the values contradict is not taken (a function returning None on some completions
    # breaks the equality, and then neither is); without, the plain sum as it always was
    for candidate in (weights, [1.0] * len(functions)):
        if candidate is None:
            continue
        if weights is not None and _fits(view, functions, candidate) is False:
            continue
        low, high = _sum_of(known, candidate)
        margin = 1e-9 * max(1.0, abs(high), abs(low))
        if float(values.min()) < low - margin or float(values.max()) > high + margin:
            continue  # weighted otherwise: this sum is not its range
        if candidate is weights:
            shown = ", ".join(num(w) for w in candidate)
            how = f"the weighted sum of {len(functions)} functions' ranges (reward weights {shown})"
        elif several:
            how = f"the sum of {len(functions)} functions' ranges"
        else:
            how = f"the range of its one function {functions[0].fn} (the log holds it unweighted)"
        return RewardRange(low, high, how, known=True)
    return own


def function_weights(context: RunContext, names: list[str]) -> list[float] | None:
    """The weight of each logged reward function (in `names`' order); None without one
    weight per function. By name when the run's reward_funcs name every function (compared
    without case and punctuation: ms-swift's `length_bonus` logs as `LengthBonus`), else by
    position: TRL and ms-swift log their functions in the order of their weights, and the
    store keeps the order metrics first appeared in (a wrong match shows as a total that is
    not the weighted sum, see `_fits`)."""
    weights = context.reward_weights
    if weights is None or len(weights) != len(names):
        return None

    def key(name: str) -> str:
        return re.sub(r"[^0-9a-z]", "", name.lower())

    given = [key(name) for name in context.reward_funcs]
    logged = [key(name) for name in names]
    if len(given) == len(weights) == len(set(given)) and sorted(given) == sorted(logged):
        return [weights[given.index(name)] for name in logged]
    return list(weights)


def reward_functions(snap: RunSnapshot, rules: Rules) -> list[RewardFunction]:
    """Every per-function reward of the run, with its role, range and facts."""
    found = []
    for name, view in snap.series.items():
        match = REWARD_FN.match(name)
        if match is None or view.empty:
            continue
        fn = match.group("fn")
        std = snap.get(f"rewards/{fn}/std")
        judgement = no_bands(view, rules)
        rng = reward_range(view, std, rules)
        if std is not None and not std.empty:
            tied = window_of(std, rules).values < rules.rewards.function_zero_std
            zero_spread = float(np.mean(tied)) >= rules.window.sustained
        else:
            recent = judgement.values  # the recent window
            zero_spread = recent.size >= 2 and float(np.ptp(recent)) <= 1e-12
        all_same = float(np.ptp(view.values)) <= 1e-12
        dead = all_same and len(view) >= 2 and abs(float(view.values[0])) <= 1e-12
        level = judgement.level
        position = rng.position(level) if rng is not None else None
        at_top = rng is not None and rng.reaches(level, rules.rewards.saturation_position)
        at_floor = (
            zero_spread and position is not None and position <= rules.rewards.floor_position
        ) or dead
        shape = judgement.shape
        # learned, at least partly: some stretch clearly above the start, and the end has not
        # fallen back to where it began
        role = reward_role(fn, rules, evaluated=eval_counterpart(fn, snap.series) is not None)
        # a task's rise over a known range counts from the amount that matters (5 % of it):
        # a 0/1 accuracy at 0 that a rare success lifts to 4e-4 rose beyond its noise (none)
        # but learned nothing (a bonus is weighted in the total: any clear rise of it counts)
        meaningful = (
            rules.learning.meaningful_fraction * rng.span
            if role is Role.TASK and rng is not None and rng.known
            else 0.0
        )
        improved = (
            shape is not None
            and shape.phase is not Phase.WARMUP
            and shape.rose
            and shape.end.value - shape.start.value > math.hypot(shape.end.error, shape.start.error)
            and shape.end.value - shape.start.value >= meaningful
        )
        rose_to_top = (
            at_top
            and shape is not None
            and any(shape.above(shape.end, s) for s in shape.stretches[:-1])
        )
        found.append(
            RewardFunction(
                fn,
                name,
                role,
                judgement,
                rng,
                dead,
                at_top,
                at_floor,
                improved,
                rose_to_top,
            )
        )
    weights = function_weights(snap.context, [fn.fn for fn in found])
    if weights is not None:
        found = [replace(fn, weight=w) for fn, w in zip(found, weights, strict=True)]
    return found


def function_note(fn: RewardFunction) -> str:
    """Words for a dead function, or one at its floor (the notes name no other)."""
    if fn.dead:
        points = fn.shape.points if fn.shape is not None else 0
        return f"{fn.fn} is 0 on every completion for the whole run ({points} points): a dead reward, it gives no learning signal"
    window = fn.judgement.window
    return f"{fn.fn} sits at its floor {num(fn.level)} on every completion ({window}): it gives no learning signal"


# -- zero spread: all fail or all pass ---------------------------------------------------------


class SpreadKind(enum.Enum):
    """Why groups have no reward spread."""

    ALL_FAIL = "all fail"
    ALL_PASS = "all pass"
    MIXED = "mixed"
    UNKNOWN = "unknown"


def zero_spread_kind(
    snap: RunSnapshot,
    reward: Judgement | None,
    reward_rng: RewardRange | None,
    functions: list[RewardFunction],
    rules: Rules,
) -> tuple[SpreadKind, str]:
    """All-fail or all-pass: from the logged groups first, then the task reward functions,
    then the reward's place in its real range."""
    samples = snap.samples
    if samples is not None and samples.steps:
        recent = samples.steps[-rules.samples.compare_steps :]
        fail = float(np.mean([s.zero_spread_all_fail for s in recent]))
        passed = float(np.mean([s.zero_spread_all_pass for s in recent]))
        if fail + passed > 0:
            why = f"logged groups: {pct(fail)} all fail, {pct(passed)} all pass"
            dominance = rules.samples.zero_spread_dominance
            if fail >= dominance * passed:
                return SpreadKind.ALL_FAIL, why
            if passed >= dominance * fail:
                return SpreadKind.ALL_PASS, why
            return SpreadKind.MIXED, why
    judged = [f for f in functions if f.role is Role.TASK] or functions
    label = "task " if judged is not functions else ""
    if judged and all(f.at_floor for f in judged):
        return SpreadKind.ALL_FAIL, f"every {label}reward function is at its floor"
    if judged and all(f.at_top for f in judged):
        return SpreadKind.ALL_PASS, f"every {label}reward function is at its top"
    if reward is not None and reward_rng is not None:
        position = reward_rng.position(reward.level)
        if position is not None and reward_rng.known:
            why = f"reward {num(reward.level)} (recent median) at {pct(position)} of its range {reward_rng.text}"
            if position <= rules.rewards.floor_position:
                return SpreadKind.ALL_FAIL, why
            if position >= rules.rewards.top_position:
                return SpreadKind.ALL_PASS, why
            return SpreadKind.MIXED, why
    if reward is not None and abs(reward.level) <= 1e-12:
        return SpreadKind.ALL_FAIL, "reward is exactly 0"
    return SpreadKind.UNKNOWN, "whether groups all fail or all pass is not known"
