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
    """One action, worded for the run (see `words`)."""

    EASIER_DATA = "easier_data"
    PARTIAL_CREDIT = "partial_credit"
    MORE_GENERATIONS = "more_generations"
    RAISE_TEMPERATURE = "raise_temperature"
    CHECK_REWARD_FUNCTION = "check_reward_function"
    CHECK_TRAINING = "check_training"
    WEAK_UPDATES = "weak_updates"
    HARDER_DATA = "harder_data"
    FINER_REWARD = "finer_reward"
    EVALUATE_CHECKPOINTS = "evaluate_checkpoints"
    KEEP_GOING = "keep_going"
    LOWER_LR = "lower_lr"
    FEWER_ITERATIONS = "fewer_iterations"
    STRONGER_KL = "stronger_kl"
    RESUME_EARLIER = "resume_earlier"
    RAISE_CAP = "raise_cap"
    CAP_FROM_COLLAPSE = "cap_from_collapse"
    PENALISE_LENGTH = "penalise_length"
    CHECK_EOS = "check_eos"
    SHORT_REWARD = "short_reward"
    READ_SHORT = "read_short"
    MORE_DIVERSITY = "more_diversity"
    TASK_REWARD = "task_reward"
    KL_IN_REWARD = "kl_in_reward"
    READ_SAMPLES = "read_samples"
    EVAL_SET = "eval_set"
    WAIT = "wait"
    LOG_MORE = "log_more"
    WATCH = "watch"


def words(advice: Advice, context: RunContext, detail: str = "") -> str:
    """The action in words, with the run's own settings where they help."""
    lr = f" (now {num(context.learning_rate)})" if context.learning_rate else ""
    gens = f" (now {context.num_generations})" if context.num_generations else ""
    temp = f" (now {num(context.temperature)})" if context.temperature is not None else ""
    cap = f" ({context.max_completion_length} now)" if context.max_completion_length else ""
    iters = f" ({context.num_iterations} now)" if context.num_iterations else ""
    beta = context.beta
    table = {
        Advice.EASIER_DATA: "Use easier prompts or a curriculum: groups where every completion fails teach nothing.",
        Advice.PARTIAL_CREDIT: "Add a partial-credit reward so that failing completions still differ.",
        Advice.MORE_GENERATIONS: f"Raise num_generations{gens} so more groups hold both a success and a failure.",
        Advice.RAISE_TEMPERATURE: f"Raise the sampling temperature{temp}: completions in a group are too alike to differ in reward.",
        Advice.CHECK_REWARD_FUNCTION: f"Check the reward function{' ' + detail if detail else ''}: does it score what you expect on real completions?",
        Advice.WEAK_UPDATES: f"The updates barely move the policy: check the learning rate{lr} and that the parameters train (LoRA targets, frozen layers).",
        Advice.CHECK_TRAINING: "Check that the parameters really train (LoRA targets, frozen layers, optimizer): no gradient reaches them while groups differ.",
        Advice.HARDER_DATA: "Use harder prompts: most groups pass on every completion and teach nothing more.",
        Advice.FINER_REWARD: "Use a finer-grained reward so good completions still differ from better ones.",
        Advice.EVALUATE_CHECKPOINTS: "Evaluate the latest checkpoints: this data has little left to teach.",
        Advice.KEEP_GOING: "Eval still improves: training may go on.",
        Advice.LOWER_LR: f"Lower the learning rate{lr}.",
        Advice.FEWER_ITERATIONS: f"Use fewer update passes per batch (num_iterations{iters}).",
        Advice.STRONGER_KL: (
            "Add a KL penalty (beta is 0: nothing holds the policy near the reference)."
            if beta == 0
            else f"Strengthen the KL penalty (beta{' ' + num(beta) if beta is not None else ''})."
        ),
        Advice.RESUME_EARLIER: f"Resume from a checkpoint before the collapse{' (' + detail + ')' if detail else ''}, with a lower learning rate.",
        Advice.RAISE_CAP: f"Raise max_completion_length{cap}: completions are cut before they finish.",
        Advice.CAP_FROM_COLLAPSE: "The lengths ran to the cap with the policy collapse: fix the collapse (see above); a higher max_completion_length would only lengthen the runaway.",
        Advice.PENALISE_LENGTH: "Penalise pointless length (an overlong penalty), so the model learns to stop.",
        Advice.CHECK_EOS: "Check the prompt and EOS handling: nearly every completion runs to the cap.",
        Advice.SHORT_REWARD: f"Look for a reward that pays for short outputs{' (' + detail + ')' if detail else ''}, or a length penalty that is too strong.",
        Advice.READ_SHORT: "Read recent completions: an early EOS or a fixed short template?",
        Advice.MORE_DIVERSITY: f"Raise temperature / top_p{temp}: the completions of a group are near copies.",
        Advice.TASK_REWARD: f"Add or weight up a correctness reward{': ' + detail if detail else ''}.",
        Advice.KL_IN_REWARD: "Lower the KL penalty in the reward, or move it into the loss: the policy games the penalty, not the task.",
        Advice.READ_SAMPLES: "Read the completions: the easy reward may be gamed.",
        Advice.EVAL_SET: "Add an eval set and evaluate checkpoints for real.",
        Advice.WAIT: "Wait for more steps: a verdict needs a few logged points.",
        Advice.LOG_MORE: "Log more often or train longer: the run ended before it logged enough points for a verdict.",
        Advice.WATCH: "Keep watching reward_std, frac_reward_zero_std and the samples as the run goes on.",
    }
    return table[advice]


def pick(wanted: list[tuple[Advice, str]], context: RunContext) -> list[str]:
    """The first MAX_ADVICE distinct actions, in the order the evidence asked for them."""
    first: dict[Advice, str] = {}
    for advice, detail in wanted:
        first.setdefault(advice, detail)
    return [words(advice, context, detail) for advice, detail in list(first.items())[:MAX_ADVICE]]
