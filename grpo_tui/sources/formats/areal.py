"""AReaL (inclusionAI/AReaL): TensorBoard event files and the console's stats tables.

Read from AReaL at 4aef98d (2026-05). `StatsLogger.commit` (areal/utils/stats_logger.py:
134–162) sends each step's stats to W&B, swanlab, trackio and, when
`stats_logger.tensorboard.path` is set, TensorBoard (`add_scalar(key, value, log_step)`,
the 0-based global step). On the console it logs

    (AReaL) 20260521-18:37:16.123 StatsLogger INFO: Epoch 1/5 Step 3/100 Train step 3/500 done.
    (AReaL) 20260521-18:37:16.124 StatsLogger INFO: Stats (1/1):
    (AReaL) 20260521-18:37:16.125 StatsLogger INFO:
    ╒══════════════════════════╤════════════╤═══ …
    │ ppo_actor/task_reward/avg │ 1.2340e-01 │ …

a tabulate "fancy_grid" of key/value pairs, four pairs a row, column-major, floats as
`.4e` (areal/utils/printing.py `tabulate_stats`). The parser takes the step and the total
steps from the "Train step N/M done." line (1-based, as printed).

Keys (areal/trainer/ppo/actor.py:256–306, 341–365, 520–545; the stats tracker writes
`<scope>/<name>/avg|min|max` for a statistic and `<scope>/<name>` for a scalar):
- `ppo_actor/task_reward/avg` is the reward (areal's tests/grpo/entrypoint.py reads it).
- `ppo_actor/seq_len/avg` is the length of prompt **plus** response (`attention_mask`
  sum), so it is never the completion length. The response length is its difference with
  `ppo_actor/prompt_len/avg` (both are averaged over the same sequences), which `flatten`
  derives as `completion_length` when both are logged. `seq_len` itself is shown under
  the name `sequence_length`, which no check reads as a response length.
- `ppo_actor/no_eos_ratios/avg` is the share of sequences as long as the batch's padded
  width (`seqlens == attn_mask.shape[-1]`), and the batch is padded to its longest
  sequence (utils/data.py `concat_padded_tensors`): at least one sequence of every batch
  counts, so it is not the share cut at the length cap. It keeps its own name.
- `ppo_actor/update/{entropy,clip_ratio,actor_loss}/avg` and `ppo_actor/update/grad_norm`,
  `…/lr`: entropy, PPO clip fraction, loss, grad norm, learning rate.
  `ppo_actor/update/approx_kl/avg` is the drift from the old policy: its own name.
- `grpo-eval/task_reward/avg` (the eval workflow's scope) is the eval reward, committed on
  the train step's row.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from grpo_tui.sources.formats.base import FormatAdapter, TextDict
from grpo_tui.sources.formats.layout import Reading, console_files
from grpo_tui.sources.formats.tb_trainers import tensorboard_files
from grpo_tui.sources.formats.values import wrapped_number

CONSOLE_NAME = "areal-console"
TB_NAME = "areal-tensorboard"
#: the key the console parser adds for the step the table belongs to ("N/M")
PROGRESS_KEY = "train_step/total_train_steps"
SEQ_LEN = "ppo_actor/seq_len/avg"
PROMPT_LEN = "ppo_actor/prompt_len/avg"

AREAL_ALIASES: dict[str, tuple[str, ...]] = {
    "reward": ("ppo_actor/task_reward/avg",),
    "entropy": ("ppo_actor/update/entropy/avg",),
    "clip_ratio": ("ppo_actor/update/clip_ratio/avg",),
    "loss": ("ppo_actor/update/actor_loss/avg",),
    "grad_norm": ("ppo_actor/update/grad_norm",),
    "learning_rate": ("ppo_actor/update/lr",),
    # prompt plus response: a name of its own, never the completion length
    "sequence_length": (SEQ_LEN,),
}
AREAL_FAMILIES: tuple[tuple[str, str], ...] = ((r"[^/]*eval[^/]*/task_reward/avg", "eval_reward"),)


def flatten(record: dict[str, Any]) -> dict[str, Any]:
    """The mean response length: the mean sequence length less the mean prompt length."""
    total, prompt = record.get(SEQ_LEN), record.get(PROMPT_LEN)
    if isinstance(total, (int, float)) and isinstance(prompt, (int, float)):
        record["completion_length"] = float(total) - float(prompt)
    return record


_RAY_PREFIX = re.compile(r"^\(\w+ pid=\d+(?:, ip=[^)]*)?\)\s?")
_DONE = re.compile(r"Train step (\d+)/(\d+) done\.")
#: the rows of a fancy_grid table: cells between `│`
_ROW = "│"
_BOTTOM = "╘"


class ArealConsoleParser:
    """StatsLogger's tables, each at the train step of the line before it."""

    def __init__(self) -> None:
        self.bad: list[tuple[int, str, str]] = []
        self.settings: dict[str, Any] | None = None
        self._progress: str | None = None
        self._line = 0
        self._values: dict[str, Any] | None = None

    def feed(self, line: str, line_no: int) -> list[TextDict]:
        text = _RAY_PREFIX.sub("", line.rstrip("\r")).strip()
        done = _DONE.search(text)
        if done is not None:
            self._progress = f"{done.group(1)}/{done.group(2)}"
            return []
        if self._progress is None:
            return []
        if text.startswith("╒"):
            self._values, self._line = {}, line_no
            return []
        if self._values is None:
            return []
        if text.startswith(_ROW):
            cells = [cell.strip() for cell in text.strip(_ROW).split(_ROW)]
            for key, raw in zip(cells[::2], cells[1::2], strict=False):
                number = wrapped_number(raw) if key else None
                if number is not None:
                    self._values[key] = number
                elif key:
                    self.bad.append((line_no, f"no number for {key}", raw[:80]))
            return []
        if text.startswith(_BOTTOM):
            return self._emit()
        if not text.startswith("├"):
            # other output inside the table: it was cut; what it held is kept
            self.bad.append((self._line, "a stats table cut off", text[:80]))
            return self._emit()
        return []

    def flush(self) -> list[TextDict]:
        if self._values:
            self.bad.append((self._line, "a stats table cut off at the end", ""))
        return self._emit()

    def _emit(self) -> list[TextDict]:
        values, self._values = self._values, None
        if not values or self._progress is None:
            return []
        progress, self._progress = self._progress, None
        return [TextDict(self._line, {PROGRESS_KEY: progress, **values})]


def shows_console(text: str) -> bool:
    return _DONE.search(text) is not None and "│ ppo_actor/" in text


console_claim, console_find = console_files(
    CONSOLE_NAME, shows_console, "AReaL's StatsLogger tables (Train step N/M done.)"
)
tb_claim, tb_find = tensorboard_files(
    TB_NAME, ("ppo_actor/task_reward/avg", "ppo_actor/update/actor_loss/avg"), "AReaL's tags"
)

AREAL_TENSORBOARD = FormatAdapter(
    name=TB_NAME,
    title="AReaL (TensorBoard)",
    aliases=AREAL_ALIASES,
    families=AREAL_FAMILIES,
    reading=Reading.TENSORBOARD,
    eval_prefix="grpo-eval/",
    eval_needs_all=True,
    end_keys=(),
    summary_keys=(),
    flatten=flatten,
    claim=tb_claim,
    find=tb_find,
)
AREAL_CONSOLE = replace(
    AREAL_TENSORBOARD,
    name=CONSOLE_NAME,
    title="AReaL console log",
    reading=Reading.CONSOLE,
    fraction_step_keys=(PROGRESS_KEY,),
    parser=ArealConsoleParser,
    claim=console_claim,
    find=console_find,
)
