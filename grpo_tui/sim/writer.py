"""The simulation: a scenario's policy stepped through a run, its rollouts scored, and the
ms-swift files written (at once, or one logging step at a time)."""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from grpo_tui.sim.scenarios import _SCENARIO_SPECS, SCENARIOS, _at, _Policy, _policy_at
from grpo_tui.sim.text import (
    CHARS_PER_TOKEN,
    SYSTEM_PROMPT,
    _group,
    _make_problem,
    _Problem,
    _Prompt,
    _score,
    count_tokens,
)

#: reward class name (as logged) -> the name given on the command line (args.json)
REWARD_CLI_NAMES: dict[str, str] = {
    "MathAccuracy": "accuracy",
    "Format": "format",
    "LengthBonus": "length_bonus",
}


#: the clip ratios ms-swift logs, as shares of the region's (clip_ratio/region_mean)
_CLIP = {"low_mean": 0.45, "low_min": 0.38, "high_mean": 0.55, "high_max": 0.64, "region_mean": 1.0}


@dataclass(frozen=True)
class SimConfig:
    """What to simulate. Scenario-specific training args (learning rate, num_iterations,
    temperature, reward functions) come from the scenario, not from here."""

    scenario: str = "healthy"
    """One of SCENARIOS."""
    seed: int = 0
    """Seed of the single numpy Generator; same seed, same bytes."""
    max_steps: int = 300
    """Optimizer steps of the run."""
    logging_steps: int = 5
    """A train line every this many steps, plus step 1 (logging_first_step)."""
    eval_steps: int = 50
    """An eval line every this many steps and at the last step; 0 disables eval."""
    num_generations: int = 8
    """Completions per prompt (the GRPO group size)."""
    prompts_per_step: int = 8
    """Prompts per rollout batch; rows per completions line = this x num_generations.
    Small batches (1-2 prompts x 4 generations) make the per-step reward very noisy, as in
    small real runs: every logged rollout metric comes from that one batch."""
    max_completion_length: int = 512
    """Generation cap in tokens; longer completions are cut and count as clipped."""
    eval_prompts: int = 16
    """Fixed eval prompts (more than a batch means the eval completions line, like
    ms-swift's bounded deque, shows only the last prompts_per_step groups)."""
    beta: float = 0.04
    """KL coefficient written to args; 0 drops the `kl` key, as ms-swift does."""
    dataset_size: int = 2000
    """Training prompts; sets the epoch counter."""
    model: str = "Qwen/Qwen2.5-1.5B-Instruct"
    """Model id written to args.json."""
    use_wall_clock: bool = False
    """Name the run dir after the current time (live demo) instead of a seed-derived one."""
    prompt_pool: int = 0
    """Training prompts iterated in order, epoch after epoch, each with its own fixed
    difficulty (the demo's: prompts come back, so the prompt ledger has visits to follow);
    0 draws a new prompt every time (the runs the tests pin)."""
    save_steps: int = 0
    """A checkpoint folder `checkpoint-N` every this many steps, as ms-swift's
    `--save_steps` (args.json says it): empty, the simulator has no weights to save, but
    the checkpoint answer has folders to name (the demo's). 0: none (the runs the tests
    pin keep their bytes)."""
    spikes: tuple[tuple[str, float, float], ...] = ()
    """Isolated spikes: (metric as logged, t, factor). The first train line logged at or
    after training progress t (or the last train line, when none is) shows that metric
    multiplied by factor; the lines before and after are untouched, and nothing else in the
    run changes (no random draw depends on a spike). Metric: one of SPIKE_METRICS."""

    def validate(self) -> None:
        if self.scenario not in SCENARIOS:
            choices = ", ".join(SCENARIOS)
            raise ValueError(f"unknown scenario {self.scenario!r}; choose from {choices}")
        counts = (self.max_steps, self.logging_steps, self.num_generations, self.prompts_per_step)
        if min(counts) < 1:
            raise ValueError("max_steps, logging_steps, num_generations, prompts_per_step: >= 1")
        if self.max_completion_length < 32 or self.eval_prompts < 1 or self.eval_steps < 0:
            raise ValueError("max_completion_length >= 32, eval_prompts >= 1, eval_steps >= 0")
        if self.prompt_pool < 0:
            raise ValueError("prompt_pool: >= 0 (0: a new prompt every draw)")
        if self.save_steps < 0:
            raise ValueError("save_steps: >= 0 (0: no checkpoint folders)")
        for metric, t, factor in self.spikes:
            if metric not in SPIKE_METRICS:
                raise ValueError(f"spike metric {metric!r}: one of {', '.join(SPIKE_METRICS)}")
            if metric == "kl" and not self.beta:
                raise ValueError("a kl spike needs beta > 0 (beta 0 logs no kl)")
            if not 0.0 < t <= 1.0 or not math.isfinite(factor) or factor <= 0.0:
                raise ValueError(f"spike {metric!r}: t in (0, 1], factor finite and > 0")


SPIKE_METRICS: tuple[str, ...] = (
    *("loss", "grad_norm", "kl", "entropy/mean", "entropy/max", "entropy/min"),
    *(f"clip_ratio/{key}" for key in _CLIP),
    "step_time",
)
"""Train-line keys a SimConfig spike may multiply: the loss-side ones. Rollout metrics
(reward, lengths...) are computed from the completions.jsonl line, which a spike on them
would contradict."""


#: the demo's training set: 96 prompts (12 batches of 8) iterated epoch after epoch, so a
#: 300-step demo logs each batch about 5 times and the prompt ledger has visits to follow
DEMO_PROMPT_POOL = 96
#: the demo's checkpoint schedule: six folders over its 300 steps
DEMO_SAVE_STEPS = 50


def demo_config(scenario: str, *, seed: int = 0, use_wall_clock: bool = False) -> SimConfig:
    """The settings `grpo-tui demo` runs a scenario with (and bench/diagnosis.py checks it
    at): SimConfig's defaults, prompts that come back, checkpoint folders."""
    return SimConfig(
        scenario=scenario,
        seed=seed,
        use_wall_clock=use_wall_clock,
        prompt_pool=DEMO_PROMPT_POOL,
        save_steps=DEMO_SAVE_STEPS,
    )


_PARAMETER_INFO = (
    "Qwen2ForCausalLM: 1543.7143M Params (1543.7143M Trainable [100.0000%]), 0.0000M Buffers."
)


# --------------------------------------------------------------------------- batches
@dataclass
class _Batch:
    """One rollout batch: rows grouped by prompt (num_generations consecutive rows)."""

    problems: list[_Problem]
    completions: list[str]
    tokens: np.ndarray
    clipped: np.ndarray
    rewards: dict[str, list[float]]
    totals: np.ndarray  # weighted sum (all weights 1) per row
    std: np.ndarray  # unbiased std of the totals per group (0 for groups of one)
    advantages: np.ndarray
    entropy: np.ndarray

    def columns(self, step: int, limit: int) -> dict[str, list[Any]]:
        """The completions.jsonl line: the last `limit` rows, like ms-swift's bounded deque."""
        rows = slice(max(0, len(self.completions) - limit), None)
        n = len(self.completions[rows])
        return {
            "step": [str(step)] * n,
            "prompt": [p.prompt for p in self.problems[rows]],
            "completion": self.completions[rows],
            **{name: values[rows] for name, values in self.rewards.items()},
            "advantages": [float(a) for a in self.advantages[rows]],
            "entropy": [float(e) for e in self.entropy[rows]],
            "solution": [p.solution for p in self.problems[rows]],
        }


def _rollout(
    rng: np.random.Generator,
    pol: _Policy,
    prompts: list[_Prompt],
    cfg: SimConfig,
    funcs: tuple[str, ...],
) -> _Batch:
    size, max_len = cfg.num_generations, cfg.max_completion_length
    problems, completions = [], []
    for p, diff, fdiff in prompts:
        completions += _group(rng, pol, p, diff, fdiff, size, max_len)
        problems += [p] * size
    cap = max_len * CHARS_PER_TOKEN
    clipped = np.array([len(c) > cap for c in completions])
    completions = [c[:cap] for c in completions]  # cut mid-text, like a length stop
    tokens = np.array([count_tokens(c) for c in completions])
    rows = list(zip(completions, problems, tokens.tolist()))
    rewards = {f: [_score(f, c, p.solution, n, max_len) for c, p, n in rows] for f in funcs}
    totals = np.sum([rewards[f] for f in funcs], axis=0)
    grouped = totals.reshape(-1, size)
    std = grouped.std(axis=1, ddof=1) if size > 1 else np.zeros(len(grouped))
    advantages = ((grouped - grouped.mean(axis=1, keepdims=True)) / (std[:, None] + 1e-4)).ravel()
    entropy = pol.entropy * rng.lognormal(0.0, 0.15, size=len(completions))
    return _Batch(problems, completions, tokens, clipped, rewards, totals, std, advantages, entropy)


def _rollout_metrics(batch: _Batch, size: int, prefix: str = "") -> dict[str, float]:
    """ms-swift 4.6's rollout keys, in its order, computed from the batch."""
    std = batch.std
    m = {
        "completions/mean_length": batch.tokens.mean(),
        "completions/min_length": batch.tokens.min(),
        "completions/max_length": batch.tokens.max(),
        "completions/clipped_ratio": batch.clipped.mean(),
        "reward": batch.totals.reshape(-1, size).mean(axis=1).mean(),
        "reward_std": std.mean(),
        "frac_reward_zero_std": np.isclose(std, 0.0).mean() if size > 1 else 1.0,
    }
    for name, values in batch.rewards.items():
        arr = np.asarray(values)
        m[f"rewards/{name}/mean"] = arr.mean()
        m[f"rewards/{name}/std"] = arr.std(ddof=1) if len(arr) > 1 else 0.0
    return {prefix + k: float(v) for k, v in m.items()}


# --------------------------------------------------------------------------- lines
def format_time(seconds: float) -> str:
    """ms-swift 4.6's format_time: "1d 2h 3m 4s", "2h 3m 4s", "3m 4s" or "4s"."""
    days, rest = divmod(round(float(seconds)), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h {minutes}m {secs}s"
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def _rounded(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 8) if isinstance(v, float) else v for k, v in raw.items()}


@dataclass
class _LogCall:
    """One Trainer.log() call: its logging.jsonl line and completions.jsonl line."""

    line: dict[str, Any]
    completions: dict[str, list[Any]] | None  # None for the final summary line


class _Simulation:
    """Steps through the run and yields, per step that logs anything, its log calls."""

    def __init__(self, cfg: SimConfig, run_dir: Path) -> None:
        self.cfg, self.run_dir = cfg, run_dir
        self.spec = _SCENARIO_SPECS[cfg.scenario]
        self.rng = np.random.default_rng(cfg.seed)
        self.eval_set = [self._draw_prompt() for _ in range(cfg.eval_prompts)]  # fixed eval set
        # the training set, when iterated: drawn from a generator of its own, so a pool
        # of any size leaves the main stream's draws (the eval set's first) as they were
        pool_rng = np.random.default_rng([cfg.seed, 1])
        self.pool = [self._draw_prompt(pool_rng) for _ in range(cfg.prompt_pool)]
        self.clock = 0.0  # simulated seconds since training started
        self.memory = 0.0
        self.losses: list[float] = []
        self.history: list[dict[str, Any]] = []
        self.evals: list[tuple[int, float]] = []
        self.deque: _Batch | None = None  # the latest rollout (its last batch_rows are logged)
        self.spikes = self._spike_steps()

    def _spike_steps(self) -> dict[int, list[tuple[str, float]]]:
        """SimConfig.spikes by the step of the train line each one lands on."""
        cfg = self.cfg
        logged = [1, *range(max(2, cfg.logging_steps), cfg.max_steps + 1, cfg.logging_steps)]
        out: dict[int, list[tuple[str, float]]] = {}
        for metric, t, factor in cfg.spikes:
            # t compared as the simulation computes it (step / max_steps): no float slip
            step = next((s for s in logged if s / cfg.max_steps >= t), logged[-1])
            out.setdefault(step, []).append((metric, factor))
        return out

    def _policy(self, step: int) -> _Policy:
        """The simulated model at an optimizer step."""
        if step == 1 and self.spec.first_step is not None:
            return self.spec.first_step
        return _policy_at(self.cfg.scenario, step / self.cfg.max_steps)

    def _draw_prompt(self, rng: np.random.Generator | None = None) -> _Prompt:
        rng = self.rng if rng is None else rng
        sd = self.spec.group_sd
        return _make_problem(rng), float(rng.normal(0, sd)), float(rng.normal(0, sd))

    def _train_prompts(self, step: int) -> list[_Prompt]:
        """The prompts of the rollout at `step`: the pool's next ones (epoch after epoch)
        when the run iterates a pool, else new draws."""
        count = self.cfg.prompts_per_step
        if not self.pool:
            return [self._draw_prompt() for _ in range(count)]
        start = (step - 1) * count
        return [self.pool[(start + i) % len(self.pool)] for i in range(count)]

    @property
    def batch_rows(self) -> int:
        return self.cfg.prompts_per_step * self.cfg.num_generations

    def _learning_rate(self, step: int) -> float:
        # cosine decay without warmup: matches the 4.6 fixture (9.33e-05 at step 1 of 6)
        return self.spec.learning_rate * 0.5 * (1.0 + math.cos(math.pi * step / self.cfg.max_steps))

    def _step_scalars(self, pol: _Policy, rollout: bool) -> dict[str, float]:
        """Loss-side metrics of one optimizer step."""
        rng, cfg = self.rng, self.cfg
        kl = pol.kl * float(rng.lognormal(0.0, 0.08))
        ent = pol.entropy * float(rng.lognormal(0.0, 0.04))
        region = 0.0 if rollout else min(1.0, pol.clip * float(rng.lognormal(0.0, 0.08)))
        grad = pol.grad_norm * float(rng.lognormal(0.0, 0.15))
        gen_seconds = 2.0 + 0.03 * pol.length * cfg.max_completion_length * 1.6 if rollout else 0.0
        s: dict[str, float] = {
            "loss": cfg.beta * kl + float(rng.normal(0.0, 0.02 * pol.grad_norm)),
            "grad_norm": grad,
            "entropy/mean": ent,
            "entropy/max": ent * (1.3 + 0.1 * float(rng.random())),
            "entropy/min": ent * (0.7 - 0.1 * float(rng.random())),
        }
        if cfg.beta:
            s["kl"] = kl
        # off-policy steps clip both sides (ratio below 1-eps with A<0, above 1+eps with A>0)
        s.update({f"clip_ratio/{k}": min(1.0, share * region) for k, share in _CLIP.items()})
        s["step_time"] = (gen_seconds + 3.0) * float(rng.lognormal(0.0, 0.06))
        return s

    def _progress(self, step: int) -> dict[str, Any]:
        speed = self.clock / step
        p: dict[str, Any] = {
            "global_step/max_steps": f"{step}/{self.cfg.max_steps}",
            "elapsed_time": format_time(self.clock),
            "remaining_time": format_time((self.cfg.max_steps - step) * speed),
        }
        if self.memory > 0:
            p["memory(GiB)"] = round(self.memory, 2)
        p["train_speed(s/it)"] = round(speed, 6)
        return p

    def _call(self, raw: dict[str, Any], step: int) -> _LogCall:
        """Record a log call: raw item into log_history, rounded line + progress to disk."""
        raw["epoch"] = (
            step * self.cfg.prompts_per_step / (self.cfg.prompt_pool or self.cfg.dataset_size)
        )
        self.history.append({**raw, "step": step})
        batch = self.deque
        return _LogCall(
            {**_rounded(raw), **self._progress(step)},
            batch.columns(step, self.batch_rows) if batch is not None else None,
        )

    def _rollout_at(self, step: int, prompts: list[_Prompt], shift: float = 0.0) -> _Batch:
        pol = self._policy(step)
        if shift:
            pol = replace(pol, acc=pol.acc + shift)
        batch = _rollout(self.rng, pol, prompts, self.cfg, self.spec.reward_funcs)
        self.deque = batch
        # peak memory follows the longest sequence seen (KV cache + activations)
        self.memory = max(self.memory, 31.5 + 0.012 * float(batch.tokens.max()))
        return batch

    def _window(self, window: list[dict[str, float]], last_log: int, step: int) -> dict[str, float]:
        """GRPO metrics of a logging window: the last rollout's, then per-step means."""
        out: dict[str, float] = {}
        rollout_step = step - (step - 1) % self.spec.num_iterations
        if rollout_step > last_log:  # a rollout happened in this window
            batch = self._rollout_at(rollout_step, self._train_prompts(rollout_step))
            out.update(_rollout_metrics(batch, self.cfg.num_generations))
        for key in window[0]:
            if key not in ("loss", "grad_norm"):
                out[key] = float(np.mean([w[key] for w in window]))
        return out

    def _eval_call(self, step: int) -> _LogCall:
        cfg, t = self.cfg, step / self.cfg.max_steps
        pol = self._policy(step)
        batch = self._rollout_at(step, self.eval_set, _at(self.spec.eval_shift, t))
        eval_batches = math.ceil(cfg.eval_prompts / cfg.prompts_per_step)
        runtime = round((2.0 + 0.048 * float(batch.tokens.max())) * eval_batches, 4)
        self.clock += runtime
        kl = pol.kl * float(self.rng.lognormal(0.0, 0.08))
        raw: dict[str, Any] = {
            "eval_loss": cfg.beta * kl + float(self.rng.normal(0.0, 0.01 * pol.grad_norm)),
            "eval_runtime": runtime,
            "eval_samples_per_second": round(cfg.eval_prompts / runtime, 3),
            "eval_steps_per_second": round(eval_batches / runtime, 3),
            **_rollout_metrics(batch, cfg.num_generations, "eval_"),
            "eval_entropy/mean": float(batch.entropy.mean()),
            "eval_entropy/max": float(batch.entropy.max()),
            "eval_entropy/min": float(batch.entropy.min()),
        }
        if cfg.beta:
            raw["eval_kl"] = kl
        raw.update({f"eval_clip_ratio/{k}": 0.0 for k in _CLIP})  # eval is on-policy
        self.evals.append((step, raw["eval_reward"]))
        return self._call(raw, step)

    def _end_calls(
        self, step: int, window: list[dict[str, float]], last_log: int
    ) -> list[_LogCall]:
        cfg, runtime = self.cfg, self.clock
        raw: dict[str, Any] = {
            "train_runtime": round(runtime, 4),
            "train_samples_per_second": round(cfg.max_steps * self.batch_rows / runtime, 3),
            "train_steps_per_second": round(cfg.max_steps / runtime, 3),
            "total_flos": 0.0,
            "train_loss": float(np.mean(self.losses)),
        }
        if window:  # the last step was not a logging step: leftover metrics merge in
            raw.update(self._window(window, last_log, step))
        calls = [self._call(raw, step)]
        best = max(self.evals, key=lambda e: e[1]) if self.evals else None
        summary = {
            "model_parameter_info": _PARAMETER_INFO,
            "last_model_checkpoint": f"{self.run_dir}/checkpoint-{step}",
            "best_model_checkpoint": f"{self.run_dir}/checkpoint-{best[0]}" if best else None,
            "best_metric": best[1] if best else None,
            "global_step": step,
            "log_history": self.history,
            "memory": self.memory,
        }
        return [*calls, _LogCall(summary, None)]

    def events(self) -> Iterator[tuple[int, list[_LogCall]]]:
        cfg = self.cfg
        window: list[dict[str, float]] = []
        last_log = 0
        for step in range(1, cfg.max_steps + 1):
            pol = self._policy(step)
            scalars = self._step_scalars(pol, rollout=(step - 1) % self.spec.num_iterations == 0)
            window.append(scalars)
            self.losses.append(scalars["loss"])
            self.clock += scalars["step_time"]
            calls: list[_LogCall] = []
            if step == 1 or step % cfg.logging_steps == 0:
                raw: dict[str, Any] = {
                    "loss": float(np.mean([w["loss"] for w in window])),
                    "grad_norm": window[-1]["grad_norm"],  # HF logs the last step's norm
                    "learning_rate": self._learning_rate(step),
                }
                raw.update(self._window(window, last_log, step))
                for metric, factor in self.spikes.get(step, ()):
                    raw[metric] *= factor  # this line only: the steps behind it are untouched
                calls.append(self._call(raw, step))
                window, last_log = [], step
            if cfg.eval_steps and (step % cfg.eval_steps == 0 or step == cfg.max_steps):
                calls.append(self._eval_call(step))
            if step == cfg.max_steps:
                calls += self._end_calls(step, window, last_log)
            if calls:
                yield step, calls


# --------------------------------------------------------------------------- run dirs
def _run_timestamp(cfg: SimConfig) -> datetime:
    if cfg.use_wall_clock:
        return datetime.now()
    # a fixed, seed-derived moment so that same seed gives the same directory name
    offset = (cfg.seed * 104729 + 3 * 3600) % (300 * 86400)
    return datetime(2025, 3, 3, 9, 0, 0) + timedelta(seconds=offset)


def _create_run_dir(out_dir: Path, cfg: SimConfig) -> Path:
    """`<out_dir>/vN-YYYYMMDD-HHMMSS`, N = highest existing version + 1 (as ms-swift)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    versions = [int(m.group(1)) for d in out_dir.iterdir() if (m := re.match(r"v(\d+)-", d.name))]
    version = max(versions) + 1 if versions else 0
    run_dir = out_dir / f"v{version}-{_run_timestamp(cfg):%Y%m%d-%H%M%S}"
    run_dir.mkdir()
    return run_dir


def _args(cfg: SimConfig, run_dir: Path) -> dict[str, Any]:
    spec = _SCENARIO_SPECS[cfg.scenario]
    return {
        "model": cfg.model,
        "model_type": "qwen2_5",
        "template": "qwen2_5",
        "system": SYSTEM_PROMPT,
        "rlhf_type": "grpo",
        "tuner_type": "full",
        "torch_dtype": "bfloat16",
        "dataset": [f"sim/arithmetic#{cfg.prompt_pool or cfg.dataset_size}"],
        "val_dataset": [f"sim/arithmetic-eval#{cfg.eval_prompts}"],
        "max_length": 2048,
        "max_completion_length": cfg.max_completion_length,
        "num_generations": cfg.num_generations,
        "temperature": spec.temperature,
        "top_p": 1.0,
        "top_k": 50,
        "beta": cfg.beta,
        "num_iterations": spec.num_iterations,
        "epsilon": 0.2,
        "epsilon_high": None,
        "loss_type": "grpo",
        "scale_rewards": "group",
        "reward_funcs": [REWARD_CLI_NAMES[f] for f in spec.reward_funcs],
        "reward_weights": None,
        "learning_rate": spec.learning_rate,
        "lr_scheduler_type": "cosine",
        "warmup_ratio": 0.0,
        "per_device_train_batch_size": cfg.num_generations,
        "per_device_eval_batch_size": cfg.num_generations,
        "gradient_accumulation_steps": cfg.prompts_per_step,
        "steps_per_generation": None,
        "max_steps": cfg.max_steps,
        "num_train_epochs": 1.0,
        "logging_steps": cfg.logging_steps,
        "logging_first_step": True,
        "eval_strategy": "steps" if cfg.eval_steps else "no",
        "eval_steps": cfg.eval_steps or None,
        "save_steps": cfg.eval_steps or 500,
        "metric_for_best_model": "reward",
        "greater_is_better": True,
        "log_completions": True,
        "log_entropy": True,
        "report_to": ["tensorboard"],
        "seed": cfg.seed,
        "add_version": True,
        "output_dir": str(run_dir),
        "logging_dir": str(run_dir / "runs"),
        # honest marker: this run was simulated by grpo-tui
        "sim_scenario": cfg.scenario,
        "sim_seed": cfg.seed,
        # only when set, so that runs without spikes keep their args.json bytes
        **({"sim_spikes": [list(spike) for spike in cfg.spikes]} if cfg.spikes else {}),
        # the folders' schedule, when they are written (ms-swift's default is eval_steps)
        **({"save_steps": cfg.save_steps} if cfg.save_steps else {}),
    }


def _start_run(out_dir: Path, cfg: SimConfig) -> tuple[Path, _Simulation]:
    cfg.validate()
    run_dir = _create_run_dir(Path(out_dir), cfg)
    args = json.dumps(_args(cfg, run_dir), ensure_ascii=False, indent=2)
    (run_dir / "args.json").write_text(args + "\n", encoding="utf-8")
    return run_dir, _Simulation(cfg, run_dir)


def write_run(
    out_dir: Path,
    scenario: str = "healthy",
    *,
    seed: int = 0,
    max_steps: int | None = None,
    config: SimConfig | None = None,
) -> Path:
    """Write a whole simulated run at once; returns the `v0-...` run directory.

    `config` wins over `scenario` and `seed` (used only when config is None);
    `max_steps` overrides either.
    """
    cfg = config if config is not None else SimConfig(scenario=scenario, seed=seed)
    if max_steps is not None:
        cfg = replace(cfg, max_steps=max_steps)
    run_dir, sim = _start_run(out_dir, cfg)
    for step, calls in sim.events():
        _append(run_dir, calls)
        _save(run_dir, cfg, step)
    return run_dir


def _append(run_dir: Path, calls: list[_LogCall]) -> None:
    """Write log calls: each its completions line (if any), then its logging line."""
    for call in calls:
        if call.completions is not None:
            _append_line(run_dir / "completions.jsonl", call.completions)
        _append_line(run_dir / "logging.jsonl", call.line)


def _save(run_dir: Path, cfg: SimConfig, step: int) -> None:
    """The checkpoint folder of `step`, when the schedule saves one there (written after
    the step's lines, as a trainer saves after logging)."""
    if cfg.save_steps and step > 0 and step % cfg.save_steps == 0:
        (run_dir / f"checkpoint-{step}").mkdir(exist_ok=True)


def _append_line(path: Path, obj: Any) -> None:
    # one write + flush per line in 'a' mode, like ms-swift: a tail reader sees whole lines
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(obj, ensure_ascii=False) + "\n")
        f.flush()


class LiveSimulator:
    """Writes the same run as write_run, one logging step at a time (for `grpo-tui demo`)."""

    def __init__(self, out_dir: Path, config: SimConfig, steps_per_second: float = 2.0) -> None:
        if steps_per_second <= 0:
            raise ValueError("steps_per_second must be > 0")
        self.steps_per_second = steps_per_second
        self.config = config
        self.run_dir, sim = _start_run(out_dir, config)
        self._events = sim.events()
        self._pending = next(self._events, None)
        self._written_step = 0

    def advance(self) -> bool:
        """Write the next step's log calls (train/eval/completions; at the end also the
        end-of-train and summary lines). Returns False once the run is fully written."""
        if self._pending is None:
            return False
        step, calls = self._pending
        _append(self.run_dir, calls)
        _save(self.run_dir, self.config, step)
        self._written_step = step
        self._pending = next(self._events, None)
        return self._pending is not None

    def run(self, stop: threading.Event) -> None:
        """advance() at steps_per_second simulated steps per second until done or stopped."""
        while self._pending is not None:
            if stop.wait((self._pending[0] - self._written_step) / self.steps_per_second):
                return
            self.advance()
