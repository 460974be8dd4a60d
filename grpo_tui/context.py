"""The run context: what the run was configured to do, the settings that change how
metrics are judged. Plain data, read by the sources (args.json, trainer_state.json,
configs) and used by the run, health and the views; None means "not known", a real answer
that the health engine reports instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace


@dataclass(slots=True)
class RunContext:
    """What the run was configured to do (None = not known)."""

    model: str | None = None
    """Model id or path being trained."""
    max_completion_length: int | None = None
    """Generation cap in tokens; length zones are relative to it."""
    num_generations: int | None = None
    """Completions per prompt (the GRPO group size)."""
    beta: float | None = None
    """KL penalty coefficient; 0 means no `kl` metric is logged."""
    num_iterations: int | None = None
    """Optimisation passes per rollout batch; 1 means on-policy (clip ratios are 0 by construction)."""
    epsilon: float | None = None
    """Lower clip range of the policy ratio."""
    epsilon_high: float | None = None
    """Upper clip range (DAPO clip-higher); defaults to epsilon."""
    learning_rate: float | None = None
    """Peak learning rate."""
    logging_steps: int | None = None
    """Optimizer steps between two train log lines."""
    max_steps: int | None = None
    """Planned optimizer steps (-1 in args means "from epochs": stored as None)."""
    reward_funcs: list[str] = field(default_factory=list)
    """Reward function names as given on the command line."""
    reward_weights: list[float] | None = None
    """One weight per reward function, in the trainer's order of its functions (ms-swift's
    and TRL's `reward_weights`); None when not set or not known (the trainers' default is a
    weight of 1 each). The advantages are computed from the weighted sum, and so is the
    logged `reward` (ms-swift; TRL ≥ 1.0); the per-function means are not weighted."""
    loss_type: str | None = None
    """grpo, bnpo, dr_grpo, dapo, cispo, ..."""
    temperature: float | None = None
    """Sampling temperature of the rollouts."""
    steps_per_generation: int | None = None
    """Micro-steps per generation batch (TRL/ms-swift count it in micro-steps; it defaults
    to gradient_accumulation_steps, which is still one optimizer step per batch)."""

    @property
    def off_policy(self) -> bool | None:
        """True when some updates reuse a rollout batch (clip ratios can be non-zero);
        None when the args do not say. Only `num_iterations` decides: steps_per_generation
        is in micro-steps, and without gradient_accumulation_steps it proves nothing."""
        return None if self.num_iterations is None else self.num_iterations > 1

    given_on_command_line: tuple[str, ...] = ()
    """The fields the user gave on the command line because the run's files did not say
    them (evidence then says where the number came from)."""

    def filled_from(self, given: RunContext) -> RunContext:
        """A copy with what this context does not know taken from `given` (the command
        line): the run's own files always win."""
        names = tuple(
            f.name
            for f in fields(self)
            if f.name != "given_on_command_line"
            and getattr(self, f.name) in (None, [])
            and getattr(given, f.name) not in (None, [])
        )
        if not names:
            return self
        return replace(
            self, given_on_command_line=names, **{name: getattr(given, name) for name in names}
        )

    def merge_missing(self, other: RunContext) -> None:
        """Fill fields this context does not know from another one."""
        for f in fields(self):
            if getattr(self, f.name) in (None, []):
                setattr(self, f.name, getattr(other, f.name))
