"""Framework adapters: key aliases and line shapes as data, one small module each."""

from __future__ import annotations

from pathlib import Path

from grpo_tui.sources.formats.base import FormatAdapter
from grpo_tui.sources.formats.msswift import MSSWIFT
from grpo_tui.sources.formats.trl import TRL

ADAPTERS: dict[str, FormatAdapter] = {adapter.name: adapter for adapter in (MSSWIFT, TRL)}


def choose_adapter(metrics_file: Path, args_file: Path | None) -> FormatAdapter:
    """Whose file this is: the framework that writes a log by that name, else the one that
    writes the context file found beside it, else the first that reads that kind of file."""
    adapters = list(ADAPTERS.values())
    for adapter in adapters:
        if metrics_file.name in adapter.log_files:
            return adapter
    if args_file is not None:
        for adapter in adapters:
            if adapter.args_file == args_file.name:
                return adapter
    for adapter in adapters:
        if metrics_file.suffix in adapter.suffixes:
            return adapter
    return adapters[0]


__all__ = ["ADAPTERS", "MSSWIFT", "TRL", "FormatAdapter", "choose_adapter"]
