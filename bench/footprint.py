"""What grpo-tui costs on the GPU box, next to a bare Textual app started the same way.

Every figure is taken side by side in this one run, in a real terminal (tmux), so the
machine's noise hits both alike:

1. first screen: seconds from launch until the screen shows the run's latest step (the
   bare app: until it shows its one word), for a small real run and for generated logs of
   1 000, 100 000 and (with --big) 1 000 000 steps, from real ms-swift line shapes;
2. idle: share of a core, and bytes written to the terminal per minute, over --idle
   seconds while tailing a finished run that gets no lines (tmux pipe-pane records what
   each program writes to its pane);
3. RSS: memory once a log of 100 000 steps × 60 metrics is read (and 1 000 × 60, and with
   --big 1 000 000 × 31).

    python bench/footprint.py            # 1k and 100k, ~2 minutes
    python bench/footprint.py --big      # adds the 1 M-step (~1 GB) log

Needs tmux. Generated logs are kept in $TMPDIR/grpo-tui-footprint (reused when present).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grpo_tui.vocabulary import Zone

ROOT = Path(__file__).resolve().parents[1]
SMALL_RUN = ROOT / "tests/fixtures/ms-swift/deepclima-r1_sft-v3.x_logging.jsonl"
LINE_SHAPES = (
    ROOT / "tests/fixtures/ms-swift/local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl"
)
CACHE = Path(tempfile.gettempdir()) / "grpo-tui-footprint"
BARE_APP = """
from textual.app import App
from textual.widgets import Static
class Bare(App):
    def compose(self):
        yield Static("BARE-READY")
Bare().run()
"""
SIZE = ("-x", "120", "-y", "40")


# -- logs --------------------------------------------------------------------------------


def build_log(steps: int, metrics: int) -> Path:
    """A logging.jsonl of `steps` train lines from a real ms-swift 4.6 line, padded to
    `metrics` numeric keys with extra reward functions (an eval line every 50 steps)."""
    path = CACHE / f"{steps}x{metrics}" / "logging.jsonl"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.loads(line) for line in LINE_SHAPES.read_text().splitlines()]
    train, evaluation = lines[0], lines[2]
    numeric = [k for k, v in train.items() if isinstance(v, float)]
    extra = [f"rewards/extra_{i}/mean" for i in range(max(0, metrics - len(numeric)))]
    rng = np.random.default_rng(0)
    tmp = path.with_suffix(".part")
    with open(tmp, "w") as out:
        for start in range(1, steps + 1, 10_000):
            chunk = []
            for step in range(start, min(steps, start + 9_999) + 1):
                row = dict(train)
                for key in numeric:
                    row[key] = round(train[key] * float(rng.uniform(0.5, 1.5)), 8)
                for key in extra:
                    row[key] = round(float(rng.uniform()), 6)
                row["global_step/max_steps"] = f"{step}/{steps}"
                row["elapsed_time"] = f"{step // 3600}h {step // 60 % 60}m {step % 60}s"
                chunk.append(json.dumps(row))
                if step % 50 == 0:
                    ev = dict(evaluation)
                    ev["global_step/max_steps"] = f"{step}/{steps}"
                    chunk.append(json.dumps(ev))
            out.write("\n".join(chunk) + "\n")
    tmp.rename(path)
    return path


# -- a command in a terminal ---------------------------------------------------------------


class Pane:
    """One command in a tmux session of its own."""

    launched = 0

    def __init__(self, name: str, command: list[str]) -> None:
        # a name of its own each time: a session just killed may not be gone yet
        Pane.launched += 1
        self.name = f"fp-{name}-{os.getpid()}-{Pane.launched}"
        for attempt in range(5):
            self.started = time.perf_counter()
            started = subprocess.run(
                ["tmux", "new-session", "-d", "-s", self.name, *SIZE, shlex.join(command)],
                capture_output=True,
                text=True,
                check=False,
            )
            if started.returncode == 0:
                break
            # the server of the session just killed may be exiting under us: try again
            if attempt == 4:
                raise RuntimeError(f"tmux new-session failed: {started.stderr.strip()}")
            time.sleep(0.2)
        self.pid = int(
            subprocess.run(
                ["tmux", "list-panes", "-t", self.name, "-F", "#{pane_pid}"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()[0]
        )

    def screen(self) -> str:
        return subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name],
            capture_output=True,
            text=True,
            check=False,
        ).stdout

    def wait_for(self, text: str, timeout: float = 120.0) -> float:
        """Seconds from launch until `text` is on the screen."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if text in self.screen():
                return time.perf_counter() - self.started
            time.sleep(0.01)
        raise TimeoutError(f"{text!r} never appeared:\n{self.screen()}")

    def wait_until_gone(self, text: str, timeout: float = 600.0) -> float:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if text not in self.screen():
                return time.perf_counter() - self.started
            time.sleep(0.05)
        raise TimeoutError(f"{text!r} stayed on the screen")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self, field: str = "VmRSS") -> float:
        """Resident memory now (VmRSS), or at its highest so far (VmHWM)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True, check=False)


def python() -> list[str]:
    """The interpreter as a user's install runs it: with compiled bytecode. (This machine
    sets PYTHONDONTWRITEBYTECODE, which would compile all of grpo-tui's modules from source
    at every launch while Textual's come compiled from site-packages: ~0.2 s unfairly ours.)
    Bytecode goes to a cache of the bench's own, never into the source tree."""
    return [
        "env",
        "-u",
        "PYTHONDONTWRITEBYTECODE",
        f"PYTHONPYCACHEPREFIX={CACHE / 'pycache'}",
        # the grpo-tui of this tree (a tmux server started elsewhere has its own env)
        f"PYTHONPATH={ROOT}",
        sys.executable,
    ]


def ours(path: Path) -> list[str]:
    return [*python(), "-m", "grpo_tui.cli", "tail", str(path)]


def bare() -> list[str]:
    return [*python(), "-c", BARE_APP]


def warm_bytecode() -> None:
    """Compile both apps' modules once, as an install does, before anything is timed."""
    for command in (ours(SMALL_RUN), bare()):
        pane = Pane("warm", command)
        try:
            pane.wait_for("step 438/438" if "tail" in command else "BARE-READY")
        finally:
            pane.close()


def first_screen(path: Path, steps_text: str, repeats: int = 3) -> tuple[float, float]:
    """(grpo-tui, bare app) median seconds to the first screen that shows the data, over
    `repeats` launches of each, taken in turn (one launch is at the mercy of the box)."""
    mine, theirs = [], []
    for _ in range(repeats):
        for command, text, into in ((ours(path), steps_text, mine), (bare(), "BARE-READY", theirs)):
            pane = Pane("first", command)
            try:
                into.append(pane.wait_for(text))
            finally:
                pane.close()
    return float(np.median(mine)), float(np.median(theirs))


@dataclass(frozen=True)
class Idle:
    """What a program costs while nothing happens."""

    cpu_percent: float
    bytes_per_minute: float


def idle_cost(pane: Pane, ready: str, seconds: float) -> Idle:
    """Once `ready` is on the screen and the start-up work is over: the share of a core and
    the bytes written to the terminal over `seconds`."""
    pane.wait_for(ready)
    time.sleep(3)  # the first diagnosis and chart warm-up are over
    written = CACHE / f"{pane.name}.out"
    written.unlink(missing_ok=True)
    subprocess.run(
        ["tmux", "pipe-pane", "-o", "-t", pane.name, f"cat > {shlex.quote(str(written))}"],
        check=True,
    )
    before, started = pane.cpu_seconds(), time.perf_counter()
    time.sleep(seconds)
    elapsed = time.perf_counter() - started
    cpu = 100 * (pane.cpu_seconds() - before) / elapsed
    subprocess.run(["tmux", "pipe-pane", "-t", pane.name], check=True)  # stop recording
    size = written.stat().st_size if written.exists() else 0
    written.unlink(missing_ok=True)
    return Idle(cpu, size * 60 / elapsed)


#: a live run for the idle figures: the demo's simulated run, a step every 5 s (a real GRPO
#: step takes 5-60 s), so each minute brings about 12 steps to draw
LIVE_DEMO = ("demo", "--speed", "0.2")


def idle_costs(seconds: float) -> dict[str, Idle]:
    """grpo-tui on a finished run and on a live one, and the bare app, while nothing but
    the live run's new steps happens."""
    live = [*python(), "-m", "grpo_tui.cli", *LIVE_DEMO]
    costs = {}
    # one at a time: each is launched when the one before is closed
    for label, command, ready in (
        ("finished run", ours(SMALL_RUN), "step 438/438"),
        ("live run (a step / 5 s)", live, "LIVE"),
        ("bare Textual app", bare(), "BARE-READY"),
    ):
        pane = Pane(label.split()[0], command)
        try:
            costs[label] = idle_cost(pane, ready, seconds)
        finally:
            pane.close()
    return costs


def rss_after_history(path: Path, steps_text: str) -> tuple[float, float, float, float]:
    """(grpo-tui RSS once the whole history is read and judged, its peak while reading,
    bare app RSS, seconds to read the history)."""
    pane = Pane("ours", ours(path))
    try:
        pane.wait_for(steps_text)
        seconds = pane.wait_until_gone("READING HISTORY")
        # the diagnosis of the whole run: its tab shows a verdict once it is in
        pane.wait_until_gone(f"{Zone.UNKNOWN.glyph} Diagnosis")
        time.sleep(2)
        mine, peak = pane.rss_mb(), pane.rss_mb("VmHWM")
    finally:
        pane.close()
    pane = Pane("bare", bare())
    try:
        pane.wait_for("BARE-READY")
        theirs = pane.rss_mb()
    finally:
        pane.close()
    return mine, peak, theirs, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--big", action="store_true", help="also the 1 M-step (~1 GB) log")
    parser.add_argument(
        "--idle",
        type=float,
        default=120.0,
        help="seconds of idle measured (2 minutes: the clock ticks once a minute)",
    )
    parser.add_argument(
        "--only",
        choices=("first", "idle", "rss"),
        action="append",
        help="measure only this part (repeatable); all three by default",
    )
    args = parser.parse_args()
    parts = set(args.only or ("first", "idle", "rss"))
    sizes = [1_000, 100_000] + ([1_000_000] if args.big else [])

    warm_bytecode()
    if "first" in parts:
        first_screens(sizes)
    if "idle" in parts:
        costs = idle_costs(args.idle)
        bare_cost = costs["bare Textual app"]
        print(f"idle ({args.idle:.0f} s)                   CPU % of a core   terminal bytes / min")
        for label, cost in costs.items():
            print(f"  {label:<26}{cost.cpu_percent:10.2f}   {cost.bytes_per_minute:14.0f}")
        finished = costs["finished run"]
        print(
            f"  finished / bare            {finished.cpu_percent / max(bare_cost.cpu_percent, 1e-9):10.2f}"
            f"   {finished.bytes_per_minute - bare_cost.bytes_per_minute:+14.0f}"
            "   (targets: ≤ 0.5 % of a core; one repaint of the clock a minute)"
        )
    if "rss" in parts:
        memory(sizes)


def first_screens(sizes: list[int]) -> None:
    print("first screen (s, median of 3) grpo-tui   bare app   ratio   target")
    mine, theirs = first_screen(SMALL_RUN, "step 438/438")
    print(
        f"  real run, 51 lines         {mine:8.2f}   {theirs:8.2f}   {mine / theirs:5.2f}   ≤ 0.4 s"
    )
    for steps in sizes:
        path = build_log(steps, 31)
        size_mb = path.stat().st_size / 1e6
        mine, theirs = first_screen(path, f"step {steps}/{steps}")
        label = f"{steps:,} steps ({size_mb:,.0f} MB)"
        print(
            f"  latest step, {label:<14}{mine:8.2f}   {theirs:8.2f}   {mine / theirs:5.2f}   ≤ 0.5 s"
        )


def memory(sizes: list[int]) -> None:
    print("RSS once read (MB)          grpo-tui   bare app   ratio   history read in   peak")
    for steps in sizes:
        # the 1 M-step log keeps 31 metrics: 60 would be 2 GB to write for one figure
        metrics = 60 if steps < 1_000_000 else 31
        path = build_log(steps, metrics)
        mine, peak, theirs, seconds = rss_after_history(path, f"step {steps}/{steps}")
        target = "   (target ≤ 130 MB)" if steps == 100_000 else ""
        print(
            f"  {steps:>9,} steps × {metrics}     {mine:8.1f}   {theirs:8.1f}   {mine / theirs:5.2f}   {seconds:6.1f} s        {peak:6.1f}{target}"
        )


if __name__ == "__main__":
    main()
