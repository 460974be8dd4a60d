"""The verdicts of docs/health.md ("The verdicts") as rules over the findings, one function each.

Each rule collects findings (a severity, the evidence in words with the numbers the data
took, when it began, the advice it points to) in a Builder (health/building.py) and
returns the `Scenario` when any fired. The rules, in words:

- **Not learning** (health/learning.py): no learning signal that holds, and a rise of the
  task reward that matters ruled out by a confidence interval; else "too early to say".
- **Saturated (late stage)**: the reward sits at the top of its real range, or levelled
  off after a clear rise while no task reward still rises. Caution when the signal is
  mostly gone (groups tied, no gradient, eval flat), information otherwise.
- **Too aggressive / unstable**: a blow-up (the reward collapsed to its floor after being
  clearly higher, while entropy ran off ×5, the importance-sampling ratio collapsed or the
  lengths ran to the cap), the clip ratio high, KL in its bad band, exploding or still
  climbing through its caution band (a KL high from the first steps is an offset, never
  this), non-finite loss or grad_norm; eval falling while the reward rises.
- **Reward hacking**: an auxiliary reward at its top while every task reward stalls (not
  when the outputs collapsed to a few tokens: that is the collapse); a bonus carrying the
  total while the task and its eval fall; the shaped reward rising while the task score
  falls; the reward rising while the samples grow alike or lose their format. Caution
  from training metrics alone ("possible reward hacking").
- **Truncation**: clipped_ratio in its bands or rising with the lengths, or the mean
  length near the cap (stated, or inferred and confirmed by a clipped ratio above 0 for a
  problem); a caution when the task is learned despite the cut.
- **Length collapse**: the length fell far below its early level to short outputs.
- **Low diversity**: entropy near 0, completions of a group nearly identical, every
  completion of a step the same length.
- **Off-policy drift** (health/offpolicy.py): the sampler's policy and the trainer's apart,
  a mismatch or staleness grown beyond noise or in a band a trainer flags, or stale
  rollouts dropped while what is trained on differs from what was generated.
- **Healthy**: the reward rises with its spread intact and nothing else holds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from grpo_tui.health import trends as tr
from grpo_tui.health.advice import Advice
from grpo_tui.health.building import (
    Builder,
    add_above,
    at_least,
    bounds_of,
    course,
    evidence,
    function_evidence,
    near_top,
    onset,
    reward_fact,
    severity_of,
    upper,
)
from grpo_tui.health.course import Phase
from grpo_tui.health.findings import Findings
from grpo_tui.health.judges import Judgement, window_of
from grpo_tui.health.learning import not_learning
from grpo_tui.health.offpolicy import off_policy
from grpo_tui.health.rewards import SpreadKind
from grpo_tui.health.samples import Getter, format_rate, overlap
from grpo_tui.health.verdict import Evidence, Scenario, Window, finite_or_none, num, pct
from grpo_tui.numbers import format_step
from grpo_tui.vocabulary import Direction, ScenarioId, Severity, Zone

#: samples getting worse while the reward rises: (measure, whether worse is a fall, the
#: rules.samples change that counts, the words for early → recent)
_WORSE_SAMPLES: tuple[tuple[Getter, bool, str, str, Callable[[float], str]], ...] = (
    (overlap, False, "diversity_drop", "the completions grow alike: overlap {} → {}", num),
    (format_rate, True, "format_drop", "format compliance falls: {} → {}", pct),
)


# -- saturated (late stage) --------------------------------------------------------------------


def saturated(f: Findings) -> Scenario | None:
    b = Builder(ScenarioId.SATURATED)
    reward, rng = f.reward, f.reward_range
    if reward is None or reward.shape is None or f.blow_up is not None:
        return None
    if f.spread_kind is SpreadKind.ALL_FAIL or (f.tasks and all(t.at_floor for t in f.tasks)):
        return None  # a floor is not a top: still groups of failures, not saturation
    shape = reward.shape
    position = rng.position(reward.level) if rng is not None else None
    at_top = rng is not None and rng.reaches(reward.level, f.rules.rewards.saturation_position)
    plateau = shape.phase is Phase.PLATEAU and not f.task_rising
    if not (at_top or plateau) or shape.declined:
        return None
    signal_gone = False
    # the supporting facts (a Builder keeps them after its findings)
    frac, std = f.frac_zero_std, f.reward_std
    if frac is not None and (frac.zone.warns or frac.direction.up):
        b.support(
            evidence(
                frac,
                f"frac_reward_zero_std {num(frac.level)} (recent median): most groups score every completion alike",
            )
        )
        signal_gone = signal_gone or frac.zone is Zone.BAD
    if std is not None and (std.zone.warns or std.direction is Direction.FALLING):
        b.support(evidence(std))
        signal_gone = signal_gone or std.zone is Zone.BAD
    grad = f.grad_norm
    if grad is not None and f.grad_zero_share >= 0.3:
        b.support(
            evidence(
                grad,
                f"grad_norm 0 on {grad.window.share(f.grad_zero_share)}: every group tied, so no gradient (the zero advantage, not a broken optimiser)",
            )
        )
        signal_gone = signal_gone or f.grad_zero_share >= 0.5
    if f.spread_kind is SpreadKind.ALL_PASS:
        b.support(reward_fact(f, f"zero spread because groups all pass: {f.spread_why}"))
    eval_reward = f.eval_reward
    eval_stalled = (
        eval_reward is not None
        and eval_reward.shape is not None
        and eval_reward.shape.phase in (Phase.FLAT, Phase.PLATEAU, Phase.FALLING, Phase.DECLINING)
    )
    severity = Severity.CAUTION if signal_gone or eval_stalled else Severity.INFO
    if at_top and rng is not None:
        text = f"reward at the top of its range: {num(reward.level)} (recent median) of {rng.text}, {pct(position or 0)}"
    else:
        text = f"reward levelled off after rising: {shape.describe()}"
    if at_top and rng is not None:
        top_from = rng.low + f.rules.rewards.saturation_position * rng.span
        since = onset(f, "reward", at_least(top_from))
    else:
        since = shape.recent_window.first_step
    b.add(severity, evidence(reward, text, position=position), since)
    if eval_reward is not None and eval_reward.shape is not None:
        b.support(course(eval_reward.name, eval_reward))
    if eval_reward is not None and not eval_stalled and eval_reward.direction.up:
        b.advise(Advice.KEEP_GOING)
    b.advise(Advice.HARDER_DATA, Advice.FINER_REWARD, Advice.EVALUATE_CHECKPOINTS)
    return b.build(f)


# -- too aggressive / unstable -------------------------------------------------------------------


def too_aggressive(f: Findings) -> Scenario | None:
    b = Builder(ScenarioId.TOO_AGGRESSIVE)
    reuses_batches = (f.snap.context.num_iterations or 1) > 1
    blow_up = f.blow_up
    if blow_up is not None:
        text, step = blow_up.text, blow_up.step
        fact = reward_fact(f, text)
        b.add(
            Severity.PROBLEM,
            replace(fact, numbers={"early": blow_up.high, "recent": blow_up.now}),
            step,
        )
        b.advise(Advice.LOWER_LR)
        at = f"step {format_step(step)}" if step is not None else ""
        b.advise(Advice.RESUME_EARLIER, detail=at)
    clip = f.clip
    clip_bounds = bounds_of(f, "clip_ratio")
    if clip is not None and clip.zone.warns:
        # warning for sitting near 0 (the window's median below the low bound), not for
        # a high ratio: a recent rise off 0 that is not high yet says nothing unstable
        below = clip_bounds.caution_below
        low = below is not None and tr.median_of(clip.values) < below
        if not low:
            add_above(b, f, clip, "clip_ratio")
            b.advise(Advice.FEWER_ITERATIONS if reuses_batches else Advice.LOWER_LR)
    kl = f.kl
    kl_warns = kl is not None and kl.zone.warns and f.kl_offset is None
    # a KL in its bad band, or in its caution band and still climbing, is a sign by itself
    if kl is not None and kl_warns and (kl.zone is Zone.BAD or kl.direction.up):
        add_above(b, f, kl, "kl")
        b.advise(Advice.STRONGER_KL)
    # a certain collapse is shown at once, like a NaN loss
    certain = blow_up is not None and blow_up.certain
    for judgement in (f.loss, f.grad_norm):
        if judgement is not None and judgement.zone is Zone.BAD:
            bad = judgement.view.nonfinite_steps
            first_bad = float(bad[0]) if bad.size else None
            b.add(Severity.PROBLEM, evidence(judgement), first_bad)
            certain = True
    entropy = f.entropy
    if blow_up is None and entropy is not None and entropy.zone is Zone.BAD and f.entropy_exploded:
        b.add(Severity.CAUTION, evidence(entropy))
    is_ratio = f.is_ratio
    if blow_up is None and is_ratio is not None and f.is_ratio_collapsed:
        b.add(
            Severity.CAUTION,
            evidence(
                is_ratio,
                f"{is_ratio.name} {num(is_ratio.level)} (recent median): the trainer's policy and the sampler's have parted",
            ),
        )
    reward, eval_reward = f.reward, f.eval_reward
    if (
        reward is not None
        and eval_reward is not None
        and reward.direction.up
        and eval_reward.shape is not None
        and eval_reward.shape.phase in (Phase.FALLING, Phase.DECLINING)
    ):
        b.add(Severity.CAUTION, course(eval_reward.name, eval_reward))
    if kl is not None and kl_warns and kl.zone is Zone.CAUTION and not kl.direction.up:
        if not b.findings:
            return None  # a KL in its caution band and nothing else unstable: watch()
        add_above(b, f, kl, "kl")
        b.advise(Advice.STRONGER_KL)
    b.advise(Advice.LOWER_LR)
    if reuses_batches:
        b.advise(Advice.FEWER_ITERATIONS)
    b.advise(Advice.STRONGER_KL)
    scenario = b.build(f)
    if scenario is not None and certain:
        scenario.immediate = True  # a NaN loss is no noise: shown at once
    return scenario


def watch(f: Findings, found: list[Scenario]) -> Scenario | None:
    """What the grid marks that no verdict takes up: a metric in its bad band no verdict
    cites (a signal no rule reads, or a verdict's evidence still building), and a KL in
    its caution band (not an offset) with nothing else unstable, which is a caution to
    watch, not "too aggressive" (that needs the KL in its bad band, climbing, or a second
    sign). A finding like the others, held as they are: the status never says less than
    the grid shows, and never flickers with it. Beside a block that warns it is not shown
    (diagnose.finish): the status already says at least as much."""
    b = Builder(ScenarioId.WATCH)
    cited = {e.metric for s in found for e in s.evidence}
    kl = f.kl
    if (
        kl is not None
        and kl.zone is Zone.CAUTION
        and f.kl_offset is None
        and not kl.direction.up
        and not any(s.id is ScenarioId.TOO_AGGRESSIVE for s in found)
    ):
        b.add(
            Severity.CAUTION,
            evidence(
                kl,
                f"kl {kl.reason}, no longer climbing, with nothing else unstable: watch it; a "
                "verdict needs it in its bad band, climbing, or a second sign",
            ),
        )
    for name, judgement in f.judged().items():
        if judgement.zone is Zone.BAD and name not in cited and judgement is not f.kl:
            b.add(
                Severity.CAUTION,
                evidence(judgement, f"{name} {judgement.reason}: no verdict rests on it yet"),
            )
    scenario = b.build(f)
    if scenario is not None:
        # shown at once: each zone it quotes is already sustained over its window, and the
        # grid shows that zone at once (the steady tracker still holds it once it entered)
        scenario.immediate = True
    return scenario


# -- reward hacking ---------------------------------------------------------------------------------


def _eval_stalled_while_train_rose(reward: Judgement, eval_reward: Judgement, f: Findings) -> bool:
    """Eval flat on enough points while the train reward rose, and clearly less than a third
    of the train rise: a flat reading of five noisy eval points is no evidence, and an eval
    that rose less than train (a generalisation gap) is still learning."""
    train, held_out = reward.shape, eval_reward.shape
    if train is None or held_out is None:
        return False
    if held_out.phase is not Phase.FLAT or held_out.points < 2 * f.rules.trend.eval_min_points:
        return False
    if held_out.unclear and held_out.change > 0:
        return False  # it "rose, not yet beyond noise": not a stall the words could say
    # even at two standard errors above what it showed, eval rose less than a third of train
    error = math.hypot(held_out.start.error, held_out.end.error)
    return held_out.change + 2.0 * error < train.change / 3


def _bonus_carries_total(f: Findings) -> Evidence | None:
    """The total rose only through an auxiliary reward (a bonus) while every task reward
    stayed flat or fell, and the held-out measure fell: corroborated hacking. Without the
    eval it is aux_only_rise's "not learning the task" (training metrics alone)."""
    reward, held_out, tasks = f.reward, f.eval_reward, f.tasks
    if reward is None or reward.shape is None or not reward.shape.rose or not tasks:
        return None
    if (
        held_out is None
        or held_out.shape is None
        or not (held_out.shape.fell or held_out.shape.phase in (Phase.FALLING, Phase.DECLINING))
    ):
        return None
    if any(t.improved for t in tasks):
        return None
    carrier = next((a for a in f.auxiliaries if a.improved), None)
    if carrier is None:
        return None
    task_text = ", ".join(f"{t.fn} {t.shape.describe() if t.shape else ''}" for t in tasks)
    return Evidence(
        carrier.key,
        reward.window,
        {},
        f"the total rose ({reward.shape.describe()}) through {carrier.fn} "
        f"({carrier.shape.describe() if carrier.shape else ''}) while {task_text} did not, "
        f"and {held_out.name} fell ({held_out.shape.describe()})",
    )


def reward_hacking(f: Findings) -> Scenario | None:
    b = Builder(ScenarioId.REWARD_HACKING)
    tasks = f.tasks
    reward = f.reward
    reward_up = (
        reward is not None and reward.shape is not None and reward.shape.phase is Phase.RISING
    )
    # outputs collapsed to a few tokens max out a length penalty or a format check by
    # themselves: a symptom of the collapse (its own verdict), not a gamed reward
    collapsed = f.collapse is not None and f.collapse.zone is Zone.BAD and f.collapse.short
    for aux in f.auxiliaries:
        if not aux.at_top or collapsed:
            continue
        top = f"{aux.fn} at its top: {num(aux.level)} (recent median) of {aux.range.text if aux.range else '?'}"
        # every task flat *below its top*: a task stalled at its top is saturation, and the
        # auxiliary reward there simply done too
        if tasks and all(t.stalled and not near_top(t, f) for t in tasks):
            stalled = "; ".join(
                f"{t.fn} does not improve ({t.shape.describe() if t.shape else 'no points'})"
                for t in tasks
            )
            severity = Severity.PROBLEM if aux.rose_to_top else Severity.CAUTION
            top_value = aux.range.high if aux.range else aux.level
            b.add(
                severity,
                function_evidence(aux, f"{top} while {stalled}"),
                onset(f, aux.key, at_least(0.98 * top_value)),
            )
            b.advise(
                Advice.TASK_REWARD,
                detail=f"{aux.fn} is maxed out while {', '.join(t.fn for t in tasks)} does not improve",
            )
        elif not tasks and reward_up:
            b.add(
                Severity.CAUTION,
                function_evidence(aux, f"{top}; no task (correctness) reward is recognised"),
            )
            b.advise(Advice.TASK_REWARD)
    carried = _bonus_carries_total(f)
    if carried is not None:
        b.add(Severity.PROBLEM, carried)
        b.advise(Advice.TASK_REWARD)
    shaped = f.others.get("shaped_reward")
    if (
        shaped is not None
        and reward is not None
        and shaped.shape is not None
        and reward.shape is not None
        and shaped.shape.rose
        and shaped.shape.end.value > shaped.shape.start.value
        and reward.shape.fell
        and not reward.shape.rose
    ):
        # the reward trained on (the task score less the in-reward KL penalty) rises while
        # the task score falls: the penalty is what improves
        start = reward.shape.start.value
        b.add(
            Severity.PROBLEM,
            course("shaped_reward", shaped, "(the task score less the KL penalty) rose"),
            onset(f, "reward", lambda values: values < start),
        )
        b.advise(Advice.KL_IN_REWARD)  # the task score's fall is the scenario's support
    samples = f.samples
    if reward_up and samples is not None and samples.comparable:
        for measure, falls, drop, words, show in _WORSE_SAMPLES:
            worse = samples.worse(measure, falls, getattr(f.rules.samples, drop))
            if worse is not None:
                early, recent = worse
                text = "reward rising while " + words.format(show(early), show(recent))
                b.add(Severity.CAUTION, samples.evidence({"early": early, "recent": recent}, text))
                b.advise(Advice.READ_SAMPLES)
    eval_reward = f.eval_reward
    rng = f.reward_range
    if (
        reward_up
        and eval_reward is not None
        and reward is not None
        and _eval_stalled_while_train_rose(reward, eval_reward, f)
        # an eval reward flat at the top has nothing left to show
        and not (rng is not None and rng.reaches(eval_reward.level, f.rules.rewards.top_position))
    ):
        b.add(Severity.CAUTION, course(eval_reward.name, eval_reward))
        b.advise(Advice.EVAL_SET)
    if reward is not None:
        b.support(course("reward", reward))
    b.advise(Advice.READ_SAMPLES, Advice.EVAL_SET)
    return b.build(f)


# -- truncation ------------------------------------------------------------------------------------


def truncation(f: Findings) -> Scenario | None:
    """Completions cut at the cap. A PROBLEM needs a cut that is there and not going away:
    a cap the lengths alone suggest (no clipped_ratio above 0 confirms it) or a cut share
    falling while the task is learned (the model learns to finish) is a caution."""
    b = Builder(ScenarioId.TRUNCATION)
    clipped = f.clipped
    if clipped is not None and clipped.zone.warns:
        add_above(b, f, clipped, "clipped_ratio")
    elif (rising := _rising_cut(f)) is not None:
        b.add(Severity.CAUTION, rising, onset(f, "clipped_ratio", at_least(_cut_bound(f))))
    length, cap = f.length, f.cap
    if length is not None and cap is not None and length.zone.warns:
        severity, share = upper(f, length, "completion_length")
        text = f"completion_length {num(length.level)} (recent median) of cap {num(cap.tokens)}: {length.reason}"
        if not cap.corroborated:
            severity = _at_most_caution(severity)
            text += " — a cap read off the lengths alone: no clipped ratio confirms the cut"
        b.add(
            severity,
            evidence(length, text, cap=cap.tokens),
            onset(f, "completion_length", lambda v: v > (share or 1.0) * cap.tokens),
        )
    if b.findings and f.learned:
        # the task is learned despite the cut (and a falling cut share is the model learning
        # to finish in time): worth fixing, not a run that fails
        for finding in b.findings:
            finding.severity = _at_most_caution(finding.severity)
        if (
            clipped is not None
            and clipped.shape is not None
            and (clipped.shape.fell or clipped.shape.declined)
        ):
            b.support(course("clipped_ratio", clipped, "falling as the task is learned"))
        else:
            b.support(reward_fact(f, "the task reward is learned despite the cut"))
    if f.blow_up is not None and f.lengths_ran_to_cap:
        # the runaway policy is why: raising the cap would feed it
        b.advise(Advice.CAP_FROM_COLLAPSE)
        return b.build(f)
    if clipped is not None and clipped.level >= 0.9:
        b.advise(Advice.CHECK_EOS)
    b.advise(Advice.RAISE_CAP, Advice.PENALISE_LENGTH)
    return b.build(f)


def _at_most_caution(severity: Severity) -> Severity:
    return Severity.CAUTION if severity is Severity.PROBLEM else severity


def _cut_bound(f: Findings) -> float:
    return bounds_of(f, "clipped_ratio").caution_above or 0.0


def _rising_cut(f: Findings) -> Evidence | None:
    """A cut share that rose clearly from ≈0 to a recent median above its caution bound
    while the lengths grew: a truncation building up, before it is sustained on the
    window (the sustained share lags a share that swings between 0.1 and 0.6)."""
    clipped, length = f.clipped, f.length
    bound = _cut_bound(f)
    if clipped is None or clipped.shape is None or length is None or length.shape is None:
        return None
    # the judgement's values are the recent window
    median = tr.median_of(clipped.values)
    if not (bound > 0 and clipped.shape.rose and length.shape.rose and median > bound):
        return None
    return Evidence(
        "clipped_ratio",
        clipped.window,
        {"recent": finite_or_none(median)},
        f"clipped_ratio rising: {clipped.shape.describe()}, recent median {num(median)} > "
        f"{num(bound)}, while completion_length rose ({length.shape.describe()})",
    )


# -- length collapse ----------------------------------------------------------------------------------


def length_collapse(f: Findings) -> Scenario | None:
    collapse = f.collapse
    if collapse is None:
        return None
    b = Builder(ScenarioId.LENGTH_COLLAPSE)
    limit = collapse.early * (1 - f.rules.length.collapse_caution_drop)
    b.add(
        severity_of(collapse.zone),
        Evidence(
            "completion_length",
            collapse.recent_window,
            {"early": collapse.early, "recent": collapse.recent},
            f"completion_length {collapse.text}",
        ),
        onset(f, "completion_length", lambda v: v < limit) or collapse.recent_window.first_step,
    )
    if f.reward is not None and f.reward.shape is not None:
        b.support(course("reward", f.reward))
    growing = [fn.fn for fn in f.functions if fn.shape is not None and fn.shape.rose]
    b.advise(Advice.SHORT_REWARD, detail=", ".join(growing[:2]))
    b.advise(Advice.READ_SHORT)
    return b.build(f)


# -- low diversity --------------------------------------------------------------------------------------


def low_diversity(f: Findings) -> Scenario | None:
    b = Builder(ScenarioId.LOW_DIVERSITY)
    rules = f.rules
    entropy = f.entropy
    # near zero, or collapsed to a tenth of where it started (the zone's reason says which)
    low = max(bounds_of(f, "entropy").bad_below or 0.0, rules.entropy.collapse_ceiling)
    if entropy is not None and entropy.zone is Zone.BAD and entropy.level < low:
        # a policy converged on what it solves (the reward at its top, groups all passing)
        # is near deterministic by right: worth knowing, not a failure
        converged = f.spread_kind is SpreadKind.ALL_PASS and _reward_at_top(f)
        b.add(
            Severity.CAUTION if converged else Severity.PROBLEM,
            evidence(
                entropy,
                f"entropy {num(entropy.level)} (recent median): the policy is near deterministic — {entropy.reason}",
            ),
            onset(f, "entropy", lambda v: v < low),
        )
    samples = f.samples
    if samples is not None:
        recent = samples.recent_mean(overlap)
        alike = (
            (rules.samples.overlap_bad, Severity.PROBLEM, "nearly identical"),
            (rules.samples.overlap_caution, Severity.CAUTION, "alike"),
        )
        hit = next((a for a in alike if recent is not None and recent >= a[0]), None)
        if hit is not None and recent is not None:
            level, severity, words = hit
            text = (
                f"completions in a group {words}: mean pairwise overlap of their text {num(recent)}"
            )
            b.add(
                severity,
                samples.evidence({"recent_overlap": recent}, text),
                samples.onset(lambda s: s.column("pairwise_overlap") >= level),
            )
        elif samples.comparable and (
            worse := samples.worse(overlap, False, rules.samples.diversity_drop)
        ):
            early, recent = worse
            text = f"diversity falling: overlap {num(early)} → {num(recent)}"
            b.add(Severity.CAUTION, samples.evidence({"early": early, "recent": recent}, text))
    identical = _identical_lengths(f)
    if identical is not None:
        b.add(*identical)
    b.advise(Advice.MORE_DIVERSITY, Advice.MORE_GENERATIONS, Advice.FINER_REWARD)
    return b.build(f)


def _reward_at_top(f: Findings) -> bool:
    reward, rng = f.reward, f.reward_range
    return (
        reward is not None
        and rng is not None
        and rng.reaches(reward.level, f.rules.rewards.saturation_position)
    )


def _identical_lengths(f: Findings) -> tuple[Severity, Evidence] | None:
    """Every completion of the step the same length (min == max), sustained, while not cut
    at the cap: identical outputs. A problem when the groups also have no reward spread."""
    lo, hi = f.snap.get("completion_length_min"), f.snap.get("completion_length_max")
    if lo is None or hi is None or lo.empty or hi.empty:
        return None
    lo_w, hi_w = window_of(lo, f.rules), window_of(hi, f.rules)
    n = min(len(lo_w), len(hi_w))
    same = (hi_w.values[-n:] - lo_w.values[-n:]) <= f.rules.length.identical_spread
    if f.cap is not None:
        pinned = bounds_of(f, "completion_length").bad_above or 0.97
        same &= hi_w.values[-n:] < pinned * f.cap.tokens
    if f.clipped is not None and f.clipped.zone is Zone.BAD:
        return None
    share = float(same.mean()) if n else 0.0
    if share < f.rules.window.sustained:
        return None
    # one length is a template's sign, not a copy's by itself (a 20-token action format):
    # it counts when the groups tie too (no advantage signal), as copies would make them
    frac, std = f.frac_zero_std, f.reward_std
    tied = (frac is not None and frac.zone.warns) or (std is not None and std.zone.warns)
    if not tied:
        return None
    severity = Severity.PROBLEM if frac is not None and frac.zone is Zone.BAD else Severity.CAUTION
    window = Window(float(hi_w.steps[-n]), float(hi_w.steps[-1]), n)
    text = f"every completion of a step has the same length ({num(float(lo_w.values[-1]))} tokens) on {window.share(share)}"
    return severity, Evidence(
        "completion_length_max",
        window,
        {"min": float(lo_w.values[-1]), "max": float(hi_w.values[-1])},
        text,
    )


# -- healthy ---------------------------------------------------------------------------------------------


def healthy(
    f: Findings, others: list[Scenario], *, holding: bool = False, after_top: bool = False
) -> Scenario | None:
    """Rising with its spread intact; once it holds, it stays while the reward keeps what
    it gained (a plateau or a noisy stretch is no reason to drop it; a fall or any warning
    is)."""
    # one state at a time: another state that warns, or the late stage, is not learning;
    # a finding (truncation, a collapse of the lengths) warns beside it
    # (held, it is judged on its own evidence: the steady tracker weighs it against a
    # state whose evidence is only building, and lets that one in once it has held)
    states = [s for s in others if s.id.is_state]
    if not holding and any(s.severity.warns or s.id is ScenarioId.SATURATED for s in states):
        return None
    reward = f.reward
    if reward is None or reward.shape is None:
        return None
    shape = reward.shape
    # rising, or risen and holding most of it (below its peak, not clearly declining)
    # (or a task reward rose beyond its noise while the total moved up within its own: the
    # total's noise holds a format reward's fast saturation, the task is what learns)
    rising = (
        shape.phase in (Phase.RISING, Phase.UNSTEADY)
        or (shape.rose and f.task_rising)
        or (shape.change > 0 and not shape.declined and any(t.improved for t in f.tasks))
    )
    # once held, it leaves on evidence against it (a fall, a warning), not on a rise that
    # is for a while less clear in the noise
    # (a dip that leaves the reward clearly above where it began keeps what it gained: the
    # course says "declined", the run has not unlearned)
    kept = holding and (
        shape.phase in (Phase.RISING, Phase.PLATEAU, Phase.UNSTEADY, Phase.FLAT)
        or (shape.phase is Phase.DECLINING and shape.above(shape.end, shape.start))
    )
    # learning is the task learning: to enter, a task reward must have risen beyond its
    # noise (the format usually comes first, the task after: until then it is too early,
    # with a note). Once healthy holds, a task that is for a while flat again is no
    # evidence against it (a verdict that needs one, not_learning, takes over)
    task_rose = not f.tasks or any(t.improved or f.task_rising for t in f.tasks)
    stalled = bool(f.tasks) and all(t.flat for t in f.tasks)
    if not (rising or kept) or (stalled and holding) or not (task_rose or holding):
        return None
    if after_top and reward.direction is not Direction.RISING:
        # the late stage is shown: learning again needs a rise in the recent window, not a
        # whole-run course that reads "rising" again as its thirds move on
        return None
    held_out = f.eval_reward
    if (
        held_out is not None
        and held_out.shape is not None
        and (held_out.shape.phase in (Phase.FALLING, Phase.DECLINING))
    ):
        return None  # eval is its own evidence: a run whose held-out measure falls is not well
    std = f.reward_std
    # no reward_std logged: a reward that rose is itself proof that groups differed
    held = (std, f.frac_zero_std, f.clip, f.kl)
    if any(judgement is not None and judgement.zone is Zone.BAD for judgement in held):
        return None
    # docs/health.md, "Healthy, learning": reward_std clearly > 0, frac_reward_zero_std falling or moderate
    weak = [j for j in (std, f.frac_zero_std) if j is not None and j.zone is Zone.CAUTION]
    # ...unless a task reward rose beyond its noise: that rise is the signal, proved (with
    # 2 generations a group of a 25 % task ties 62 % of the time by chance alone)
    proved = any(t.improved for t in f.tasks)

    # (a share of tied groups that falls is mending; a reward_std mends by rising)
    def mending(j: Judgement) -> bool:
        return j.direction is (Direction.FALLING if j is f.frac_zero_std else Direction.RISING)

    if not holding and not proved and not all(mending(j) for j in weak):
        return None
    b = Builder(ScenarioId.HEALTHY)
    b.add(Severity.OK, course("reward", reward), shape.start.first_step)
    for fn in f.tasks:
        if fn.shape is not None and fn.shape.rose:
            b.support(course(fn.fn, fn.judgement))
    for judgement in held:
        if judgement is not None:
            b.support(evidence(judgement))
    b.advise(Advice.WATCH)
    return b.build(f)


#: the rules `diagnose` runs, by the verdict each names (then `healthy`, once the others
#: are known)
RULES: tuple[tuple[ScenarioId, Callable[[Findings], Scenario | None]], ...] = (
    (ScenarioId.NOT_LEARNING, not_learning),
    (ScenarioId.TOO_AGGRESSIVE, too_aggressive),
    (ScenarioId.REWARD_HACKING, reward_hacking),
    (ScenarioId.TRUNCATION, truncation),
    (ScenarioId.LENGTH_COLLAPSE, length_collapse),
    (ScenarioId.LOW_DIVERSITY, low_diversity),
    (ScenarioId.OFF_POLICY, off_policy),
    (ScenarioId.SATURATED, saturated),
)
