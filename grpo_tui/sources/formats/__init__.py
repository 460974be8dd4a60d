"""Framework adapters, one module each: the files a framework writes, how each is read, and
its key vocabulary as data. Adding a framework is adding a module and listing it here."""

from __future__ import annotations

from grpo_tui.sources.formats.areal import AREAL_CONSOLE, AREAL_TENSORBOARD
from grpo_tui.sources.formats.art import ART
from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.console import CONSOLE
from grpo_tui.sources.formats.custom import CUSTOM
from grpo_tui.sources.formats.easyr1 import EASYR1
from grpo_tui.sources.formats.generic import GENERIC
from grpo_tui.sources.formats.msswift import MSSWIFT, MSSWIFT_CONSOLE
from grpo_tui.sources.formats.nemorl import NEMORL
from grpo_tui.sources.formats.openrlhf import OPENRLHF
from grpo_tui.sources.formats.primerl import PRIMERL
from grpo_tui.sources.formats.roll import ROLL_CONSOLE, ROLL_TENSORBOARD
from grpo_tui.sources.formats.skyrl import SKYRL_CONSOLE, SKYRL_TENSORBOARD
from grpo_tui.sources.formats.slime import MILES, SLIME_CONSOLE, SLIME_TENSORBOARD
from grpo_tui.sources.formats.tensorboard import TENSORBOARD
from grpo_tui.sources.formats.tinker import TINKER
from grpo_tui.sources.formats.trackio import TRACKIO
from grpo_tui.sources.formats.trl import TRL
from grpo_tui.sources.formats.verl import VERL, VERL_CONSOLE
from grpo_tui.sources.formats.wandb import WANDB

#: every adapter, by the name `--format` takes; on a tie (same tier, same age) the first
#: wins, and a console log is the first console format whose content test it passes
#: (ms-swift's printed dicts are HF-style dicts too, so ms-swift's test comes first).
#: Tinker's metrics.jsonl looks like prime-rl's (`{"step":` with `progress/`, `optim/`):
#: Tinker's narrower test comes first. The trainers whose event files are told by their
#: tags (tb_trainers.py) come before the plain TensorBoard adapter, and their console
#: formats, each with a test no other console passes, before ms-swift's and TRL's
ADAPTERS: dict[str, FormatAdapter] = {
    adapter.name: adapter
    for adapter in (
        MSSWIFT,
        VERL,
        EASYR1,
        TINKER,
        PRIMERL,
        NEMORL,
        MILES,
        ART,
        TRL,
        SLIME_TENSORBOARD,
        SKYRL_TENSORBOARD,
        AREAL_TENSORBOARD,
        ROLL_TENSORBOARD,
        TENSORBOARD,
        TRACKIO,
        WANDB,
        SLIME_CONSOLE,
        SKYRL_CONSOLE,
        AREAL_CONSOLE,
        ROLL_CONSOLE,
        MSSWIFT_CONSOLE,
        CONSOLE,
        VERL_CONSOLE,
        OPENRLHF,
        CUSTOM,
        GENERIC,
    )
}

__all__ = ["ADAPTERS", "CONSOLE", "MSSWIFT", "TRL", "FormatAdapter"]
