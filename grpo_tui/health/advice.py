"""What to try, keyed by the evidence that fired.

A verdict's advice is the two or three actions its evidence points to, in order, never
the scenario's whole list: all-fail groups ask for easier prompts and partial credit,
all-pass groups for harder data, lengths pinned at the cap for a higher cap. Each action
may quote the run's own settings (the learning rate, the cap, num_generations).
"""

from __future__ import annotations

import enum

from grpo_tui.context import RunContext
from grpo_tui.health.verdict import num

#: advice lines a verdict shows at most
MAX_ADVICE = 3


class Advice(enum.Enum):
    """One action in words: {lr}, {gens}, {temp}, {cap}, {iters} and {beta} quote the run's
    own settings, {detail}, {in_parens} and {after_colon} what the evidence names (`words`)."""

    EASIER_DATA = (
        "Use easier prompts or a curriculum: groups where every completion fails teach nothing."
    )
    PARTIAL_CREDIT = "Add a partial-credit reward so that failing completions still differ."
    MORE_GENERATIONS = (
        "Raise num_generations{gens} so more groups hold both a success and a failure."
    )
    RAISE_TEMPERATURE = "Raise the sampling temperature{temp}: completions in a group are too alike to differ in reward."
    CHECK_REWARD_FUNCTION = (
        "Check the reward function{detail}: does it score what you expect on real completions?"
    )
    CHECK_TRAINING = "Check that the parameters really train (LoRA targets, frozen layers, optimizer): no gradient reaches them while groups differ."
    WEAK_UPDATES = "The updates barely move the policy: check the learning rate{lr} and that the parameters train (LoRA targets, frozen layers)."
    RAISE_LR = "Raise the learning rate moderately{lr}: groups differ on every step, yet the updates do not move the task reward."
    WEAKER_KL = "Weaken the KL penalty (beta{beta}): it may hold the policy where it started."
    HARDER_DATA = "Use harder prompts: most groups pass on every completion and teach nothing more."
    FINER_REWARD = "Use a finer-grained reward so good completions still differ from better ones."
    EVALUATE_CHECKPOINTS = "Evaluate the latest checkpoints: this data has little left to teach."
    KEEP_GOING = "Eval still improves: training may go on."
    LOWER_LR = "Lower the learning rate{lr}."
    FEWER_ITERATIONS = "Use fewer update passes per batch (num_iterations{iters})."
    STRONGER_KL = "Strengthen the KL penalty (beta{beta})."
    RESUME_EARLIER = (
        "Resume from a checkpoint before the collapse{in_parens}, with a lower learning rate."
    )
    RAISE_CAP = "Raise max_completion_length{cap}: completions are cut before they finish."
    CAP_FROM_COLLAPSE = "The lengths ran to the cap with the policy collapse: fix the collapse (see above); a higher max_completion_length would only lengthen the runaway."
    PENALISE_LENGTH = (
        "Penalise pointless length (an overlong penalty), so the model learns to stop."
    )
    CHECK_EOS = "Check the prompt and EOS handling: nearly every completion runs to the cap."
    SHORT_REWARD = "Look for a reward that pays for short outputs{in_parens}, or a length penalty that is too strong."
    READ_SHORT = "Read recent completions: an early EOS or a fixed short template?"
    MORE_DIVERSITY = "Raise temperature / top_p{temp}: the completions of a group are near copies."
    TASK_REWARD = "Add or weight up a correctness reward{after_colon}."
    KL_IN_REWARD = "Lower the KL penalty in the reward, or move it into the loss: the policy games the penalty, not the task."
    READ_SAMPLES = "Read the completions: the easy reward may be gamed."
    EVAL_SET = "Add an eval set and evaluate checkpoints for real."
    WAIT = "Wait for more steps: a verdict needs a few logged points."
    WAIT_COURSE = "Wait for more steps: the reward's course is not yet clear beyond its noise."
    TRAIN_LONGER = "Train longer, or with larger batches: the run ended before the reward's course was clear beyond its noise."
    LOG_MORE = "Log more often or train longer: the run ended before it logged enough points for a verdict."
    WATCH = "Keep watching reward_std, frac_reward_zero_std and the samples as the run goes on."
    CHECK_ENGINE = "Check the sampler against the trainer: the same weights after every sync, the same dtype and kernels{in_parens}."
    CORRECT_MISMATCH = "Correct for the mismatch: importance weights with a cap, or mask the sequences whose mismatch is too large (TRL vllm_importance_sampling_correction, verl rollout correction)."
    BOUND_STALENESS = "Generate less far ahead (a lower async level, fewer rollouts in flight): rollouts fall further behind the weights they train."
    STALE_BIAS = "Generate less far ahead, or allow more staleness with importance weights: dropping stale rollouts keeps the ones that finish fast, so what is trained on is not what the policy generates."


def words(advice: Advice, context: RunContext, detail: str = "") -> str:
    """The action in words, with the run's own settings where they help."""
    beta = context.beta
    if advice is Advice.STRONGER_KL and beta == 0:
        return "Add a KL penalty (beta is 0: nothing holds the policy near the reference)."
    return advice.value.format(
        lr=f" (now {num(context.learning_rate)})" if context.learning_rate else "",
        gens=f" (now {context.num_generations})" if context.num_generations else "",
        temp=f" (now {num(context.temperature)})" if context.temperature is not None else "",
        cap=f" ({context.max_completion_length} now)" if context.max_completion_length else "",
        iters=f" ({context.num_iterations} now)" if context.num_iterations else "",
        beta=f" {num(beta)}" if beta is not None else "",
        detail=f" {detail}" if detail else "",
        in_parens=f" ({detail})" if detail else "",
        after_colon=f": {detail}" if detail else "",
    )


def pick(wanted: list[tuple[Advice, str]], context: RunContext) -> list[str]:
    """The first MAX_ADVICE distinct actions, in the order the evidence asked for them."""
    first: dict[Advice, str] = {}
    for advice, detail in wanted:
        first.setdefault(advice, detail)
    return [words(advice, context, detail) for advice, detail in list(first.items())[:MAX_ADVICE]]
