"""The scenarios of HEALTH.md: one builder per scenario, each reading the facts.

A builder collects findings (severity, evidence, onset) and returns the `Scenario` when
it holds, None otherwise. `BUILDERS` lists them in the order `diagnose` runs them; the
saturation scenario is `ScenarioFacts.saturated` (other scenarios ask whether it holds)
and `healthy` comes last, once the others are known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from grpo_tui.health import trends as tr
from grpo_tui.health.facts import (
    Facts,
    Series,
    band_reason,
    format_rate,
    judge_bands,
    overlap,
    sample_window,
)
from grpo_tui.health.rules import ZoneBounds
from grpo_tui.health.verdict import (
    Evidence,
    Scenario,
    Window,
    finite_or_none,
    num,
    pct,
)
from grpo_tui.vocabulary import Direction, ScenarioId, Severity, Zone

# -- scenario building ----------------------------------------------------------------


class ScenarioFacts(Facts):
    """The facts plus the one scenario other scenarios ask about."""

    @cached_property
    def saturated(self) -> Scenario | None:
        """The saturation scenario (other scenarios ask whether it holds)."""
        return _saturated(self)


@dataclass(slots=True)
class _Finding:
    """One trigger of a scenario."""

    severity: Severity
    evidence: Evidence
    onset: float | None = None


@dataclass(slots=True)
class _Builder:
    """Collects the findings of one scenario."""

    id: ScenarioId
    findings: list[_Finding] = field(default_factory=list)
    supporting: list[Evidence] = field(default_factory=list)

    def add(self, severity: Severity, evidence: Evidence, onset: float | None = None) -> None:
        self.findings.append(_Finding(severity, evidence, onset))

    def support(self, evidence: Evidence | None) -> None:
        if evidence is not None:
            self.supporting.append(evidence)

    def build(self, advice: list[str]) -> Scenario | None:
        if not self.findings:
            return None
        severity = min((f.severity for f in self.findings), key=lambda severity: severity.rank)
        onsets = [f.onset for f in self.findings if f.onset is not None]
        if not onsets:
            onsets = [
                f.evidence.window.first_step
                for f in self.findings
                if f.evidence.window.first_step is not None
            ]
        findings = sorted(self.findings, key=lambda f: f.severity.rank)
        evidence = [f.evidence for f in findings] + self.supporting
        return Scenario(
            self.id,
            self.id.title,
            severity,
            min(onsets) if onsets else None,
            evidence,
            advice,
        )


def _onset(facts: Facts, name: str, flag: Callable[[np.ndarray], np.ndarray]) -> float | None:
    """First step of the latest stretch in which `flag` held on a sustained share of a
    rolling zone window. Searched within the metric's trend window plus one zone window
    (vectorised): a condition that held all along reports the start of that stretch."""
    store = facts.store
    logged = store.count(name)
    if logged == 0:
        return None
    rules = facts.rules
    width = rules.window_size(logged)
    fetch = rules.trend_window_size(logged) + width
    steps, values = sample_window(store, name, fetch, rules.window.max_samples)
    if fetch > rules.window.max_samples:
        width = max(1, round(width * values.size / fetch))
    index = tr.condition_onset(flag(values), width, rules.window.sustained)
    return None if index is None else float(steps[index])


def _at_least(level: float) -> Callable[[np.ndarray], np.ndarray]:
    """A flag for `_onset`: values at or above `level`."""

    def flag(values: np.ndarray) -> np.ndarray:
        return values >= level

    return flag


def trend_text(name: str, series: Series) -> str:
    t = series.trend
    if not t.known:
        return f"{name}: trend unknown ({t.points} point{'s' if t.points != 1 else ''})"
    return (
        f"{name} {t.direction}: {num(t.level_start)} → {num(t.level_end)} over {series.trend_window} "
        f"(noise {num(t.noise)})"
    )


def _trend_evidence(name: str, series: Series) -> Evidence:
    t = series.trend
    numbers = {
        "start": t.level_start,
        "end": t.level_end,
        "change": t.change,
        "noise": t.noise,
    }
    return Evidence(
        name,
        series.trend_window,
        {k: finite_or_none(v) for k, v in numbers.items()},
        trend_text(name, series),
    )


def _zone_evidence(series: Series) -> Evidence:
    return series.evidence(
        {"last": series.last, "recent": series.recent_level},
        f"{series.name} {series.reason}",
    )


ADVICE_NOT_LEARNING = [
    "Inspect the reward distribution: are the reward functions scoring what you expect?",
    "Raise num_generations so more groups contain both successes and failures.",
    "Raise the sampling temperature.",
    "Add partial-credit rewards (a sparse 0/1 reward gives no spread on hard prompts).",
    "Lower the KL penalty (beta) or raise the learning rate moderately.",
    "Check that LoRA / the parameters are actually training (grad_norm > 0).",
]
ADVICE_ALL_FAIL = [
    "Every completion in most groups fails: the task is too hard or the reward too sparse.",
    "Use easier prompts or a curriculum, add partial-credit rewards, raise num_generations.",
]
ADVICE_TOO_AGGRESSIVE = [
    "Lower the learning rate.",
    "Use a larger batch / more generations per prompt.",
    "Strengthen the KL penalty (beta).",
    "Use fewer update passes per batch (num_iterations).",
    "Check for a reward loophole.",
]
ADVICE_REWARD_HACKING = [
    "Add a correctness reward (or weight it up).",
    "Add quality rewards beyond format.",
    "Add an eval set and evaluate checkpoints for real.",
    "Read the completions.",
]
ADVICE_TRUNCATION = [
    "Raise max_completion_length.",
    "Penalise pointless length (e.g. an overlong penalty).",
    "Check the prompt and the EOS handling.",
    "Lower the temperature.",
]
ADVICE_LENGTH_COLLAPSE = [
    "Look for a reward that pays for short outputs (or a length penalty that is too strong).",
    "Read recent completions: early EOS or a fixed short template?",
]
ADVICE_LOW_DIVERSITY = [
    "Raise num_generations.",
    "Raise temperature / top_p.",
    "Check for mode collapse (entropy, identical completions).",
    "Make the reward more discriminative.",
]
ADVICE_SATURATED = [
    "Not a failure by itself: most groups are all-correct.",
    "If eval has stopped improving, training has stalled: use harder data or a finer reward.",
]
ADVICE_WARMING_UP = ["Wait for more steps: trends need more points before a verdict."]
ADVICE_HEALTHY = [
    "Keep watching reward_std, frac_reward_zero_std and the samples as the run goes on."
]


def _not_learning(facts: ScenarioFacts) -> Scenario | None:
    b = _Builder(ScenarioId.NOT_LEARNING)
    rules = facts.rules
    kind, kind_why = facts.zero_spread_kind
    all_pass = kind == "all_pass"
    std = facts.reward_std
    frac = facts.frac_zero_std
    zero = (rules.zone_bounds("reward_std") or ZoneBounds()).bad_below or 0.0
    frac_bad = (rules.zone_bounds("frac_reward_zero_std") or ZoneBounds()).bad_above
    spread_dead = False
    if std is not None and std.zone is Zone.BAD and not all_pass:
        spread_dead = True
        b.add(
            Severity.PROBLEM,
            _zone_evidence(std),
            _onset(facts, "reward_std", lambda v: v < zero),
        )
    if frac is not None and frac.zone is Zone.BAD and not all_pass and frac_bad is not None:
        spread_dead = True
        b.add(
            Severity.PROBLEM,
            _zone_evidence(frac),
            _onset(facts, "frac_reward_zero_std", lambda v: v > frac_bad),
        )
    if spread_dead:
        b.support(
            Evidence(
                "reward",
                facts.reward.window if facts.reward else Window(None, None, 0),
                {},
                f"zero spread: {kind_why}",
            )
        )
    grad = facts.grad_norm
    if grad is not None and facts.grad_norm_zero:
        b.add(
            Severity.PROBLEM,
            _zone_evidence(grad),
            _onset(facts, "grad_norm", lambda v: v < rules.optimiser.zero_grad_norm),
        )
    functions = facts.reward_functions
    task = [f for f in functions if f.role == "task"]
    for f in functions:
        if f.state != "floor":
            continue
        severity = (
            Severity.PROBLEM
            if f.role == "task" and all(t.state == "floor" for t in task)
            else Severity.CAUTION
        )
        b.add(
            severity,
            Evidence(
                f.key,
                f.spread_window,
                {"level": finite_or_none(f.level)},
                f"{f.fn}: {num(f.level)} on every completion ({f.spread_window}): it gives no learning signal",
            ),
        )
    reward = facts.reward
    # a flat reward at the top of its range is explained by saturation, not a failure to learn
    if (
        reward is not None
        and not facts.warming_up
        and reward.trend.direction in (Direction.FLAT, Direction.FALLING)
        and facts.saturated is None
    ):
        b.add(Severity.CAUTION, _trend_evidence("reward", reward))
    for series in (std, frac):
        if series is not None and series.zone is Zone.CAUTION and not all_pass:
            falling_frac = series is frac and series.trend.direction == Direction.FALLING
            if not falling_frac:
                b.add(Severity.CAUTION, _zone_evidence(series))
    aux_only = _aux_only_rise(facts)
    if aux_only is not None and not any(f.saturated and f.role == "aux" for f in functions):
        b.add(Severity.CAUTION, aux_only)
    clip = facts.clip
    if (
        clip is not None
        and clip.zone is Zone.CAUTION
        and clip.recent_level
        < ((rules.zone_bounds("clip_ratio") or ZoneBounds()).caution_below or 0)
    ):
        b.add(Severity.CAUTION, _zone_evidence(clip))
    if not b.findings:
        return None
    if clip is not None and clip.zone is Zone.NA:
        b.support(_zone_evidence(clip))
    samples = facts.samples
    if samples is not None and samples.comparable:
        early, recent = samples.early_mean(overlap), samples.recent_mean(overlap)
        if (
            early is not None
            and recent is not None
            and abs(recent - early) < rules.samples.diversity_drop
        ):
            b.support(
                samples.evidence(
                    {"early_overlap": early, "recent_overlap": recent},
                    "completions look unchanged (overlap steady)",
                )
            )
    advice = (ADVICE_ALL_FAIL if kind == "all_fail" else []) + ADVICE_NOT_LEARNING
    return b.build(advice)


def _aux_only_rise(facts: Facts) -> Evidence | None:
    """Evidence that the reward rises only through auxiliary rewards while every task reward
    stalls; None otherwise or when no task reward is recognised."""
    reward = facts.reward
    if reward is None or reward.trend.direction not in (Direction.RISING, Direction.EXPLODING):
        return None
    functions = facts.reward_functions
    task = [f for f in functions if f.role == "task"]
    aux = [f for f in functions if f.role == "aux"]
    if not task or not aux or not all(f.stalled for f in task):
        return None
    rising = [
        f
        for f in aux
        if f.series.trend.direction in (Direction.RISING, Direction.EXPLODING) or f.saturated
    ]
    if not rising:
        return None
    task_text = ", ".join(f"{f.fn} {f.trend_word}" for f in task)
    aux_text = ", ".join(
        f"{f.fn} {'saturated' if f.saturated else f.series.trend.direction}" for f in rising
    )
    return Evidence(
        "rewards",
        reward.trend_window,
        {"reward_change": finite_or_none(reward.trend.change)},
        f"reward rises only through auxiliary rewards ({aux_text}) while task rewards do not ({task_text})",
    )


def _too_aggressive(facts: Facts) -> Scenario | None:
    b = _Builder(ScenarioId.TOO_AGGRESSIVE)
    rules = facts.rules
    clip = facts.clip
    clip_bounds = rules.zone_bounds("clip_ratio") or ZoneBounds()
    if clip is not None and clip.zone.warns:
        low = (
            clip_bounds.caution_below is not None and clip.recent_level < clip_bounds.caution_below
        )
        if not low:
            high = clip_bounds.bad_above if clip.zone is Zone.BAD else clip_bounds.caution_above
            onset = _onset(facts, "clip_ratio", lambda v: v > high) if high is not None else None
            b.add(
                Severity.PROBLEM if clip.zone is Zone.BAD else Severity.CAUTION,
                _zone_evidence(clip),
                onset,
            )
    kl = facts.kl
    if kl is not None and kl.zone.warns:
        kl_bounds = rules.zone_bounds("kl") or ZoneBounds()
        level = kl_bounds.bad_above if kl.zone is Zone.BAD else kl_bounds.caution_above
        onset = _onset(facts, "kl", lambda v: v > level) if level is not None else None
        b.add(
            Severity.PROBLEM if kl.zone is Zone.BAD else Severity.CAUTION, _zone_evidence(kl), onset
        )
    for series in (facts.loss, facts.grad_norm):
        if series is None:
            continue
        if series.latest_nonfinite:
            b.add(
                Severity.PROBLEM,
                _zone_evidence(series),
                float(series.nonfinite_steps[0]) if series.nonfinite_steps.size else None,
            )
        elif series.zone is Zone.CAUTION:
            b.add(Severity.CAUTION, _zone_evidence(series))
    reward, eval_reward = facts.reward, facts.eval_reward
    if (
        reward is not None
        and eval_reward is not None
        and reward.trend.direction in (Direction.RISING, Direction.EXPLODING)
        and eval_reward.trend.direction == Direction.FALLING
    ):
        b.add(Severity.CAUTION, _trend_evidence("eval_reward", eval_reward))
    if not b.findings:
        return None
    if reward is not None and reward.trend.known:
        b.support(_trend_evidence("reward", reward))
    return b.build(ADVICE_TOO_AGGRESSIVE)


def _reward_hacking(facts: Facts) -> Scenario | None:
    b = _Builder(ScenarioId.REWARD_HACKING)
    rules = facts.rules
    functions = facts.reward_functions
    task = [f for f in functions if f.role == "task"]
    saturated_aux = [f for f in functions if f.role == "aux" and f.saturated]
    reward = facts.reward
    reward_up = reward is not None and reward.trend.direction in (
        Direction.RISING,
        Direction.EXPLODING,
    )
    task_stalled = bool(task) and all(f.stalled for f in task)
    for f in saturated_aux:
        text = f"{f.fn} saturated at {num(f.level)} (top of its range {num(f.lo)}–{num(f.hi)})"
        if task_stalled:
            flat = ", ".join(f"{t.fn} {t.trend_word}, never clearly improved" for t in task)
            top = f.lo + rules.rewards.saturation_position * (f.hi - f.lo)
            b.add(
                Severity.PROBLEM,
                Evidence(
                    f.key,
                    f.series.window,
                    {"level": finite_or_none(f.level)},
                    f"{text} while task rewards stall ({flat})",
                ),
                _onset(facts, f.key, _at_least(top)),
            )
        elif not task and reward_up:
            b.add(
                Severity.CAUTION,
                Evidence(
                    f.key,
                    f.series.window,
                    {"level": finite_or_none(f.level)},
                    f"{text}; no task (correctness) reward is recognised",
                ),
            )
    samples = facts.samples
    if reward_up and samples is not None and samples.comparable:
        # "only #1 ✓ while the samples get worse": the reward says more than the samples
        early, recent = samples.early_mean(overlap), samples.recent_mean(overlap)
        if (
            early is not None
            and recent is not None
            and recent - early > rules.samples.diversity_drop
        ):
            b.add(
                Severity.CAUTION,
                samples.evidence(
                    {"early_overlap": early, "recent_overlap": recent},
                    f"reward rising while completions grow alike: overlap {num(early)} → {num(recent)}",
                ),
            )
        early_format = samples.early_mean(format_rate)
        recent_format = samples.recent_mean(format_rate)
        if (
            early_format is not None
            and recent_format is not None
            and early_format - recent_format > rules.samples.format_drop
        ):
            b.add(
                Severity.CAUTION,
                samples.evidence(
                    {"early_format": early_format, "recent_format": recent_format},
                    f"reward rising while format compliance falls: {pct(early_format)} → {pct(recent_format)}",
                ),
            )
    eval_reward = facts.eval_reward
    if reward_up and eval_reward is not None and eval_reward.trend.direction == Direction.FLAT:
        b.add(
            Severity.CAUTION,
            Evidence(
                "eval_reward",
                eval_reward.window,
                {"change": finite_or_none(eval_reward.trend.change)},
                f"reward rising while {trend_text('eval_reward', eval_reward)}",
            ),
        )
    if not b.findings:
        return None
    if reward is not None:
        b.support(_trend_evidence("reward", reward))
    return b.build(ADVICE_REWARD_HACKING)


def _truncation(facts: Facts) -> Scenario | None:
    b = _Builder(ScenarioId.TRUNCATION)
    rules = facts.rules
    clipped = facts.clipped
    if clipped is not None and clipped.zone.warns:
        bounds = rules.zone_bounds("clipped_ratio") or ZoneBounds()
        level = bounds.bad_above if clipped.zone is Zone.BAD else bounds.caution_above
        onset = _onset(facts, "clipped_ratio", lambda v: v > level) if level is not None else None
        b.add(
            Severity.PROBLEM if clipped.zone is Zone.BAD else Severity.CAUTION,
            _zone_evidence(clipped),
            onset,
        )
    max_len = facts.context.max_completion_length
    length = facts.series("completion_length")
    if length is not None and max_len:
        # only the upper bands: pinned at the cap (short outputs are length_collapse's business)
        bounds = replace(
            rules.zone_bounds("completion_length") or ZoneBounds(),
            caution_below=None,
            bad_below=None,
        )
        wz = judge_bands(length, bounds, rules, float(max_len))
        if wz.zone in (Zone.CAUTION, Zone.BAD):
            level = (bounds.bad_above if wz.zone is Zone.BAD else bounds.caution_above) or 1.0
            onset = _onset(facts, "completion_length", lambda v: v > level * max_len)
            reason = band_reason(length, wz, bounds, float(max_len), rules.window.sustained)
            text = f"completion_length {num(length.recent_level)} of max {max_len}: {reason}"
            b.add(
                Severity.PROBLEM if wz.zone is Zone.BAD else Severity.CAUTION,
                length.evidence({"recent": length.recent_level, "max": max_len}, text),
                onset,
            )
    return b.build(ADVICE_TRUNCATION)


def _length_collapse(facts: Facts) -> Scenario | None:
    collapse = facts.length_collapse
    series = facts.series("completion_length")
    if collapse is None or series is None:
        return None
    zone, text, early, recent = collapse
    b = _Builder(ScenarioId.LENGTH_COLLAPSE)
    limit = early * (1 - facts.rules.length.collapse_caution_drop)
    b.add(
        Severity.PROBLEM if zone is Zone.BAD else Severity.CAUTION,
        series.evidence({"early": early, "recent": recent}, f"completion_length {text}"),
        _onset(facts, "completion_length", lambda v: v < limit),
    )
    reward = facts.reward
    if reward is not None and reward.trend.known:
        b.support(_trend_evidence("reward", reward))
    return b.build(ADVICE_LENGTH_COLLAPSE)


def _low_diversity(facts: Facts) -> Scenario | None:
    b = _Builder(ScenarioId.LOW_DIVERSITY)
    rules = facts.rules
    samples = facts.samples
    if samples is not None:
        recent = samples.recent_mean(overlap)
        early = samples.early_mean(overlap)
        bad, caution = rules.samples.overlap_bad, rules.samples.overlap_caution
        if recent is not None and recent >= bad:
            b.add(
                Severity.PROBLEM,
                samples.evidence(
                    {"recent_overlap": recent},
                    f"completions in a group nearly identical: mean pairwise overlap {num(recent)}",
                ),
                samples.onset(lambda st: st.pairwise_overlap >= bad),
            )
        elif recent is not None and recent >= caution:
            b.add(
                Severity.CAUTION,
                samples.evidence(
                    {"recent_overlap": recent},
                    f"completions in a group alike: mean pairwise overlap {num(recent)}",
                ),
                samples.onset(lambda st: st.pairwise_overlap >= caution),
            )
        elif (
            samples.comparable
            and early is not None
            and recent is not None
            and recent - early > rules.samples.diversity_drop
        ):
            limit = early + rules.samples.diversity_drop
            b.add(
                Severity.CAUTION,
                samples.evidence(
                    {"early_overlap": early, "recent_overlap": recent},
                    f"diversity falling: overlap {num(early)} → {num(recent)}",
                ),
                samples.onset(lambda st: st.pairwise_overlap > limit),
            )
    entropy = facts.entropy
    if entropy is not None and entropy.zone.warns:
        bad_below = (rules.zone_bounds("entropy") or ZoneBounds()).bad_below
        onset = (
            _onset(facts, "entropy", lambda v: v < bad_below)
            if entropy.zone is Zone.BAD and bad_below is not None
            else None
        )
        b.add(
            Severity.PROBLEM if entropy.zone is Zone.BAD else Severity.CAUTION,
            _zone_evidence(entropy),
            onset,
        )
    identical = _identical_lengths(facts)
    if identical is not None:
        b.add(*identical)
    return b.build(ADVICE_LOW_DIVERSITY)


def _identical_lengths(facts: Facts) -> tuple[Severity, Evidence] | None:
    """Every completion of the step has the same length (min == max), sustained, while not
    truncated: identical outputs. A problem when the groups also have no reward spread."""
    lo = facts.series("completion_length_min")
    hi = facts.series("completion_length_max")
    if lo is None or hi is None or lo.values.size == 0 or hi.values.size == 0:
        return None
    n = min(lo.values.size, hi.values.size)
    spread = hi.values[-n:] - lo.values[-n:]
    same = spread <= facts.rules.length.identical_spread
    # all cut at the cap is truncation, not identical outputs
    max_len = facts.context.max_completion_length
    pinned = (facts.rules.zone_bounds("completion_length") or ZoneBounds()).bad_above
    if max_len and pinned is not None:
        same &= hi.values[-n:] < pinned * max_len
    clipped = facts.clipped
    if clipped is not None and clipped.zone is Zone.BAD:
        return None
    share = float(same.mean())
    if share < facts.rules.window.sustained:
        return None
    frac = facts.frac_zero_std
    severity = Severity.PROBLEM if frac is not None and frac.zone.warns else Severity.CAUTION
    text = f"every completion has the same length ({num(lo.values[-1])} tokens) on {hi.window.share(share)}"
    return severity, hi.evidence({"min": lo.values[-1], "max": hi.values[-1]}, text)


def _saturated(facts: Facts) -> Scenario | None:
    b = _Builder(ScenarioId.SATURATED)
    rules = facts.rules
    kind, why = facts.zero_spread_kind
    frac, std, reward = facts.frac_zero_std, facts.reward_std, facts.reward
    eval_reward = facts.eval_reward
    eval_stalled = eval_reward is not None and eval_reward.trend.direction in (
        Direction.FLAT,
        Direction.FALLING,
    )
    if kind == "all_pass":
        dead = [s for s in (frac, std) if s is not None and s.zone.warns]
        if dead:
            severity = (
                Severity.CAUTION
                if any(s.zone is Zone.BAD for s in dead) or eval_stalled
                else Severity.INFO
            )
            high = (rules.zone_bounds("frac_reward_zero_std") or ZoneBounds()).caution_above
            for s in dead:
                onset = (
                    _onset(facts, s.name, lambda v: v > high)
                    if s is frac and high is not None
                    else None
                )
                b.add(severity, _zone_evidence(s), onset)
            b.support(
                Evidence(
                    "reward",
                    reward.window if reward else Window(None, None, 0),
                    {},
                    f"zero spread because groups all pass: {why}",
                )
            )
    if not b.findings and reward is not None and std is not None and frac is not None:
        rng = facts.reward_range
        if rng is not None and rng[1] > rng[0] and reward.logged >= rules.trend.min_points:
            position = (reward.recent_level - rng[0]) / (rng[1] - rng[0])
            if (
                position >= rules.rewards.top_position
                and std.trend.direction == Direction.FALLING
                and frac.trend.direction in (Direction.RISING, Direction.EXPLODING)
            ):
                b.add(
                    Severity.CAUTION if eval_stalled else Severity.INFO,
                    reward.evidence(
                        {"position": position},
                        f"reward high ({pct(position)} of its range) while reward_std falls and frac_reward_zero_std rises",
                    ),
                )
    if not b.findings:
        return None
    if eval_reward is not None and eval_reward.trend.known:
        b.support(_trend_evidence("eval_reward", eval_reward))
    return b.build(ADVICE_SATURATED)


def _warming_up(facts: Facts) -> Scenario | None:
    if not facts.warming_up:
        return None
    store = facts.store
    reward = facts.reward
    logged = store.count("reward")
    first = float(store.steps[0]) if len(store) else None
    window = reward.window if reward is not None else Window(first, store.last_step(), len(store))
    b = _Builder(ScenarioId.WARMING_UP)
    b.add(
        Severity.INFO,
        Evidence(
            "reward",
            window,
            {"points": float(logged)},
            f"{logged} train point{'s' if logged != 1 else ''} with a reward; verdicts on trends need {facts.rules.window.warmup_points}",
        ),
        first,
    )
    return b.build(ADVICE_WARMING_UP)


def healthy(facts: Facts, others: list[Scenario]) -> Scenario | None:
    if facts.warming_up or any(s.severity.warns for s in others):
        return None
    reward = facts.reward
    if reward is None or reward.trend.direction != Direction.RISING:
        return None
    std = facts.reward_std
    if std is None or std.zone is not Zone.HEALTHY:
        return None
    checks: list[tuple[Series | None, tuple[Zone, ...]]] = [
        (facts.frac_zero_std, (Zone.HEALTHY, Zone.CAUTION)),
        (facts.clip, (Zone.HEALTHY, Zone.NA, Zone.UNKNOWN)),
        (facts.length, (Zone.HEALTHY, Zone.UNKNOWN)),
        (facts.kl, (Zone.HEALTHY, Zone.NA, Zone.UNKNOWN)),
    ]
    for series, allowed in checks:
        if series is not None and series.zone not in allowed:
            return None
    if _aux_only_rise(facts) is not None:
        return None
    b = _Builder(ScenarioId.HEALTHY)
    b.add(Severity.OK, _trend_evidence("reward", reward), reward.trend_window.first_step)
    for series in (std, facts.frac_zero_std, facts.clip, facts.length, facts.kl):
        if series is not None:
            b.support(_zone_evidence(series))
    return b.build(ADVICE_HEALTHY)


#: the scenario builders `diagnose` runs, in this order (then `saturated`, then `healthy`)
BUILDERS: tuple[Callable[[ScenarioFacts], Scenario | None], ...] = (
    _not_learning,
    _too_aggressive,
    _reward_hacking,
    _truncation,
    _length_collapse,
    _low_diversity,
    _warming_up,
)
