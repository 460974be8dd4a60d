"""What a board of many runs costs, beside one run's monitor, side by side in this one run.

A sweep folder of N runs (default 50), each an ms-swift output dir whose logging.jsonl has
1 000 steps of real ms-swift line shapes (bench/footprint.py's generator), is opened with
`grpo-tui tail SWEEP` in tmux; one of its runs is opened with `grpo-tui tail RUN` the
same way. Printed, for both and as ratios:

1. on screen: seconds from launch until the board lists every run (the monitor: until it
   shows the run's last step);
2. judged: seconds until every run has its verdict (the board no longer says "judging N");
3. idle: share of a core over --idle seconds once everything is judged and nothing changes;
4. memory: RSS once judged.

    python bench/board.py               # 50 runs x 1 000 steps, ~3 minutes
    python bench/board.py --runs 20 --idle 30

The targets (issue 24): the board on screen in <= 2 s, <= 1 % of a core idle, <= 2x the
memory of one run's monitor. Needs tmux.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

from footprint import CACHE, Pane, build_log, python, warm_bytecode

STEPS = 1_000
METRICS = 60


def build_sweep(runs: int) -> Path:
    """`runs` ms-swift output dirs (each `run-NN/v0-…/logging.jsonl`) of one generated log,
    their files at a time long past so no run is live."""
    sweep = CACHE / f"sweep-{runs}x{STEPS}"
    if sweep.exists() and len(list(sweep.iterdir())) == runs:
        return sweep
    shutil.rmtree(sweep, ignore_errors=True)
    log = build_log(STEPS, METRICS)
    for index in range(runs):
        run_dir = sweep / f"run-{index:02d}" / "v0-20261204-000000"
        run_dir.mkdir(parents=True)
        shutil.copy(log, run_dir / "logging.jsonl")
    return sweep


def tail(path: Path) -> list[str]:
    return [*python(), "-m", "grpo_tui.cli", "tail", str(path)]


def judged(pane: Pane, runs: int | None, timeout: float = 600.0) -> float:
    """Seconds from launch until nothing on the screen waits for a diagnosis."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        screen = pane.screen()
        if runs is None:
            if "Diagnosis" in screen and "? Diagnosis" not in screen:
                return time.perf_counter() - pane.started
        elif f"{runs} runs" in screen and "judging" not in screen:
            return time.perf_counter() - pane.started
        time.sleep(0.05)
    raise TimeoutError(f"never judged:\n{pane.screen()}")


def measure(pane: Pane, ready: str, runs: int | None, idle: float) -> dict[str, float]:
    on_screen = pane.wait_for(ready)
    all_judged = judged(pane, runs)
    time.sleep(3)  # the last frames and the chart warm-up
    before, started = pane.cpu_seconds(), time.perf_counter()
    time.sleep(idle)
    cpu = 100 * (pane.cpu_seconds() - before) / (time.perf_counter() - started)
    return {"on_screen": on_screen, "judged": all_judged, "cpu": cpu, "rss": pane.rss_mb()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="runs in the sweep")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of idle measured")
    args = parser.parse_args()
    sweep = build_sweep(args.runs)
    warm_bytecode()
    one_run = sorted(sweep.iterdir())[0]
    os.environ.setdefault("COLUMNS", "120")
    results = {}
    for label, command, ready, runs in (
        ("board", tail(sweep), f"{args.runs} runs", args.runs),
        ("one run's monitor", tail(one_run), f"step {STEPS}/{STEPS}", None),
    ):
        pane = Pane(label.split()[0], command)
        try:
            results[label] = measure(pane, ready, runs, args.idle)
        finally:
            pane.close()
    board, one = results["board"], results["one run's monitor"]
    print(f"{args.runs} runs x {STEPS} steps x {METRICS} metrics; idle over {args.idle:g} s")
    print(f"{'':24}{'board':>10}{'one run':>10}{'ratio':>8}")
    for key, unit in (("on_screen", "s"), ("judged", "s"), ("cpu", "%"), ("rss", "MB")):
        ratio = board[key] / one[key] if one[key] else float("nan")
        print(f"{key + ' (' + unit + ')':24}{board[key]:>10.2f}{one[key]:>10.2f}{ratio:>8.2f}")


if __name__ == "__main__":
    main()
