"""What the prompt ledger costs: indexing 100 000 completions with it against without it.

Writes one simulated ms-swift run whose prompts come back (the demo's way: a fixed set of
prompts iterated epoch after epoch, `SimConfig.prompt_pool`), about 100 000 completions
in groups of 8. Then indexes its completions.jsonl in fresh child processes, side by side
and alternating: the baseline with the ledger's hook (`CompletionsIndex._follow_prompts`)
made a no-op, and the index as it is. Each child reports the wall and CPU time of the
whole read and, in a second child of each kind, the peak of Python's allocations during it
(tracemalloc) and the ledger's records. Prints the medians per 100 000 completions and the
ratios (ledger / baseline), and what one `prompt_ledger()` report costs.

Usage: python bench/prompt_ledger.py [--completions 100000] [--pool 800] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GROUP = 8
PROMPTS_PER_STEP = 8


def write(folder: Path, completions: int, pool: int) -> Path:
    """The run's completions.jsonl (one line a step, 64 completions a line)."""
    from grpo_tui.sim import SimConfig, write_run

    steps = -(-completions // (GROUP * PROMPTS_PER_STEP))
    config = SimConfig(
        "healthy",
        seed=0,
        max_steps=steps,
        logging_steps=1,
        eval_steps=0,
        num_generations=GROUP,
        prompts_per_step=PROMPTS_PER_STEP,
        prompt_pool=pool,
    )
    return write_run(folder, config=config) / "completions.jsonl"


def child(path: Path, variant: str, memory: bool) -> dict[str, float]:
    """One read of the whole file in this process: its cost as JSON on stdout."""
    import tracemalloc

    from grpo_tui.run.completions import CompletionsIndex

    if variant == "baseline":
        CompletionsIndex._follow_prompts = lambda self, index, analysed: None  # type: ignore[method-assign]
    index = CompletionsIndex(path)
    if memory:
        tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    index.poll()
    summary = index.summary()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1] if memory else 0
    if memory:
        tracemalloc.stop()
    started = time.perf_counter()
    report = index.prompt_ledger()
    report_s = time.perf_counter() - started
    completions = sum(int(s.completions) for s in summary.steps)
    return {
        "wall": wall,
        "cpu": cpu,
        "peak": peak,
        "report": report_s,
        "completions": completions,
        "records": index.ledger_prompts,
        "visits": report.visits,
    }


def run_child(path: Path, variant: str, memory: bool) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", str(path), variant]
    if memory:
        command.append("--memory")
    out = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT)
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--completions", type=int, default=100_000)
    parser.add_argument("--pool", type=int, default=800, help="prompts iterated over epochs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("PATH", "VARIANT"), help=argparse.SUPPRESS)
    parser.add_argument("--memory", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(Path(args.child[0]), args.child[1], args.memory)))
        return
    with tempfile.TemporaryDirectory(prefix="grpo-tui-ledger-bench-") as tmp:
        path = write(Path(tmp), args.completions, args.pool)
        size_mb = path.stat().st_size / 1e6
        runs: dict[str, list[dict[str, float]]] = {"baseline": [], "ledger": []}
        for _ in range(args.repeats):
            for variant in runs:  # alternating: load on the box hits both alike
                timed = run_child(path, variant, memory=False)
                timed["peak"] = run_child(path, variant, memory=True)["peak"]
                runs[variant].append(timed)
    base, ledger = runs["baseline"], runs["ledger"]
    completions = ledger[0]["completions"]
    per = 100_000 / completions

    def median(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(row[key] for row in rows)

    print(
        f"{completions:.0f} completions ({size_mb:.0f} MB), {ledger[0]['records']:.0f} prompts, "
        f"{ledger[0]['visits']:.0f} visits; medians of {args.repeats} fresh processes each"
    )
    print(f"{'per 100 000 completions':28} {'baseline':>10} {'ledger':>10} {'ratio':>7}")
    for key, label, scale in (
        ("wall", "index, wall (s)", per),
        ("cpu", "index, CPU (s)", per),
        ("peak", "peak Python allocations (MB)", per / 1e6),
    ):
        b, l_ = median(base, key) * scale, median(ledger, key) * scale
        print(f"{label:28} {b:>10.2f} {l_:>10.2f} {l_ / b:>6.2f}x")
    print(f"one prompt_ledger() report: {median(ledger, 'report') * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
