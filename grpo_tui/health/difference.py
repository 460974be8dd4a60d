"""Is run B better than run A, or is that seed noise: the difference of two runs' task
reward (and eval) over the steps both ran, with an interval from each run's own noise.

The one statistic every comparison surface quotes (the board's comparison screen,
`check A B --compare` text and JSON); docs/health.md, "Two runs compared", says how it is
read.

- **Which reward.** The task reward the diagnosis judges (health/rewards.py: the first
  reward function whose role is the task, else the total `reward`), the same key in both
  runs where both log it. When the runs' task rewards are different keys, or the same
  total of different reward functions (the functions logged, or the run's reward_funcs /
  reward_weights), the comparison is made all the same and said to be across different
  rewards. The eval reward likewise (`eval_reward`, else the task function's held-out
  measure), where both runs log one.
- **Which steps.** The span both runs logged the series over: from the later first step
  to the earlier last step. Each run's level is the mean of its points there, whatever
  its logging stride.
- **The interval.** Each level's standard error is the course's (health/course.py): the
  noise of one point around the local trend, with its lag-1 autocorrelation, so that n
  autocorrelated points count as n (1 − ρ) / (1 + ρ) independent ones. The difference's
  error is the two combined; its degrees of freedom are Welch-Satterthwaite's from the
  two noises' own; the half-width is Student's t at Φ(`course_z`) (rules.trend) times
  the error: a two-sided 98 % interval, each side the 1 % a course word is claimed at.
  "Beyond noise" is the interval leaving 0 out, so two runs of one setting are called
  apart by chance at about 2 % of comparisons (bench/compare_noise.py measures it on the
  simulator's seeds).
- **More steps would tell.** If the difference stayed where it is and each run's noise
  too, the error shrinks as 1/√(effective points): the runs need (t × error / |difference|)²
  times the points they share, that many times the shared span in steps. A difference
  that would need more than `HOPELESS` times the span is about 0 against the noise: no
  number of steps would tell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np

from grpo_tui.health.course import (
    MAX_RHO,
    NOISE_PIECE_POINTS,
    Noise,
    measure_noise,
    t_quantile,
)
from grpo_tui.health.rewards import REWARD_FN, Role, eval_counterpart, reward_functions
from grpo_tui.health.rules import Rules
from grpo_tui.health.series import RunSnapshot, SeriesView
from grpo_tui.numbers import format_step

#: the total reward's key (what the diagnosis judges when no function is the task)
TOTAL = "reward"
#: the eval reward's key (findings._eval_view reads the same, then a task's held-out measure)
EVAL = "eval_reward"
#: a difference that would need more than this many times the shared span to tell is
#: about 0 against the noise: "no number of steps would tell"
HOPELESS = 100.0


@dataclass(frozen=True, slots=True)
class Side:
    """One run's level over the shared steps: the mean of its points there."""

    #: the run's name as the surface calls it
    run: str
    #: the metric's key ("reward", "rewards/accuracy/mean", "eval_reward")
    key: str
    level: float
    #: standard error of `level` (the course's: noise and autocorrelation allowed for)
    error: float
    points: int
    noise: Noise

    @property
    def effective(self) -> float:
        """Independent points the run's points here are worth."""
        return self.noise.effective(self.points)


@dataclass(frozen=True, slots=True)
class Difference:
    """Run B's level minus run A's over the steps both logged, with its interval."""

    #: what is compared, in words: "task reward", "eval reward"
    what: str
    a: Side
    b: Side
    first_step: float
    last_step: float
    #: the two runs' series are not the same reward (other keys, other reward functions)
    across_rewards: bool
    #: Student's t the half-width is built with, its degrees of freedom, the confidence
    quantile: float
    df: float
    confidence: float
    #: the fewest points a run may have in the span for a comparison to be made
    min_points: int

    @property
    def change(self) -> float:
        return self.b.level - self.a.level

    @property
    def error(self) -> float:
        return math.hypot(self.a.error, self.b.error)

    @property
    def half_width(self) -> float:
        return self.quantile * self.error

    @property
    def low(self) -> float:
        return self.change - self.half_width

    @property
    def high(self) -> float:
        return self.change + self.half_width

    @property
    def beyond_noise(self) -> bool:
        """The interval leaves 0 out (a difference with no noise at all: any difference)."""
        scale = max(abs(self.a.level), abs(self.b.level), 1e-12)
        return abs(self.change) > max(self.half_width, 1e-9 * scale)

    @property
    def span(self) -> str:
        if self.first_step == self.last_step:
            return f"step {format_step(self.first_step)}"
        return f"steps {format_step(self.first_step)}–{format_step(self.last_step)}"

    @property
    def factor(self) -> float:
        """How many times the shared points tell the current difference at this noise:
        (t × error / |difference|)², the error shrinking as 1/√(effective points);
        below 1 when it is beyond noise already, infinite for a difference of 0."""
        if self.change == 0:
            return math.inf if self.half_width > 0 else 0.0
        return (self.half_width / abs(self.change)) ** 2

    @property
    def hopeless(self) -> bool:
        """Not beyond noise, and about 0 against it: no number of steps would tell."""
        return not self.beyond_noise and self.factor > HOPELESS

    @property
    def shared_steps(self) -> float:
        """The steps the shared span covers: (n − 1) strides between its points, and one
        more for a point's own share."""
        width = self.last_step - self.first_step
        stride = width / max(min(self.a.points, self.b.points) - 1, 1)
        return width + (stride if width > 0 else 1.0)

    @property
    def steps_to_tell(self) -> int | None:
        """About how many shared steps tell this difference at this noise, if it stays
        where it is (None: no number would, `hopeless`)."""
        if self.hopeless:
            return None
        # never fewer than the comparison's fewest points at the runs' sparser stride
        stride = self.shared_steps / max(min(self.a.points, self.b.points), 1)
        return _round_steps(max(self.shared_steps * self.factor, self.min_points * stride))

    @property
    def more_steps(self) -> int | None:
        """About how many more shared steps would tell (None: beyond noise already, or
        no number of steps would)."""
        if self.beyond_noise or self.hopeless:
            return None
        return max(1, _round_steps(self.shared_steps * (self.factor - 1.0)))

    def amount(self) -> str:
        """The difference and its half-width, to the error's precision: "0.04 ± 0.03"."""
        places = _places(self.half_width)
        return f"{_fixed(abs(self.change), places)} ± {_fixed(self.half_width, places)}"

    def relation(self, labels: tuple[str, str] | None = None) -> str:
        """B against A in words: "B above A by 0.04 ± 0.03" (`labels`: what to call the
        two runs instead of their names, as a screen that numbers them does)."""
        a, b = labels or (self.a.run, self.b.run)
        places = _places(self.half_width)
        if float(_fixed(abs(self.change), places)) == 0:
            return f"{b} level with {a} (0 ± {_fixed(self.half_width, places)})"
        word = "above" if self.change > 0 else "below"
        return f"{b} {word} {a} by {self.amount()}"

    def verdict(self) -> str:
        """Beyond noise or not, and what more steps would do."""
        if self.beyond_noise:
            return f"beyond noise (about {self.steps_to_tell} steps at this noise tell it)"
        if self.hopeless:
            return "not beyond noise; no number of steps at this noise would tell"
        steps = self.more_steps
        return f"not beyond noise; about {steps} more steps at this noise would tell"

    def describe(self, labels: tuple[str, str] | None = None) -> str:
        """The one sentence every surface quotes (`labels`: see `relation`)."""
        across = " (across different rewards)" if self.across_rewards else ""
        return f"{self.what}{across}: {self.relation(labels)} over {self.span}: {self.verdict()}"

    @property
    def detail(self) -> str:
        """How the numbers were read (for `check --verbose` and the docs' example)."""
        sides = "; ".join(
            f"{side.run}: {_g(side.level)} mean of {side.points} points ({side.key}), noise "
            f"{_g(side.noise.sigma)} per point, lag-1 autocorrelation {_g(side.noise.rho)}, "
            f"worth {side.effective:.0f} independent points, standard error {_g(side.error)}"
            for side in (self.a, self.b)
        )
        return (
            f"{sides}; a {100 * self.confidence:.0f} % interval: Student's t {_g(self.quantile)} "
            f"({self.df:.1f} degrees of freedom) × standard error {_g(self.error)}"
        )


@dataclass(frozen=True, slots=True)
class Undecided:
    """A comparison that cannot be made, and why ("the runs share 3 steps...")."""

    what: str
    a: str
    b: str
    #: why, with `{a}` and `{b}` where the runs are named (filled in by `reason`)
    template: str

    def reason(self, labels: tuple[str, str] | None = None) -> str:
        a, b = labels or (self.a, self.b)
        return self.template.format(a=a, b=b)

    def describe(self, labels: tuple[str, str] | None = None) -> str:
        return f"{self.what}: {self.reason(labels)}"


Reading = Difference | Undecided


def task_key(snap: RunSnapshot, rules: Rules) -> str | None:
    """The series the diagnosis judges as the task reward: the first task function's mean,
    else the total reward (None: the run logs neither)."""
    for fn in reward_functions(snap, rules):
        if fn.role is Role.TASK:
            return fn.key
    view = snap.get(TOTAL)
    return TOTAL if view is not None and not view.empty else None


def eval_key(snap: RunSnapshot, rules: Rules) -> str | None:
    """The eval reward: `eval_reward`, else the held-out measure of a task function
    (findings._eval_view, the one the diagnosis judges)."""
    view = snap.get(EVAL)
    if view is not None and not view.empty:
        return EVAL
    for fn in reward_functions(snap, rules):
        if fn.role is Role.TASK and (name := eval_counterpart(fn.fn, snap.series)) is not None:
            return name
    return None


def _functions(snap: RunSnapshot) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """What makes up a run's total: the functions it logs, and those its settings name."""
    logged = tuple(sorted(m.group("fn") for name in snap.series if (m := REWARD_FN.match(name))))
    context = snap.context
    weights = "" if context.reward_weights is None else repr(list(context.reward_weights))
    return logged, tuple(context.reward_funcs), weights


def _keys(a: RunSnapshot, b: RunSnapshot, rules: Rules) -> tuple[str, str] | None:
    """The task reward's key in each run: one both log where possible."""
    ka, kb = task_key(a, rules), task_key(b, rules)
    if ka is None or kb is None:
        return None
    if ka != kb:
        # one run's task function that the other logs too (where its role is not the task:
        # it is not evaluated there) is the same series; else the total both log
        functions = [key for key in (ka, kb) if key != TOTAL]
        for key in (*functions, TOTAL):
            if _logged(a.get(key)) and _logged(b.get(key)):
                return key, key
    return ka, kb


def _logged(view: SeriesView | None) -> bool:
    return view is not None and not view.empty


def _within(view: SeriesView, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    keep = (view.steps >= lo) & (view.steps <= hi)
    return view.steps[keep], view.values[keep]


def difference(
    what: str,
    names: tuple[str, str],
    views: tuple[SeriesView | None, SeriesView | None],
    rules: Rules,
    *,
    across_rewards: bool = False,
    min_points: int | None = None,
    one_prompt_set: bool = False,
) -> Reading:
    """Run B's series (views[1]) against run A's over the steps both logged it.
    `one_prompt_set`: every point re-scores one fixed set of prompts (an eval), so a
    series too short to measure its autocorrelation is taken at the largest the course
    allows (`_unmeasured`)."""
    need = rules.trend.min_points if min_points is None else min_points
    for name, other, view in zip(("{a}", "{b}"), ("{b}", "{a}"), views, strict=True):
        if view is None or view.empty:
            return Undecided(what, *names, f"{name} logs no {what} to set beside {other}'s")
    va, vb = views
    assert va is not None and vb is not None
    lo = max(float(va.steps.min()), float(vb.steps.min()))
    hi = min(float(va.steps.max()), float(vb.steps.max()))
    if hi < lo:
        return Undecided(
            what,
            *names,
            f"the runs share no steps ({{a}} {_span(va)}, {{b}} {_span(vb)})",
        )
    (sa, xa), (sb, xb) = _within(va, lo, hi), _within(vb, lo, hi)
    if min(xa.size, xb.size) < need:
        shared = (
            f"step {format_step(lo)}" if lo == hi else f"steps {format_step(lo)}–{format_step(hi)}"
        )
        return Undecided(
            what,
            *names,
            f"the runs share {shared} ({xa.size} and {xb.size} points): too few to tell "
            f"(at least {need} points each)",
        )
    sides = []
    for name, key, steps, values in ((names[0], va.name, sa, xa), (names[1], vb.name, sb, xb)):
        noise = measure_noise(steps, values)
        if one_prompt_set:
            noise = _unmeasured(noise, values.size)
        sides.append(
            Side(name, key, float(np.mean(values)), noise.error(values.size), values.size, noise)
        )
    a, b = sides
    df = _welch(a, b)
    z = rules.trend.course_z
    confidence = 1.0 - math.erfc(z / math.sqrt(2.0))  # two-sided: each side 1 − Φ(z)
    return Difference(what, a, b, lo, hi, across_rewards, t_quantile(z, df), df, confidence, need)


def _unmeasured(noise: Noise, points: int) -> Noise:
    """An eval's noise with its autocorrelation at MAX_RHO when its points are too few to
    measure it (fewer than two noise pieces; measure_noise then says 0, "unknown"). An
    eval re-scores one fixed set of prompts: its points share that set's luck (which
    prompts, often drawn by the run's own seed), an offset between two runs that no
    run's own points show. On the simulator's seeds the points of a 6-point eval are
    correlated about 0.45 with each other; taken as independent, same-setting pairs were
    called apart at 6-12 %. The degrees of freedom stay those σ was measured with."""
    if points >= 2 * NOISE_PIECE_POINTS:
        return noise
    return Noise(noise.sigma, MAX_RHO, noise.df)


def _welch(a: Side, b: Side) -> float:
    """Welch-Satterthwaite's degrees of freedom of the two errors combined."""
    va, vb = a.error**2, b.error**2
    denominator = va**2 / a.noise.df + vb**2 / b.noise.df
    if not denominator > 0:
        return max(1.0, min(a.noise.df, b.noise.df))
    return max(1.0, (va + vb) ** 2 / denominator)


def compare_rewards(
    a: RunSnapshot, b: RunSnapshot, names: tuple[str, str], rules: Rules
) -> list[Reading]:
    """B against A: the task reward, then the eval reward where both runs log one."""
    readings: list[Reading] = []
    keys = _keys(a, b, rules)
    if keys is None:
        missing, other = ("{a}", "{b}") if task_key(a, rules) is None else ("{b}", "{a}")
        readings.append(
            Undecided("task reward", *names, f"{missing} logs no reward to set beside {other}'s")
        )
    else:
        ka, kb = keys
        across = ka != kb or (ka == TOTAL and _functions(a) != _functions(b))
        readings.append(
            difference("task reward", names, (a.get(ka), b.get(kb)), rules, across_rewards=across)
        )
    ea, eb = eval_key(a, rules), eval_key(b, rules)
    if ea is not None and eb is not None:
        fewer = min(rules.trend.min_points, rules.trend.eval_min_points)
        readings.append(
            difference(
                "eval reward",
                names,
                (a.get(ea), b.get(eb)),
                rules,
                across_rewards=ea != eb,
                min_points=fewer,
                one_prompt_set=True,
            )
        )
    return readings


def _span(view: SeriesView) -> str:
    first, last = float(view.steps.min()), float(view.steps.max())
    if first == last:
        return f"step {format_step(first)}"
    return f"steps {format_step(first)}–{format_step(last)}"


def _places(error: float) -> int:
    """Decimal places that show `error` to one significant digit (two when it starts with 1)."""
    if not math.isfinite(error) or error <= 0:
        return 3
    exponent = math.floor(math.log10(error))
    leading = error / 10**exponent
    digits = 2 if leading < 2 else 1
    return max(0, digits - 1 - exponent)


def _fixed(value: float, places: int) -> str:
    """`value` to `places` decimals (half to even, as the error is shown)."""
    quantum = Decimal(1).scaleb(-places)
    return str(Decimal(repr(value)).quantize(quantum, rounding=ROUND_HALF_EVEN))


def _round_steps(steps: float) -> int:
    """Steps to two significant digits: a forecast, not a count."""
    if steps < 10:
        return max(1, math.ceil(steps))
    exponent = math.floor(math.log10(steps)) - 1
    return int(round(steps / 10**exponent) * 10**exponent)


def _g(value: float) -> str:
    return f"{value:.3g}"
