"""What one frame of the metric views (the grid and the detail chart) is drawn from."""

from __future__ import annotations

from dataclasses import dataclass

from grpo_tui.context import RunContext
from grpo_tui.health.rules import Rules
from grpo_tui.health.verdict import Diagnosis
from grpo_tui.run.metrics import MetricStore
from grpo_tui.ui.themes import ZonePalette


@dataclass(frozen=True)
class MetricsFrame:
    """The store at one version, with the rules, context, diagnosis and palette to draw it
    by; a new one means "maybe redraw"."""

    store: MetricStore
    version: int
    rules: Rules
    context: RunContext
    diagnosis: Diagnosis | None
    palette: ZonePalette
