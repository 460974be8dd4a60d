"""How much a series improved from its start, with a confidence interval that accounts
for the run's own noise and autocorrelation.

"Not learning" is a claim about what did not happen: the reward did not rise by a
meaningful amount. A flat-looking stretch median over a short window cannot carry that
claim (a slow rise looks flat for a long time), so the claim needs the rise to be bounded:
the upper end of a confidence interval on (recent level − early level) below the amount
that would matter.

The levels are the means of the first and the last third of the points. Batch rewards are
autocorrelated (a curriculum, a learning-rate schedule, a reward model drifting): the
standard error of each third's mean uses its effective sample size n (1 − ρ) / (1 + ρ),
ρ the lag-1 autocorrelation of the third around its mean (a trend inside the third raises
ρ and so widens the interval: the error errs towards "too early to say"). The quantile
of Student's t (Cornish–Fisher to first order) replaces the normal one for a few effective
points.

The rate it states: on a run whose reward truly rose by `amount`, the upper bound lies
below `amount` with probability 1 − Φ(z) at one moment (z = 2.33: 1 %); the steady tracker
needs the evidence at 3 judged steps in a row before a verdict enters, which lowers the
rate per run further (the moments are correlated, so not to 1 % cubed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from grpo_tui.health.verdict import Window, num

#: each part (early, recent) holds this share of the points...
PART_SHARE = 1 / 3
#: ...and at least this many
MIN_PART_POINTS = 3
#: lag-1 autocorrelation is capped here (a near random walk would leave no effective points)
MAX_RHO = 0.9


@dataclass(frozen=True, slots=True)
class PartMean:
    """The mean of one part of a series and its autocorrelation-aware standard error."""

    mean: float
    error: float
    #: effective number of independent points (n (1 − ρ) / (1 + ρ))
    effective: float
    window: Window


@dataclass(frozen=True, slots=True)
class Improvement:
    """Recent level − early level of a series, with its confidence interval."""

    early: PartMean
    recent: PartMean
    #: the quantile the interval is built with (t, from the rule's z)
    quantile: float
    #: the rule's one-sided z (the stated error rate is 1 − Φ(z))
    z: float

    @property
    def change(self) -> float:
        return self.recent.mean - self.early.mean

    @property
    def error(self) -> float:
        return math.hypot(self.early.error, self.recent.error)

    @property
    def high(self) -> float:
        """The upper end of the interval: the largest rise the data leave possible."""
        return self.change + self.quantile * self.error

    @property
    def low(self) -> float:
        return self.change - self.quantile * self.error

    def rules_out(self, amount: float) -> bool:
        """The data bound the rise below `amount`: no rise that large happened."""
        return self.high < amount

    def points_to_decide(self, amount: float) -> int | None:
        """About how many more points per part would bound the rise below `amount` if the
        change stays where it is (None: it would not, the change is that large already)."""
        room = amount - self.change
        if room <= 0 or not math.isfinite(self.error) or self.error <= 0:
            return None
        # the error shrinks as 1/√n: the parts need (q·error/room)² times their points
        factor = (self.quantile * self.error / room) ** 2
        now = min(self.early.window.points, self.recent.window.points)
        return max(1, math.ceil(now * factor) - now)

    def describe(self) -> str:
        """The change in plain words (means of the first and last thirds, the largest
        rise the data leave possible); how it was bounded is `detail`."""
        return (
            f"{num(self.early.mean)} at {self.early.window.span} → {num(self.recent.mean)} at "
            f"{self.recent.window.span}, a rise of at most {num(self.high)}"
        )

    @property
    def detail(self) -> str:
        return (
            f"means of the first and last {self.early.window.points} points; a {_one_sided(self.z)} "
            f"bound on their difference with its standard error {num(self.error)}, from "
            f"{num(self.early.effective)} and {num(self.recent.effective)} effective points "
            f"(lag-1 autocorrelation allowed for)"
        )


def _one_sided(z: float) -> str:
    miss = 0.5 * math.erfc(z / math.sqrt(2.0))
    return f"{100 * (1 - miss):.0f} %"


def lag1(values: np.ndarray) -> float:
    """Lag-1 autocorrelation around the mean, in [0, MAX_RHO] (0 for a constant series)."""
    centred = values - float(np.mean(values))
    total = float(np.dot(centred, centred))
    if values.size < 3 or total <= 0:
        return 0.0
    rho = float(np.dot(centred[:-1], centred[1:])) / total
    return min(MAX_RHO, max(0.0, rho))


def part_mean(steps: np.ndarray, values: np.ndarray) -> PartMean:
    n = int(values.size)
    rho = lag1(values)
    effective = max(1.0, n * (1 - rho) / (1 + rho))
    spread = float(np.std(values, ddof=1)) if n > 1 else 0.0
    return PartMean(
        float(np.mean(values)),
        spread / math.sqrt(effective),
        effective,
        Window(float(steps[0]), float(steps[-1]), n),
    )


def t_quantile(z: float, df: float) -> float:
    """Student's t quantile for the normal quantile z (Cornish–Fisher, first order; ≥ z)."""
    df = max(df, 1.0)
    return z + (z**3 + z) / (4.0 * df)


def improvement(steps: np.ndarray, values: np.ndarray, z: float) -> Improvement | None:
    """The series' change from its first to its last third (finite points, oldest first);
    None with fewer than two parts' worth of points."""
    steps = np.asarray(steps, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(values)
    steps, values = steps[keep], values[keep]
    n = int(values.size)
    part = max(MIN_PART_POINTS, int(n * PART_SHARE))
    if n < 2 * part:
        return None
    early = part_mean(steps[:part], values[:part])
    recent = part_mean(steps[-part:], values[-part:])
    df = min(early.effective, recent.effective) - 1.0
    return Improvement(early, recent, t_quantile(z, df), z)
