"""How often "B against A" is called beyond noise when A and B are one setting: the false
"beyond noise" rate of the comparison (grpo_tui/health/difference.py), on the simulator.

Each pair is two runs of one simulated scenario (grpo_tui/sim) that differ only in their
seed, written whole as ms-swift files and read back as `check A B --compare` reads them;
every pair is compared on its task reward and, where both log one, its eval reward. A
pair called "beyond noise" is a false claim: the runs are the same setting. The interval
is a two-sided 98 % one, so the rate to expect is about 2 %; the target is ≤ 5 %
(README, "Two runs compared"). Pairs use disjoint seeds (pair i: seeds 2i and 2i + 1 after
the start), so pairs are independent.

    python bench/compare_noise.py [--pairs 200] [--scenarios healthy,not_learning,plateau,blow_up]

Prints each scenario's rate with its 95 % Wilson interval, and the whole; exit status 0
when the whole rate is within the target, 1 otherwise. tests/test_difference.py runs
`false_claims` on a smaller count.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from grpo_tui.health.difference import Difference, compare_rewards
from grpo_tui.health.rules import Rules
from grpo_tui.health.series import RunSnapshot, snapshot
from grpo_tui.run.follow import load_run
from grpo_tui.sim import SimConfig, write_run

#: the stated target: at most this share of same-setting pairs called beyond noise
TARGET = 0.05
SCENARIOS = ("healthy", "not_learning", "plateau", "blow_up")


@dataclass
class Tally:
    """Comparisons made and those called beyond noise, per what was compared."""

    scenario: str
    compared: dict[str, int] = field(default_factory=dict)
    beyond: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def add(self, reading: Difference) -> None:
        self.compared[reading.what] = self.compared.get(reading.what, 0) + 1
        if reading.beyond_noise:
            self.beyond[reading.what] = self.beyond.get(reading.what, 0) + 1
            if len(self.examples) < 3:
                self.examples.append(reading.describe())

    def total(self, what: str | None = None) -> tuple[int, int]:
        """(beyond noise, compared), of one kind or of all."""
        keys = [what] if what is not None else list(self.compared)
        return sum(self.beyond.get(k, 0) for k in keys), sum(self.compared.get(k, 0) for k in keys)


def sim_snapshot(scenario: str, seed: int, scratch: Path, max_steps: int) -> RunSnapshot:
    """One simulated run written whole and read back, as a snapshot the diagnosis reads."""
    config = SimConfig(scenario=scenario, seed=seed, max_steps=max_steps)
    return snapshot(load_run(write_run(scratch / f"{scenario}-{seed}", config=config)))


def false_claims(
    scenario: str, pairs: int, rules: Rules, scratch: Path, *, start: int = 0, max_steps: int = 300
) -> Tally:
    """`pairs` same-setting pairs of `scenario` compared; those called beyond noise."""
    tally = Tally(scenario)
    for index in range(pairs):
        seed = start + 2 * index
        a = sim_snapshot(scenario, seed, scratch, max_steps)
        b = sim_snapshot(scenario, seed + 1, scratch, max_steps)
        for reading in compare_rewards(a, b, (f"seed {seed}", f"seed {seed + 1}"), rules):
            if isinstance(reading, Difference):
                tally.add(reading)
    return tally


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson interval of a rate k / n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate_text(k: int, n: int) -> str:
    low, high = wilson(k, n)
    share = k / n if n else 0.0
    return f"{k}/{n} = {100 * share:.1f} % (95 % interval {100 * low:.1f}–{100 * high:.1f} %)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200, help="pairs per scenario")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--max-steps", type=int, default=300)
    args = parser.parse_args(argv)
    rules = Rules()
    tallies = []
    with tempfile.TemporaryDirectory(prefix="compare-noise-") as tmp:
        for scenario in args.scenarios.split(","):
            scratch = Path(tmp) / scenario
            scratch.mkdir()
            tally = false_claims(scenario, args.pairs, rules, scratch, max_steps=args.max_steps)
            tallies.append(tally)
            kinds = "; ".join(f"{what} {rate_text(*tally.total(what))}" for what in tally.compared)
            print(f"{scenario:>14}: {kinds}", flush=True)
            for example in tally.examples:
                print(f"{'':>16}e.g. {example}")
    whole = [sum(t.total()[i] for t in tallies) for i in (0, 1)]
    by_kind = {what for t in tallies for what in t.compared}
    for what in sorted(by_kind):
        k = sum(t.total(what)[0] for t in tallies if what in t.compared)
        n = sum(t.total(what)[1] for t in tallies if what in t.compared)
        print(f"{'all, ' + what:>24}: {rate_text(k, n)}")
    print(f"{'all comparisons':>24}: {rate_text(*whole)}  (target ≤ {100 * TARGET:.0f} %)")
    return 0 if whole[1] and whole[0] / whole[1] <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
