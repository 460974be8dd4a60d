"""A small, honest, deterministic model of a GRPO run that writes an ms-swift 4.x run dir.

Used by `grpo-tui demo` and by tests. Each scenario is a set of curves over training
progress t in (0, 1]: the chance of a correct answer, of the right tags, the target length,
KL, entropy, clip ratio... Rollouts are generated *text* for arithmetic prompts; rewards
are computed from that text by real reward functions; every rollout metric on a line is
computed from those rewards the way ms-swift does it (mean of group means, mean unbiased
within-group std, fraction of zero-spread groups). Loss-side metrics (loss, kl, entropy,
clip ratios, step_time) are per-step curves plus noise, averaged over the logging window.

Simplification: when a logging window holds several rollouts (num_iterations > 1), its
rollout metrics are those of the window's *last* rollout, the batch that the matching
completions.jsonl line shows. Nothing here reads the wall clock unless asked to
(`SimConfig.use_wall_clock`); the elapsed/remaining times are those of the simulated run.

Ground truth for evaluating a diagnosis: SCENARIO_REGIMES (and regime_at) give, for every
scenario, what an expert names over training progress, read off the scenario's curves.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

SCENARIOS: tuple[str, ...] = (
    "healthy",
    "not_learning",
    "too_aggressive",
    "reward_hacking",
    "truncation",
    "length_collapse",
    "low_diversity",
    "saturated",
    "plateau",
    "blow_up",
    "early_collapse",
)
"""Every scenario the simulator writes. The first eight are named after the ScenarioId an
expert gives them at the end of the run; the later ones are shapes that real runs showed
(see SCENARIO_REGIMES for what an expert names in each stretch of every scenario)."""

CHARS_PER_TOKEN = 4
"""Token counts are modelled as characters / 4 (a usual BPE ratio for English text)."""

SYSTEM_PROMPT = (
    "A conversation between User and Assistant. The assistant first thinks about the reasoning "
    "process and then gives the answer. The reasoning and the answer are enclosed within "
    "<think> </think> and <answer> </answer> tags, respectively."
)

#: reward class name (as logged) -> the name given on the command line (args.json)
REWARD_CLI_NAMES: dict[str, str] = {
    "MathAccuracy": "accuracy",
    "Format": "format",
    "LengthBonus": "length_bonus",
}


@dataclass(frozen=True)
class SimConfig:
    """What to simulate. Scenario-specific training args (learning rate, num_iterations,
    temperature, reward functions) come from the scenario, not from here."""

    scenario: str = "healthy"
    """One of SCENARIOS."""
    seed: int = 0
    """Seed of the single numpy Generator; same seed, same bytes."""
    max_steps: int = 300
    """Optimizer steps of the run."""
    logging_steps: int = 5
    """A train line every this many steps, plus step 1 (logging_first_step)."""
    eval_steps: int = 50
    """An eval line every this many steps and at the last step; 0 disables eval."""
    num_generations: int = 8
    """Completions per prompt (the GRPO group size)."""
    prompts_per_step: int = 4
    """Prompts per rollout batch; rows per completions line = this x num_generations.
    Small batches (1-2 prompts x 4 generations) make the per-step reward very noisy, as in
    small real runs: every logged rollout metric comes from that one batch."""
    max_completion_length: int = 512
    """Generation cap in tokens; longer completions are cut and count as clipped."""
    eval_prompts: int = 16
    """Fixed eval prompts (more than a batch means the eval completions line, like
    ms-swift's bounded deque, shows only the last prompts_per_step groups)."""
    beta: float = 0.04
    """KL coefficient written to args; 0 drops the `kl` key, as ms-swift does."""
    dataset_size: int = 2000
    """Training prompts; sets the epoch counter."""
    model: str = "Qwen/Qwen2.5-1.5B-Instruct"
    """Model id written to args.json."""
    use_wall_clock: bool = False
    """Name the run dir after the current time (live demo) instead of a seed-derived one."""
    spikes: tuple[tuple[str, float, float], ...] = ()
    """Isolated spikes: (metric as logged, t, factor). The first train line logged at or
    after training progress t (or the last train line, when none is) shows that metric
    multiplied by factor; the lines before and after are untouched, and nothing else in the
    run changes (no random draw depends on a spike). Metric: one of SPIKE_METRICS."""

    def validate(self) -> None:
        if self.scenario not in SCENARIOS:
            choices = ", ".join(SCENARIOS)
            raise ValueError(f"unknown scenario {self.scenario!r}; choose from {choices}")
        counts = (self.max_steps, self.logging_steps, self.num_generations, self.prompts_per_step)
        if min(counts) < 1:
            raise ValueError("max_steps, logging_steps, num_generations, prompts_per_step: >= 1")
        if self.max_completion_length < 32 or self.eval_prompts < 1 or self.eval_steps < 0:
            raise ValueError("max_completion_length >= 32, eval_prompts >= 1, eval_steps >= 0")
        for metric, t, factor in self.spikes:
            if metric not in SPIKE_METRICS:
                raise ValueError(f"spike metric {metric!r}: one of {', '.join(SPIKE_METRICS)}")
            if metric == "kl" and not self.beta:
                raise ValueError("a kl spike needs beta > 0 (beta 0 logs no kl)")
            if not 0.0 < t <= 1.0 or not math.isfinite(factor) or factor <= 0.0:
                raise ValueError(f"spike {metric!r}: t in (0, 1], factor finite and > 0")


SPIKE_METRICS: tuple[str, ...] = (
    "loss",
    "grad_norm",
    "kl",
    "entropy/mean",
    "entropy/max",
    "entropy/min",
    "clip_ratio/low_mean",
    "clip_ratio/low_min",
    "clip_ratio/high_mean",
    "clip_ratio/high_max",
    "clip_ratio/region_mean",
    "step_time",
)
"""Train-line keys a SimConfig spike may multiply: the loss-side ones. Rollout metrics
(reward, lengths...) are computed from the completions.jsonl line, which a spike on them
would contradict."""


# --------------------------------------------------------------------------- curves
def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _ramp(t: float, t0: float, t1: float) -> float:
    """0 before t0, 1 after t1, linear in between."""
    return min(1.0, max(0.0, (t - t0) / (t1 - t0)))


@dataclass(frozen=True)
class _Policy:
    """The simulated model at one moment of training."""

    acc: float  # logit of P(correct answer) for a prompt of average difficulty
    fmt: float  # logit of P(<think>..</think><answer>..</answer>)
    length: float  # target completion length as a fraction of max_completion_length
    kl: float
    entropy: float
    grad_norm: float
    clip: float = 0.0  # clip_ratio/region_mean on steps that re-use a rollout batch
    length_sd: float = 0.25  # log-normal spread of lengths
    trunc: float = 0.0  # P(the completion runs past the cap)
    untagged: float = 0.5  # P(no <answer> tag at all | wrong format)
    template: float = 0.0  # fraction of completions that are the boilerplate template
    clone: float = 0.0  # P(a group is 8 copies of one string); else one member differs
    repeat: float = 0.0  # P(a sentence is followed by a stutter)
    jitter: float = 0.0  # sd of a per-batch logit shake (erratic learning)
    garble: float = 0.0  # P(token soup that runs past the cap: a collapsed policy)
    stub: float = 0.0  # P(a stub of 2-3 tokens, no tags: early EOS)


@dataclass(frozen=True)
class _Scenario:
    """A scenario: its training args and its policy over training progress t."""

    reward_funcs: tuple[str, ...]
    learning_rate: float
    num_iterations: int
    temperature: float
    policy: Callable[[float], _Policy]
    group_sd: float = 1.0  # spread of per-prompt difficulty (logit), shared by a group
    eval_shift: Callable[[float], float] = lambda t: 0.0  # eval prompts' logit offset
    # the policy of step 1 when it is not policy(1 / max_steps): the model before any
    # update, for a collapse that lands within the first logging interval
    first_step: _Policy | None = None


def _healthy(t: float) -> _Policy:
    # both rewards climb all run long; on-policy (clip 0); KL small, rising no faster
    # than linearly
    return _Policy(
        acc=-3.4 + 5.2 * t,
        fmt=-3.5 + 5.9 * t,
        length=0.38 + 0.03 * t,
        kl=0.002 + 0.048 * t**0.9,
        entropy=0.78 - 0.2 * t,
        grad_norm=0.3 - 0.08 * t,
    )


def _not_learning(t: float) -> _Policy:
    # tag-less rambling: every reward 0 almost always; lr so small nothing moves.
    # num_iterations 2 (see _SCENARIO_SPECS) makes clip_ratio applicable, and it stays ~1e-4
    return _Policy(
        acc=-2.2,
        fmt=_logit(0.0015),
        length=0.3,
        untagged=1.0,
        kl=2e-5,
        entropy=0.92,
        grad_norm=0.004,
        clip=1.5e-4,
    )


def _too_aggressive(t: float) -> _Policy:
    # fast rise in the first 20%, then an erratic policy drifting from the reference.
    # num_iterations 2: with logging_steps 1 the re-use lines (no reward keys) show the
    # clip ratio itself, as in ms-swift; with 5 every line averages it with zeros
    rise = _ramp(t, 0.0, 0.2)
    return _Policy(
        acc=-2.0 + 2.8 * rise,
        fmt=-0.5 + 3.0 * rise,
        length=0.45 - 0.21 * _ramp(t, 0.2, 1.0),
        jitter=1.0 * _ramp(t, 0.25, 0.45),
        repeat=0.3 * _ramp(t, 0.3, 1.0),
        kl=0.005 + 4.0 / (1.0 + math.exp(-(t - 0.45) * 12.0)),
        entropy=0.8 - 0.55 * t,
        grad_norm=0.4 + 2.2 * t,
        # re-use steps: region clip 0.2 -> 0.92; a 5-step window averages it
        # with the rollout steps' zeros (0.4-0.6 of it)
        clip=min(0.92, 0.2 + 1.1 * t),
    )


def _reward_hacking(t: float) -> _Policy:
    # the templated answer (always well tagged, answer a guess) takes over by t = 0.45;
    # correctness drifts down a little as the reasoning is replaced by boilerplate
    return _Policy(
        acc=_logit(0.22 - 0.03 * t),
        fmt=_logit(0.1),
        untagged=0.0,
        length=0.23,
        template=_ramp(t, 0.0, 0.45),
        kl=0.002 + 0.075 * t,
        entropy=0.75 - 0.45 * t,
        grad_norm=0.25,
    )


def _truncation(t: float) -> _Policy:
    # ~3/4 of completions run into the cap; the rest stop just below it
    return _Policy(
        acc=0.2,
        fmt=_logit(0.9),
        length=0.955,
        length_sd=0.015,
        trunc=0.72 + 0.06 * t,
        kl=0.001 + 0.03 * t,
        entropy=0.85,
        grad_norm=0.2,
    )


def _length_collapse(t: float) -> _Policy:
    # ~400 tokens, then an exponential fall to ~20 from t = 0.12 (LengthBonus pays for it)
    length = 0.7 if t < 0.12 else 0.03 + 0.67 * math.exp(-(t - 0.12) / 0.18)
    return _Policy(
        acc=-1.0 + 3.4 * t,
        fmt=2.5,
        length=length,
        length_sd=0.15,
        kl=0.002 + 0.075 * t,
        entropy=0.7 - 0.35 * t,
        grad_norm=0.3,
    )


def _low_diversity(t: float) -> _Policy:
    # temperature 0.3: a group is one string repeated; sometimes one sample differs
    return _Policy(
        acc=_logit(0.45),
        fmt=_logit(0.6),
        untagged=0.0,
        length=0.21,
        clone=0.7,
        kl=0.01 + 0.01 * t,
        entropy=0.12,
        grad_norm=0.08,
    )


def _saturated(t: float) -> _Policy:
    # the data is easy: nearly every group all-correct, and more so over time
    return _Policy(
        acc=2.5 + 5.5 * t,
        fmt=3.5 + 5.5 * t,
        length=0.33,
        kl=0.02 + 0.04 * t,
        entropy=0.45 - 0.15 * t,
        grad_norm=0.15 - 0.1 * t,
    )


def _plateau(t: float) -> _Policy:
    # P(correct) 0.2 -> 0.85 and P(format) 0.35 -> 0.85 for an average prompt over the
    # first 40%, then level: the batch means plateau near 0.75 and 0.8, below the top of
    # their range (reward ~1.55 of 2), and groups keep their spread
    rise = _ramp(t, 0.0, 0.4)
    return _Policy(
        acc=_logit(0.2) + (_logit(0.85) - _logit(0.2)) * rise,
        fmt=_logit(0.35) + (_logit(0.85) - _logit(0.35)) * rise,
        length=0.36 + 0.02 * rise,
        kl=0.002 + 0.03 * rise + 0.005 * t,
        entropy=0.75 - 0.15 * rise,
        grad_norm=0.3 - 0.06 * rise,
    )


_BLOW_UP_ONSET = (0.55, 0.65)  # the collapse starts, and is complete


def _blow_up(t: float) -> _Policy:
    # healthy learning, then within 10% of the run: token soup running to the cap (reward
    # 0, nothing reaches an </answer>), entropy x15, KL and grad_norm climbing
    s = _ramp(t, *_BLOW_UP_ONSET)
    acc, fmt = -2.6 + 4.5 * t, -2.0 + 6.0 * t
    kl = 0.002 + 0.05 * t
    entropy, grad_norm = 0.45 - 0.25 * t, 0.3 - 0.05 * t
    return _Policy(
        acc=acc + (-9.0 - acc) * s,
        fmt=fmt + (-9.0 - fmt) * s,
        length=0.35 + 0.6 * s,
        untagged=0.5 + 0.5 * s,
        garble=s,
        trunc=s,
        # the onset multiplies entropy and grad_norm geometrically: an explosion, not a drift
        entropy=entropy * (5.0 / entropy) ** s,
        grad_norm=grad_norm * (8.0 / grad_norm) ** s,
        kl=kl + s * (2.0 + 4.0 * (t - _BLOW_UP_ONSET[0])),
    )


# early_collapse before its first update: a normal model (~50 tokens at the default cap of
# 512, entropy 0.9)
_EARLY_FIRST_STEP = _Policy(
    acc=_logit(0.15),
    fmt=_logit(0.4),
    length=50 / 512,
    kl=0.0005,
    entropy=0.9,
    grad_norm=0.35,
)


def _early_collapse(t: float) -> _Policy:
    # from the first update on: every group one stub ("= 579"), entropy ~0.04; no answer
    # tag means every reward is 0, so advantages and grad_norm are ~0 (beta's term only)
    return _Policy(
        acc=_logit(0.15),
        fmt=_logit(0.4),
        length=0.01,
        stub=1.0,
        clone=0.9,
        kl=0.03 + 0.02 * t,
        entropy=0.04,
        grad_norm=0.02,
    )


_TASK_AND_FORMAT = ("MathAccuracy", "Format")
_SCENARIO_SPECS: dict[str, _Scenario] = {
    "healthy": _Scenario(
        _TASK_AND_FORMAT, 1e-6, 1, 1.0, _healthy, group_sd=1.3, eval_shift=lambda t: -0.2
    ),
    "not_learning": _Scenario(_TASK_AND_FORMAT, 5e-8, 2, 1.0, _not_learning, group_sd=0.3),
    "too_aggressive": _Scenario(
        _TASK_AND_FORMAT,
        5e-5,
        2,
        1.0,
        _too_aggressive,
        eval_shift=lambda t: -3.5 * _ramp(t, 0.5, 1.0),
    ),
    "reward_hacking": _Scenario(_TASK_AND_FORMAT, 2e-6, 1, 1.0, _reward_hacking, group_sd=0.5),
    "truncation": _Scenario(_TASK_AND_FORMAT, 1e-6, 1, 1.0, _truncation, group_sd=0.5),
    "length_collapse": _Scenario(("MathAccuracy", "LengthBonus"), 3e-6, 1, 1.0, _length_collapse),
    "low_diversity": _Scenario(_TASK_AND_FORMAT, 1e-6, 1, 0.3, _low_diversity, group_sd=0.0),
    "saturated": _Scenario(
        _TASK_AND_FORMAT, 1e-6, 1, 1.0, _saturated, group_sd=0.5, eval_shift=lambda t: -0.3
    ),
    "plateau": _Scenario(
        _TASK_AND_FORMAT, 1e-6, 1, 1.0, _plateau, group_sd=0.8, eval_shift=lambda t: -0.2
    ),
    "blow_up": _Scenario(_TASK_AND_FORMAT, 2e-5, 1, 1.0, _blow_up),
    "early_collapse": _Scenario(
        _TASK_AND_FORMAT, 1e-5, 1, 1.0, _early_collapse, group_sd=0.5, first_step=_EARLY_FIRST_STEP
    ),
}


# --------------------------------------------------------------------------- ground truth
@dataclass(frozen=True)
class Regime:
    """A stretch of a simulated run and what an expert names there.

    It runs from `start` to the next regime's start (or the end of the run). `start` is
    where the scenario's curves enter the regime, not where a judge looking at a window of
    logged points can first see it: an evaluation should allow a detection lag after each
    boundary (about one judging window) and treat the first few logged points of any run
    as warming up (HEALTH.md), whatever the regime says there."""

    start: float
    """Training progress t (0..1, step / max_steps) where the stretch begins."""
    headline: str
    """The ScenarioId word the headline should name: "healthy", "not_learning",
    "too_aggressive", "reward_hacking", "truncation", "length_collapse", "low_diversity"
    or "saturated" (the late stage, plateau included)."""
    also: frozenset[str] = frozenset()
    """Other ScenarioId words that are also right in this stretch."""


SCENARIO_REGIMES: dict[str, tuple[Regime, ...]] = {
    "healthy": (Regime(0.0, "healthy"),),
    # tag-less rambling, rewards 0 with zero spread from the first step, nothing moves
    "not_learning": (Regime(0.0, "not_learning"),),
    # the rise is healthy while KL is low; from t=0.15 KL passes 0.1 and accelerates and the
    # re-use steps clip > 0.3 while reward still climbs (either word is defensible); from
    # t=0.3 the reward is erratic and KL heads past 1
    "too_aggressive": (
        Regime(0.0, "healthy"),
        Regime(0.15, "too_aggressive", frozenset({"healthy"})),
        Regime(0.3, "too_aggressive"),
    ),
    # the template spreads from the start while the task reward stays flat: until Format
    # saturates (t=0.45) HEALTH.md's rule "auxiliary rises, task flat" also says not_learning
    "reward_hacking": (
        Regime(0.0, "reward_hacking", frozenset({"not_learning"})),
        Regime(0.45, "reward_hacking"),
    ),
    "truncation": (Regime(0.0, "truncation"),),  # ~3/4 of completions cut from step 1
    "length_collapse": (Regime(0.0, "healthy"), Regime(0.12, "length_collapse")),
    "low_diversity": (Regime(0.0, "low_diversity"),),  # temperature 0.3 from the start
    "saturated": (Regime(0.0, "saturated"),),  # starts already near the top
    # a plateau after a clear rise is the late stage, never not_learning
    "plateau": (Regime(0.0, "healthy"), Regime(0.4, "saturated")),
    # policy collapse from the onset; once every completion sits at the cap (end of the
    # onset) truncation is right too
    "blow_up": (
        Regime(0.0, "healthy"),
        Regime(_BLOW_UP_ONSET[0], "too_aggressive"),
        Regime(_BLOW_UP_ONSET[1], "too_aggressive", frozenset({"truncation"})),
    ),
    # collapsed from the first update on: only the step-1 line (before any update) looks
    # normal, and one point is warming up, not a verdict
    "early_collapse": (Regime(0.0, "length_collapse", frozenset({"low_diversity"})),),
}
"""For every scenario, its regimes in order of start (the first starts at 0)."""


def regime_at(scenario: str, t: float) -> Regime:
    """The regime of `scenario` at training progress t (the last one started at or before t;
    t before 0 counts as 0). Raises KeyError for an unknown scenario."""
    regimes = SCENARIO_REGIMES[scenario]
    return next((r for r in reversed(regimes) if r.start <= t), regimes[0])


# --------------------------------------------------------------------------- text
@dataclass(frozen=True)
class _Problem:
    a: int
    b: int
    op: str  # "+" or "*"

    @property
    def solution(self) -> str:
        return str(self.a + self.b if self.op == "+" else self.a * self.b)

    @property
    def prompt(self) -> str:
        # the qwen chat template, as ms-swift logs it (special tokens kept)
        return (
            f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n"
            f"What is {self.a}{self.op}{self.b}?<|im_end|>\n<|im_start|>assistant\n"
        )

    def steps(self) -> list[str]:
        """The exact worked arithmetic, tens then ones."""
        a, b = self.a, self.b
        tens, ones = b - b % 10, b % 10
        if self.op == "+":
            return [f"{a} + {tens} = {a + tens}.", f"{a + tens} + {ones} = {a + b}."]
        return [
            f"{a} × {tens} = {a * tens}.",
            f"{a} × {ones} = {a * ones}.",
            f"{a * tens} + {a * ones} = {a * b}.",
        ]


_OPENERS = (
    "Let me work this out.",
    "Okay, we need {a} {w} {b}.",
    "The question asks for {a} {w} {b}.",
    "First I read the problem again.",
    "Let's compute {a} {w} {b} step by step.",
    "Alright, an arithmetic question.",
    "I need the value of {a} {w} {b}.",
    "Start with the two numbers, {a} and {b}.",
)
_FILLERS = (
    "Let me double-check that.",
    "I should be careful with the carry.",
    "Writing it in columns helps.",
    "Maybe I can split {b} into parts.",
    "Another way is to round {a} to the nearest ten.",
    "That gives an estimate near {y}.",
    "So far so good.",
    "Wait, let me recount.",
    "I keep the partial result {x} in mind.",
    "Estimating first keeps mistakes small.",
    "Let me verify with a different order.",
    "Reversing the order: {b} {w} {a} is the same.",
    "The estimate and the exact value should be close.",
    "Nothing tricky so far.",
    "One more look at the last digit.",
    "{x} minus {y} would be something else entirely.",
    "Hmm, is {x} right? No, that was a different sum.",
    "The units digit of {b} matters here.",
    "I could also count up from {a}.",
    "Breaking numbers apart makes mental math easier.",
    "Let me not rush this.",
    "A quick sanity check: the result must exceed {a}.",
    "Suppose I had {x} instead; that would change everything.",
    "Good, the digits line up.",
    "I think the method is sound.",
    "Let me write the intermediate values down.",
    "Then I combine the pieces.",
    "Careful: {y} is only a rough guess.",
    "Fine, moving on.",
    "Checking the tens place again.",
    "If I am off, it is probably by ten.",
    "A number line picture might help: {a}, then a jump of {b}.",
    "That seems consistent.",
    "Another check uses the last digits only.",
    "Honestly this is simple, but verify anyway.",
)
_SHORT = (
    "{a}{o}{b}={ans}",
    "{a} {o} {b} = {ans}",
    "sum {ans}",
    "so {ans}",
    "result: {ans}",
    "{b}{o}{a}={ans}",
    "easy, {ans}",
    "it is {ans}",
    "gives {ans}",
    "= {ans}",
    "quick: {ans}",
)
_STUBS = ("= {ans}", "so {ans}", "ans {ans}", "it is {ans}")  # 2-3 tokens each (chars / 4)
# pieces of what a collapsed, high-entropy policy emits: sub-word fragments, stray
# punctuation, code and other scripts, in no order
_SOUP = (
    "ĠThe",
    "ilk",
    ")/",
    "ysql",
    "_REF",
    "Ġ{}",
    "刻",
    "ubb",
    "ĊĊ",
    " tensor",
    "ーム",
    "];",
    " Verm",
    "ächst",
    " __",
    "ocado",
    "><",
    " 一",
    "ĉĉ",
    " nullable",
    "erte",
    "$$",
    " Ř",
    "ynom",
    "::",
    " [...]",
    "ieder",
    " 0x",
)
_STUTTERS = ("wait wait wait", "check check check check", "so so so", "again again again")
_TEMPLATES = (  # two near-identical boilerplates: the "hack" the policy converges to
    (
        "I will solve this carefully and methodically. First I restate the problem, then I "
        "work through every part of it, verify each intermediate value, and confirm the final "
        "result before answering. This careful approach guarantees a correct and complete "
        "solution. After careful verification, the final answer is {g}."
    ),
    (
        "I will solve this carefully and methodically. First I restate the problem, then I "
        "work through every part of it, verify each intermediate value twice, and confirm the "
        "final result before answering. This systematic approach guarantees a correct and "
        "complete solution. After checking everything carefully, the final answer is {g}."
    ),
)


#: a prompt with its difficulty offsets (logits) for correctness and for format
_Prompt = tuple[_Problem, float, float]
_PARAMETER_INFO = (
    "Qwen2ForCausalLM: 1543.7143M Params (1543.7143M Trainable [100.0000%]), 0.0000M Buffers."
)


def _make_problem(rng: np.random.Generator) -> _Problem:
    if rng.random() < 0.7:
        return _Problem(int(rng.integers(10, 1000)), int(rng.integers(10, 1000)), "+")
    return _Problem(int(rng.integers(11, 100)), int(rng.integers(12, 40)), "*")


def _wrong_answer(rng: np.random.Generator, solution: str) -> str:
    offset = (-10, -2, -1, 1, 2, 10, 3, -3, 5, -5)[int(rng.integers(10))]
    return str(int(solution) + offset)


def _think(rng: np.random.Generator, p: _Problem, answer: str, n_chars: int, repeat: float) -> str:
    """Reasoning of about n_chars characters: opener, fillers with the worked steps inside,
    and a closing line that states `answer` (which may be wrong: small models slip)."""
    if n_chars < 90:  # no room for reasoning: a one-line shortcut (length collapse)
        return _SHORT[int(rng.integers(len(_SHORT)))].format(a=p.a, b=p.b, o=p.op, ans=answer)
    w = "plus" if p.op == "+" else "times"
    final = f"So {p.a} {w} {p.b} = {answer}."
    steps = p.steps()
    budget = n_chars - len(final) - sum(len(s) + 1 for s in steps)
    # one draw for the whole text: fast, and a fixed number of draws per call
    n = max(len(steps) + 1, budget // 25 + 2)
    u = rng.random((5, n))
    picks = (u[0] * len(_FILLERS)).astype(int).tolist()
    xs, ys = (2 + u[1] * 998).astype(int).tolist(), (2 + u[2] * 1998).astype(int).tolist()
    stutter = (u[3] < repeat).tolist()
    parts = [_OPENERS[int(u[4, 0] * len(_OPENERS))].format(a=p.a, b=p.b, w=w)]
    size, i = len(parts[0]), 0
    while size < budget:
        k = i % n
        sentence = _FILLERS[picks[k]].format(a=p.a, b=p.b, w=w, x=xs[(k + i // n) % n], y=ys[k])
        if stutter[k]:  # degenerate decoding: the policy starts to stutter
            sentence += " " + _STUTTERS[(k + i) % len(_STUTTERS)]
        parts.append(sentence)
        size, i = size + len(sentence) + 1, i + 1
    # the worked steps land at random places among the fillers
    slots = sorted(int(x * len(parts)) + 1 for x in u[4, 1 : 1 + len(steps)].tolist())
    for offset, (slot, step) in enumerate(zip(slots, steps)):
        parts.insert(slot + offset, step)
    parts.append(final)
    return " ".join(parts)


def _soup(rng: np.random.Generator, p: _Problem, n_chars: int) -> str:
    """A start that reads the problem, then token soup to n_chars characters."""
    w = "plus" if p.op == "+" else "times"
    start = _OPENERS[int(rng.integers(len(_OPENERS)))].format(a=p.a, b=p.b, w=w)
    picks = rng.integers(len(_SOUP), size=n_chars // 2 + 1).tolist()  # pieces are >= 2 chars
    return f"<think>\n{start}" + "".join(_SOUP[i] for i in picks)[:n_chars]


def _render(think: str, answer: str, formatted: bool, tagged: bool) -> str:
    if formatted:
        return f"<think>\n{think}\n</think>\n<answer>{answer}</answer>"
    if tagged:  # answer tag without the think block: accuracy can score, format cannot
        return f"{think}\n<answer>{answer}</answer>"
    return f"{think}\nThe answer is {answer}."


# --------------------------------------------------------------------------- rewards
_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_FORMAT_RE = re.compile(r"<think>.*?</think>\s*<answer>.*?</answer>", re.DOTALL)


def math_accuracy(completion: str, solution: str) -> float:
    """1.0 iff the text inside the first <answer></answer> equals the solution."""
    match = _ANSWER_RE.search(completion)
    return 1.0 if match is not None and match.group(1).strip() == solution else 0.0


def format_reward(completion: str) -> float:
    """1.0 iff the whole completion is <think>...</think> then <answer>...</answer>
    (ms-swift's Format regex)."""
    return 1.0 if _FORMAT_RE.fullmatch(completion) else 0.0


def length_bonus(tokens: int, max_completion_length: int) -> float:
    """Pays for short completions: 1 - tokens / max (the reward behind length collapse)."""
    return 1.0 - min(tokens, max_completion_length) / max_completion_length


def count_tokens(completion: str) -> int:
    return max(1, math.ceil(len(completion) / CHARS_PER_TOKEN))


def _score(name: str, completion: str, solution: str, tokens: int, max_len: int) -> float:
    if name == "MathAccuracy":
        return math_accuracy(completion, solution)
    if name == "Format":
        return format_reward(completion)
    return length_bonus(tokens, max_len)


# --------------------------------------------------------------------------- batches
@dataclass
class _Batch:
    """One rollout batch: rows grouped by prompt (num_generations consecutive rows)."""

    problems: list[_Problem]
    completions: list[str]
    tokens: np.ndarray
    clipped: np.ndarray
    rewards: dict[str, list[float]]
    totals: np.ndarray  # weighted sum (all weights 1) per row
    advantages: np.ndarray
    entropy: np.ndarray

    def columns(self, step: int, limit: int) -> dict[str, list[Any]]:
        """The completions.jsonl line: the last `limit` rows, like ms-swift's bounded deque."""
        rows = slice(max(0, len(self.completions) - limit), None)
        n = len(self.completions[rows])
        line: dict[str, list[Any]] = {
            "step": [str(step)] * n,
            "prompt": [p.prompt for p in self.problems[rows]],
            "completion": self.completions[rows],
        }
        for name, values in self.rewards.items():
            line[name] = values[rows]
        line["advantages"] = [float(a) for a in self.advantages[rows]]
        line["entropy"] = [float(e) for e in self.entropy[rows]]
        line["solution"] = [p.solution for p in self.problems[rows]]
        return line


def _group(
    rng: np.random.Generator,
    pol: _Policy,
    p: _Problem,
    diff: float,
    fdiff: float,
    size: int,
    max_len: int,
) -> list[str]:
    """The completions of one prompt."""
    jitter = float(rng.normal(0.0, pol.jitter)) if pol.jitter else 0.0
    p_acc, p_fmt = _sigmoid(pol.acc + diff + jitter), _sigmoid(pol.fmt + fdiff + jitter)

    def one() -> tuple[str, str]:
        answer = p.solution if rng.random() < p_acc else _wrong_answer(rng, p.solution)
        # stub and garble draw only when set: the older scenarios keep their draws, and bytes
        if pol.stub and rng.random() < pol.stub:  # early EOS: a bare answer, no tags
            return _STUBS[int(rng.integers(len(_STUBS)))].format(ans=answer), answer
        if pol.garble and rng.random() < pol.garble:  # collapsed: soup until the cap
            return _soup(rng, p, int(1.08 * max_len) * CHARS_PER_TOKEN), answer
        if rng.random() < pol.template:  # boilerplate, always in perfect tags
            template = _TEMPLATES[int(rng.integers(len(_TEMPLATES)))]
            return _render(template.format(g=answer), answer, True, True), answer
        formatted = bool(rng.random() < p_fmt)
        tagged = formatted or bool(rng.random() >= pol.untagged)
        if rng.random() < pol.trunc:
            target = 1.08 * max_len  # runs past the cap
        else:
            target = pol.length * max_len * float(rng.lognormal(0.0, pol.length_sd))
        think = _think(rng, p, answer, int(target * CHARS_PER_TOKEN) - 40, pol.repeat)
        return _render(think, answer, formatted, tagged), answer

    if pol.clone:
        base, answer = one()
        texts = [base] * size
        if rng.random() >= pol.clone:  # one sample diverged at the answer
            other = _wrong_answer(rng, p.solution) if answer == p.solution else p.solution
            texts[int(rng.integers(size))] = base.replace(
                f"<answer>{answer}</answer>", f"<answer>{other}</answer>"
            )
        return texts
    return [one()[0] for _ in range(size)]


def _rollout(
    rng: np.random.Generator,
    pol: _Policy,
    prompts: list[_Prompt],
    cfg: SimConfig,
    funcs: tuple[str, ...],
) -> _Batch:
    size, max_len = cfg.num_generations, cfg.max_completion_length
    problems, completions = [], []
    for p, diff, fdiff in prompts:
        completions += _group(rng, pol, p, diff, fdiff, size, max_len)
        problems += [p] * size
    cap = max_len * CHARS_PER_TOKEN
    clipped = np.array([len(c) > cap for c in completions])
    completions = [c[:cap] for c in completions]  # cut mid-text, like a length stop
    tokens = np.array([count_tokens(c) for c in completions])
    rows = list(zip(completions, problems, tokens.tolist()))
    rewards = {f: [_score(f, c, p.solution, n, max_len) for c, p, n in rows] for f in funcs}
    totals = np.sum([rewards[f] for f in funcs], axis=0)
    grouped = totals.reshape(-1, size)
    std = grouped.std(axis=1, ddof=1) if size > 1 else np.zeros(len(grouped))
    advantages = ((grouped - grouped.mean(axis=1, keepdims=True)) / (std[:, None] + 1e-4)).ravel()
    entropy = pol.entropy * rng.lognormal(0.0, 0.15, size=len(completions))
    return _Batch(problems, completions, tokens, clipped, rewards, totals, advantages, entropy)


def _rollout_metrics(batch: _Batch, size: int, prefix: str = "") -> dict[str, float]:
    """ms-swift 4.6's rollout keys, in its order, computed from the batch."""
    grouped = batch.totals.reshape(-1, size)
    std = grouped.std(axis=1, ddof=1) if size > 1 else np.zeros(len(grouped))
    m = {
        "completions/mean_length": batch.tokens.mean(),
        "completions/min_length": batch.tokens.min(),
        "completions/max_length": batch.tokens.max(),
        "completions/clipped_ratio": batch.clipped.mean(),
        "reward": grouped.mean(axis=1).mean(),
        "reward_std": std.mean(),
        "frac_reward_zero_std": np.isclose(std, 0.0).mean() if size > 1 else 1.0,
    }
    for name, values in batch.rewards.items():
        arr = np.asarray(values)
        m[f"rewards/{name}/mean"] = arr.mean()
        m[f"rewards/{name}/std"] = arr.std(ddof=1) if len(arr) > 1 else 0.0
    return {prefix + k: float(v) for k, v in m.items()}


# --------------------------------------------------------------------------- lines
def format_time(seconds: float) -> str:
    """ms-swift 4.6's format_time: "1d 2h 3m 4s", "2h 3m 4s", "3m 4s" or "4s"."""
    days, rest = divmod(round(float(seconds)), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h {minutes}m {secs}s"
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def _rounded(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 8) if isinstance(v, float) else v for k, v in raw.items()}


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


@dataclass
class _LogCall:
    """One Trainer.log() call: its logging.jsonl line and completions.jsonl line."""

    line: dict[str, Any]
    completions: dict[str, list[Any]] | None  # None for the final summary line


class _Simulation:
    """Steps through the run and yields, per step that logs anything, its log calls."""

    def __init__(self, cfg: SimConfig, run_dir: Path) -> None:
        self.cfg, self.run_dir = cfg, run_dir
        self.spec = _SCENARIO_SPECS[cfg.scenario]
        self.rng = np.random.default_rng(cfg.seed)
        self.eval_set = [self._draw_prompt() for _ in range(cfg.eval_prompts)]  # fixed eval set
        self.clock = 0.0  # simulated seconds since training started
        self.memory = 0.0
        self.losses: list[float] = []
        self.history: list[dict[str, Any]] = []
        self.evals: list[tuple[int, float]] = []
        self.deque: tuple[_Batch, int] | None = None  # latest rollout rows and their count
        self.spikes = self._spike_steps()

    def _spike_steps(self) -> dict[int, list[tuple[str, float]]]:
        """SimConfig.spikes by the step of the train line each one lands on."""
        cfg = self.cfg
        logged = [1, *range(max(2, cfg.logging_steps), cfg.max_steps + 1, cfg.logging_steps)]
        out: dict[int, list[tuple[str, float]]] = {}
        for metric, t, factor in cfg.spikes:
            # t compared as the simulation computes it (step / max_steps): no float slip
            step = next((s for s in logged if s / cfg.max_steps >= t), logged[-1])
            out.setdefault(step, []).append((metric, factor))
        return out

    def _policy(self, step: int) -> _Policy:
        """The simulated model at an optimizer step."""
        if step == 1 and self.spec.first_step is not None:
            return self.spec.first_step
        return self.spec.policy(step / self.cfg.max_steps)

    def _draw_prompt(self) -> _Prompt:
        sd = self.spec.group_sd
        return _make_problem(self.rng), float(self.rng.normal(0, sd)), float(self.rng.normal(0, sd))

    @property
    def batch_rows(self) -> int:
        return self.cfg.prompts_per_step * self.cfg.num_generations

    def _learning_rate(self, step: int) -> float:
        # cosine decay without warmup: matches the 4.6 fixture (9.33e-05 at step 1 of 6)
        return self.spec.learning_rate * 0.5 * (1.0 + math.cos(math.pi * step / self.cfg.max_steps))

    def _step_scalars(self, pol: _Policy, rollout: bool) -> dict[str, float]:
        """Loss-side metrics of one optimizer step."""
        rng, cfg = self.rng, self.cfg
        kl = pol.kl * float(rng.lognormal(0.0, 0.08))
        ent = pol.entropy * float(rng.lognormal(0.0, 0.04))
        region = 0.0 if rollout else min(1.0, pol.clip * float(rng.lognormal(0.0, 0.08)))
        grad = pol.grad_norm * float(rng.lognormal(0.0, 0.15))
        gen_seconds = 2.0 + 0.03 * pol.length * cfg.max_completion_length * 1.6 if rollout else 0.0
        s: dict[str, float] = {
            "loss": cfg.beta * kl + float(rng.normal(0.0, 0.02 * pol.grad_norm)),
            "grad_norm": grad,
            "entropy/mean": ent,
            "entropy/max": ent * (1.3 + 0.1 * float(rng.random())),
            "entropy/min": ent * (0.7 - 0.1 * float(rng.random())),
        }
        if cfg.beta:
            s["kl"] = kl
        # off-policy steps clip both sides (ratio below 1-eps with A<0, above 1+eps with A>0)
        s.update(
            {
                "clip_ratio/low_mean": 0.45 * region,
                "clip_ratio/low_min": 0.38 * region,
                "clip_ratio/high_mean": 0.55 * region,
                "clip_ratio/high_max": min(1.0, 0.64 * region),
                "clip_ratio/region_mean": region,
            }
        )
        s["step_time"] = (gen_seconds + 3.0) * float(rng.lognormal(0.0, 0.06))
        return s

    def _progress(self, step: int) -> dict[str, Any]:
        speed = self.clock / step
        p: dict[str, Any] = {
            "global_step/max_steps": f"{step}/{self.cfg.max_steps}",
            "elapsed_time": format_time(self.clock),
            "remaining_time": format_time((self.cfg.max_steps - step) * speed),
        }
        if self.memory > 0:
            p["memory(GiB)"] = round(self.memory, 2)
        p["train_speed(s/it)"] = round(speed, 6)
        return p

    def _call(self, raw: dict[str, Any], step: int) -> _LogCall:
        """Record a log call: raw item into log_history, rounded line + progress to disk."""
        raw["epoch"] = step * self.cfg.prompts_per_step / self.cfg.dataset_size
        self.history.append({**raw, "step": step})
        batch, rows = self.deque if self.deque else (None, 0)
        return _LogCall(
            {**_rounded(raw), **self._progress(step)},
            batch.columns(step, rows) if batch is not None else None,
        )

    def _rollout_at(self, step: int, prompts: list[_Prompt], shift: float = 0.0) -> _Batch:
        pol = self._policy(step)
        if shift:
            pol = replace(pol, acc=pol.acc + shift)
        batch = _rollout(self.rng, pol, prompts, self.cfg, self.spec.reward_funcs)
        self.deque = (batch, self.batch_rows)
        # peak memory follows the longest sequence seen (KV cache + activations)
        self.memory = max(self.memory, 31.5 + 0.012 * float(batch.tokens.max()))
        return batch

    def _window(self, window: list[dict[str, float]], last_log: int, step: int) -> dict[str, float]:
        """GRPO metrics of a logging window: the last rollout's, then per-step means."""
        out: dict[str, float] = {}
        rollout_step = step - (step - 1) % self.spec.num_iterations
        if rollout_step > last_log:  # a rollout happened in this window
            prompts = [self._draw_prompt() for _ in range(self.cfg.prompts_per_step)]
            batch = self._rollout_at(rollout_step, prompts)
            out.update(_rollout_metrics(batch, self.cfg.num_generations))
        for key in window[0]:
            if key not in ("loss", "grad_norm"):
                out[key] = float(np.mean([w[key] for w in window]))
        return out

    def _eval_call(self, step: int) -> _LogCall:
        cfg, t = self.cfg, step / self.cfg.max_steps
        pol = self._policy(step)
        batch = self._rollout_at(step, self.eval_set, self.spec.eval_shift(t))
        eval_batches = math.ceil(cfg.eval_prompts / cfg.prompts_per_step)
        runtime = round((2.0 + 0.048 * float(batch.tokens.max())) * eval_batches, 4)
        self.clock += runtime
        kl = pol.kl * float(self.rng.lognormal(0.0, 0.08))
        raw: dict[str, Any] = {
            "eval_loss": cfg.beta * kl + float(self.rng.normal(0.0, 0.01 * pol.grad_norm)),
            "eval_runtime": runtime,
            "eval_samples_per_second": round(cfg.eval_prompts / runtime, 3),
            "eval_steps_per_second": round(eval_batches / runtime, 3),
            **_rollout_metrics(batch, cfg.num_generations, "eval_"),
            "eval_entropy/mean": float(batch.entropy.mean()),
            "eval_entropy/max": float(batch.entropy.max()),
            "eval_entropy/min": float(batch.entropy.min()),
        }
        if cfg.beta:
            raw["eval_kl"] = kl
        for key in ("low_mean", "low_min", "high_mean", "high_max", "region_mean"):
            raw[f"eval_clip_ratio/{key}"] = 0.0  # eval is on-policy
        self.evals.append((step, raw["eval_reward"]))
        return self._call(raw, step)

    def _end_calls(
        self, step: int, window: list[dict[str, float]], last_log: int
    ) -> list[_LogCall]:
        cfg, runtime = self.cfg, self.clock
        raw: dict[str, Any] = {
            "train_runtime": round(runtime, 4),
            "train_samples_per_second": round(cfg.max_steps * self.batch_rows / runtime, 3),
            "train_steps_per_second": round(cfg.max_steps / runtime, 3),
            "total_flos": 0.0,
            "train_loss": float(np.mean(self.losses)),
        }
        if window:  # the last step was not a logging step: leftover metrics merge in
            raw.update(self._window(window, last_log, step))
        calls = [self._call(raw, step)]
        best = max(self.evals, key=lambda e: e[1]) if self.evals else None
        summary = {
            "model_parameter_info": _PARAMETER_INFO,
            "last_model_checkpoint": f"{self.run_dir}/checkpoint-{step}",
            "best_model_checkpoint": f"{self.run_dir}/checkpoint-{best[0]}" if best else None,
            "best_metric": best[1] if best else None,
            "global_step": step,
            "log_history": self.history,
            "memory": self.memory,
        }
        return [*calls, _LogCall(summary, None)]

    def events(self) -> Iterator[tuple[int, list[_LogCall]]]:
        cfg = self.cfg
        window: list[dict[str, float]] = []
        last_log = 0
        for step in range(1, cfg.max_steps + 1):
            pol = self._policy(step)
            scalars = self._step_scalars(pol, rollout=(step - 1) % self.spec.num_iterations == 0)
            window.append(scalars)
            self.losses.append(scalars["loss"])
            self.clock += scalars["step_time"]
            calls: list[_LogCall] = []
            if step == 1 or step % cfg.logging_steps == 0:
                raw: dict[str, Any] = {
                    "loss": float(np.mean([w["loss"] for w in window])),
                    "grad_norm": window[-1]["grad_norm"],  # HF logs the last step's norm
                    "learning_rate": self._learning_rate(step),
                }
                raw.update(self._window(window, last_log, step))
                for metric, factor in self.spikes.get(step, ()):
                    raw[metric] *= factor  # this line only: the steps behind it are untouched
                calls.append(self._call(raw, step))
                window, last_log = [], step
            if cfg.eval_steps and (step % cfg.eval_steps == 0 or step == cfg.max_steps):
                calls.append(self._eval_call(step))
            if step == cfg.max_steps:
                calls += self._end_calls(step, window, last_log)
            if calls:
                yield step, calls


# --------------------------------------------------------------------------- run dirs
def _run_timestamp(cfg: SimConfig) -> datetime:
    if cfg.use_wall_clock:
        return datetime.now()
    # a fixed, seed-derived moment so that same seed gives the same directory name
    offset = (cfg.seed * 104729 + 3 * 3600) % (300 * 86400)
    return datetime(2025, 3, 3, 9, 0, 0) + timedelta(seconds=offset)


def _create_run_dir(out_dir: Path, cfg: SimConfig) -> Path:
    """`<out_dir>/vN-YYYYMMDD-HHMMSS`, N = highest existing version + 1 (as ms-swift)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    versions = [int(m.group(1)) for d in out_dir.iterdir() if (m := re.match(r"v(\d+)-", d.name))]
    version = max(versions) + 1 if versions else 0
    run_dir = out_dir / f"v{version}-{_run_timestamp(cfg):%Y%m%d-%H%M%S}"
    run_dir.mkdir()
    return run_dir


def _args(cfg: SimConfig, run_dir: Path) -> dict[str, Any]:
    spec = _SCENARIO_SPECS[cfg.scenario]
    return {
        "model": cfg.model,
        "model_type": "qwen2_5",
        "template": "qwen2_5",
        "system": SYSTEM_PROMPT,
        "rlhf_type": "grpo",
        "tuner_type": "full",
        "torch_dtype": "bfloat16",
        "dataset": [f"sim/arithmetic#{cfg.dataset_size}"],
        "val_dataset": [f"sim/arithmetic-eval#{cfg.eval_prompts}"],
        "max_length": 2048,
        "max_completion_length": cfg.max_completion_length,
        "num_generations": cfg.num_generations,
        "temperature": spec.temperature,
        "top_p": 1.0,
        "top_k": 50,
        "beta": cfg.beta,
        "num_iterations": spec.num_iterations,
        "epsilon": 0.2,
        "epsilon_high": None,
        "loss_type": "grpo",
        "scale_rewards": "group",
        "reward_funcs": [REWARD_CLI_NAMES[f] for f in spec.reward_funcs],
        "reward_weights": None,
        "learning_rate": spec.learning_rate,
        "lr_scheduler_type": "cosine",
        "warmup_ratio": 0.0,
        "per_device_train_batch_size": cfg.num_generations,
        "per_device_eval_batch_size": cfg.num_generations,
        "gradient_accumulation_steps": cfg.prompts_per_step,
        "steps_per_generation": None,
        "max_steps": cfg.max_steps,
        "num_train_epochs": 1.0,
        "logging_steps": cfg.logging_steps,
        "logging_first_step": True,
        "eval_strategy": "steps" if cfg.eval_steps else "no",
        "eval_steps": cfg.eval_steps or None,
        "save_steps": cfg.eval_steps or 500,
        "metric_for_best_model": "reward",
        "greater_is_better": True,
        "log_completions": True,
        "log_entropy": True,
        "report_to": ["tensorboard"],
        "seed": cfg.seed,
        "add_version": True,
        "output_dir": str(run_dir),
        "logging_dir": str(run_dir / "runs"),
        # honest marker: this run was simulated by grpo-tui
        "sim_scenario": cfg.scenario,
        "sim_seed": cfg.seed,
        # only when set, so that runs without spikes keep their args.json bytes
        **({"sim_spikes": [list(spike) for spike in cfg.spikes]} if cfg.spikes else {}),
    }


def _start_run(out_dir: Path, cfg: SimConfig) -> tuple[Path, _Simulation]:
    cfg.validate()
    run_dir = _create_run_dir(Path(out_dir), cfg)
    args = json.dumps(_args(cfg, run_dir), ensure_ascii=False, indent=2)
    (run_dir / "args.json").write_text(args + "\n", encoding="utf-8")
    return run_dir, _Simulation(cfg, run_dir)


def write_run(
    out_dir: Path,
    scenario: str = "healthy",
    *,
    seed: int = 0,
    max_steps: int | None = None,
    config: SimConfig | None = None,
) -> Path:
    """Write a whole simulated run at once; returns the `v0-...` run directory.

    `config` wins over `scenario` and `seed` (used only when config is None);
    `max_steps` overrides either.
    """
    cfg = config if config is not None else SimConfig(scenario=scenario, seed=seed)
    if max_steps is not None:
        cfg = replace(cfg, max_steps=max_steps)
    run_dir, sim = _start_run(out_dir, cfg)
    with (
        open(run_dir / "logging.jsonl", "w", encoding="utf-8") as log,
        open(run_dir / "completions.jsonl", "w", encoding="utf-8") as comp,
    ):
        for _, calls in sim.events():
            for call in calls:
                if call.completions is not None:
                    comp.write(_dumps(call.completions))
                log.write(_dumps(call.line))
    return run_dir


def _append_line(path: Path, obj: Any) -> None:
    # one write + flush per line in 'a' mode, like ms-swift: a tail reader sees whole lines
    with open(path, "a", encoding="utf-8") as f:
        f.write(_dumps(obj))
        f.flush()


class LiveSimulator:
    """Writes the same run as write_run, one logging step at a time (for `grpo-tui demo`)."""

    def __init__(self, out_dir: Path, config: SimConfig, steps_per_second: float = 2.0) -> None:
        if steps_per_second <= 0:
            raise ValueError("steps_per_second must be > 0")
        self.config = config
        self.steps_per_second = steps_per_second
        self.run_dir, sim = _start_run(out_dir, config)
        self._events = sim.events()
        self._pending = next(self._events, None)
        self._written_step = 0

    @property
    def finished(self) -> bool:
        return self._pending is None

    def advance(self) -> bool:
        """Write the next step's log calls (train/eval/completions; at the end also the
        end-of-train and summary lines). Returns False once the run is fully written."""
        if self._pending is None:
            return False
        step, calls = self._pending
        for call in calls:
            if call.completions is not None:
                _append_line(self.run_dir / "completions.jsonl", call.completions)
            _append_line(self.run_dir / "logging.jsonl", call.line)
        self._written_step = step
        self._pending = next(self._events, None)
        return self._pending is not None

    def run(self, stop: threading.Event) -> None:
        """advance() at steps_per_second simulated steps per second until done or stopped."""
        while self._pending is not None:
            if stop.wait((self._pending[0] - self._written_step) / self.steps_per_second):
                return
            self.advance()
