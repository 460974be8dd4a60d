"""ms-swift (3.1 – 4.6, HF and Megatron backends): logging.jsonl and log_history items.

See shared/formats/ms-swift.md. Progress strings ride along on every line; the speed key
flipped meaning in 3.12.5 (`iter/s` → `s/it`); Megatron 4.x says `iteration`.
"""

from __future__ import annotations

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.common import GRPO_ALIASES, GRPO_FAMILIES
from grpo_tui.sources.formats.values import duration_column, percentage_column

MSSWIFT = FormatAdapter(
    name="ms-swift",
    log_files=("logging.jsonl",),
    args_file="args.json",
    suffixes=(".jsonl",),
    aliases={**GRPO_ALIASES, "memory": ("memory(GiB)",)},
    families=GRPO_FAMILIES,
    fraction_step_keys=("global_step/max_steps", "iteration"),
    int_step_keys=("step", "global_step"),
    string_parsers={
        "elapsed_time": ("elapsed", duration_column),
        "remaining_time": ("remaining", duration_column),
        "percentage": ("percentage", percentage_column),
    },
    # one canonical seconds-per-step whatever the version wrote
    number_transforms={
        "train_speed(s/it)": ("speed", False),
        "train_speed(iter/s)": ("speed", True),
    },
    version_hints=(
        ("train_speed(iter/s)", "ms-swift ≤ 3.12.4 (train_speed(iter/s))"),
        ("train_speed(s/it)", "ms-swift ≥ 3.12.5 (train_speed(s/it))"),
        ("percentage", "ms-swift 3.x (percentage)"),
        ("frac_reward_zero_std", "ms-swift ≥ 3.7 (frac_reward_zero_std)"),
        ("iteration", "ms-swift Megatron 4.x (iteration)"),
        ("completion_length", "ms-swift 3.1–3.2 (completion_length)"),
        ("step_time", "TRL ≥ 0.26 underneath (step_time)"),
    ),
)
