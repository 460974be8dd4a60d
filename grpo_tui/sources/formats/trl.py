"""TRL (and Unsloth, open-r1): `trainer_state.json` log_history items.

HF Trainer log dicts: an int `step`, no progress strings. Key names are the shared GRPO
vocabulary (TRL 0.14 → 1.16); `policy_loss` (≥ 1.8) is kept under its own name.
"""

from __future__ import annotations

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.common import GRPO_ALIASES, GRPO_FAMILIES

TRL = FormatAdapter(
    name="trl",
    # no log of its own: trainer_state.json log_history, next to no args.json
    suffixes=(".json",),
    aliases=GRPO_ALIASES,
    families=GRPO_FAMILIES,
    fraction_step_keys=(),
    int_step_keys=("step",),
    ignored_keys=frozenset({"total_flos"}),
    version_hints=(
        ("completion_length", "TRL ≤ 0.16 (completion_length)"),
        ("frac_reward_zero_std", "TRL ≥ 0.18 (frac_reward_zero_std)"),
        ("entropy", "TRL ≥ 0.20 (entropy)"),
        ("step_time", "TRL ≥ 0.26 (step_time)"),
        ("policy_loss", "TRL ≥ 1.8 (policy_loss)"),
    ),
)
