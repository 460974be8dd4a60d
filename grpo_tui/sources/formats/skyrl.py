"""SkyRL (NovaSky-AI/SkyRL): its console logger and its TensorBoard event files.

Read from SkyRL at a956457 (2026-08). Trackers: wandb, mlflow, swanlab, tensorboard,
console (skyrl/train/utils/tracking.py:34). TensorBoard writes to `$TENSORBOARD_DIR` or
`./tensorboard_log` with the keys as logged. The console logger (`ConsoleLogger.log`,
tracking.py:186–200) turns every float into a `'%.4f'` string and logs, through loguru,

    2026-08-21 18:02:38.123 | INFO     | skyrl.train.utils.tracking:log:191 - Step 3:
    {'generate/avg_num_tokens': '512.2500',
     'policy/grad_norm': '0.1234',
     …}

the pformat'ed dict (keys sorted) on the lines after the `Step N:` line, under Ray's
`(skyrl_entrypoint pid=N)` prefix when run as a Ray task.

Keys (trainer.py:1111–1112, 1578 `policy/<status>`; workers/worker.py:1114–1124;
train/generators/utils.py:456–461; train/utils/trainer_utils.py:260):
- `reward/avg_raw_reward` is the mean sequence score: the reward. `loss/avg_final_rewards`
  includes the in-reward KL penalty.
- `policy/policy_kl` is the KL loss to the reference (logged only with `use_kl_loss`).
- `policy/loss_metrics/clip_ratio` is the PPO clip fraction; `policy/policy_entropy` the
  mean entropy; `policy/policy_lr` the scheduler's learning rate.
- `generate/avg_num_tokens` is the mean response length (capped at `max_generate_length`,
  SkyRL#1821); `generate/{min,max}_num_tokens` its bounds.
- `eval/<data>/avg_score` (`eval/all/…` over every eval set) is the eval reward, logged on
  a line of eval keys at the train step.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from grpo_tui.sources.formats.base import CheckpointFolders, FormatAdapter, TextDict
from grpo_tui.sources.formats.console import read_dict_repr, salvage_cut_dict
from grpo_tui.sources.formats.layout import Reading, console_files
from grpo_tui.sources.formats.tb_trainers import tensorboard_files

CONSOLE_NAME = "skyrl-console"
TB_NAME = "skyrl-tensorboard"

SKYRL_ALIASES: dict[str, tuple[str, ...]] = {
    "reward": ("reward/avg_raw_reward",),
    "entropy": ("policy/policy_entropy",),
    "kl": ("policy/policy_kl",),
    "clip_ratio": ("policy/loss_metrics/clip_ratio",),
    "loss": ("policy/policy_loss",),
    "grad_norm": ("policy/grad_norm",),
    "learning_rate": ("policy/policy_lr",),
    "completion_length": ("generate/avg_num_tokens",),
    "completion_length_min": ("generate/min_num_tokens",),
    "completion_length_max": ("generate/max_num_tokens",),
    "epoch": ("trainer/epoch",),
    # the fully async trainer (docs/health.md, "Off-policy drift"), at a956457: the policy versions
    # between each trained group's generating weights and the trainer's
    # (skyrl/train/fully_async_trainer.py:1114–1121). Its `async/keep_rate` is not mapped: it
    # is the zero-variance filter's share of groups kept (:569–574, 790–830), by design
    "offpolicy/staleness_mean": ("async/staleness_mean",),
    "offpolicy/staleness_max": ("async/staleness_max",),
}
#: every eval set together first, then any one set's score
SKYRL_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"eval/all/avg_score", "eval_reward"),
    (r"eval/[^/]+/avg_score", "eval_reward"),
)

_RAY_PREFIX = re.compile(r"^\(\w+ pid=\d+(?:, ip=[^)]*)?\)\s?")
#: loguru's `… | INFO     | module:function:line - Step N: ` (the dict follows on the next lines)
_STEP = re.compile(r" - Step (\d+):\s*$")
#: a dict still open after this many lines is no pformat'ed log dict
_MAX_DICT_LINES = 5000


class SkyRLConsoleParser:
    """`Step N:` lines and the pformat'ed dict after each."""

    def __init__(self) -> None:
        self.bad: list[tuple[int, str, str]] = []
        self.settings: dict[str, Any] | None = None
        self._step: int | None = None
        self._line = 0
        self._pending: list[str] = []

    def feed(self, line: str, line_no: int) -> list[TextDict]:
        text = _RAY_PREFIX.sub("", line.rstrip("\r"))
        match = _STEP.search(text)
        if match is not None:
            out = self._cut()
            self._step, self._line, self._pending = int(match.group(1)), line_no, []
            return out
        if self._step is None:
            return []
        if not self._pending and not text.lstrip().startswith("{"):
            self._step = None  # no dict after the step line: some other output
            return []
        self._pending.append(text.strip())
        body = " ".join(self._pending)
        if body.count("{") > body.count("}"):
            if len(self._pending) > _MAX_DICT_LINES:
                self.bad.append((self._line, "a dict that never closes", body[:80]))
                self._step, self._pending = None, []
            return []
        step, self._step, self._pending = self._step, None, []
        try:
            values = read_dict_repr(body)
        except ValueError as error:
            self.bad.append((self._line, str(error), body[:80]))
            return []
        return [TextDict(self._line, {"step": step, **values})] if values else []

    def flush(self) -> list[TextDict]:
        return self._cut()

    def _cut(self) -> list[TextDict]:
        """A dict still open when the text ends or another step starts was cut off."""
        if self._step is None or not self._pending:
            return []
        step, self._step = self._step, None
        values = salvage_cut_dict(self._pending, self._line, self.bad)
        self._pending = []
        return [TextDict(self._line, {"step": step, **values})] if values else []


def shows_console(text: str) -> bool:
    return re.search(r" - Step \d+:\s*\n(?:\([^)\n]*\)\s?)?\{'\w+/", text) is not None


console_claim, console_find = console_files(
    CONSOLE_NAME, shows_console, "SkyRL's console logger (Step N: and its dict)"
)
tb_claim, tb_find = tensorboard_files(
    TB_NAME,
    ("reward/avg_raw_reward", "policy/policy_loss", "generate/avg_num_tokens"),
    "SkyRL's tags",
)

SKYRL_CONSOLE = FormatAdapter(
    name=CONSOLE_NAME,
    title="SkyRL console log",
    aliases=SKYRL_ALIASES,
    families=SKYRL_FAMILIES,
    reading=Reading.CONSOLE,
    eval_prefix="eval/",
    eval_needs_all=True,
    end_keys=(),
    summary_keys=(),
    ignored_keys=frozenset({"trainer/global_step"}),
    parser=SkyRLConsoleParser,
    claim=console_claim,
    find=console_find,
    # `<trainer.ckpt_path>/global_step_<N>/` (skyrl/train/trainer.py:1663 at
    # NovaSky-AI/SkyRL a956457; ckpt_path defaults to ~/ckpts/, config.py:1368)
    checkpoints=(
        CheckpointFolders(
            re.compile(r"global_step_(\d+)"),
            source="NovaSky-AI/SkyRL a956457 skyrl/train/trainer.py:1663",
        ),
    ),
)
SKYRL_TENSORBOARD = replace(
    SKYRL_CONSOLE,
    name=TB_NAME,
    title="SkyRL (TensorBoard)",
    reading=Reading.TENSORBOARD,
    # the TensorBoard reader turns `eval/…` into `eval_…`
    eval_prefix="eval_",
    families=(
        (r"eval_all/avg_score", "eval_reward"),
        (r"eval_[^/]+/avg_score", "eval_reward"),
    ),
    parser=None,
    claim=tb_claim,
    find=tb_find,
)
