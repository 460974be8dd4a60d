"""The rules table: every threshold the health engine uses, with its defaults (docs/health.md).

One frozen `Rules` value holds them all. A user overrides any of them with a TOML file
whose sections mirror the dataclasses below (`[window]`, `[zones.kl]`, `[rewards]`, ...);
keys the table does not know are reported as warnings, never silently ignored.
The attribute docstrings are the documentation: `grpo-tui rules` prints them as comments
beside the effective values.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import math
import os
import sys
import textwrap
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

from grpo_tui.files import describe_os_error, read_regular
from grpo_tui.untrusted import toml_string

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: environment variable naming a rules file (takes precedence over the config directory)
RULES_ENV = "GRPO_TUI_RULES"

#: value a user writes in TOML to switch an optional bound off (TOML has no null)
OFF = "off"


#: How often each verdict's entering rule fires by chance on a healthy run: stated where the
#: rule is a test with a chosen error rate, else measured by bench/diagnosis.py on the
#: simulator's healthy runs (10 seeds × 1 000 steps, every logged step judged live after
#: warm-up) at its batch of 4 prompts × 8 completions and at 1 × 8, as noisy as the
#: corpus's small real runs. `grpo-tui rules` prints them.
FALSE_ALARM_RATES: dict[str, str] = {
    "not_learning": (
        "stated ≤ 1 % of moments for a run that truly rose by the meaningful amount (the "
        "bound's z 2.33, [learning]); measured 0/1920 at 4×8 and 26/1920 (1.4 %) at 1×8, "
        "in 3 of 10 seeds, each a stretch where the task scored 0 on every completion for "
        "20 points (sparse early rewards at 8 completions a step; the simulator's regime "
        "calls the whole run healthy)"
    ),
    "too_aggressive": "measured 0/1920 at 4×8 and at 1×8",
    "reward_hacking": "measured 0/1920 at 4×8 and at 1×8 (and 0 on the fast-convergence control)",
    "truncation": "measured 0/1920 at 4×8 and at 1×8",
    "length_collapse": "measured 0/1920 at 4×8 and at 1×8",
    "low_diversity": "measured 0/1920 at 4×8 and at 1×8",
    "off_policy": (
        "not measured on the simulator (it logs no off-policy keys); of the corpus's 9 runs "
        "that log a mismatch, named on the 2 whose mismatch passed ln 1.05 (the lr 1e-4 "
        "blow-up, the rho 0.5 run), at no replayed moment of the 7 others"
    ),
}


class RulesError(ValueError):
    """The rules file cannot be used at all (missing, unreadable, not TOML)."""


@dataclass(frozen=True, slots=True)
class WindowRules:
    """Which recent points a zone or trend is judged on."""

    points: int = 20
    """Judge on at least this many of the latest logged points of a metric."""
    run_fraction: float = 0.10
    """...or on this fraction of the metric's logged points when that is larger."""
    sustained: float = 0.7
    """A zone condition is "sustained" when it holds on at least this fraction of the window."""
    warmup_points: int = 10
    """Fewer train points with a reward than this: the run is "warming up" (no trend verdicts)."""


@dataclass(frozen=True, slots=True)
class TrendRules:
    """How rising / flat / falling / exploding are told apart from noise."""

    min_points: int = 8
    """Fewer finite points than this in the window: the trend is "unknown"."""
    eval_min_points: int = 4
    """The same for eval_ metrics, which are logged rarely and average many samples per point."""
    smoothing: int = 5
    """Width (points) of the rolling median that smooths the series before the slope fit."""
    max_points: int = 1000
    """Longer windows are first reduced to this many bucket medians (keeps the cost O(window))."""
    max_pairs: int = 4000
    """Theil-Sen uses every pair of points up to this many pairs, a fixed random sample beyond."""
    noise_multiple: float = 3.0
    """A trend counts only when the fitted change across the window exceeds this many standard
    errors of that change (noise sigma × sqrt(12 / points): longer windows resolve smaller
    changes)..."""
    min_change: float = 0.5
    """...and exceeds this many noise sigmas, so a trend is also visible by eye."""
    course_z: float = 2.33
    """A whole run's course rose (fell) when its late level is above (below) its early one
    by more than Student's t at the normal probability Φ(course_z), for the degrees of
    freedom its noise was measured with, times the standard error of their difference:
    a course claimed by chance at 1 % of moments (the bound behind "not learning" uses
    the same statistic, learning.z). Measured (bench/diagnosis.py, AR(1) noise): 1-3 % with
    lag-1 autocorrelation up to 0.3, 5-8 % at 0.6, 12 % at 20 points and 0.6."""
    plateau_multiple: float = 3.0
    """A series that rose "levelled off" only when its recent slope is below the pace it rose
    at before by this many standard errors: a steady slow rise whose latest third is too
    short to show the rise on its own is still rising, not a plateau."""
    exploding_factor: float = 10.0
    """"Exploding": rising and the recent level exceeds this many times the previous window's median."""


@dataclass(frozen=True, slots=True)
class SpikeRules:
    """Single-point outliers: robust z-score against the median / MAD of the preceding points."""

    z: float = 6.0
    """A point is a spike when it lies more than this many robust sigmas from the rolling median."""
    history: int = 20
    """How many preceding points the rolling median and MAD use."""
    min_history: int = 5
    """Points with fewer predecessors than this are never called spikes."""


@dataclass(frozen=True, slots=True)
class ZoneBounds:
    """Value bands of one metric. A point is bad beyond a bad bound, caution beyond a caution
    bound, healthy otherwise; the window's zone needs the condition to be sustained.
    Write "off" in TOML to switch a bound off."""

    caution_below: float | None = None
    """Values below this are caution."""
    bad_below: float | None = None
    """Values below this are bad."""
    caution_above: float | None = None
    """Values above this are caution."""
    bad_above: float | None = None
    """Values above this are bad."""
    spike_above: float | None = None
    """Any single point above this in the window makes the zone at least caution (a spike)."""
    relative_to: str | None = None
    """Run-context field the bounds are fractions of (e.g. "max_completion_length"); when the run
    does not say, value zones are unknown and other metrics must speak for this one."""


#: statistics of the policy update itself, whose eval_ copies borrow no bands: an eval pass
#: updates nothing (ms-swift logs eval_clip_ratio/* as 0 at every eval, docs/formats.md, "ms-swift")
UPDATE_ONLY = frozenset({"clip_ratio"})


def _default_zones() -> dict[str, ZoneBounds]:
    return {
        # on-policy runs make this n/a (see diagnose); the floor only matters when off-policy
        "clip_ratio": ZoneBounds(
            caution_below=0.001, caution_above=0.2, bad_above=0.3, spike_above=0.5
        ),
        "reward_std": ZoneBounds(bad_below=1e-6),
        "frac_reward_zero_std": ZoneBounds(caution_above=0.5, bad_above=0.8),
        "completion_length": ZoneBounds(
            caution_below=0.05,
            caution_above=0.90,
            bad_above=0.97,
            relative_to="max_completion_length",
        ),
        "clipped_ratio": ZoneBounds(caution_above=0.1, bad_above=0.5),
        "kl": ZoneBounds(caution_above=0.1, bad_above=1.0),
        "entropy": ZoneBounds(bad_below=0.02),
        # loss and grad_norm have no value bands: finite is healthy, NaN/Inf is bad
        "loss": ZoneBounds(),
        "grad_norm": ZoneBounds(),
        # read from the logged completions (run/sample_series.py)
        "samples/format_ok": ZoneBounds(caution_below=0.5),
        "samples/all_fail": ZoneBounds(caution_above=0.5, bad_above=0.8),
        # most groups all-correct: late stage, or data too easy (not a failure by itself)
        "samples/all_pass": ZoneBounds(caution_above=0.8),
        "samples/overlap_3gram": ZoneBounds(
            caution_above=SampleRules().overlap_caution, bad_above=SampleRules().overlap_bad
        ),
        "samples/repetition": ZoneBounds(caution_above=0.3, bad_above=0.5),
        "samples/cut_off": ZoneBounds(caution_above=0.1, bad_above=0.5),
        # completions of at most one token: no answer, whatever the run's own history says
        "samples/one_token": ZoneBounds(caution_above=0.1, bad_above=SampleRules().one_token_share),
        # the sampler against the trainer (docs/health.md, "Off-policy drift"): NeMo-RL flags
        # its token_mult_prob_error above 1.05 (grpo.py:3661); a mean |Δlogp| above ln 1.05
        # makes that error above 1.05 for certain (Jensen); verl's FAQ calls a mean
        # probability difference above 0.01 a precision problem. Caution only: the trainers
        # themselves warn, and correct with importance weights
        "offpolicy/token_prob_error": ZoneBounds(caution_above=1.05),
        "offpolicy/logp_diff_mean": ZoneBounds(caution_above=round(math.log(1.05), 4)),
        "offpolicy/prob_diff_mean": ZoneBounds(caution_above=0.01),
    }


@dataclass(frozen=True, slots=True)
class RewardRules:
    """Reward spread and reward functions."""

    small_std_fraction: float = 0.05
    """reward_std below this fraction of the reward's range is caution (the range spans every
    logged reward value and 0)."""
    floor_position: float = 0.2
    """Zero spread with the reward in the lowest this-fraction of its range means "all fail"."""
    top_position: float = 0.8
    """Zero spread with the reward in the highest (1 - this) of its range means "all pass"."""
    function_zero_std: float = 1e-6
    """A reward function whose batch std stays below this gives the same score to every completion."""
    saturation_position: float = 0.9
    """A reward at or above this position of its own range is at its top (saturated)."""
    task_patterns: list[str] = field(
        default_factory=lambda: [
            "accuracy",
            "correct",
            "acc",
            "math",
            "verify",
            "pass",
            "exact",
            "score",
            "solve",
            "answer",
            "success",
            "win",
            "match",
            "equal",
        ]
    )
    """Reward function names containing a word that starts with one of these are task rewards.
    Names are split into words at "_", "-", "/", digits and camelCase humps; "reasoning_steps"
    style patterns match across words. Task patterns win over auxiliary ones."""
    aux_patterns: list[str] = field(
        default_factory=lambda: [
            "format",
            "json",
            "valid",
            "schema",
            "xml",
            "tag",
            "length",
            "len",
            "reasoning",
            "steps",
            "cosine",
            "repetition",
            "overlong",
            "style",
            "think",
            "bonus",
        ]
    )
    """Reward function names matching these (same matching) are auxiliary rewards."""
    pinned_share: float = 0.25
    """A reward's highest (or lowest) logged batch mean is its real top (bottom) when at least
    this share of the points sit at exactly that value: the reward is pinned there. A few
    repeats prove nothing (batch means of discrete rewards are multiples of 1/batch); a
    batch std of 0 at that value does (every completion scored it)."""


@dataclass(frozen=True, slots=True)
class LengthRules:
    """Completion length: collapse to short answers, and the cap when no args say it."""

    collapse_caution_drop: float = 0.3
    """Recent length more than this fraction below the early level is caution."""
    collapse_bad_drop: float = 0.6
    """More than this fraction below the early level, and short, is a collapse (bad)."""
    collapse_short_fraction: float = 0.05
    """"Short" for a collapse: below this fraction of max_completion_length (when known): a
    few tokens (6 of a 128 cap, 51 of 1024). Shorter answers that are not this short are a
    collapse only while the task reward or eval falls (concision otherwise)."""
    identical_spread: float = 0.5
    """completion_length_max - completion_length_min below this many tokens, sustained, while
    not truncated, means every completion has the same length (a sign of identical outputs)."""
    short_tokens: float = 16.0
    """With no cap known, "short" for a collapse is fewer tokens than this per completion."""
    cap_pinned_share: float = 0.5
    """The cap is inferred when the batch's longest completion (or the mean length) sits at
    exactly one value, its highest, on at least this share of the logged points..."""
    cap_pinned_points: int = 3
    """...or on at least this many points for the mean length (every completion cut)."""


@dataclass(frozen=True, slots=True)
class KlRules:
    """KL scale: the zones hold for the per-token estimator of KL to the reference only."""

    own_scale_keys: list[str] = field(
        default_factory=lambda: ["actor/ppo_kl", "ppo_kl", "actor/reward_kl_penalty", "critic/kl"]
    )
    """Source keys mapped onto `kl` whose level says nothing of an update gone too far:
    the drift from the rollout policy (`ppo_kl`), and a KL term folded into the reward
    (verl's `use_kl_in_reward`: to the reference, or to a teacher in on-policy
    distillation, whose level the task sets). Judged only against their own history
    (exploding), never against the absolute zones."""
    per_token_max: float = 10.0
    """Per-token KL estimators are clamped at this; larger values prove a per-sequence sum
    (e.g. ms-swift kl_in_reward), judged on its own scale."""


@dataclass(frozen=True, slots=True)
class OptimiserRules:
    """loss / grad_norm / entropy beyond their value bands."""

    grad_norm_spike_factor: float = 10.0
    """A grad_norm point above this many times the rolling median (and a robust spike) is a spike."""
    zero_grad_norm: float = 1e-8
    """grad_norm below this, sustained, means no update reaches the weights."""


@dataclass(frozen=True, slots=True)
class EntropyRules:
    """Token entropy beyond its value bands."""

    explode_factor: float = 10.0
    """Entropy whose recent level is this many times its early level has exploded..."""
    explode_floor: float = 1.0
    """...when the recent level is also above this (nats per token): 0.15 → 5 is a blow-up,
    0.001 → 0.02 is not."""
    collapse_factor: float = 10.0
    """Entropy whose recent level is this many times below its early level has collapsed
    ("falling fast" taken to its end, docs/health.md, "Metrics and their bands": 0.96 → 0.04 is a policy that stopped
    exploring, though 0.04 is above the absolute near-zero band)..."""
    collapse_ceiling: float = 0.1
    """...when the recent level is also below this: 3.0 → 0.25 on a high-entropy model is
    sharpening, not a collapse."""


@dataclass(frozen=True, slots=True)
class BlowUpRules:
    """Policy collapse: the reward falls to its floor while the policy runs off."""

    reward_floor_position: float = 0.2
    """The reward has collapsed when its recent level sits in the lowest this-fraction of its
    range after having been clearly higher."""
    is_ratio_collapse: float = 0.1
    """An importance-sampling ratio below this (it should sit near 1): the trainer's policy
    and the sampler's have parted (TRL `sampling/importance_sampling_ratio/min`, its per-batch
    minimum, where logged: the mean stays near 1 while many tokens are out of the band;
    else `/mean`)."""
    clipped_run_to_cap: float = 0.5
    """Lengths ran to the cap: clipped_ratio rose above this from well below it."""
    entropy_factor: float = 5.0
    """With the reward at its floor, entropy this many times its early level ran off with
    it (docs/health.md, "Too aggressive / unstable": ×5 and more is the loudest collapse signal; on its own, the entropy zone
    needs entropy.explode_factor)..."""
    entropy_floor: float = 0.5
    """...and at least this many nats per token (0.01 → 0.05 is no run-off)."""
    drift_drop: float = 0.1
    """The slow form (a policy drifting off): the reward fell beyond its noise by at least
    this share of its range, away from its floor..."""
    drift_factor: float = 2.0
    """...while entropy and the lengths both grew this many times their early level (the
    lengths with their cut share above its caution band): two signals, never one."""


@dataclass(frozen=True, slots=True)
class OffPolicyRules:
    """The sampler's policy against the trainer's: a mismatch or a staleness that grows
    (docs/health.md, "Off-policy drift"; the levels each trainer flags are zones)."""

    growth_factor: float = 2.0
    """A mismatch grows when its late level is beyond its noise above the early one and at
    least this many times it (for token_mult_prob_error, its excess over 1)..."""
    token_prob_error_floor: float = 1.02
    """...and token_mult_prob_error's late level is at least this (NeMo-RL's GRPO guide: an
    upward trend past ~1–2 % is usually a problem)..."""
    logp_diff_floor: float = 0.0198
    """...a mean |Δlogp| at least this (ln 1.02: the same 2 % on the log scale)..."""
    prob_diff_floor: float = 0.005
    """...a mean |Δp| (verl) at least this (verl's FAQ: normally below 0.005)..."""
    mismatch_kl_floor: float = 0.001
    """...a KL(sampler ‖ trainer) at least this (NeMo-RL's guide: below 1e-3 is acceptable)."""
    staleness_growth: float = 1.0
    """Staleness grows when its late level is beyond its noise and at least this many policy
    versions above the early one, and growth_factor times it."""
    dropped_share: float = 0.3
    """Stale rollouts dropped on at least this share of the recent window's steps..."""
    bias_reward_fraction: float = 0.05
    """...while the trained-on rollouts' reward differs from every generated one's by at least
    this share of the reward's range, beyond noise..."""
    bias_length_fraction: float = 0.1
    """...or their mean length by at least this share of the generated length: dropping
    stale rollouts biases what is trained on."""


@dataclass(frozen=True, slots=True)
class LearningRules:
    """ "Not learning" as a bounded claim: the rise of the task reward (the reward, when no
    task reward is named) since its start is bounded below an amount that matters, by a
    confidence interval allowing for the run's own noise and autocorrelation
    (health/course.py). Without that bound the verdict is withheld: "too early to say".

    Stated error rate: a run whose reward truly rose by the meaningful amount gets a bound
    below it at one moment with probability 1 - Φ(z) (z 2.33: 1 %), and the verdict also
    needs its no-signal evidence (zero spread sustained, every group tied, the task at its
    floor, no gradient) and the steady tracker's 3 judged steps in a row."""

    meaningful_fraction: float = 0.05
    """A rise that matters: this fraction of the reward's known range..."""
    meaningful_std_fraction: float = 0.25
    """...or, with no range known, this fraction of the typical within-group reward_std (the
    unit GRPO's advantages are measured in), or of the observed range when no std is logged."""
    z: float = 2.33
    """One-sided normal quantile of the bound (2.33: a rise that large is missed 1 % of the
    time at one moment); the bound is built with Student's t at that probability, exact,
    for the degrees of freedom the noise was measured with. Measured (bench/diagnosis.py,
    AR(1) noise): 1-2 % with lag-1 autocorrelation up to 0.3 at 40-300 points, 4-5 % at
    0.6, 10 % at 20 points and 0.6 (the autocorrelation is underestimated on few points)."""
    bound_to_stay: bool = True
    """A held "not learning" stays while its no-signal evidence holds and no rise is shown
    (the bound is what it needs to enter; the steady tracker's staying rules set this
    False: it leaves on a rise, not on a bound that widened with the noise)."""
    progress_points: int = 150
    """"Not learning" without its no-signal evidence (groups differ on every step, yet the
    task reward does not rise by the amount that matters): only on a long stretch, this many
    logged reward points..."""
    progress_points_ended: int = 40
    """...or this many once the run has ended (a whole run's course; never early)."""


@dataclass(frozen=True, slots=True)
class SteadyRules:
    """How verdicts stay steady while a run is live (hysteresis)."""

    enter_points: int = 3
    """A verdict enters once its evidence has held at this many judged steps in a row..."""
    enter_fraction: float = 0.05
    """...spanning at least this fraction of the run so far (steps)..."""
    leave_points: int = 3
    """...and leaves once it has been absent at this many judged steps in a row..."""
    leave_fraction: float = 0.1
    """...spanning at least this fraction of the run so far: slower to leave than to enter,
    so a verdict near its threshold does not flicker."""
    stay_sustained: float = 0.2
    """A verdict that holds is judged again with its evidence's "sustained" share lowered to
    this: it leaves when the evidence has cleared, not when it dips below the entry level."""
    stay_margin: float = 0.1
    """...and its position thresholds (top of the reward's range, length drops) eased by
    this much..."""
    stay_plateau_multiple: float = 2.0
    """...and a plateau holds while the slowdown stays above this many standard errors
    (trend.plateau_multiple to enter)."""
    replay_points: int = 64
    """`check` judges a finished or long run the way the live panel did: it replays the
    diagnosis at up to this many steps evenly spread over the run (every logged step of a
    shorter run)."""


@dataclass(frozen=True, slots=True)
class SampleRules:
    """What the logged completions say (used only when a completions file was read)."""

    overlap_caution: float = 0.5
    """Mean pairwise shingle overlap inside groups above this is caution (completions alike)."""
    overlap_bad: float = 0.8
    """Above this, completions in a group are nearly identical (low diversity, problem)."""
    diversity_drop: float = 0.2
    """Overlap rising by more than this from the early samples means diversity is being lost."""
    format_drop: float = 0.2
    """Format compliance falling by more than this from the early samples means samples get worse."""
    repetition_caution: float = 0.3
    """Completions repeating this share of their own character shingles (mean) are looping..."""
    repetition_rise: float = 0.1
    """...when that share also rose by more than this from the early samples."""
    cut_off_rise: float = 0.2
    """The share of completions cut off mid-tag rising by more than this means samples get worse."""
    one_token_share: float = 0.5
    """More than this share of completions of at most one token (empty ones included) means
    the samples are bad at any point of a run, whatever they were before."""
    compare_steps: int = 5
    """How many logged sample steps form the early and the recent sample windows."""
    zero_spread_dominance: float = 2.0
    """Zero-spread groups are called "all fail" (or "all pass") when that kind outnumbers
    the other by this factor in the logged groups."""


@dataclass(frozen=True, slots=True)
class Rules:
    """Every default the health engine uses (docs/health.md), overridable from a TOML file."""

    window: WindowRules = field(default_factory=WindowRules)
    """Judging windows."""
    trend: TrendRules = field(default_factory=TrendRules)
    """Trend classification."""
    spike: SpikeRules = field(default_factory=SpikeRules)
    """Spike detection."""
    zones: Mapping[str, ZoneBounds] = field(default_factory=_default_zones)
    """Value zones per canonical metric ([zones.<metric>]); eval_<metric> uses <metric>'s
    (but for UPDATE_ONLY metrics: an eval pass updates nothing)."""
    rewards: RewardRules = field(default_factory=RewardRules)
    """Reward spread and reward functions."""
    length: LengthRules = field(default_factory=LengthRules)
    """Length collapse."""
    kl: KlRules = field(default_factory=KlRules)
    """KL scale."""
    optimiser: OptimiserRules = field(default_factory=OptimiserRules)
    """Optimiser health."""
    samples: SampleRules = field(default_factory=SampleRules)
    """Completion samples."""
    entropy: EntropyRules = field(default_factory=EntropyRules)
    """Entropy explosion."""
    blow_up: BlowUpRules = field(default_factory=BlowUpRules)
    """Policy collapse."""
    offpolicy: OffPolicyRules = field(default_factory=OffPolicyRules)
    """Off-policy drift."""
    learning: LearningRules = field(default_factory=LearningRules)
    """"Not learning" as a bounded claim."""
    steady: SteadyRules = field(default_factory=SteadyRules)
    """Steady verdicts (hysteresis) and how check replays a run."""

    def zone_bounds(self, name: str) -> ZoneBounds | None:
        """The bands of a metric, or of the train metric an eval_ metric mirrors (not a
        statistic of the policy update: an eval pass updates nothing)."""
        bounds = self.zones.get(name)
        train_name = name.removeprefix("eval_")
        if bounds is None and train_name != name and train_name not in UPDATE_ONLY:
            bounds = self.zones.get(train_name)
        return bounds

    def window_size(self, logged_points: int) -> int:
        """How many latest points a metric with this many logged points is judged on."""
        return max(self.window.points, math.ceil(self.window.run_fraction * logged_points))


# -- loading -------------------------------------------------------------------------


def default_rules_path() -> Path | None:
    """$GRPO_TUI_RULES if set, else $XDG_CONFIG_HOME (or ~/.config)/grpo-tui/rules.toml when it
    exists, else None."""
    explicit = os.environ.get(RULES_ENV)
    if explicit:
        return Path(explicit).expanduser()
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    candidate = Path(config_home).expanduser() / "grpo-tui" / "rules.toml"
    return candidate if os.path.isfile(candidate) else None


def load_rules(path: Path | None = None) -> tuple[Rules, list[str]]:
    """The defaults merged with a TOML file's overrides, and a warning per key that was not
    used (unknown name, wrong type). `path` None means the default location, if any.
    Raises RulesError when a named file is missing or is not valid TOML."""
    if path is None:
        path = default_rules_path()
        if path is None:
            return Rules(), []
    try:
        data = tomllib.loads(read_regular(path).decode("utf-8").removeprefix("\ufeff"))
    except OSError as exc:
        raise RulesError(f"rules file: {describe_os_error(exc, path)}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RulesError(f"rules file {path} is not valid TOML: {exc}") from exc
    return rules_from_dict(data, source=str(path))


def rules_from_dict(data: Mapping[str, Any], source: str = "rules") -> tuple[Rules, list[str]]:
    """Apply overrides (a parsed TOML document) to the defaults."""
    warnings: list[str] = []
    rules = Rules()
    updates: dict[str, Any] = {}
    for key, value in data.items():
        if key == "zones":
            updates["zones"] = _merge_zones(rules.zones, value, f"{source}: zones", warnings)
            continue
        current = getattr(rules, key, None) if key in _type_hints(Rules) else None
        if current is None:
            warnings.append(f"{source}: unknown section [{key}] ignored")
        elif not isinstance(value, dict):
            warnings.append(f"{source}: [{key}] must be a table, got {_type_name(value)}; ignored")
        else:
            updates[key] = _merge_section(current, value, f"{source}: {key}", warnings)
    return replace(rules, **updates), warnings


def _merge_zones(
    defaults: Mapping[str, ZoneBounds], data: Any, where: str, warnings: list[str]
) -> dict[str, ZoneBounds]:
    zones = dict(defaults)
    if not isinstance(data, dict):
        warnings.append(f"{where} must be a table of [zones.<metric>] tables; ignored")
        return zones
    for metric, table in data.items():
        if not isinstance(table, dict):
            warnings.append(f"{where}.{metric} must be a table, got {_type_name(table)}; ignored")
            continue
        zones[metric] = _merge_section(
            zones.get(metric, ZoneBounds()), table, f"{where}.{metric}", warnings
        )
    return zones


def _merge_section(current: Any, table: Mapping[str, Any], where: str, warnings: list[str]) -> Any:
    hints = _type_hints(current.__class__)
    changes: dict[str, Any] = {}
    for key, value in table.items():
        if key not in hints:
            warnings.append(f"{where}.{key}: unknown key ignored")
            continue
        converted, ok = _convert(value, hints[key])
        if not ok:
            warnings.append(
                f"{where}.{key}: expected {_describe(hints[key])}, got {value!r}; default kept"
            )
            continue
        problem = _out_of_range(current, converted)
        if problem:
            warnings.append(f"{where}.{key}: {problem}, got {value!r}; default kept")
            continue
        changes[key] = converted
    return replace(current, **changes)


def _convert(value: Any, hint: Any) -> tuple[Any, bool]:
    """Check (and gently coerce) one TOML value against a field's type."""
    args = typing.get_args(hint)
    if type(None) in args:
        if value == OFF:
            return None, True
        hint = next(arg for arg in args if arg is not type(None))
    origin = typing.get_origin(hint)
    if origin is list:
        ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
        return (list(value), True) if ok else (None, False)
    if hint is bool or isinstance(value, bool):  # TOML's true is a flag, never a number
        return (value, True) if hint is bool and isinstance(value, bool) else (None, False)
    if hint is float:
        ok = isinstance(value, (int, float)) and not math.isnan(value)
        return (float(value), True) if ok else (None, False)
    if hint in (int, str):
        return (value, True) if isinstance(value, hint) else (None, False)
    return None, False


def _out_of_range(section: Any, value: Any) -> str:
    """Counts must be at least 1 and thresholds not negative; zone bounds may be anything
    (a user can band a metric that goes negative)."""
    if isinstance(section, ZoneBounds) or isinstance(value, (bool, str, list)) or value is None:
        return ""
    if isinstance(value, int) and value < 1:
        return "must be at least 1"
    if isinstance(value, float) and not (math.isfinite(value) and value >= 0):
        return "must be a finite number ≥ 0"
    return ""


def _describe(hint: Any) -> str:
    args = typing.get_args(hint)
    if type(None) in args:
        inner = next(arg for arg in args if arg is not type(None))
        return f'{_describe(inner)} or "{OFF}"'
    if typing.get_origin(hint) is list:
        return "a list of strings"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(
        hint, str(hint)
    )


def _type_name(value: Any) -> str:
    return type(value).__name__


@cache
def _type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(sys.modules[__name__]))


# -- printing ------------------------------------------------------------------------


@cache
def field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of a dataclass (the string literal under each field), read
    from the source so the docs live in one place (once per class); empty when the source
    is unavailable."""
    try:
        tree = ast.parse(inspect.getsource(cls))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    return {
        node.target.id: " ".join(following.value.value.split())
        for node, following in itertools.pairwise(body)
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and isinstance(following, ast.Expr)
        and isinstance(following.value, ast.Constant)
        and isinstance(following.value.value, str)
    }


def rules_as_toml(rules: Rules) -> str:
    """The effective rules as a TOML document, every key commented with its meaning (the
    zone keys once, above the zone tables), values that differ from the defaults marked
    with the default."""
    defaults = Rules()
    lines = [
        "# grpo-tui health rules: the effective values (defaults merged with your overrides).",
        f"# Put the keys you change in ~/.config/grpo-tui/rules.toml (or a file named by ${RULES_ENV}).",
        "#",
        *_comment("Each verdict's false-alarm rate on healthy runs:"),
        *(
            line
            for verdict, rate in FALSE_ALARM_RATES.items()
            for line in _comment(f"  {verdict}: {rate}")
        ),
        "",
    ]
    for f in fields(Rules):
        if f.name != "zones":
            section = getattr(rules, f.name)
            lines.extend(_comment(type(section).__doc__ or ""))
            lines.extend(_section_lines(f.name, section, getattr(defaults, f.name)))
    lines.extend(_comment(ZoneBounds.__doc__ or ""))
    docs = field_docs(ZoneBounds)
    for f in fields(ZoneBounds):
        lines.extend(_comment(f"{f.name}: {docs.get(f.name, '')}"))
    lines.append("")
    for metric, bounds in rules.zones.items():
        default = defaults.zones.get(metric)
        lines.extend(_section_lines(f"zones.{_toml_key(metric)}", bounds, default))
    return "\n".join(lines).rstrip() + "\n"


def _comment(text: str) -> list[str]:
    return [f"# {part}" for part in textwrap.wrap(" ".join(text.split()), 86)]


def _section_lines(name: str, section: Any, default: Any | None) -> list[str]:
    lines = [f"[{name}]"]
    documented = not isinstance(section, ZoneBounds)  # the zone keys are documented once
    docs = field_docs(section.__class__) if documented else {}
    for f in fields(section):
        value = getattr(section, f.name)
        if value is None and not documented:
            continue  # zone tables list the bounds they use; an unset bound is "off"
        lines.extend(_comment(docs.get(f.name, "")))
        line = f"{f.name} = {_toml_value(value)}"
        if default is None:
            line += "  # (not a default metric)"
        elif getattr(default, f.name) != value:
            line += f"  # default: {_toml_value(getattr(default, f.name))}"
        lines.append(line)
    if not documented and default is not None:
        # a bound the user switched off still has to show (and read back as off)
        lines.extend(
            f'{f.name} = "{OFF}"  # default: {_toml_value(getattr(default, f.name))}'
            for f in fields(section)
            if getattr(section, f.name) is None and getattr(default, f.name) is not None
        )
    lines.append("")
    return lines


def _toml_value(value: Any) -> str:
    if value is None:
        return f'"{OFF}"'
    if isinstance(value, bool):  # before int: a bool is one
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


def _toml_key(key: str) -> str:
    bare = key.replace("_", "").replace("-", "").isalnum()
    return key if bare else _toml_value(key)
