"""Run context: the training arguments that change how metrics are judged.

Read from ms-swift's `args.json` (the run directory, or a checkpoint's copy) and from a
`trainer_state.json` header. Unknown or missing fields stay None: "unknown" is a real
answer that the health engine reports instead of guessing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import orjson


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
        if self.num_iterations is None:
            return None
        return self.num_iterations > 1

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def merge_missing(self, other: RunContext) -> None:
        """Fill fields this context does not know from another one."""
        for f in fields(self):
            mine = getattr(self, f.name)
            if mine is None or mine == []:
                setattr(self, f.name, getattr(other, f.name))


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return int(value)
    if isinstance(value, str):
        try:
            return int(float(value))
        except ValueError:
            return None
    return None


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def context_from_args(args: dict[str, Any]) -> RunContext:
    """Build a context from an args dict (ms-swift args.json, TRL/verl-style configs)."""
    reward_funcs = args.get("reward_funcs") or []
    if isinstance(reward_funcs, str):
        reward_funcs = [reward_funcs]
    max_steps = _as_int(args.get("max_steps"))
    model = args.get("model") or args.get("model_name_or_path")
    return RunContext(
        model=str(model) if model else None,
        max_completion_length=_as_int(args.get("max_completion_length")),
        num_generations=_as_int(args.get("num_generations")),
        beta=_as_float(args.get("beta")),
        num_iterations=_as_int(args.get("num_iterations")),
        epsilon=_as_float(args.get("epsilon")),
        epsilon_high=_as_float(args.get("epsilon_high")),
        learning_rate=_as_float(args.get("learning_rate")),
        logging_steps=_as_int(args.get("logging_steps")),
        max_steps=max_steps if max_steps and max_steps > 0 else None,
        reward_funcs=[str(name) for name in reward_funcs if name is not None],
        loss_type=str(args["loss_type"]) if args.get("loss_type") else None,
        temperature=_as_float(args.get("temperature")),
        steps_per_generation=_as_int(args.get("steps_per_generation")),
    )


def read_json_file(path: Path) -> Any:
    """Parse a whole JSON file, accepting NaN/Infinity tokens. Raises OSError/ValueError."""
    data = path.read_bytes()
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        import json

        return json.loads(data.decode("utf-8", errors="replace"))


def read_args_json(path: Path) -> RunContext | None:
    """The context from an args.json, or None when it is missing or unreadable."""
    try:
        args = read_json_file(path)
    except (OSError, ValueError):
        return None
    return context_from_args(args) if isinstance(args, dict) else None
