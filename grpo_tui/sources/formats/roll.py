"""ROLL (alibaba/ROLL): its stdout tracker's `metrics_tag:` lines and TensorBoard files.

Read from ROLL at 8eb27cc (2026-08). Trackers: tensorboard, wandb, swanlab, trackio,
stdout (roll/utils/tracking.py). The stdout tracker logs one line per step,

    [2026-08-19 15:36:11] [tracking.py (161)] [INFO] [PIPELINE 0 / 1][PID 42] metrics_tag: {"step": 3, "metrics": {…}}

(`StdoutTracker.log`: `json.dumps({'step': step, 'metrics': values})`, so NaN is a bare
`NaN`; the prefix is roll/utils/logging.py's `CustomFormatter`).

Keys (roll/utils/metrics/metrics_manager.py:88–250, 408–416; pipeline/base_worker.py:
292–306; pipeline/rlvr/rlvr_pipeline.py:877): the batch's `critic/…` and `token/…`
statistics, and the same per domain as `<domain>/critic/…`, `<domain>/token/…`
(`add_domain_all_metrics`; a domain is a data set's tag such as `math_rule`).
- `critic/score/mean` is the reward functions' score: the reward (the batch's, else the
  first domain's). `critic/rewards/mean` is after the KL penalty and normalisation.
- `token/response_length/mean` is the response length (the response mask's sum).
- `token/total_response_length/clip` is a COUNT of responses as long as the batch's
  response width, not a share, so it is not read as the truncated share and keeps its name.
- `actor/ppo_ratio_clipfrac` (PPO clip fraction), `actor/kl_loss` (KL to the reference),
  `actor/pg_loss`: the reduction tag ROLL writes into a name (`@sum`, `@mean`) is stripped
  before logging at this commit (tracking.py `strip_at_tag_in_log`); older versions kept
  it, and tensorboardX wrote `@` as `_`: all three spellings are read.
- `val_correct/all/mean` is the eval accuracy (rlvr_pipeline.py:877), logged at its step.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from grpo_tui.sources.formats.base import CheckpointFolders, FormatAdapter, TextDict
from grpo_tui.sources.formats.layout import Reading, console_files
from grpo_tui.sources.formats.tb_trainers import tensorboard_files

CONSOLE_NAME = "roll-console"
TB_NAME = "roll-tensorboard"


def _tagged(key: str) -> tuple[str, ...]:
    """A key as logged now, with ROLL's `@sum` tag, and as tensorboardX wrote that."""
    return (key, f"{key}@sum", f"{key}_sum")


ROLL_ALIASES: dict[str, tuple[str, ...]] = {
    "reward": ("critic/score/mean",),
    "completion_length": ("token/response_length/mean",),
    "completion_length_max": ("token/response_length/max",),
    "completion_length_min": ("token/response_length/min",),
    "entropy": ("critic/entropy/mean",),
    "clip_ratio": _tagged("actor/ppo_ratio_clipfrac"),
    "kl": _tagged("actor/kl_loss"),
    "loss": _tagged("actor/pg_loss"),
    "grad_norm": ("actor/grad_norm",),
    "eval_reward": ("val_correct/all/mean",),
}
#: a domain's statistics stand in for the batch's when only they are logged
ROLL_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"[^/]+/critic/score/mean", "reward"),
    (r"[^/]+/token/response_length/mean", "completion_length"),
    (r"[^/]+/critic/entropy/mean", "entropy"),
)

_TAG = re.compile(r"metrics_tag: (\{.*\})\s*$")


class RollConsoleParser:
    """`metrics_tag: {"step": N, "metrics": {…}}` lines."""

    def __init__(self) -> None:
        self.bad: list[tuple[int, str, str]] = []
        self.settings: dict[str, Any] | None = None

    def feed(self, line: str, line_no: int) -> list[TextDict]:
        match = _TAG.search(line)
        if match is None:
            if "metrics_tag: {" in line:
                self.bad.append((line_no, "a metrics_tag line cut off", line[-80:]))
            return []
        try:
            # the standard library reads json.dumps' bare NaN / Infinity
            record = json.loads(match.group(1))
        except (ValueError, RecursionError) as error:
            self.bad.append((line_no, f"not JSON ({type(error).__name__})", match.group(1)[:80]))
            return []
        metrics = record.get("metrics") if isinstance(record, dict) else None
        if not isinstance(metrics, dict):
            self.bad.append((line_no, "no metrics object", match.group(1)[:80]))
            return []
        values = {
            key: float(value)
            for key, value in metrics.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)
        }
        if not values:
            return []
        step = record.get("step")
        if isinstance(step, int) and not isinstance(step, bool):
            values["step"] = step
        return [TextDict(line_no, values)]

    def flush(self) -> list[TextDict]:
        return []


def shows_console(text: str) -> bool:
    return re.search(r'metrics_tag: \{"step": ', text) is not None


console_claim, console_find = console_files(
    CONSOLE_NAME, shows_console, 'ROLL\'s stdout tracker (metrics_tag: {"step", "metrics"})'
)
tb_claim, tb_find = tensorboard_files(
    TB_NAME, ("actor/ppo_ratio_clipfrac", "token/total_response_length/clip"), "ROLL's tags"
)

ROLL_CONSOLE = FormatAdapter(
    name=CONSOLE_NAME,
    title="ROLL console log",
    aliases=ROLL_ALIASES,
    families=ROLL_FAMILIES,
    reading=Reading.CONSOLE,
    eval_prefix="val_",
    eval_needs_all=True,
    end_keys=(),
    summary_keys=(),
    parser=RollConsoleParser,
    claim=console_claim,
    find=console_find,
    # `<output_dir>/pipeline/checkpoint-<N>/` (roll/pipeline/base_pipeline.py:122-123 at
    # alibaba/ROLL 8eb27cc)
    checkpoints=(
        CheckpointFolders(
            re.compile(r"checkpoint-(\d+)"),
            under=("", "pipeline"),
            source="alibaba/ROLL 8eb27cc roll/pipeline/base_pipeline.py:122-123",
        ),
    ),
)
ROLL_TENSORBOARD = replace(
    ROLL_CONSOLE,
    name=TB_NAME,
    title="ROLL (TensorBoard)",
    reading=Reading.TENSORBOARD,
    parser=None,
    claim=tb_claim,
    find=tb_find,
)
