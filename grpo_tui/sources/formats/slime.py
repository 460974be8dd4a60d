"""slime (THUDM/slime) and miles (radixark/miles, its fork): console logs, TensorBoard
event files, and miles' dashboard `metrics.jsonl`.

Read from slime at 624b824 and miles at 31f1ca9 (2026-08).

Where: `--use-tensorboard` writes event files to `$TENSORBOARD_DIR` or
`tensorboard_log/<project>/<experiment>` (slime/observability/tensorboard_utils.py); miles
with `--use-miles-dashboard` appends `{"ts", "step_key", "step", "metrics": {…}}` per
`log()` to `{dump_details}/dashboard/metrics.jsonl` (miles/dashboard/store.py
`MetricsRecord`). The console (`configure_logger`, observability/logging_utils.py:
`[%(asctime)s] %(filename)s:%(lineno)d - %(message)s`, behind Ray's `(Actor pid=N)` prefix)
prints every dict it logs as a Python repr:

- `rollout <id>: {'rollout/raw_reward': …, 'rollout/rewards': …, 'rollout/log_probs': …}`
  the trainer's view of the rollout batch (train_metric_utils.py:135 `gather_log_data`);
- `perf <id>: {'rollout/response_len/mean': …, 'rollout/zero_std/count_0': …,
  'rollout/truncated_ratio': …, 'perf/rollout_time': …}` the rollout manager's sample
  statistics (rollout_metrics.py:268);
- `step <n>: {'train/loss': …, 'train/pg_clipfrac': …, 'train/lr-pg_0': …, 'train/step': n}`
  per optimiser step (backends/megatron_utils/model.py:918), `n` = rollout id ×
  steps per rollout + step within it;
- `eval <id>: {'eval/<data>': …, 'eval/<data>-truncated_ratio': …}` (rollout_metrics.py:247).

Two step axes: the rollout id (rollout, perf, eval) and the optimiser step (train). With
one optimiser step per rollout (the default: `global_batch_size` = rollout batch × samples)
they are the same. The console and miles' JSONL are read alike: a rollout's dicts (from
the rollout manager and the trainer, separate lines) are merged into one record, and a
train dict goes to the rollout its step trains on (the trainer's view of that rollout
came just before it), so several optimiser steps per rollout land on one step, the last
kept. TensorBoard keeps each key on its own axis, as written. The trainer and the rollout
manager are separate Ray actors, and each opens a SummaryWriter of its own
(tensorboard_utils.py `_TensorboardAdapter`, a singleton per process, `add_scalar` per key
at the dict's step: logging_utils.py `log`) in the same folder: two event files written at
once, each with tags of its own (the trainer's reward, KL, clip fraction, entropy, learning
rate; the manager's response lengths, truncation and zero-spread counts, and the evals).
The TensorBoard reader tells such a second writer from a restart and merges both files'
scalars by step (sources/tensorboard.py); a folder is slime's when either file shows its
tags.

What the keys mean (loss.py:1144–1154, rollout_metrics.py:44–56):
- `rollout/raw_reward` is the reward functions' score: the reward. `rollout/rewards` is
  after group normalisation (the advantage's input), so it keeps its own name.
- `train/ppo_kl` is the drift from the rollout policy (verl's `ppo_kl`): its own name.
  `train/kl_loss` is the KL to the reference: `kl`. `train/entropy_loss` is the mean
  entropy (the loss subtracts `entropy_coef` times it).
- `rollout/zero_std/count_<r>` counts the groups whose every sample scored `r`. A share
  needs the number of groups (`--rollout-batch-size`): the console prints it in Megatron's
  argument dump (`_print_args`: `  rollout_batch_size ....... 32`), so the console parser
  turns the counts into `frac_reward_zero_std`; TensorBoard and the JSONL hold no config,
  so there the counts stay counts, under their own names.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from grpo_tui.sources.formats.base import CheckpointFolders, FormatAdapter, TextDict
from grpo_tui.sources.formats.console import read_dict_repr, salvage_cut_dict
from grpo_tui.sources.formats.layout import (
    Found,
    Probe,
    Reading,
    Tier,
    console_files,
    first_record,
    found_file,
    probe,
)
from grpo_tui.sources.formats.tb_trainers import tensorboard_files

CONSOLE_NAME = "slime-console"
TB_NAME = "slime-tensorboard"

#: canonical → keys: as logged (console, JSONL) and as the TensorBoard reader names them
#: (it strips `train/`, sources/tensorboard.py `_key`)
SLIME_ALIASES: dict[str, tuple[str, ...]] = {
    "reward": ("rollout/raw_reward",),
    "completion_length": ("rollout/response_len/mean",),
    "completion_length_max": ("rollout/response_len/max",),
    "completion_length_min": ("rollout/response_len/min",),
    "clipped_ratio": ("rollout/truncated_ratio",),
    "clip_ratio": ("train/pg_clipfrac", "pg_clipfrac"),
    "kl": ("train/kl_loss", "kl_loss"),
    "entropy": ("train/entropy_loss", "entropy_loss"),
    "loss": ("train/loss", "loss"),
    "grad_norm": ("train/grad_norm", "grad_norm"),
    "learning_rate": ("train/lr-pg_0", "lr-pg_0"),
    # miles' shares of groups that all scored 0 / all scored 1 (ray/rollout/metrics.py)
    "samples/all_fail": ("rollout/zero_std/all_zero_percentage",),
    "samples/all_pass": ("rollout/zero_std/all_one_percentage",),
    # |logp_train − logp_rollout|, each sample's token mean averaged (docs/health.md,
    # "Off-policy drift"; slime/backends/megatron_utils/loss.py:1136–1151 at 624b824, logged as
    # `train/<key>` by model.py:883–898)
    "offpolicy/logp_diff_mean": (
        "train/train_rollout_logprob_abs_diff",
        "train_rollout_logprob_abs_diff",
    ),
}
#: `eval/<data>` is the eval reward of a data set (not `eval/<data>/…` sample statistics,
#: nor `eval/<data>-truncated_ratio` / `-pass@k`); TensorBoard names it `eval_<data>`
SLIME_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"eval[/_](?![^/]*-(?:truncated_ratio|pass@\d+)$)[^/]+", "eval_reward"),
)
#: the step keys each dict carries (the record's own step is used instead)
_STEP_KEYS = frozenset({"train/step", "rollout/step", "eval/step", "step"})

# -- the console ------------------------------------------------------------------------

_RAY_PREFIX = re.compile(r"^\(\w+ pid=\d+(?:, ip=[^)]*)?\)\s?")
#: `[2026-04-15 07:57:53] rollout.py:1193 - perf 0: {…}` (a prefix given to configure_logger
#: sits inside the brackets)
_LINE = re.compile(
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\] [\w.]+:\d+ - "
    r"(?P<what>(?:\w+-)?step|rollout|perf|eval|passrate|multi_turn) (?P<id>\d+): (?P<body>\{.*)$"
)
_ARGS_START = re.compile(r"^-{8,} arguments -{8,}$")
_ARGS_END = re.compile(r"^-{8,} end of arguments -{8,}$")
_ARG = re.compile(r"^\s+(\w+) \.+ (.*)$")
#: Megatron's argument names → args.json's
_SETTINGS = {
    "num_rollout": "max_steps",
    "n_samples_per_prompt": "num_generations",
    "rollout_max_response_len": "max_completion_length",
    "lr": "learning_rate",
    "rollout_temperature": "temperature",
    "hf_checkpoint": "model",
    "eps_clip": "epsilon",
    "eps_clip_high": "epsilon_high",
}
ZERO_STD_COUNT = "rollout/zero_std/count_"
#: the key only the trainer's view of a rollout carries
ROLLOUT_REWARD = "rollout/raw_reward"


def _value(text: str) -> Any:
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text.strip()


def slime_settings(args: dict[str, Any]) -> dict[str, Any]:
    """Megatron's argument dump (names as slime's flags) under args.json's names."""
    settings = {name: args[arg] for arg, name in _SETTINGS.items() if args.get(arg) is not None}
    if args.get("use_kl_loss") is True and args.get("kl_loss_coef") is not None:
        settings["beta"] = args["kl_loss_coef"]
    elif args.get("use_kl_loss") is False:
        settings["beta"] = 0.0
    return settings


class SlimeConsoleParser:
    """slime's printed dicts, merged into one record per rollout, and Megatron's argument
    dump. A rollout's lines come from two processes (the rollout manager's `perf`, the
    trainer's `rollout` and `step`): its record is handed out with its train line, the
    last to come; a rollout with no train line (a rollout-only debug run) once lines of
    two later rollouts came, or when the text ends. Eval lines are records of their own."""

    def __init__(self) -> None:
        self.bad: list[tuple[int, str, str]] = []
        self.settings: dict[str, Any] | None = None
        self._args: dict[str, Any] | None = None
        #: groups per rollout (`rollout_batch_size`) and whether groups have a spread at all
        self._groups: int | None = None
        self._grouped = True
        #: the rollout the trainer printed last: the train steps after it train on it
        self._rollout: int | None = None
        #: rollouts whose train line has not come: step → (first line, values)
        self._open: dict[int, tuple[int, dict[str, Any]]] = {}
        #: the rollout handed out last, for a second optimiser step on it
        self._last: tuple[int, int, dict[str, Any]] | None = None

    def feed(self, line: str, line_no: int) -> list[TextDict]:
        text = _RAY_PREFIX.sub("", line.rstrip("\r"))
        if self._args is not None or _ARGS_START.match(text.strip()):
            self._read_args(text)
            return []
        match = _LINE.match(text)
        if match is None:
            return []
        body = match.group("body").rstrip()
        try:
            values = read_dict_repr(body)
        except ValueError as error:
            if body.count("{") > body.count("}"):
                values = salvage_cut_dict([body], line_no, self.bad)  # cut: whole pairs kept
            else:
                self.bad.append((line_no, str(error), body[:80]))
                return []
        return self.take(match.group("what"), int(match.group("id")), values, line_no)

    def take(self, what: str, number: int, values: dict[str, Any], line_no: int) -> list[TextDict]:
        """One logged dict: `what` it is (step, rollout, perf, eval, …) at rollout or
        optimiser step `number`; the records it completes."""
        for key in _STEP_KEYS & values.keys():
            del values[key]
        if not values:
            return []
        if what == "eval":
            return [TextDict(line_no, {"step": number, **values})]
        if what.endswith("step"):
            return self._train(
                self._rollout if self._rollout is not None else number, values, line_no
            )
        if what == "rollout":
            self._rollout = number
        self._zero_std_share(values)
        first, held = self._open.get(number, (line_no, {}))
        self._open[number] = (first, {**held, **values})
        return self._hand_out(lambda step: step <= number - 2)

    def flush(self) -> list[TextDict]:
        return self._hand_out(lambda step: True)

    def _train(self, step: int, values: dict[str, Any], line_no: int) -> list[TextDict]:
        out = self._hand_out(lambda open_step: open_step < step)
        if step not in self._open and self._last is not None and self._last[0] == step:
            # another optimiser step on the same rollout: the rollout's record again, its
            # train values the newest
            _, first, held = self._last
            self._open[step] = (first, held)
        first, held = self._open.pop(step, (line_no, {}))
        merged = {**held, **values}
        self._last = (step, first, merged)
        return [*out, TextDict(first, {"step": step, **merged})]

    def _hand_out(self, due: Callable[[int], bool]) -> list[TextDict]:
        steps = sorted(step for step in self._open if due(step))
        out = []
        for step in steps:
            first, values = self._open.pop(step)
            self._last = (step, first, values)
            out.append(TextDict(first, {"step": step, **values}))
        return out

    def _read_args(self, text: str) -> None:
        if self._args is None:
            self._args = {}
            return
        if _ARGS_END.match(text.strip()):
            args, self._args = self._args, None
            self.settings = slime_settings(args)
            groups = args.get("rollout_batch_size")
            self._groups = groups if isinstance(groups, int) and groups > 0 else None
            self._grouped = args.get("advantage_estimator") != "ppo"
            return
        match = _ARG.match(text)
        if match is not None:
            self._args[match.group(1)] = _value(match.group(2))

    def _zero_std_share(self, values: dict[str, Any]) -> None:
        """The rollout manager's sample statistics count zero-spread groups per reward
        (none at all when every group has a spread): their share of the rollout's groups."""
        if self._groups is None or not self._grouped or "rollout/response_len/mean" not in values:
            return
        counts = [v for k, v in values.items() if k.startswith(ZERO_STD_COUNT)]
        total = sum(v for v in counts if isinstance(v, (int, float)))
        if total <= self._groups:
            values["frac_reward_zero_std"] = total / self._groups


def shows_console(text: str) -> bool:
    return re.search(r"\] [\w.]+:\d+ - (?:rollout|perf|step) \d+: \{'", text) is not None


# -- miles' dashboard JSONL --------------------------------------------------------------

MILES_NAME = "miles"
MILES_FILE = "metrics.jsonl"
_MILES_KEYS = frozenset({"ts", "step_key", "step", "metrics"})


#: miles' step keys → what slime's console calls the same dict
_MILES_KINDS = {"train/step": "step", "eval/step": "eval"}


class MilesParser(SlimeConsoleParser):
    """miles' dashboard records, one JSON object a line, merged per rollout as slime's
    console dicts are (the trainer's and the rollout manager's records of one rollout
    come as separate lines). A record of no step (time-keyed) is no step's: left out."""

    def feed(self, line: str, line_no: int) -> list[TextDict]:
        text = line.strip()
        if not text:
            return []
        try:
            record = json.loads(text)  # the standard library reads a bare NaN / Infinity
        except (ValueError, RecursionError) as error:
            self.bad.append((line_no, f"not JSON ({type(error).__name__})", text[:80]))
            return []
        if not is_miles_record(record):
            self.bad.append((line_no, "not a miles metrics record", text[:80]))
            return []
        step = record["step"]
        if not isinstance(step, int) or isinstance(step, bool):
            return []
        values = {
            key: float(value)
            for key, value in record["metrics"].items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)
        }
        what = _MILES_KINDS.get(
            record["step_key"], "rollout" if ROLLOUT_REWARD in values else "perf"
        )
        return self.take(what, step, values, line_no)


def is_miles_record(record: object) -> bool:
    return (
        isinstance(record, dict)
        and record.keys() >= _MILES_KEYS
        and isinstance(record["metrics"], dict)
    )


def _miles(path: Path, why: str) -> Found:
    # read line by line through MilesParser (its records are nested, and merged per step)
    return found_file(path, MILES_NAME, Reading.CONSOLE, Tier.LOG, why)


def claim_miles(path: Path, seen: Probe) -> Found | None:
    if path.suffix != ".jsonl" or not is_miles_record(first_record(path)):
        return None
    return _miles(path, 'its lines are miles\' dashboard records ({"ts", "step_key", "metrics"})')


def find_miles(directory: Path) -> list[Found]:
    path = directory / MILES_FILE
    seen = probe(path)
    if not seen.is_file:
        return []
    claimed = claim_miles(path, seen)
    return [] if claimed is None else [claimed]


console_claim, console_find = console_files(
    CONSOLE_NAME, shows_console, "slime's printed dicts (rollout N: {…}, perf N: {…})"
)
#: the trainer's tags (reward, clip, KL) and the rollout manager's (lengths, truncation):
#: either file of the folder tells it
tb_claim, tb_find = tensorboard_files(
    TB_NAME,
    (
        "rollout/raw_reward",
        "train/pg_clipfrac",
        "train/kl_loss",
        "rollout/response_len/mean",
        "rollout/truncated_ratio",
    ),
    "slime's tags",
)

SLIME_CONSOLE = FormatAdapter(
    name=CONSOLE_NAME,
    title="slime console log",
    aliases=SLIME_ALIASES,
    families=SLIME_FAMILIES,
    reading=Reading.CONSOLE,
    eval_prefix="eval/",
    eval_needs_all=True,
    end_keys=(),
    summary_keys=(),
    parser=SlimeConsoleParser,
    claim=console_claim,
    find=console_find,
    # Megatron's `<--save>/iter_<7 digits>/` (docs/en/get_started/usage.md:116-122 at
    # THUDM/slime 624b824)
    checkpoints=(
        CheckpointFolders(
            re.compile(r"iter_(\d+)"),
            source="THUDM/slime 624b824 docs/en/get_started/usage.md:116-122",
        ),
    ),
)
#: the TensorBoard reader turns `eval/<data>` into `eval_<data>`
SLIME_TENSORBOARD = replace(
    SLIME_CONSOLE,
    name=TB_NAME,
    title="slime (TensorBoard)",
    reading=Reading.TENSORBOARD,
    eval_prefix="eval_",
    parser=None,
    claim=tb_claim,
    find=tb_find,
)
MILES = replace(
    SLIME_CONSOLE,
    name=MILES_NAME,
    title="miles (dashboard metrics.jsonl)",
    parser=MilesParser,
    claim=claim_miles,
    find=find_miles,
)
