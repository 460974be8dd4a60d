"""A small, honest, deterministic model of a GRPO run that writes an ms-swift 4.x run dir.

Used by `grpo-tui demo` and by tests. Each scenario is a set of curves over training
progress t in (0, 1]: the chance of a correct answer, of the right tags, the target length,
KL, entropy, clip ratio... Rollouts are generated *text* for arithmetic prompts; rewards
are computed from that text by real reward functions; every rollout metric on a line is
computed from those rewards the way ms-swift does it (mean of group means, mean unbiased
within-group std, fraction of zero-spread groups). Loss-side metrics (loss, kl, entropy,
clip ratios, step_time) are per-step curves plus noise, averaged over the logging window.

Simplification: when a logging window holds several rollouts (num_iterations > 1), its
rollout metrics are those of the window's *last* rollout, the batch that the matching
completions.jsonl line shows. Nothing here reads the wall clock unless asked to
(`SimConfig.use_wall_clock`); the elapsed/remaining times are those of the simulated run.

The scenarios are data (scenarios.py: training args, the policy's curves, the regimes an
expert names: SCENARIO_REGIMES, regime_at, ground truth for evaluating a diagnosis); the
text and its rewards are text.py; writer.py steps through the run and writes its files.
"""

from grpo_tui.sim.scenarios import SCENARIO_REGIMES, SCENARIOS, Regime, regime_at
from grpo_tui.sim.writer import (
    DEMO_PROMPT_POOL,
    DEMO_SAVE_STEPS,
    SPIKE_METRICS,
    LiveSimulator,
    SimConfig,
    demo_config,
    format_time,
    write_run,
)

__all__ = [
    "DEMO_PROMPT_POOL",
    "DEMO_SAVE_STEPS",
    "SCENARIOS",
    "SCENARIO_REGIMES",
    "SPIKE_METRICS",
    "LiveSimulator",
]
__all__ += ["Regime"]
__all__ += ["SimConfig", "demo_config", "format_time", "regime_at", "write_run"]
