"""The simulator writes real ms-swift 4.x shapes, and each scenario shows its signature.

Every assertion reads the files back with the json module: what a reader would see.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grpo_tui.sim import (
    SCENARIO_REGIMES,
    SCENARIOS,
    SPIKE_METRICS,
    LiveSimulator,
    Regime,
    SimConfig,
    format_time,
    regime_at,
    write_run,
)
from grpo_tui.vocabulary import ScenarioId

MAX_LEN = 512
GROUP = 8
ROWS = 64  # prompts_per_step (8) x num_generations (8)
TRAIN_STEPS = [1, *range(5, 301, 5)]
EVAL_STEPS = list(range(50, 301, 50))

GRPO_KEYS = [
    "completions/mean_length",
    "completions/min_length",
    "completions/max_length",
    "completions/clipped_ratio",
    "reward",
    "reward_std",
    "frac_reward_zero_std",
]
LOSS_SIDE_KEYS = [
    "entropy/mean",
    "entropy/max",
    "entropy/min",
    "kl",
    "clip_ratio/low_mean",
    "clip_ratio/low_min",
    "clip_ratio/high_mean",
    "clip_ratio/high_max",
    "clip_ratio/region_mean",
]
PROGRESS_KEYS = [
    "global_step/max_steps",
    "elapsed_time",
    "remaining_time",
    "memory(GiB)",
    "train_speed(s/it)",
]
_SEXA = r"(?:\d|[1-5]\d)"  # 0-59, no padding
TIME_RE = re.compile(rf"^(?:[1-9]\d*d {_SEXA}h {_SEXA}m |[1-9]\d*h {_SEXA}m |[1-9]\d*m )?{_SEXA}s$")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _kind(line: dict[str, Any]) -> str:
    if "log_history" in line:
        return "summary"
    if "train_runtime" in line:
        return "end"
    if any(key.startswith("eval_") for key in line):
        return "eval"
    return "train"


def _step(line: dict[str, Any]) -> int:
    return int(line["global_step/max_steps"].split("/")[0])


@dataclass
class RunFiles:
    run_dir: Path
    args: dict[str, Any]
    lines: list[dict[str, Any]]
    completions: list[dict[str, list[Any]]]

    @property
    def funcs(self) -> list[str]:
        first = self.lines[0]
        return [k.split("/")[1] for k in first if k.startswith("rewards/") and k.endswith("/mean")]

    def pairs(self, kind: str) -> list[tuple[dict[str, Any], dict[str, list[Any]]]]:
        """(logging line, its completions line) for every log call of that kind."""
        pairs = zip(self.lines, self.completions)
        return [(line, comp) for line, comp in pairs if _kind(line) == kind]

    def train(self) -> list[dict[str, Any]]:
        """Train lines that carry rollout metrics (all of them with num_iterations 1)."""
        return [line for line in self.lines if _kind(line) == "train" and "reward" in line]

    def series(self, key: str) -> np.ndarray:
        return np.array([line[key] for line in self.train()], dtype=float)

    def early(self, key: str) -> float:
        return float(self.series(key)[:10].mean())

    def recent(self, key: str) -> np.ndarray:
        return self.series(key)[-20:]

    def evals(self) -> np.ndarray:
        return np.array([line["eval_reward"] for line in self.lines if _kind(line) == "eval"])


def _load(run_dir: Path) -> RunFiles:
    return RunFiles(
        run_dir,
        json.loads((run_dir / "args.json").read_text(encoding="utf-8")),
        _read_jsonl(run_dir / "logging.jsonl"),
        _read_jsonl(run_dir / "completions.jsonl"),
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunFiles]:
    out = tmp_path_factory.mktemp("sim")
    return {name: _load(write_run(out / name, name, seed=0)) for name in SCENARIOS}


def _totals(comp: dict[str, list[Any]], funcs: list[str]) -> np.ndarray:
    totals: np.ndarray = np.sum([comp[f] for f in funcs], axis=0)
    return totals


def _overlap(texts: list[str]) -> float:
    """Mean pairwise Jaccard overlap of whitespace-word 3-gram sets."""
    words = [t.split() for t in texts]
    sets = [{tuple(w[i : i + 3]) for i in range(max(1, len(w) - 2))} for w in words]
    return float(np.mean([len(a & b) / len(a | b) for a, b in itertools.combinations(sets, 2)]))


def _group_overlaps(comp: dict[str, list[Any]]) -> float:
    texts = comp["completion"]
    return float(np.mean([_overlap(texts[i : i + GROUP]) for i in range(0, len(texts), GROUP)]))


def _share(mask: np.ndarray) -> float:
    return float(np.mean(mask))


# --------------------------------------------------------------------------- shape
def test_run_dir_layout_and_args(runs: dict[str, RunFiles]) -> None:
    for name, run in runs.items():
        assert re.fullmatch(r"v0-\d{8}-\d{6}", run.run_dir.name)
        files = {p.name for p in run.run_dir.iterdir()}
        assert files == {"args.json", "logging.jsonl", "completions.jsonl"}
        args = run.args
        assert args["max_completion_length"] == MAX_LEN and args["num_generations"] == GROUP
        assert args["max_steps"] == 300 and args["logging_steps"] == 5 and args["eval_steps"] == 50
        assert args["output_dir"] == str(run.run_dir)
        assert isinstance(args["reward_funcs"], list)
        assert len(args["reward_funcs"]) == len(run.funcs)
        for key in (
            "model",
            "beta",
            "num_iterations",
            "epsilon",
            "epsilon_high",
            "learning_rate",
            "loss_type",
            "temperature",
        ):
            assert key in args, (name, key)


@pytest.mark.parametrize("name", SCENARIOS)
def test_line_kinds_counts_and_steps(runs: dict[str, RunFiles], name: str) -> None:
    run = runs[name]
    kinds = [_kind(line) for line in run.lines]
    assert kinds[-2:] == ["end", "summary"]
    assert [_step(line) for line in run.lines if _kind(line) == "train"] == TRAIN_STEPS
    assert [_step(line) for line in run.lines if _kind(line) == "eval"] == EVAL_STEPS
    assert kinds.count("end") == 1 and kinds.count("summary") == 1
    # at the last step: train line, then eval, then end of train
    assert kinds[-4:-1] == ["train", "eval", "end"]
    # one completions line per log call (everything but the summary)
    assert len(run.completions) == len(run.lines) - 1
    for line, comp in zip(run.lines, run.completions):
        assert comp["step"] == [str(_step(line))] * len(comp["step"])


@pytest.mark.parametrize("name", SCENARIOS)
def test_key_order_per_line_kind(runs: dict[str, RunFiles], name: str) -> None:
    run = runs[name]
    per_func = [f"rewards/{f}/{s}" for f in run.funcs for s in ("mean", "std")]
    rollout = GRPO_KEYS + per_func
    train = [
        "loss",
        "grad_norm",
        "learning_rate",
        *rollout,
        *LOSS_SIDE_KEYS,
        "step_time",
        "epoch",
        *PROGRESS_KEYS,
    ]
    evals = [
        "eval_loss",
        "eval_runtime",
        "eval_samples_per_second",
        "eval_steps_per_second",
        *("eval_" + k for k in rollout + LOSS_SIDE_KEYS),
        "epoch",
        *PROGRESS_KEYS,
    ]
    end = [
        "train_runtime",
        "train_samples_per_second",
        "train_steps_per_second",
        "total_flos",
        "train_loss",
        "epoch",
        *PROGRESS_KEYS,
    ]
    summary = [
        "model_parameter_info",
        "last_model_checkpoint",
        "best_model_checkpoint",
        "best_metric",
        "global_step",
        "log_history",
        "memory",
    ]
    expected = {"train": train, "eval": evals, "end": end, "summary": summary}
    for line in run.lines:
        assert list(line) == expected[_kind(line)]


@pytest.mark.parametrize("name", SCENARIOS)
def test_values_progress_and_log_history(runs: dict[str, RunFiles], name: str) -> None:
    run = runs[name]
    metric_lines = run.lines[:-1]
    for line in metric_lines:
        for key, value in line.items():
            if isinstance(value, float):
                assert math.isfinite(value) and round(value, 8) == value, (key, value)
        assert line["global_step/max_steps"] == f"{_step(line)}/300"
        assert TIME_RE.match(line["elapsed_time"]) and TIME_RE.match(line["remaining_time"])
    assert metric_lines[-1]["remaining_time"] == "0s"
    elapsed = [line["train_speed(s/it)"] * _step(line) for line in metric_lines]
    assert all(b >= a - 1e-3 for a, b in itertools.pairwise(elapsed))  # the clock never runs back
    summary = run.lines[-1]
    assert summary["global_step"] == 300
    assert summary["last_model_checkpoint"].endswith("/checkpoint-300")
    history = summary["log_history"]
    assert len(history) == len(metric_lines)
    evals = run.evals()
    assert summary["best_metric"] == pytest.approx(max(evals), abs=1e-8)
    for item, line in zip(history, metric_lines):
        assert isinstance(item["step"], int) and item["step"] == _step(line)
        for key, value in item.items():
            if key != "step":
                assert line[key] == (round(value, 8) if isinstance(value, float) else value)


@pytest.mark.parametrize("name", SCENARIOS)
def test_completions_columns(runs: dict[str, RunFiles], name: str) -> None:
    run = runs[name]
    expected_keys = [
        "step",
        "prompt",
        "completion",
        *run.funcs,
        "advantages",
        "entropy",
        "solution",
    ]
    for comp in run.completions:
        assert list(comp) == expected_keys
        assert {len(v) for v in comp.values()} == {ROWS}
        prompts = comp["prompt"]
        for start in range(0, ROWS, GROUP):  # groups: same prompt consecutive
            assert len(set(prompts[start : start + GROUP])) == 1
        for prompt, solution in zip(prompts, comp["solution"]):
            match = re.fullmatch(
                r"<\|im_start\|>system\n.+<\|im_end\|>\n"
                r"<\|im_start\|>user\nWhat is (\d+)([+*])(\d+)\?"
                r"<\|im_end\|>\n<\|im_start\|>assistant\n",
                prompt,
                re.DOTALL,
            )
            assert match is not None
            a, op, b = int(match.group(1)), match.group(2), int(match.group(3))
            assert solution == str(a + b if op == "+" else a * b)


@pytest.mark.parametrize("name", SCENARIOS)
def test_rewards_agree_with_text_and_advantages_are_group_normalised(
    runs: dict[str, RunFiles], name: str
) -> None:
    run = runs[name]
    for comp in run.completions[::3]:
        for i, text in enumerate(comp["completion"]):
            answer = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
            correct = answer is not None and answer.group(1).strip() == comp["solution"][i]
            assert comp["MathAccuracy"][i] == (1.0 if correct else 0.0)
            if "Format" in comp:
                tagged = re.fullmatch(r"<think>.*?</think>\s*<answer>.*?</answer>", text, re.DOTALL)
                assert comp["Format"][i] == (1.0 if tagged else 0.0)
            if "LengthBonus" in comp:
                tokens = math.ceil(len(text) / 4)
                assert comp["LengthBonus"][i] == pytest.approx(1 - min(tokens, MAX_LEN) / MAX_LEN)
        totals = _totals(comp, run.funcs).reshape(-1, GROUP)
        advantages = np.array(comp["advantages"]).reshape(-1, GROUP)
        assert np.allclose(advantages.sum(axis=1), 0.0, atol=1e-6)
        std = totals.std(axis=1, ddof=1, keepdims=True)
        assert np.allclose(advantages, (totals - totals.mean(axis=1, keepdims=True)) / (std + 1e-4))


@pytest.mark.parametrize("name", SCENARIOS)
def test_logged_rollout_metrics_are_computed_from_the_completions(
    runs: dict[str, RunFiles], name: str
) -> None:
    run = runs[name]
    for line, comp in run.pairs("train"):
        totals = _totals(comp, run.funcs).reshape(-1, GROUP)
        stds = totals.std(axis=1, ddof=1)
        tokens = np.array([min(MAX_LEN, math.ceil(len(t) / 4)) for t in comp["completion"]])
        assert line["reward"] == pytest.approx(totals.mean(), abs=1e-7)
        assert line["reward_std"] == pytest.approx(stds.mean(), abs=1e-7)
        assert line["frac_reward_zero_std"] == pytest.approx(np.mean(stds < 1e-9), abs=1e-7)
        assert line["completions/mean_length"] == pytest.approx(tokens.mean(), abs=1e-6)
        assert line["completions/max_length"] == tokens.max()
        clipped = np.mean(
            [len(t) == MAX_LEN * 4 and "</answer>" not in t for t in comp["completion"]]
        )
        assert line["completions/clipped_ratio"] == pytest.approx(clipped, abs=1e-7)
        for f in run.funcs:
            assert line[f"rewards/{f}/mean"] == pytest.approx(np.mean(comp[f]), abs=1e-7)
    # the end-of-train log repeats the last completions line verbatim, as ms-swift does
    assert run.completions[-1] == run.completions[-2]


# --------------------------------------------------------------------------- determinism and modes
def _normalised(run_dir: Path) -> dict[str, str]:
    return {
        name: (run_dir / name).read_text(encoding="utf-8").replace(str(run_dir), "<RUN>")
        for name in ("args.json", "logging.jsonl", "completions.jsonl")
    }


def test_same_seed_same_bytes_other_seed_other_run(tmp_path: Path) -> None:
    cfg = SimConfig(scenario="too_aggressive", seed=7, max_steps=40, eval_steps=20)
    first = write_run(tmp_path / "a", config=cfg)
    second = write_run(tmp_path / "b", config=cfg)
    assert first.name == second.name  # the timestamp comes from the seed, not the clock
    assert _normalised(first) == _normalised(second)
    other = write_run(tmp_path / "c", config=replace(cfg, seed=8))
    assert _normalised(other)["logging.jsonl"] != _normalised(first)["logging.jsonl"]


# sha256 (first 32 hex) of _pinned() for seed 11, 24 steps, eval every 10 on 6 prompts:
# the output of the original eight scenarios. Pinned again when the demo's scenarios were
# made to show their state by 30 % of the run: 8 prompts a step (all eight move), and new
# curves for healthy, too_aggressive, reward_hacking and length_collapse. Other tests and
# the UI snapshots depend on these runs; change a value only for a wanted change.
ORIGINAL_RUNS = {
    "healthy": "4158973b14882ad7f3d016f6cf45e6c5",
    "not_learning": "222f5f113c56d2e7c039090c31415414",
    "too_aggressive": "c16fa5d22399194366bc5f02022e73ab",
    "reward_hacking": "225dfd269fb340685e81e5b04cf10581",
    "truncation": "c5ee5ac18814c100c4fd8e5e630a9929",
    "length_collapse": "fdcd16b561f7fd6628661ba16b49c3cb",
    "low_diversity": "49b263e205fe80fd13a384c81a49fb39",
    "saturated": "755a80c38039df4ee98abd16bfef7288",
}


def _pinned(run_dir: Path) -> str:
    """args.json, the metric lines and the completions (texts, rewards, prompts), leaving
    out what holds unrounded floats (summary log_history, advantages, entropy): those could
    move by one ulp with another libm, everything else is what a reader sees."""
    text = _normalised(run_dir)
    completions = [json.loads(line) for line in text["completions.jsonl"].splitlines()]
    kept = [{k: v for k, v in c.items() if k not in ("advantages", "entropy")} for c in completions]
    logging = text["logging.jsonl"].splitlines()[:-1]
    return "\n".join([text["args.json"], *logging, json.dumps(kept, ensure_ascii=False)])


@pytest.mark.parametrize("name", list(ORIGINAL_RUNS))
def test_the_original_scenarios_write_what_they_always_wrote(tmp_path: Path, name: str) -> None:
    cfg = SimConfig(scenario=name, seed=11, max_steps=24, eval_steps=10, eval_prompts=6)
    digest = hashlib.sha256(_pinned(write_run(tmp_path, config=cfg)).encode()).hexdigest()
    assert digest[:32] == ORIGINAL_RUNS[name]


def test_versions_count_up_in_the_same_output_dir(tmp_path: Path) -> None:
    first = write_run(tmp_path, "healthy", max_steps=5)
    second = write_run(tmp_path, "healthy", max_steps=5)
    assert first.name.startswith("v0-") and second.name.startswith("v1-")


def test_live_simulator_writes_the_same_run_line_by_line(tmp_path: Path) -> None:
    cfg = SimConfig(scenario="reward_hacking", seed=3, max_steps=42, eval_steps=20, eval_prompts=4)
    live = LiveSimulator(tmp_path / "live", cfg, steps_per_second=1000.0)
    assert (live.run_dir / "args.json").exists() and not (live.run_dir / "logging.jsonl").exists()
    calls = 0
    while True:
        more = live.advance()
        calls += 1
        text = (live.run_dir / "logging.jsonl").read_text(encoding="utf-8")
        assert text.endswith("\n")  # whole lines only
        if not more:
            break
    assert not live.advance()  # and stays done
    assert calls == len({1, *range(5, 43, 5), 20, 40, 42})
    batch = write_run(tmp_path / "batch", config=cfg)
    assert live.run_dir.name == batch.name
    assert _normalised(live.run_dir) == _normalised(batch)
    # eval batch == one rollout batch here, so eval lines also match their completions
    run = _load(batch)
    for line, comp in run.pairs("eval"):
        assert line["eval_reward"] == pytest.approx(_totals(comp, run.funcs).mean(), abs=1e-7)


def test_live_run_loop_stops_when_asked_and_finishes_otherwise(tmp_path: Path) -> None:
    cfg = SimConfig(scenario="healthy", max_steps=12, eval_steps=0)
    stop = threading.Event()
    stop.set()
    stopped = LiveSimulator(tmp_path / "stopped", cfg, steps_per_second=1e9)
    stopped.run(stop)
    assert not (stopped.run_dir / "logging.jsonl").exists()  # stopped before step 1
    done = LiveSimulator(tmp_path / "done", cfg, steps_per_second=1e9)
    done.run(threading.Event())
    assert not done.advance()  # nothing left to write
    assert _kind(_read_jsonl(done.run_dir / "logging.jsonl")[-1]) == "summary"


def test_reuse_steps_log_without_rollout_keys(tmp_path: Path) -> None:
    """num_iterations 2 with logging_steps 1: like the real numiter2 fixture."""
    run = _load(
        write_run(
            tmp_path,
            config=SimConfig(
                scenario="too_aggressive", max_steps=30, logging_steps=1, eval_steps=0
            ),
        )
    )
    train = run.pairs("train")
    assert [_step(line) for line, _ in train] == list(range(1, 31))
    for line, comp in train:
        rollout = _step(line) % 2 == 1
        assert ("reward" in line) == rollout and ("completions/mean_length" in line) == rollout
        assert (line["clip_ratio/region_mean"] == 0.0) == rollout
        if not rollout:  # the re-use step logs the same rollouts under its own step
            previous = run.completions[run.completions.index(comp) - 1]
            assert comp["completion"] == previous["completion"]


def test_leftover_window_merges_into_end_line_and_beta_zero_drops_kl(tmp_path: Path) -> None:
    run = _load(write_run(tmp_path, config=SimConfig(max_steps=23, eval_steps=0, beta=0.0)))
    assert [_step(line) for line in run.lines if _kind(line) == "train"] == [1, 5, 10, 15, 20]
    end = run.lines[-2]
    assert _kind(end) == "end" and "reward" in end and _step(end) == 23
    assert end["reward"] == pytest.approx(_totals(run.completions[-1], run.funcs).mean(), abs=1e-7)
    assert all("kl" not in line for line in run.lines)
    assert run.lines[-1]["best_metric"] is None and run.lines[-1]["best_model_checkpoint"] is None


def test_format_time_and_config_validation() -> None:
    assert [format_time(s) for s in (0, 59.6, 61, 3600, 90061)] == [
        "0s",
        "1m 0s",
        "1m 1s",
        "1h 0m 0s",
        "1d 1h 1m 1s",
    ]
    with pytest.raises(ValueError):
        write_run(Path("unused"), "no_such_scenario")


def test_an_unknown_demo_scenario_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """`demo --scenario` takes only the simulator's scenarios; argparse names them all."""
    from grpo_tui.cli import main
    from grpo_tui.commands.output import EXIT_USAGE

    with pytest.raises(SystemExit) as exited:
        main(["demo", "--scenario", "no_such_scenario"])
    assert exited.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert "invalid choice: 'no_such_scenario'" in err
    assert all(repr(name) in err for name in SCENARIOS)


# --------------------------------------------------------------------------- scenario signatures
def test_healthy(runs: dict[str, RunFiles]) -> None:
    run = runs["healthy"]
    assert run.recent("reward").mean() - run.early("reward") > 0.7
    previous = run.series("reward")[-40:-20].mean()
    assert run.recent("reward").mean() > previous + 0.1  # still rising late
    assert 0.2 < run.recent("reward_std").mean() < 0.8
    # from logit -2.6 with prompts spread 0.8, about 1 group in 8 starts all-fail; late
    # few groups lack a signal (the all-pass ones, as it nears the top)
    assert (
        run.recent("frac_reward_zero_std").mean() < 0.15 < run.early("frac_reward_zero_std") + 0.1
    )
    assert run.args["num_iterations"] == 1
    assert all(line[k] == 0.0 for line in run.lines[:-1] for k in line if "clip_ratio/" in k)
    assert run.series("kl").max() < 0.1 and run.recent("kl").mean() > 5 * run.early("kl")
    length = run.recent("completions/mean_length") / MAX_LEN
    assert 0.3 < length.mean() < 0.5 and run.recent("completions/clipped_ratio").max() < 0.05
    assert run.recent("entropy/mean").mean() < run.early("entropy/mean")
    assert run.recent("rewards/Format/mean").mean() > run.early("rewards/Format/mean") + 0.4
    assert run.evals()[-1] > run.evals()[0] + 0.5
    assert _group_overlaps(run.completions[-3]) < 0.4


def test_not_learning(runs: dict[str, RunFiles]) -> None:
    run = runs["not_learning"]
    assert _share(run.series("frac_reward_zero_std") > 0.8) >= 0.7
    assert _share(run.series("reward_std") < 1e-6) >= 0.7
    assert run.series("reward").max() < 0.1
    assert run.args["num_iterations"] == 2  # clip ratio is applicable, and ~0
    train = [line for line in run.lines if _kind(line) == "train"]
    assert max(line["clip_ratio/region_mean"] for line in train) < 0.001
    length = run.recent("completions/mean_length").mean() / run.early("completions/mean_length")
    assert abs(length - 1) < 0.2
    # the zero-spread groups are all-fail
    comp = run.completions[-3]
    assert max(_totals(comp, run.funcs)) <= 1.0 and np.mean(_totals(comp, run.funcs) == 0) > 0.9


def test_too_aggressive(runs: dict[str, RunFiles]) -> None:
    run = runs["too_aggressive"]
    assert run.args["num_iterations"] == 2 and run.args["learning_rate"] >= 1e-5
    assert _share(run.recent("clip_ratio/region_mean") > 0.3) >= 0.7
    assert run.recent("kl").min() > 1.0 and run.recent("kl").mean() > 20 * run.early("kl")
    # fast rise: up by ~1 over the first 10% (from the first few lines to just after it)
    assert _between(run, "reward", 0.1, 0.2).mean() > _between(run, "reward", 0, 0.04).mean() + 0.5
    evals = run.evals()
    assert evals[-1] < evals.max() - 0.3  # eval falls late
    assert run.recent("completions/mean_length").mean() < 0.8 * run.early("completions/mean_length")
    assert run.recent("completions/mean_length").mean() > 0.15 * MAX_LEN  # shorter, not collapsed


def test_reward_hacking(runs: dict[str, RunFiles]) -> None:
    run = runs["reward_hacking"]
    assert run.funcs == ["MathAccuracy", "Format"]
    assert run.recent("rewards/Format/mean").min() == 1.0
    assert run.recent("rewards/Format/std").max() == 0.0
    task = run.recent("rewards/MathAccuracy/mean").mean()
    assert task < 0.35 and abs(task - run.early("rewards/MathAccuracy/mean")) < 0.12
    assert run.recent("reward").mean() - run.early("reward") > 0.5
    assert run.recent("frac_reward_zero_std").mean() < 0.5  # guesses differ: not tied
    late = [_group_overlaps(c) for _, c in run.pairs("train")[-20:]]
    early = [_group_overlaps(c) for _, c in run.pairs("train")[:10]]
    assert np.mean(early) < 0.3 and 0.6 < np.mean(late) < 0.9
    evals = run.evals()
    # eval flat since the format saturated (t = 0.25, step 75; the next eval is step 100)
    assert evals[-1] - evals[1] < 0.15
    length = run.recent("completions/mean_length").mean() / run.early("completions/mean_length")
    assert length > 0.6  # no length collapse


def test_truncation(runs: dict[str, RunFiles]) -> None:
    run = runs["truncation"]
    assert (run.recent("completions/mean_length") >= 0.97 * MAX_LEN).all()
    assert _share(run.recent("completions/clipped_ratio") > 0.5) >= 0.7
    assert abs(run.recent("reward").mean() - run.early("reward")) < 0.25
    assert run.recent("frac_reward_zero_std").mean() < 0.5  # the completed ones still vary
    texts = [t for _, comp in run.pairs("train")[-10:] for t in comp["completion"]]
    cut = [t for t in texts if len(t) == MAX_LEN * 4 and not t.endswith("</answer>")]
    assert len(cut) > len(texts) / 2 and all("</answer>" not in t for t in cut)  # cut mid-text
    assert np.mean([t.startswith("<think>") for t in cut]) > 0.75  # a <think> opened, never closed


def test_length_collapse(runs: dict[str, RunFiles]) -> None:
    run = runs["length_collapse"]
    assert "LengthBonus" in run.funcs
    # the collapse starts at t = 0.1: "early" is the stretch before it
    early = _between(run, "completions/mean_length", 0, 0.1).mean()
    late = run.recent("completions/mean_length").mean()
    assert early > 0.6 * MAX_LEN and late < 0.4 * early and late < 0.1 * MAX_LEN
    # a few tokens by t ~ 0.23: from t = 0.25 on no line is past 5% of the cap
    assert _between(run, "completions/mean_length", 0.25, 1.01).max() < 0.05 * MAX_LEN
    # LengthBonus pays for it (~+0.7) more than the task loses (~-0.2)
    assert run.recent("reward").mean() - _between(run, "reward", 0, 0.1).mean() > 0.35
    task = run.recent("rewards/MathAccuracy/mean").mean()
    before = _between(run, "rewards/MathAccuracy/mean", 0, 0.1).mean()
    assert task < before - 0.1  # the answers cannot be right that short: the task falls
    assert all(len(t) < 100 for t in run.completions[-3]["completion"])
    assert _group_overlaps(run.completions[-3]) < 0.6  # short, but not templated


def test_low_diversity(runs: dict[str, RunFiles]) -> None:
    run = runs["low_diversity"]
    assert run.args["temperature"] <= 0.5
    late = [_group_overlaps(c) for _, c in run.pairs("train")[-20:]]
    assert np.mean(late) > 0.9
    assert run.recent("reward_std").mean() < 0.2
    assert 0.45 < run.recent("frac_reward_zero_std").mean() <= 0.9  # ties: many, not all
    assert abs(run.recent("reward").mean() - run.early("reward")) < 0.4
    assert 0.3 < run.recent("reward").mean() / 2 < 0.9  # mid-range: ties, not all-fail or all-pass


def test_saturated(runs: dict[str, RunFiles]) -> None:
    run = runs["saturated"]
    assert run.recent("reward").mean() > 1.85
    assert run.recent("reward_std").mean() < 0.5 * run.early("reward_std")
    assert _share(run.recent("frac_reward_zero_std") > 0.8) >= 0.7
    assert run.recent("frac_reward_zero_std").mean() > run.early("frac_reward_zero_std")
    totals = _totals(run.completions[-3], run.funcs).reshape(-1, GROUP)
    for group in totals[totals.std(axis=1) == 0]:
        assert (group == 2.0).all()  # zero spread because all correct
    evals = run.evals()
    assert np.ptp(evals[-3:]) < 0.15 and evals[-1] > 1.85
    assert _group_overlaps(run.completions[-3]) < 0.4


# --------------------------------------------------------------------------- shapes of real runs
def _t(line: dict[str, Any]) -> float:
    """Training progress of a line, as the simulator computes it."""
    step, total = line["global_step/max_steps"].split("/")
    return int(step) / int(total)


def _between(run: RunFiles, key: str, t0: float, t1: float) -> np.ndarray:
    """A train-line series over the lines with t0 <= t < t1."""
    return np.array([line[key] for line in run.train() if t0 <= _t(line) < t1], dtype=float)


def test_plateau_rises_then_levels_below_the_top(runs: dict[str, RunFiles]) -> None:
    run = runs["plateau"]
    # the rise takes the first 12% of the run: its start, then just after it
    first, rise_end = _between(run, "reward", 0, 0.04), _between(run, "reward", 0.12, 0.2)
    mid, last = _between(run, "reward", 0.12, 0.6), _between(run, "reward", 0.6, 1.01)
    assert rise_end.mean() > first.mean() + 0.5  # a clear rise over the first 12%
    # then flat: the late mean is the plateau's mean within its standard error
    se = np.concatenate([mid, last]).std(ddof=1) * math.sqrt(1 / len(mid) + 1 / len(last))
    assert abs(last.mean() - mid.mean()) < 2 * se
    assert last.mean() > first.mean() + 0.6
    # a plateau, not saturation: well below the top, groups still spread
    assert last.mean() < 0.85 * 2
    for f in run.funcs:
        assert _between(run, f"rewards/{f}/mean", 0.6, 1.01).mean() < 0.88
    assert _between(run, "reward_std", 0.6, 1.01).mean() > 0.3
    assert _between(run, "frac_reward_zero_std", 0.6, 1.01).mean() < 0.3
    assert run.series("kl").max() < 0.1
    length = run.series("completions/mean_length") / MAX_LEN
    assert length.min() > 0.3 and length.max() < 0.5
    # eval stopped improving: every eval (steps 50-300, t >= 0.17) comes after the rise,
    # level at the plateau's height, well above where the run started
    evals = run.evals()
    assert np.ptp(evals) < 0.25 and evals.min() > first.mean() + 0.6


def test_blow_up_collapses_within_a_tenth_of_the_run(runs: dict[str, RunFiles]) -> None:
    run = runs["blow_up"]
    before = (0.0, 0.18)  # the onset is t = 0.18 to 0.24
    after = (0.24, 1.01)
    # healthy learning up to the onset; that comes early, so the rise is small (~0.13 expected)
    assert (
        _between(run, "reward", 0.1, 0.18).mean() > _between(run, "reward", 0, 0.05).mean() + 0.05
    )
    assert _between(run, "kl", *before).max() < 0.1
    assert _between(run, "completions/clipped_ratio", *before).max() < 0.05
    # then everything at once, and it stays so
    assert _between(run, "reward", *after).max() < 0.05
    entropy = _between(run, "entropy/mean", *before)
    assert _between(run, "entropy/mean", *after).min() >= 10 * np.median(entropy)
    assert _between(run, "entropy/mean", *after).mean() >= 10 * entropy.mean()
    assert (run.recent("completions/clipped_ratio") >= 0.9).all()
    assert (run.recent("completions/mean_length") >= 0.97 * MAX_LEN).all()
    assert _between(run, "kl", *after).min() > 10 * _between(run, "kl", *before).max()
    grad = _between(run, "grad_norm", *after)
    assert np.median(grad) > 5 * np.median(_between(run, "grad_norm", *before))
    # the first collapsed line comes after the onset starts (t = 0.18) and by its end
    # (t = 0.24): within 6% of the run, less than a tenth
    collapsed = [_t(line) for line in run.train() if line["reward"] < 0.05]
    assert 0.18 < collapsed[0] <= 0.24
    evals = run.evals()  # steps 50..300: step 50 (t = 0.17) is before the onset, then 0
    assert evals[0] > 0.2 and evals[1:].max() == 0.0
    late = run.completions[-3]["completion"]
    assert all(len(t) == MAX_LEN * 4 and "</answer>" not in t for t in late)
    assert _group_overlaps(run.completions[-3]) < 0.3  # soup: high entropy, not a template


def test_early_collapse_lands_before_the_second_logged_point(runs: dict[str, RunFiles]) -> None:
    run = runs["early_collapse"]
    first, *later = run.train()
    assert _step(first) == 1
    assert first["completions/mean_length"] >= 30 and 0.7 < first["entropy/mean"] < 1.1
    assert first["reward_std"] > 0  # a normal, varied first batch
    for line in later:
        assert line["completions/mean_length"] <= 4 and line["entropy/mean"] < 0.06
    lengths = np.array([line["completions/mean_length"] for line in later])
    assert 1.5 < lengths.mean() < 3.5  # 2-3 tokens
    evals = [line for line in run.lines if _kind(line) == "eval"]
    assert all(line["eval_completions/mean_length"] <= 4 for line in evals)
    late = [_group_overlaps(c) for _, c in run.pairs("train")[-20:]]
    assert np.mean(late) > 0.95  # the groups are one string repeated


def test_early_collapse_with_logging_every_step(tmp_path: Path) -> None:
    """The collapse is after step 1 whatever max_steps is (step 1 is t = 0.1 here)."""
    cfg = SimConfig(scenario="early_collapse", max_steps=10, logging_steps=1, eval_steps=0)
    run = _load(write_run(tmp_path, config=cfg))
    lengths = [line["completions/mean_length"] for line in run.train()]
    assert len(lengths) == 10 and lengths[0] >= 30 and max(lengths[1:]) <= 4


# --------------------------------------------------------------------------- knobs
def _noise(series: np.ndarray) -> float:
    """Step-to-step noise: sd of first differences / sqrt(2) (a trend barely moves it)."""
    return float(np.diff(series).std() / math.sqrt(2))


@pytest.mark.parametrize(("prompts", "group"), [(1, 4), (2, 4), (1, 2)])
def test_small_batches_work_through_the_whole_pipeline(
    tmp_path: Path, prompts: int, group: int
) -> None:
    cfg = SimConfig(
        scenario="plateau",
        max_steps=60,
        eval_steps=25,
        prompts_per_step=prompts,
        num_generations=group,
        eval_prompts=3,
    )
    run = _load(write_run(tmp_path, config=cfg))
    assert run.args["num_generations"] == group
    assert run.args["gradient_accumulation_steps"] == prompts
    assert [_step(line) for line in run.lines if _kind(line) == "train"] == [1, *range(5, 61, 5)]
    assert [_step(line) for line in run.lines if _kind(line) == "eval"] == [25, 50, 60]
    rows = prompts * group
    for line, comp in zip(run.lines, run.completions):
        assert {len(v) for v in comp.values()} == {rows}  # eval too: the last `prompts` groups
        assert comp["step"] == [str(_step(line))] * rows
        if _kind(line) != "train":
            continue
        totals = _totals(comp, run.funcs).reshape(-1, group)
        stds = totals.std(axis=1, ddof=1)
        assert line["reward"] == pytest.approx(totals.mean(), abs=1e-7)
        assert line["reward_std"] == pytest.approx(stds.mean(), abs=1e-7)
        assert line["frac_reward_zero_std"] == pytest.approx(np.mean(stds < 1e-9), abs=1e-7)
        advantages = np.array(comp["advantages"]).reshape(-1, group)
        assert np.allclose(advantages.sum(axis=1), 0.0, atol=1e-6)
    for line in run.lines[:-1]:
        assert all(math.isfinite(v) for v in line.values() if isinstance(v, float))


def test_small_batches_make_the_per_step_reward_noisy(
    runs: dict[str, RunFiles], tmp_path: Path
) -> None:
    cfg = SimConfig(scenario="plateau", prompts_per_step=1, num_generations=4, eval_prompts=3)
    small = _load(write_run(tmp_path, config=cfg))
    plateau = slice(len(small.train()) // 2, None)  # the flat half: noise, no trend
    noisy, usual = small.series("reward")[plateau], runs["plateau"].series("reward")[plateau]
    assert _noise(noisy) > 1.5 * _noise(usual)
    assert _noise(noisy) > 0.25 and 1.2 < noisy.mean() < 1.8


def _spiked_pair(
    tmp_path: Path, spikes: tuple[tuple[str, float, float], ...]
) -> tuple[RunFiles, RunFiles]:
    cfg = SimConfig(scenario="too_aggressive", seed=1, max_steps=100, eval_steps=50)
    return (
        _load(write_run(tmp_path / "plain", config=cfg)),
        _load(write_run(tmp_path / "spiked", config=replace(cfg, spikes=spikes))),
    )


def test_a_spike_moves_one_value_on_one_line_and_nothing_else(tmp_path: Path) -> None:
    # 0.3 x 100 is 30.000000000000004 in floats: the spike must still land on step 30
    spikes = (("kl", 0.3, 500.0), ("grad_norm", 0.21, 20.0), ("entropy/mean", 1.0, 0.1))
    plain, spiked = _spiked_pair(tmp_path, spikes)
    expected = {(30, "kl"): 500.0, (25, "grad_norm"): 20.0, (100, "entropy/mean"): 0.1}
    changed = {}
    for a, b in zip(plain.lines[:-1], spiked.lines[:-1], strict=True):
        assert list(a) == list(b)
        for key in a:
            if a[key] != b[key] and key not in ("elapsed_time", "remaining_time"):
                assert _kind(a) == "train", key
                changed[(_step(a), key)] = b[key] / a[key]
    assert changed.keys() == expected.keys()
    for where, factor in expected.items():
        assert changed[where] == pytest.approx(factor, rel=1e-5)
    # the lines around the spike are back to normal: KL sits where it was
    kl = {_step(line): line["kl"] for line in spiked.train()}
    assert kl[30] > 100 * max(kl[25], kl[35])
    # the summary's log_history agrees with the lines; the completions are the same bytes
    history = spiked.lines[-1]["log_history"]
    assert next(item for item in history if item["step"] == 30)["kl"] == pytest.approx(
        kl[30], rel=1e-8
    )
    for name in ("completions.jsonl",):
        assert (plain.run_dir / name).read_bytes() == (spiked.run_dir / name).read_bytes()
    assert spiked.args["sim_spikes"] == [list(s) for s in spikes]
    assert "sim_spikes" not in plain.args


def test_a_spike_past_the_last_train_line_lands_on_it(tmp_path: Path) -> None:
    cfg = SimConfig(max_steps=23, eval_steps=0, spikes=(("loss", 0.99, 1000.0),))
    spiked = _load(write_run(tmp_path / "s", config=cfg))
    plain = _load(write_run(tmp_path / "p", config=replace(cfg, spikes=())))
    ratios = [b["loss"] / a["loss"] for a, b in zip(plain.train(), spiked.train())]
    assert ratios[:-1] == [1.0] * (len(ratios) - 1) and ratios[-1] == pytest.approx(
        1000.0, rel=1e-3
    )
    # (loss is small and lines keep 8 decimals)
    assert _step(spiked.train()[-1]) == 20


@pytest.mark.parametrize(
    "spike",
    [
        ("reward", 0.5, 2.0),  # computed from the completions: a spike would contradict them
        ("completions/mean_length", 0.5, 2.0),
        ("kl", 0.0, 2.0),
        ("kl", 1.5, 2.0),
        ("kl", 0.5, 0.0),
        ("kl", 0.5, math.inf),
        ("grad_norm", 0.5, -1.0),
    ],
)
def test_spikes_are_checked(tmp_path: Path, spike: tuple[str, float, float]) -> None:
    with pytest.raises(ValueError):
        write_run(tmp_path, config=SimConfig(spikes=(spike,)))


def test_a_kl_spike_needs_kl(tmp_path: Path) -> None:
    assert "kl" in SPIKE_METRICS and "reward" not in SPIKE_METRICS
    with pytest.raises(ValueError, match="beta"):
        write_run(tmp_path, config=SimConfig(beta=0.0, spikes=(("kl", 0.5, 2.0),)))


# --------------------------------------------------------------------------- ground truth
SCENARIO_WORDS = {s.word for s in ScenarioId} - {"warming_up"}


def test_every_scenario_has_ordered_regimes_named_in_the_vocabulary() -> None:
    assert set(SCENARIO_REGIMES) == set(SCENARIOS)
    for name, regimes in SCENARIO_REGIMES.items():
        assert regimes[0].start == 0.0, name
        starts = [r.start for r in regimes]
        assert starts == sorted(set(starts)) and starts[-1] < 1.0, name
        for regime in regimes:
            assert isinstance(regime, Regime)
            assert regime.headline in SCENARIO_WORDS, (name, regime)
            assert regime.also <= SCENARIO_WORDS and regime.headline not in regime.also
    # the original eight end in the regime they are named after
    for name in SCENARIOS[:8]:
        assert regime_at(name, 1.0).headline == name


def test_regime_at_picks_the_stretch_a_point_falls_in() -> None:
    assert regime_at("blow_up", 0.0).headline == "healthy"
    # blow_up's onset runs from t = 0.18 to 0.24; plateau levels at t = 0.12
    assert regime_at("blow_up", 0.179).headline == "healthy"
    assert regime_at("blow_up", 0.18).headline == "too_aggressive"
    assert regime_at("blow_up", 0.2).also == frozenset()
    assert regime_at("blow_up", 0.9).also == {"truncation"}
    assert regime_at("plateau", 0.1).headline == "healthy"
    assert regime_at("plateau", 0.12).headline == "saturated"
    assert regime_at("plateau", 0.7).also == {"healthy"}
    assert regime_at("early_collapse", 0.5).also == {"low_diversity", "not_learning"}
    assert regime_at("healthy", -1.0) == SCENARIO_REGIMES["healthy"][0]
    with pytest.raises(KeyError):
        regime_at("no_such_scenario", 0.5)


def _looks_healthy(run: RunFiles, t0: float, t1: float) -> None:
    """Nothing wrong over [t0, t1): spread kept, KL low, lengths sensible, not truncated."""
    assert np.median(_between(run, "kl", t0, t1)) < 0.1
    assert _between(run, "kl", t0, t1).max() < 0.15
    assert _between(run, "reward_std", t0, t1).mean() > 0.2
    assert _between(run, "frac_reward_zero_std", t0, t1).mean() < 0.5
    length = _between(run, "completions/mean_length", t0, t1) / MAX_LEN
    assert length.min() > 0.05 and length.max() < 0.9
    assert _between(run, "completions/clipped_ratio", t0, t1).max() < 0.1
    assert _between(run, "entropy/mean", t0, t1).min() > 0.2


@pytest.mark.parametrize("name", SCENARIOS)
def test_healthy_regimes_look_healthy_in_the_files(runs: dict[str, RunFiles], name: str) -> None:
    """The ground truth is read off the files: every stretch whose headline is "healthy"
    (past the first logged point) shows no problem signature."""
    regimes = SCENARIO_REGIMES[name]
    ends = [r.start for r in regimes[1:]] + [1.01]
    stretches = [(r.start, end) for r, end in zip(regimes, ends) if r.headline == "healthy"]
    for t0, t1 in stretches:
        _looks_healthy(run=runs[name], t0=max(t0, 0.01), t1=t1)
    if name in ("healthy", "plateau", "blow_up", "too_aggressive", "length_collapse"):
        assert stretches


class TestCheckpointFolders:
    """save_steps writes an (empty) checkpoint folder at each multiple, as args.json says."""

    def test_the_demo_saves_every_50_steps(self, tmp_path: Path) -> None:
        """The demo's settings: six folders over 300 steps, the schedule in args.json, and
        the checkpoint answer names them."""
        from grpo_tui.health.diagnose import diagnose
        from grpo_tui.health.rules import Rules
        from grpo_tui.run.follow import load_run
        from grpo_tui.sim import DEMO_SAVE_STEPS, demo_config

        run = write_run(tmp_path, config=demo_config("healthy"))
        folders = sorted(int(p.name.split("-")[1]) for p in run.glob("checkpoint-*"))
        assert folders == list(range(DEMO_SAVE_STEPS, 301, DEMO_SAVE_STEPS))
        assert json.loads((run / "args.json").read_text())["save_steps"] == DEMO_SAVE_STEPS
        answer = diagnose(load_run(run), Rules()).checkpoints
        assert answer is not None and answer.on_disk == tuple(folders)
        assert answer.keep is not None and answer.keep.on_disk

    def test_none_by_default(self, tmp_path: Path) -> None:
        """The runs the tests pin write no folder, and their args.json keeps ms-swift's
        save_steps = eval_steps as before (the answer then says the run keeps none)."""
        run = write_run(tmp_path, "healthy", seed=0, max_steps=60)
        assert not list(run.glob("checkpoint-*"))
        args = json.loads((run / "args.json").read_text())
        assert args["save_steps"] == (SimConfig().eval_steps or 500)
