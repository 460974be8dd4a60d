"""verl (0.2 – 0.9) and its forks: the file logger's JSONL and the console logger's lines.

File logger (`trainer.logger` with "file", ≥ 0.6): `{"step": N, "data": {"actor/pg_loss": …}}`
per step in `$VERL_FILE_LOGGER_PATH` or `<root>/<project>/<experiment>.jsonl`; NaN as
`null` (≥ 0.7) or a bare `NaN` (0.6); truncated when a run (re)starts, which the tail
reader sees as a start over. Console logger: `(TaskRunner pid=N) step:12 - actor/entropy:0.41 - …`,
values `{:.3f}` (≤ 0.4) or full `pformat` (≥ 0.5, `np.float64(0.5)` under numpy 2); pasted
logs break the line anywhere, mid-key included.

Semantics (docs/formats.md, "verl": the traps):
- `critic/score/mean` is the reward functions' raw score: the reward (the task score).
  `critic/rewards/mean` is after the in-reward KL penalty: `shaped_reward`, which the
  diagnosis sets against the task score.
- `actor/pg_clipfrac` is the PPO clip fraction, both sides together: `clip_ratio`.
  `actor/pg_clipfrac_lower` is the dual-clip bound, not the low side: kept as it is.
- `actor/ppo_kl` is the drift from the rollout policy, not KL to the reference: kept as it
  is. KL to the reference is `actor/kl_loss` (use_kl_loss, the GRPO setting), else the
  in-reward `actor/reward_kl_penalty` (≤ 0.3 `critic/kl`).
- `response_length/clip_ratio` is the share of responses as long as the batch's
  `responses` width (verl/trainer/ppo/metric_utils.py:460, 576 at verl-project/verl
  1dda039). Up to 0.8, and in 0.9 with `trainer.use_v1: false`, the rollout pads that
  width to `max_response_length`: the share cut at the cap, TRL's
  `completions/clipped_ratio`, and it is read so. 0.9's default V1 trainer
  (ppo_trainer.yaml:222 `use_v1: true`) leaves the width at the batch's longest response:
  the share is then never 0, and 0 when `rollout.max_model_len` binds (verl#7817, #7823).
  Nothing in a log says which trainer wrote it (the file logger keeps no config), so it
  stays mapped, and README's "Same concept, same name" says when to trust it; the cap
  comes from the config the log printed (`data.max_response_length`), else from
  `response_length/max` pinned at one value.
- verl logs no reward std, no zero-spread fraction and no per-function means: they are
  unknown here, and come from the rollout dumps when those are read.
- Validation keys (`val-core/…`, `val-aux/…`, ≤ 0.3 `val/…`) ride on train steps (a step
  0 record holds only them): a record is an eval row only when every key is a val key.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from grpo_tui.sources.formats import verl_rollouts as rollouts
from grpo_tui.sources.formats.base import CheckpointFolders, FormatAdapter, TextDict
from grpo_tui.sources.formats.layout import (
    BatchFolder,
    CompletionsRef,
    Found,
    Probe,
    Reading,
    Tier,
    console_files,
    entry_is_dir,
    files_named,
    first_record,
    found_file,
    scan,
)
from grpo_tui.sources.formats.values import wrapped_number

NAME = "verl"
CONSOLE_NAME = "verl-console"

VERL_ALIASES: dict[str, tuple[str, ...]] = {
    # the task score (the reward functions'), and the reward the policy is trained on:
    # the score minus the in-reward KL penalty (use_kl_in_reward), which can rise while
    # the task falls (the penalty gamed by shortening the answer)
    "reward": ("critic/score/mean",),
    "shaped_reward": ("critic/rewards/mean",),
    "clip_ratio": ("actor/pg_clipfrac",),
    "kl": ("actor/kl_loss", "actor/reward_kl_penalty", "critic/kl"),
    "entropy": ("actor/entropy", "actor/entropy_loss"),
    "completion_length": ("response_length/mean",),
    "completion_length_min": ("response_length/min",),
    "completion_length_max": ("response_length/max",),
    "clipped_ratio": ("response_length/clip_ratio",),
    "loss": ("actor/pg_loss", "actor/loss"),
    "grad_norm": ("actor/grad_norm",),
    "learning_rate": ("actor/lr",),
    "epoch": ("training/epoch",),
    # the rollout engine against the trainer (docs/health.md, "Off-policy drift"), at
    # verl-project/verl 1dda039: with rollout.calculate_log_probs, |p_trainer − p_rollout| per
    # token, probabilities not log-probabilities (verl/utils/debug/metrics.py:63–119: exp of
    # both, then the absolute difference); with rollout correction (rollout_corr_helper.py),
    # the importance weights π_train/π_rollout (:705–738) and the k3 estimate of
    # KL(π_rollout ‖ π_train), E[r − log r − 1] (:961–966)
    "offpolicy/prob_diff_mean": ("training/rollout_probs_diff_mean",),
    "offpolicy/prob_diff_max": ("training/rollout_probs_diff_max",),
    "offpolicy/is_ratio_mean": ("rollout_corr/rollout_is_mean",),
    "offpolicy/is_ratio_min": ("rollout_corr/rollout_is_min",),
    "offpolicy/is_ratio_max": ("rollout_corr/rollout_is_max",),
    "offpolicy/mismatch_kl": ("rollout_corr/k3_kl",),
}

#: the eval reward: one quantity, whichever group holds it on a line. The validation reward
#: first (val-core's, else the val-aux mean of a run whose val-core holds only best@N /
#: maj@N statistics), then its accuracy: a W&B console cuts lines at 4096 characters, and
#: a step-0 line that kept `val-core/…/acc` beside later lines that kept only
#: `val-aux/…/reward` must not make one series of two quantities (the first data source's
#: wins); ≤ 0.3's `val/test_score/<data>` is the reward too
VERL_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"val-core/.+/reward/mean@\d+", "eval_reward"),
    (r"val/test_score/.+", "eval_reward"),
    (r"val-aux/.+/reward/mean@\d+", "eval_reward"),
    (r"val-aux/.+/score/mean@\d+", "eval_reward"),
    (r"val-core/.+/acc/mean@\d+", "eval_reward"),
    (r"val-aux/.+/acc/mean@\d+", "eval_reward"),
)


def flatten(record: dict[str, Any]) -> dict[str, Any]:
    """`{"step": N, "data": {…}}` → `{"step": N, …}` (null values stay None: not logged)."""
    data = record.get("data")
    if not isinstance(data, dict):
        return record
    return {"step": record.get("step"), **data}


def is_file_logger_record(record: dict[str, Any] | None) -> bool:
    """verl's file logger writes exactly `step` and a `data` object."""
    return (
        record is not None and set(record) == {"step", "data"} and isinstance(record["data"], dict)
    )


#: `trainer.rollout_data_dir=<dir>`: `<dir>/<global_step>.jsonl`, one response per line
VERL_ROLLOUTS = BatchFolder(
    rollouts.FILE_PATTERN,
    rollouts.convert,
    settle_s=rollouts.SETTLE_S,
    recognise=rollouts.looks_like_rollouts,
)
#: folders beside a log looked into for rollout dumps (their name is the user's choice)
_ROLLOUT_FOLDERS_LOOKED_AT = 32


def rollouts_near(run_dir: Path) -> CompletionsRef | None:
    """A folder of rollout dumps in the log's folder or one level down (verl names none:
    `rollout_data_dir` is the user's), so the panel and the derived spread have them."""
    if VERL_ROLLOUTS.holds(run_dir):
        return CompletionsRef(run_dir, VERL_ROLLOUTS)
    entries, _ = scan(run_dir)
    folders = [Path(e.path) for e in entries if entry_is_dir(e)][:_ROLLOUT_FOLDERS_LOOKED_AT]
    folder = next((folder for folder in sorted(folders) if VERL_ROLLOUTS.holds(folder)), None)
    return None if folder is None else CompletionsRef(folder, VERL_ROLLOUTS)


def claim(path: Path, seen: Probe) -> Found | None:
    if path.suffix != ".jsonl" or not is_file_logger_record(first_record(path)):
        return None
    return found_file(
        path,
        NAME,
        Reading.JSONL,
        Tier.LOG,
        'its lines are verl\'s file logger ({"step", "data"})',
        completions=rollouts_near(path.parent),
    )


def find(directory: Path) -> list[Found]:
    named = files_named(directory, lambda name: name.endswith(".jsonl"))
    return [found for path in named if (found := claim(path, Probe())) is not None]


# -- the settings ----------------------------------------------------------------------

#: where verl's config keeps what args.json names for ms-swift (the first one set wins)
VERL_SETTINGS: dict[str, tuple[str, ...]] = {
    "max_completion_length": ("data.max_response_length",),
    "num_generations": ("actor_rollout_ref.rollout.n",),
    "learning_rate": ("actor_rollout_ref.actor.optim.lr",),
    "temperature": ("actor_rollout_ref.rollout.temperature",),
    "max_steps": ("trainer.total_training_steps",),
    "model": ("actor_rollout_ref.model.path",),
    "epsilon": ("actor_rollout_ref.actor.clip_ratio_low", "actor_rollout_ref.actor.clip_ratio"),
    "epsilon_high": (
        "actor_rollout_ref.actor.clip_ratio_high",
        "actor_rollout_ref.actor.clip_ratio",
    ),
}
#: a config dump longer than this is not one (lines), and a line of verl's pformat
_CONFIG_LINES = 20_000


def setting(config: dict[str, Any], dotted: str) -> Any:
    """The value at a dotted path (`a.b.c`) of a nested config, None where there is none."""
    value: Any = config
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def verl_settings(config: dict[str, Any]) -> dict[str, Any]:
    """verl's whole config (what `main_ppo` prints at start, W&B's config) under args.json's
    names. The KL coefficient is the KL loss's when `use_kl_loss`, the in-reward penalty's
    when `use_kl_in_reward`, else 0 (no KL at all); the updates per rollout batch are
    `ppo_epochs` × the mini-batches a batch splits into (1: on-policy)."""
    firsts = {
        name: next((v for place in places if (v := setting(config, place)) is not None), None)
        for name, places in VERL_SETTINGS.items()
    }
    settings = {name: value for name, value in firsts.items() if value is not None}
    actor = "actor_rollout_ref.actor."
    if setting(config, actor + "use_kl_loss"):
        settings["beta"] = setting(config, actor + "kl_loss_coef")
    elif setting(config, "algorithm.use_kl_in_reward"):
        settings["beta"] = setting(config, "algorithm.kl_ctrl.kl_coef")
    elif setting(config, actor + "use_kl_loss") is False:
        settings["beta"] = 0.0
    epochs = setting(config, actor + "ppo_epochs")
    batch = setting(config, "data.train_batch_size")
    mini = setting(config, actor + "ppo_mini_batch_size")
    if all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (epochs, batch, mini)):
        settings["num_iterations"] = epochs * -(-batch // mini)
    return settings


# -- the console logger ----------------------------------------------------------------

#: a Ray worker's prefix: `(TaskRunner pid=N) `, `(main_task pid=N) `, `(WorkerDict pid=N,
#: ip=…) ` (its colours stripped already)
_RAY_PREFIX = re.compile(r"^\(\w+ pid=\d+(?:, ip=[^)]*)?\)\s?")

#: W&B's copy of the console (files/output.log) cuts every line at this many characters
WANDB_LINE_CHARS = 4096
#: `step:N - ` at a line's start (indented, as pasted in a markdown block) or after a Ray
#: worker prefix: `(TaskRunner pid=N) `, `(main_task pid=N) `, `(WorkerDict pid=N, ip=…) `
_STEP = re.compile(r"(?:^\s*|\)\s+)step:(\d+)\s+-\s+")
#: one `key:value` field; values are numbers, nan/inf, or np.float64(…)
_FIELD = re.compile(r"^([^\s:][^:]*):(\S+)$")
#: a wrapped line's rest: key characters and ` - ` separators, no prefix, no other text
#: what verl's trainer prints after its last step (RayPPOTrainer.fit)
_FINAL = re.compile(r"Final validation metrics")
#: the record the console parser makes of that line: an end-of-training line (no metric)
TRAINING_DONE = "_training_done"
_CONTINUATION = re.compile(r"^[\w/@.+\-:()]+(?: - [\w/@.+\-:()]*)*(?: -)?$")


def shows_console(text: str) -> bool:
    return re.search(r"(?:^\s*|\)\s+)step:\d+ - [\w/@.\-]+:", text, re.MULTILINE) is not None


class VerlConsoleParser:
    """Finds verl's `step:N - key:value - …` lines, joining lines a paste broke.

    A step line is handed out as soon as it arrives (live, the next line is the next
    step, minutes later). Lines a paste broke off it (no step marker, nothing but key
    characters and ` - ` separators) are joined to it without a separator, since the
    break can fall inside a key or a number; the step then comes out again with every
    field read so far (the store keeps the newest record of a re-logged step). A step
    line that other output follows while it ends inside a field was cut off (W&B cuts
    console lines at 4 096 characters, a paste can end anywhere): its whole fields are
    kept, the line is counted as bad, never taken for a whole record.
    """

    def __init__(self) -> None:
        self.bad: list[tuple[int, str, str]] = []
        self.settings: dict[str, Any] | None = None
        #: the lines of the config dump being read, and its open braces
        self._config: list[str] | None = None
        self._config_depth = 0
        self._config_done = False
        self._body: str | None = None
        self._step = 0
        self._line = 0
        self._length = 0
        self._given: set[str] = set()

    def feed(self, line: str, line_no: int) -> list[TextDict]:
        text = line.rstrip("\r")
        if not self._config_done:
            self._read_config(_RAY_PREFIX.sub("", text))
        match = _STEP.search(text)
        if match is None:
            if _FINAL.search(text) and self._step:
                # ray_trainer.fit prints this once the last step is trained: the run ended
                self._end_step_line()
                return [TextDict(line_no, {"step": self._step, TRAINING_DONE: 1})]
            if self._body is not None and _CONTINUATION.match(text.strip()):
                self._body += text.strip()
                self._length = len(text)
                return self._emit(quiet=True)
            if text.strip():
                self._end_step_line()  # other output: the step line is over
            return []
        self._end_step_line()
        self._config_done = True  # the config comes before the first step, or not at all
        self._config = None
        self._body = text[match.end() :].strip()
        self._step = int(match.group(1))
        self._line = line_no
        self._length = len(text)
        self._given = set()
        return self._emit(quiet=False)

    def _read_config(self, text: str) -> None:
        """The config `main_ppo` prints (pformat) before the first step: its settings."""
        if self._config is None:
            if not text.startswith("{'"):
                return
            self._config = []
        self._config.append(text)
        self._config_depth += text.count("{") - text.count("}")
        if self._config_depth > 0 and len(self._config) < _CONFIG_LINES:
            return
        try:
            config = ast.literal_eval("\n".join(self._config))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            config = None  # some other printed dict: not the config
        self._config, self._config_depth = None, 0
        if isinstance(config, dict) and "actor_rollout_ref" in config:
            self.settings = verl_settings(config)
            self._config_done = True

    def flush(self) -> list[TextDict]:
        """The text ended: a step line that ends inside a field was cut off (its whole
        fields were handed out as they came)."""
        self._end_step_line()
        return []

    def _end_step_line(self) -> None:
        """The step line is over; one that ends inside a field was cut, and is counted."""
        body = self._body
        self._body = None
        if body is None or _complete(body):
            return
        whole = len(self._given)
        if self._length == WANDB_LINE_CHARS:
            where = f"at {WANDB_LINE_CHARS} characters, where W&B's console capture cuts lines"
        elif body.endswith("-"):
            where = "after its last whole field"
        else:
            where = "inside a field"
        self.bad.append(
            (self._line, f"a step line cut off {where}: {whole} whole values kept", body[-80:])
        )

    def _emit(self, *, quiet: bool) -> list[TextDict]:
        """The fields of the step line not handed out yet (a cut last field waits)."""
        body = self._body or ""
        fields = body.split(" - ")
        if not _complete(body):
            fields = fields[:-1]  # cut inside its key or value: the next line may finish it
        matches = [match for field in fields if (match := _FIELD.match(field.strip()))]
        values = {m.group(1): n for m in matches if (n := wrapped_number(m.group(2))) is not None}
        if not values or values.keys() == self._given:
            if not quiet and not values:
                self.bad.append((self._line, "a step line with no readable value", body[:80]))
            return []
        self._given = set(values)
        return [TextDict(self._line, {"step": self._step, **values})]


def _complete(body: str) -> bool:
    """The text ends on a whole `key:value` field (a break leaves a key or ` -` hanging)."""
    last = body.rsplit(" - ", 1)[-1].strip()
    match = _FIELD.match(last)
    return match is not None and wrapped_number(match.group(2)) is not None


console_claim_verl, console_find_verl = console_files(
    CONSOLE_NAME, shows_console, "verl's console logger (step:N - key:value)", rollouts_near
)


#: `<trainer.default_local_dir>/global_step_<N>/` (verl/trainer/ppo/ray_trainer.py:988 at
#: verl-project/verl 1dda039), the default `checkpoints/<project>/<experiment>` relative to
#: where the trainer ran (ppo_trainer.yaml:207), where the file logger also writes
#: `<project>/<experiment>.jsonl` (utils/tracking.py:426-429): from the log's folder that is
#: `../checkpoints/<folder>/<stem>`; a folder given that holds them is listed too
VERL_CHECKPOINTS = CheckpointFolders(
    re.compile(r"global_step_(\d+)"),
    under=("", "../checkpoints/{folder}/{stem}", "checkpoints"),
    source="verl-project/verl 1dda039 verl/trainer/ppo/ray_trainer.py:988, ppo_trainer.yaml:207",
)


VERL = FormatAdapter(
    name=NAME,
    title="verl",
    aliases=VERL_ALIASES,
    families=VERL_FAMILIES,
    # `val-core/…`, `val-aux/…`, `val/…`: eval rows hold only these
    eval_prefix="val",
    eval_needs_all=True,
    end_keys=(),
    summary_keys=(),
    ignored_keys=frozenset({"training/global_step"}),
    version_hints=(
        ("actor/entropy_loss", "verl ≤ 0.3 (actor/entropy_loss)"),
        ("critic/kl", "verl ≤ 0.3 (critic/kl)"),
        ("actor/entropy", "verl ≥ 0.4 (actor/entropy)"),
        ("actor/loss", "verl ≥ 0.7 new engine (actor/loss)"),
    ),
    completion_folders=(VERL_ROLLOUTS,),
    settings=verl_settings,
    flatten=flatten,
    claim=claim,
    find=find,
    checkpoints=(VERL_CHECKPOINTS,),
)

#: the same vocabulary, read from the console logger's lines
VERL_CONSOLE = replace(
    VERL,
    name=CONSOLE_NAME,
    title="verl console log",
    reading=Reading.CONSOLE,
    flatten=None,
    parser=VerlConsoleParser,
    end_keys=(TRAINING_DONE,),
    ignored_keys=frozenset({"training/global_step", TRAINING_DONE}),
    claim=console_claim_verl,
    find=console_find_verl,
)
