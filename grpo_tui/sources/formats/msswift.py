"""ms-swift (3.1 – 4.6, HF and Megatron backends): logging.jsonl and log_history items.

See docs/formats.md, "ms-swift". Progress strings ride along on every line; the speed key
flipped meaning in 3.12.5 (`iter/s` → `s/it`); Megatron 4.x says `iteration`.

Files: `<output_dir>/vN-YYYYMMDD-HHMMSS/logging.jsonl`, with `completions.jsonl` and
`args.json` beside it. A newer `v*` folder under the same output directory is a resumed
run (it is followed, the older history kept). A `.jsonl` of another name is ms-swift's
when its first line carries ms-swift's progress key; others go to the generic reader.

Console (`ms-swift-console`): the log dicts it prints, and Megatron-LM's `iteration N/M | …`
lines. ms-swift prints each log dict to stdout as a Python dict repr with its progress inside
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
from pathlib import Path
from typing import Any

from grpo_tui.sources.formats.base import FormatAdapter, TextDict
from grpo_tui.sources.formats.common import GRPO_ALIASES, GRPO_FAMILIES
from grpo_tui.sources.formats.console import ConsoleParser
from grpo_tui.sources.formats.layout import (
    CompletionsRef,
    Found,
    Probe,
    Reading,
    Tier,
    console_files,
    entry_is_dir,
    first_line,
    found_file,
    probe,
    scan,
)
from grpo_tui.sources.formats.trl import HF_CHECKPOINTS
from grpo_tui.sources.formats.values import duration_column, percentage_column, wrapped_number

NAME = "ms-swift"
RUN_DIR_PATTERN = re.compile(r"^v(\d+)-(\d{8})-(\d{6})$")
LOGGING_FILE = "logging.jsonl"
COMPLETIONS_FILE = "completions.jsonl"
ARGS_FILE = "args.json"
#: keys only ms-swift's lines carry: a .jsonl of another name holding them is ms-swift's
EVIDENCE_KEYS = ("global_step/max_steps", "iteration")


def newest_run_dir(output_dir: Path) -> Path | None:
    """The `vN-YYYYMMDD-HHMMSS` directory with the highest N (then the newest stamp)."""
    entries, _ = scan(output_dir)
    runs = [
        ((int(match.group(1)), match.group(2) + match.group(3)), Path(entry.path))
        for entry in entries
        if (match := RUN_DIR_PATTERN.match(entry.name)) and entry_is_dir(entry)
    ]
    best = max(runs, key=lambda run: run[0], default=None)
    return None if best is None else best[1]


def _log(path: Path, why: str, tier: Tier = Tier.LOG, output_dir: Path | None = None) -> Found:
    named = path.name == LOGGING_FILE
    return found_file(
        path,
        NAME,
        Reading.JSONL,
        tier,
        why,
        output_dir=output_dir,
        completions=CompletionsRef(path.parent / COMPLETIONS_FILE) if named else None,
        args_names=(ARGS_FILE,),
    )


def claim(path: Path, seen: Probe) -> Found | None:
    if path.name == LOGGING_FILE:
        return _log(path, f"named {LOGGING_FILE} (ms-swift's metrics log)")
    if path.name == COMPLETIONS_FILE:
        return _log(
            path.parent / LOGGING_FILE,
            f"{COMPLETIONS_FILE} is ms-swift's: following the {LOGGING_FILE} beside it",
        )
    if path.suffix == ".jsonl" and _shows_msswift(first_line(path)):
        return _log(path, "its lines carry ms-swift's progress (global_step/max_steps)", Tier.GUESS)
    return None  # no evidence: the generic JSON-lines reader (generic.py) takes it


def _shows_msswift(line: bytes) -> bool:
    """ms-swift writes its progress on every line: `global_step/max_steps` ("12/500"), or
    Megatron's `iteration` (looked for as keys in the bytes: a line with a bare NaN is no
    JSON orjson reads)."""
    return any(b'"' + key.encode() + b'":' in line for key in EVIDENCE_KEYS)


def find(directory: Path) -> list[Found]:
    """logging.jsonl in the folder; else in the newest `v*` run folder under it (an output
    directory), waited for when that folder is fresh; else in a fresh `v*` folder itself."""
    log = directory / LOGGING_FILE
    if probe(log).exists:
        return [_log(log, f"{LOGGING_FILE} in the folder (ms-swift's metrics log)")]
    newest = newest_run_dir(directory)
    if newest is not None:
        why = f"{LOGGING_FILE} of the newest ms-swift run folder {newest.name}"
        return [_log(newest / LOGGING_FILE, why, output_dir=directory)]
    if RUN_DIR_PATTERN.match(directory.name):
        # a fresh ms-swift run folder: logging.jsonl comes with the first log line
        return [_log(log, "a fresh ms-swift run folder: its logging.jsonl is waited for")]
    return []


MSSWIFT = FormatAdapter(
    name=NAME,
    title=NAME,
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
    claim=claim,
    find=find,
    # the HF Trainer's `checkpoint-N` inside the `vN-…` folder, which is its output_dir
    # (swift/trainers/mixin.py:550, swift/utils/utils.py:132 `add_version_to_work_dir`;
    # read in a fork's copy, JensenYX/ms-swift-latent-reasoning@258ae85)
    checkpoints=(HF_CHECKPOINTS,),
)


# -- the console ----------------------------------------------------------------------

CONSOLE_NAME = "ms-swift-console"
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


console_claim, console_find = console_files(
    CONSOLE_NAME,
    shows_console,
    "ms-swift's printed log (global_step/max_steps, or Megatron's iteration lines)",
)


MSSWIFT_CONSOLE = replace(
    MSSWIFT,
    name=CONSOLE_NAME,
    title="ms-swift console log",
    reading=Reading.CONSOLE,
    parser=MsSwiftConsoleParser,
    claim=console_claim,
    find=console_find,
)
