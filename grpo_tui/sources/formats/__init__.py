"""Framework adapters, one module each: the files a framework writes, how each is read, and
its key vocabulary as data. Adding a framework is adding a module and listing it here."""

from __future__ import annotations

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.console import CONSOLE
from grpo_tui.sources.formats.easyr1 import EASYR1
from grpo_tui.sources.formats.generic import GENERIC
from grpo_tui.sources.formats.msswift import MSSWIFT, MSSWIFT_CONSOLE
from grpo_tui.sources.formats.openrlhf import OPENRLHF
from grpo_tui.sources.formats.primerl import PRIMERL
from grpo_tui.sources.formats.tensorboard import TENSORBOARD
from grpo_tui.sources.formats.trackio import TRACKIO
from grpo_tui.sources.formats.trl import TRL
from grpo_tui.sources.formats.verl import VERL, VERL_CONSOLE

#: every adapter, by the name `--format` takes; on a tie (same tier, same age) the first
#: wins, and a console log is the first console format whose content test it passes
#: (ms-swift's printed dicts are HF-style dicts too, so ms-swift's test comes first)
ADAPTERS: dict[str, FormatAdapter] = {
    adapter.name: adapter
    for adapter in (
        MSSWIFT,
        VERL,
        EASYR1,
        PRIMERL,
        TRL,
        TENSORBOARD,
        TRACKIO,
        MSSWIFT_CONSOLE,
        CONSOLE,
        VERL_CONSOLE,
        OPENRLHF,
        GENERIC,
    )
}

__all__ = ["ADAPTERS", "CONSOLE", "MSSWIFT", "TRL", "FormatAdapter"]
