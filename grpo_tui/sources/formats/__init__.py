"""Framework adapters: key aliases and line shapes as data, one small module each."""

from __future__ import annotations

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.msswift import MSSWIFT
from grpo_tui.sources.formats.trl import TRL

ADAPTERS: dict[str, FormatAdapter] = {adapter.name: adapter for adapter in (MSSWIFT, TRL)}

__all__ = ["ADAPTERS", "MSSWIFT", "TRL", "FormatAdapter"]
