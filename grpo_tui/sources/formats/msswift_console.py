"""ms-swift's console: the log dicts it prints, and Megatron-LM's `iteration N/M | …` lines.

ms-swift prints each log dict to stdout as a Python dict repr with its progress inside
(`'global_step/max_steps': '5/3766'`), the same keys logging.jsonl has; the Megatron
backend (`megatron rlhf`) prints Megatron-LM's lines instead:

    [2025-11-25 07:19:22] iteration        7/    2174 | consumed samples: 448 | … | learning rate: 4.999872E-05 | loss: -2.365559E-06 | reward: 7.617188E-01 | …

A console capture is what a user has when logging.jsonl is elsewhere (or a paste in an
issue): it reads with ms-swift's vocabulary, and its own step.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from grpo_tui.sources.formats.base import TextDict
from grpo_tui.sources.formats.console import ConsoleParser
from grpo_tui.sources.formats.layout import Reading, console_files
from grpo_tui.sources.formats.msswift import MSSWIFT
from grpo_tui.sources.formats.values import wrapped_number

NAME = "ms-swift-console"
_MEGATRON = re.compile(r"\biteration\s+(\d+)/\s*(\d+)\s*\|")
_DICT_PROGRESS = re.compile(r"'global_step/max_steps':\s*'\d+/\d+'")
#: Megatron-LM's words for keys ms-swift's log spells otherwise
_MEGATRON_KEYS = {
    "learning rate": "learning_rate",
    "elapsed time": "elapsed_time",
    "remaining time": "remaining_time",
}


def shows_console(text: str) -> bool:
    return _DICT_PROGRESS.search(text) is not None or _MEGATRON.search(text) is not None


class MsSwiftConsoleParser(ConsoleParser):
    """Megatron-LM lines read here; printed dicts as the console dict parser reads them (the
    run's settings are in its args.json, not in the console)."""

    def feed(self, line: str, line_no: int) -> Iterator[TextDict]:
        match = _MEGATRON.search(line)
        if match is None:
            yield from super().feed(line, line_no)
            return
        values: dict[str, Any] = {"iteration": f"{match.group(1)}/{match.group(2)}"}
        for field in line[match.end() :].split(" | "):
            key, _, raw = field.partition(":")
            key = key.strip()
            if not key or not raw.strip():
                continue
            key = _MEGATRON_KEYS.get(key, key)
            number = wrapped_number(raw)
            values[key] = raw.strip() if number is None else number
        yield TextDict(line_no, values)


claim, find = console_files(
    NAME,
    shows_console,
    "ms-swift's printed log (global_step/max_steps, or Megatron's iteration lines)",
)


MSSWIFT_CONSOLE = replace(
    MSSWIFT,
    name=NAME,
    title="ms-swift console log",
    reading=Reading.CONSOLE,
    parser=MsSwiftConsoleParser,
    claim=claim,
    find=find,
)
