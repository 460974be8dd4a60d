"""The simulator writes real ms-swift 4.x shapes, and each scenario shows its signature.

Every assertion reads the files back with the json module: what a reader would see.
"""

from __future__ import annotations

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

from grpo_tui.sim import SCENARIOS, LiveSimulator, SimConfig, format_time, write_run

MAX_LEN = 512
GROUP = 8
ROWS = 32  # prompts_per_step x num_generations
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
    return np.sum([comp[f] for f in funcs], axis=0)


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
    assert live.finished and not live.advance()
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
    assert not stopped.finished
    done = LiveSimulator(tmp_path / "done", cfg, steps_per_second=1e9)
    done.run(threading.Event())
    assert done.finished
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


# --------------------------------------------------------------------------- scenario signatures
def test_healthy(runs: dict[str, RunFiles]) -> None:
    run = runs["healthy"]
    assert run.recent("reward").mean() - run.early("reward") > 0.7
    previous = run.series("reward")[-40:-20].mean()
    assert run.recent("reward").mean() > previous + 0.1  # still rising late
    assert 0.2 < run.recent("reward_std").mean() < 0.8
    assert run.recent("frac_reward_zero_std").mean() < 0.3 < run.early("frac_reward_zero_std") + 0.1
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
    assert run.series("reward")[12:22].mean() > run.early("reward") + 0.4  # fast rise
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
    assert evals[-1] - evals[2] < 0.15  # eval flat since the format saturated (step 150)
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
    early, late = run.early("completions/mean_length"), run.recent("completions/mean_length").mean()
    assert early > 0.6 * MAX_LEN and late < 0.4 * early and late < 0.1 * MAX_LEN
    assert run.recent("reward").mean() - run.early("reward") > 0.5
    task = run.recent("rewards/MathAccuracy/mean").mean()
    assert task > run.early("rewards/MathAccuracy/mean") + 0.2  # the task improves too
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
