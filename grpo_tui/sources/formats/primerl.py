"""prime-rl (PrimeIntellect-ai/prime-rl): the file monitor's `<run_dir>/metrics.jsonl`.

Read from prime-rl at 559b44772 (2026-12). `FileMonitor.log_metrics`
(src/prime_rl/monitors/file.py) appends `{"step": N, "time": <wall clock>, **metrics}` with
non-finite values dropped; the file monitor is on by default (configs/monitors.py) and the
`rl` entrypoint points the trainer and the orchestrator at one run directory,
`<output_dir>/<run.name>` (configs/rl.py), so both append to the same file:

- the orchestrator one line per step (orchestrator.py `monitors.log(metrics, step=step)`),
  the episode statistics `train/<env>/<subset>/<agent>/<metric>/<stat>` of
  orchestrator/metrics.py (`<env>` is `agg` for all environments together, `<subset>`
  `all` for every rollout of the step or `effective` for the ones shipped to the trainer,
  `<stat>` mean/max/min/p10/p90), with `progress/…`, `time/…`, `off_policy/…`;
- the trainer a burst of lines per step after it (trainer/rl/train.py): `perf/…`,
  `optim/lr` and `optim/grad_norm`, the tensor statistics (`loss/mean`, `entropy/all/mean`,
  `mismatch_kl/all/mean`, …), `time/…`, `system/ckpt_disk_…`;
- evals (`eval/<env>/<subset>/<agent>/avg@<k>`, …) on lines of their own when they end.

So the lines are read merged by step (sources/merged.py); the two processes are told apart
by their keys (`writers`). Before prime-rl's episode refactor (orchestrator/metrics.py up
to 2026-08) the statistics had no agent level (`train/agg/effective/reward/mean`): those
keys are whole-key aliases below. A run of several agents logs each agent's statistics:
the canonical metric is the first agent's (prime-rl logs agents sorted by name).

Before the file monitor (prime-rl at 60d17cf55, 2025-11) the orchestrator logged to W&B
only (utils/monitor.py `WandbMonitor`), one flat dict a step (orchestrator.py 327-367):
`reward/mean`, `completion_len/{mean,max,min}` (per-problem means), `is_truncated/mean`,
`batch/solve_none` and `batch/solve_all` (the shares of problems whose rollouts all scored
0 / all scored the full count: orchestrator.py 312-318), `metrics/<fn>` (each rubric
function's mean, the environment's metrics), the scheduler's
`batch/off_policy_level/{mean,max,min}` (scheduler.py 228-257: policy versions between the
weights that generated a rollout and those it trains), `val_reward/mean`. They are read
from its `.wandb` run file (or a history exported to JSON lines beside `configs/`) by the
aliases below.

What is not mapped, and why: prime-rl logs no reward standard deviation (its statistics
are mean/max/min/p10/p90); `mismatch_kl/all/mean` is the KL between the inference
engine's and the trainer's log-probabilities, not a KL to a reference model: it is the
off-policy mismatch (`offpolicy/mismatch_kl`), never `kl`.

The layout since prime-rl#3444 (merged 2026-08-31; src/prime_rl/monitors/file/monitor.py
at ceb33a427ed6ba7fd18a92a61b44eabf5cfbd038): `FileMonitor` appends to
`<run_dir>/monitors/file/metrics.jsonl` (`get_file_monitor_dir(output_dir) /
config.path`), rows `{"step": step, "time": …, **metrics, "producer": …}` (the process that
wrote it: bookkeeping, not a metric), and `log_metrics(metrics, step=None)` writes
time-keyed rows, `"step": null` ("e.g. inference metrics, which are sampled on wall time
rather than the training step"): sources/merged.py counts those, never as bad lines, and
leaves them out of the steps. `configs/` stays in the run folder, two levels above the
file monitor's. Episode traces go to `monitors/file/traces/` (`stream.jsonl` with
`stream.index.jsonl` at that commit, chunked `stream/NNNNN.jsonl[.zst]` later), with the
orchestrator's advantages in `traces/annotations/`: the run's completions
(primerl_traces.py). The `rollouts/step_N/…/traces.jsonl` files before #3444 are not read.

The run's settings: the `rl` entrypoint writes the resolved configs as JSON into
`<run_dir>/configs/` (entrypoints/rl.py `write_config`, `write_subconfigs`): the
orchestrator's (`orchestrator.json`; `rl.json` nests it under `orchestrator`) holds
`max_steps`, `group_size` (completions per prompt), `model.name` and
`train.sampling.temperature` (configs/orchestrator.py `OrchestratorConfig`). Its
`max_completion_tokens` is a cap per turn, not per rollout, so the length cap is left to
the values.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from grpo_tui.sources.formats.base import CheckpointFolders, FormatAdapter
from grpo_tui.sources.formats.layout import (
    CompletionsRef,
    Found,
    Probe,
    Reading,
    Tier,
    entry_is_dir,
    first_line,
    found_file,
    probe,
    scan,
)
from grpo_tui.sources.formats.primerl_traces import PRIMERL_TRACES, TRACES_DIR
from grpo_tui.sources.formats.verl import setting

NAME = "prime-rl"
METRICS_FILE = "metrics.jsonl"
#: the file monitor's folder in a run folder since #3444 (src/prime_rl/utils/pathing.py
#: `get_file_monitor_dir = output_dir / "monitors" / "file"`)
FILE_MONITOR_DIR = ("monitors", "file")
CONFIGS_DIR = "configs"
#: the resolved configs holding the orchestrator's settings, the first found wins
CONFIG_FILES = ("orchestrator.json", "rl.json")
#: folders prime-rl writes beside metrics.jsonl in a run directory (resolved configs,
#: episode traces, per-attempt logs)
RUN_DIR_MARKS = ("configs", "rollouts", "/".join(FILE_MONITOR_DIR))
#: the train statistics of every environment together, of the rollouts shipped to the
#: trainer (what the orchestrator's `Step N | … | Reward …` line shows)
_SHIPPED = r"train/agg/effective/[^/]+"
#: … and of every rollout of the step (the solve rates are logged for these only)
_ALL = r"train/agg/all/[^/]+"

PRIMERL_ALIASES: dict[str, tuple[str, ...]] = {
    # the statistics without an agent level (before the episode refactor)
    # (after each: the same quantity as the 2025 orchestrator logged it to W&B, see above)
    "reward": ("train/agg/effective/reward/mean", "reward/mean"),
    "completion_length": ("train/agg/effective/num_output_tokens/mean", "completion_len/mean"),
    "completion_length_min": ("train/agg/effective/num_output_tokens/min", "completion_len/min"),
    "completion_length_max": ("train/agg/effective/num_output_tokens/max", "completion_len/max"),
    "clipped_ratio": ("train/agg/effective/is_truncated/mean", "is_truncated/mean"),
    "samples/all_fail": ("train/agg/all/solved_none", "batch/solve_none"),
    "samples/all_pass": ("train/agg/all/solved_all", "batch/solve_all"),
    "eval_reward": ("val_reward/mean",),
    # the trainer's. Its default loss (trainer/rl/loss.py `default_loss_fn`, DPPO) masks the
    # tokens whose probability moved past the trust region from the inference engine's, on
    # the side the advantage pushes (`is_masked_low`: negative advantage, probability fell;
    # `_high`: positive, rose): tokens without a gradient, what PPO's clip ratio counts
    "clip_ratio": ("is_masked/mean",),
    "clip_ratio_low": ("is_masked_low/mean",),
    "clip_ratio_high": ("is_masked_high/mean",),
    "entropy": ("entropy/all/mean",),
    "loss": ("loss/mean",),
    "grad_norm": ("optim/grad_norm",),
    "learning_rate": ("optim/lr",),
    # off-policy (docs/health.md, "Off-policy drift"), at 559b447: the k3 estimate of
    # KL(inference ‖ trainer), r − log r − 1 per token (trainer/rl/loss.py:100–106, logged as
    # `mismatch_kl/all` statistics, train.py:510–512); the policy versions between the weights
    # that generated each shipped rollout and those it trains (orchestrator.py:731–742,
    # utils.py:57–69); queued rollouts dropped past max_off_policy_steps since the last ship
    # (train_sink.py:166–205: cancelled, so in `all` and not in `effective`)
    "offpolicy/mismatch_kl": ("mismatch_kl/all/mean",),
    "offpolicy/staleness_mean": ("off_policy/mean", "batch/off_policy_level/mean"),
    "offpolicy/staleness_max": ("off_policy/max", "batch/off_policy_level/max"),
    "offpolicy/stale_dropped": ("off_policy/dropped",),
    # every rollout of the step, beside the shipped ones `reward` and `completion_length` read
    "offpolicy/generated_reward": ("train/agg/all/reward/mean",),
    "offpolicy/generated_length": ("train/agg/all/num_output_tokens/mean",),
}

#: (regex, template): the per-agent statistics (orchestrator/metrics.py `TraceMetrics`),
#: the per-function rewards, the eval score
PRIMERL_FAMILIES: tuple[tuple[str, str], ...] = (
    (_SHIPPED + r"/reward/mean", "reward"),
    (_SHIPPED + r"/rewards/([^/]+)/mean", r"rewards/\1/mean"),
    (r"train/agg/effective/rewards/([^/]+)/mean", r"rewards/\1/mean"),
    # the 2025 orchestrator's rubric functions (`metrics/<fn>`, the mean over the batch)
    (r"metrics/([^/]+)", r"rewards/\1/mean"),
    (_SHIPPED + r"/num_output_tokens/mean", "completion_length"),
    (_SHIPPED + r"/num_output_tokens/min", "completion_length_min"),
    (_SHIPPED + r"/num_output_tokens/max", "completion_length_max"),
    (_SHIPPED + r"/is_truncated/mean", "clipped_ratio"),
    # groups whose every rollout scored 0 / scored 1 (TraceMetrics.solve_rates)
    (_ALL + r"/solved_none", "samples/all_fail"),
    (_ALL + r"/solved_all", "samples/all_pass"),
    # every rollout of the step, shipped or not (what the shipped ones are compared with)
    (_ALL + r"/reward/mean", "offpolicy/generated_reward"),
    (_ALL + r"/num_output_tokens/mean", "offpolicy/generated_length"),
    (r"eval/agg/effective/(?:[^/]+/)?avg@\d+", "eval_reward"),
    (r"eval/[^/]+/effective/(?:[^/]+/)?avg@\d+", "eval_reward"),
)

#: key prefixes of each process's lines: the orchestrator's, the trainer's
WRITERS: tuple[tuple[str, ...], ...] = (
    ("train/", "progress/", "off_policy/", "batch/", "reward/", "metrics/", "completion_len/"),
    ("perf/", "optim/", "loss/", "entropy/", "mismatch_kl/", "system/", "time/forward_backward"),
)
#: what a first line of its carries (bytes: a line with a bare NaN is no JSON orjson reads)
_EVIDENCE = (b'"progress/', b'"optim/', b'"perf/', b'"train/agg/')


def flatten(record: dict[str, Any]) -> dict[str, Any]:
    """Its lines are flat already; `time` is the wall clock the line was written at and
    `producer` the process that wrote it (#3444): neither is a metric, and an eval line is
    one whose every other key is an eval key."""
    record.pop("time", None)
    record.pop("producer", None)
    return record


def _shows_primerl(path: Path) -> bool:
    line = first_line(path)
    return line.startswith(b'{"step":') and any(mark in line for mark in _EVIDENCE)


def _in_run_dir(directory: Path) -> bool:
    return any(probe(directory / mark).is_dir for mark in RUN_DIR_MARKS)


def run_dir_of(path: Path) -> Path:
    """The run folder of a metrics.jsonl: its own folder, or three levels up in the file
    monitor's layout since #3444 (`<run_dir>/monitors/file/metrics.jsonl`)."""
    holder = path.parent
    if holder.name == FILE_MONITOR_DIR[1] and holder.parent.name == FILE_MONITOR_DIR[0]:
        return holder.parent.parent
    return holder


def traces_of(run_dir: Path) -> CompletionsRef | None:
    """The episode traces of a run folder as its completions, once the file monitor's
    `traces/` folder is there (since #3444)."""
    traces = run_dir.joinpath(*FILE_MONITOR_DIR, TRACES_DIR)
    return CompletionsRef(traces, stream=PRIMERL_TRACES) if probe(traces).is_dir else None


def _found(path: Path, why: str) -> Found:
    run_dir = run_dir_of(path)
    return found_file(
        path,
        NAME,
        Reading.MERGED_JSONL,
        Tier.LOG,
        why,
        run_dir=run_dir,
        completions=traces_of(run_dir),
        args_names=CONFIG_FILES,
        args_dirs=(run_dir / CONFIGS_DIR,),
    )


def primerl_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The orchestrator's settings under args.json's names (`rl.json` nests them)."""
    nested = config.get("orchestrator")
    orchestrator = nested if isinstance(nested, dict) and nested else config
    settings = {
        "max_steps": orchestrator.get("max_steps"),
        "num_generations": orchestrator.get("group_size"),
        "model": setting(orchestrator, "model.name"),
        "temperature": setting(orchestrator, "train.sampling.temperature"),
    }
    return {name: value for name, value in settings.items() if value is not None}


def claim(path: Path, seen: Probe) -> Found | None:
    if path.name != METRICS_FILE:
        return None
    if _shows_primerl(path):
        return _found(path, "its lines carry prime-rl's keys (progress/, optim/, train/agg/)")
    if _in_run_dir(run_dir_of(path)):
        return _found(path, f"{METRICS_FILE} of a prime-rl run folder (configs/, rollouts/)")
    return None


def _monitored(directory: Path) -> Path:
    """Where a run folder's metrics.jsonl is: the file monitor's folder (since #3444) when
    it holds one, else the run folder itself."""
    monitor = directory.joinpath(*FILE_MONITOR_DIR)
    return monitor / METRICS_FILE if probe(monitor).is_dir else directory / METRICS_FILE


def find(directory: Path) -> list[Found]:
    """metrics.jsonl of a run folder (in `monitors/file/` since #3444); else of the newest
    run folder under an output folder (the `rl` entrypoint's `<output_dir>/<run.name>`)."""
    metrics = _monitored(directory)
    if probe(metrics).is_file:
        claimed = claim(metrics, probe(metrics))
        return [claimed] if claimed is not None else []
    if _in_run_dir(directory):
        return [_found(metrics, "a fresh prime-rl run folder: its metrics.jsonl is waited for")]
    entries, _ = scan(directory)
    runs = [
        (seen.mtime, path)
        for entry in entries
        if entry_is_dir(entry)
        and (seen := probe(path := _monitored(Path(entry.path)))).is_file
        and _in_run_dir(run_dir_of(path))
    ]
    if not runs:
        return []
    newest = max(runs, key=lambda run: run[0])[1]
    run = run_dir_of(newest).name
    return [_found(newest, f"{METRICS_FILE} of the newest prime-rl run folder {run}")]


PRIMERL = FormatAdapter(
    name=NAME,
    title="prime-rl",
    aliases=PRIMERL_ALIASES,
    families=PRIMERL_FAMILIES,
    reading=Reading.MERGED_JSONL,
    eval_prefix="eval/",
    eval_needs_all=True,
    end_keys=(),
    summary_keys=(),
    writers=WRITERS,
    settings=primerl_settings,
    flatten=flatten,
    claim=claim,
    find=find,
    # `<output_dir>/checkpoints/step_<N>/` (src/prime_rl/utils/pathing.py:97-114
    # `get_ckpt_dir`, `get_step_path` at PrimeIntellect-ai/prime-rl 559b447)
    checkpoints=(
        CheckpointFolders(
            re.compile(r"step_(\d+)"),
            under=("checkpoints",),
            source="PrimeIntellect-ai/prime-rl 559b447 src/prime_rl/utils/pathing.py:97-114",
        ),
    ),
)
